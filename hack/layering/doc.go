// Package layering holds the repository's layering rules as tests: no flag or command name in the domain,
// a doc.go in each room of the domain that names every file's job, and no long domain function. They read
// the source tree; lint (.golangci.yaml) holds the import floors.
package layering

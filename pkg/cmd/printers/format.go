// Package printers writes command results to stdout: kubectl's -o formats (through cli-runtime's
// printers) over Kubernetes-style objects, next to each command's own human form.
package printers

// Package version holds the build's version, stamped at link time with -ldflags -X.
package version

import (
	"fmt"
	"runtime"
)

// Stamped by the Makefile: -X github.com/federate-dev/kubectl-federate/pkg/version.version=v0.1.0 (and commit, date).
var (
	version = "v0.0.0-dev"
	commit  = "unknown"
	date    = "unknown"
)

// Info is the structured version, as printed by `kubectl federate version -o json`.
type Info struct {
	Version   string `json:"version"`
	GitCommit string `json:"gitCommit"`
	BuildDate string `json:"buildDate"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns this binary's version information.
func Get() Info {
	return Info{
		Version:   version,
		GitCommit: commit,
		BuildDate: date,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// UserAgent is sent on every API request, so audit logs name the tool.
func UserAgent() string {
	return fmt.Sprintf("kubectl-federate/%s (%s/%s) %s", version, runtime.GOOS, runtime.GOARCH, commit)
}

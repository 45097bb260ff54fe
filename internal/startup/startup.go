// Package startup lets the process start without a garbage collection.
//
// Package initialization alone allocates about 3 MB (client-go's scheme of every Kubernetes type is most
// of it, and client-go's discovery client imports it whatever else is trimmed), just under the
// collector's first goal of 4 MB, so the first collection fell in the middle of building the command tree:
// about 1.4 ms of a 9.5 ms `--help`. Until a command begins to run, the collector's pace is set four times
// slower (a first goal of 16 MB); a command that runs gets the usual pace back first thing (Done), so
// no command works with more memory than before. A GOGC set by the user is never overridden.
//
// The linker orders package initialization by import path among the packages whose imports are done, so
// this package runs once runtime/debug is ready, which is after about 130 small initializers (some 0.3 MB)
// and before client-go's scheme and the other large ones (TestHelpRunsNoCollection, in hack/linkcheck,
// holds both: no collection in `--help`, and less than 1 MB allocated by the initializers before this one).
package startup

import (
	"os"
	"runtime/debug"
)

// startPercent is the collector's pace while the process starts.
const startPercent = 400

// previous is the pace to restore, or -1 once restored (or when the user's GOGC is in force).
var previous = -1

func init() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	previous = debug.SetGCPercent(startPercent)
}

// Done restores the collector's usual pace. It is called when a command begins to run; a second call does
// nothing.
func Done() {
	if previous < 0 {
		return
	}
	debug.SetGCPercent(previous)
	previous = -1
}

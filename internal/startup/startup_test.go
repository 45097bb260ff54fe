package startup

import (
	"runtime/debug"
	"testing"
)

func TestDoneRestoresThePaceOnce(t *testing.T) {
	if previous < 0 {
		t.Skip("GOGC is set in the environment: the pace was left to it")
	}
	want := previous
	Done()
	if got := debug.SetGCPercent(want); got != want {
		t.Fatalf("after Done the pace is %d, want %d", got, want)
	}
	debug.SetGCPercent(startPercent)
	Done() // a second call must not touch the pace
	if got := debug.SetGCPercent(want); got != startPercent {
		t.Fatalf("a second Done changed the pace to %d", got)
	}
}

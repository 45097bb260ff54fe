package output

import (
	"bytes"
	"strings"
	"testing"
)

// Without a terminal, even when colour is forced, a board prints each outcome as one line and draws
// nothing live (no cursor movement, nothing for a task that has not ended).
func TestBoardWithoutTerminal(t *testing.T) {
	for _, mode := range []ColorMode{ColorNever, ColorAlways} {
		var buf bytes.Buffer
		b := NewPrinter(&buf, mode).Board()
		b.Start("a -> b")
		b.Start("b -> a")
		b.Done("a -> b", "a -> b: paired (1s)", false)
		b.Done("b -> a", "b -> a: failed (2s): boom", true)
		b.Stop()
		out := buf.String()
		if strings.Contains(out, "\x1b[1A") || strings.Contains(out, "\x1b[2K") {
			t.Errorf("%s: cursor movement without a terminal: %q", mode, out)
		}
		if strings.Count(out, "\n") != 2 || !strings.Contains(out, "a -> b: paired (1s)") || !strings.Contains(out, "b -> a: failed (2s): boom") {
			t.Errorf("%s: outcomes %q", mode, out)
		}
	}
}

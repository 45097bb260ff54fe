package printers

import (
	"bytes"
	"strings"
	"testing"
)

// A row's cells start at their header's column whatever they hold: escaped control characters, combining
// marks (no column), wide characters (two).
func TestTableAlignsByDisplayWidth(t *testing.T) {
	var b bytes.Buffer
	tb := NewTable(&b, "NAME", "TARGET", "SCOPE")
	tb.Row("a", "alice"+strings.Repeat("\u0301", 2), "get on pods")
	tb.Row("b", "名前", "list")
	tb.Row("c", "x\ty", "watch")
	tb.Line("")
	tb.Row("k", "v")
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "NAME   TARGET   SCOPE\n" +
		"a      alice\u0301\u0301    get on pods\n" +
		"b      名前     list\n" +
		"c      x\\ty     watch\n" +
		"\n" +
		"k   v\n"
	if b.String() != want {
		t.Errorf("table:\n%q\nwant\n%q", b.String(), want)
	}
}

package output

import (
	"bytes"
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"alice", "alice"},
		{"dev team", "dev team"},
		{`a\b`, `a\b`}, // nothing escaped: the backslash stays as written
		{"héllo-ñ_€", "héllo-ñ_€"},
		{"a\tb", `a\tb`},
		{"a\nb\r", `a\nb\r`},
		{"\x1b[?7l\x1b[999C", `\x1b[?7l\x1b[999C`},
		{"abc\u202eevil", `abc\u202eevil`},     // right-to-left override
		{"zero\u200bwidth", `zero\u200bwidth`}, // zero-width space
		{"nb\u00a0sp", `nb\u00a0sp`},           // a space that is not the ASCII one
		{"line\u2028sep", `line\u2028sep`},     // line separator
		{"priv\ue000", `priv\ue000`},           // private use
		{"bad\xffutf8", `bad\xffutf8`},         // invalid UTF-8
		{"tab\\\tslash", `tab\\\tslash`},       // escaped: the backslash is doubled, so \t is unambiguous
		{"\U000e0041tag", `\U000e0041tag`},     // a tag character (format)
		{"del\x7f", `del\x7f`},
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if Printable(tc.in) != (tc.in == tc.want) {
			t.Errorf("Printable(%q) = %v", tc.in, Printable(tc.in))
		}
	}
}

// A line a printer writes is one line, whatever its message quotes.
func TestPrinterEscapes(t *testing.T) {
	var buf bytes.Buffer
	p := NewPrinter(&buf, ColorNever)
	p.Warn("target \"x\x1b[2J\"\nINFO    forged line")
	out := buf.String()
	if strings.Count(out, "\n") != 1 || strings.ContainsRune(out, 0x1b) {
		t.Errorf("printed %q", out)
	}
	if !strings.Contains(out, `\x1b[2J`) || !strings.Contains(out, `\nINFO`) {
		t.Errorf("printed %q, want the escapes shown", out)
	}
}

package output

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s as a terminal must show it: what it holds, and nothing that acts. A string that came
// from a request, a file or the other cluster can hold a TAB that moves a table's columns, an escape
// sequence that rewrites the screen, a bidi control that reverses what follows, or a zero-width character
// that hides a difference. Printable text (letters, marks, digits, punctuation, symbols, the ASCII space)
// passes as it is; everything else (control and format characters, other spaces, line and paragraph
// separators, private-use, surrogate and unassigned code points, invalid UTF-8) becomes a Go escape such as
// \t, \n, \x1b or \u202e. A backslash is doubled only when something was escaped, so that the common case
// prints as written.
func Escape(s string) string {
	if Printable(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case printableRune(r):
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += size
	}
	return b.String()
}

// Printable says whether Escape leaves s as it is.
func Printable(s string) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return false
			}
		}
		if !printableRune(r) {
			return false
		}
	}
	return true
}

// printableRune: a letter, mark, number, punctuation or symbol, or the ASCII space.
func printableRune(r rune) bool {
	return r == ' ' || unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S)
}

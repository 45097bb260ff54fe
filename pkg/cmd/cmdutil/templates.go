package cmdutil

import (
	"strings"
)

// LongDesc normalises a Long help text written as an indented raw string: the common indentation and
// surrounding blank lines are removed.
func LongDesc(s string) string { return dedent(s) }

// Examples normalises an Example text and indents it by two spaces, like kubectl's.
func Examples(s string) string {
	lines := strings.Split(dedent(s), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n")
}

func dedent(s string) string {
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	for i, l := range lines {
		if len(l) >= indent && indent > 0 {
			lines[i] = l[indent:]
		} else {
			lines[i] = strings.TrimSpace(l)
		}
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n ")
}

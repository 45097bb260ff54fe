package printers

import (
	"io"
	"strings"

	"github.com/mattn/go-runewidth"

	"github.com/federate-dev/kubectl-federate/pkg/output"
)

// Table writes rows in columns as kubectl's tables are written (three spaces between columns). Every cell
// is escaped (output.Escape): a cell may hold what a tenant, a file or the other cluster wrote, and a TAB
// or an escape sequence in it would otherwise move the columns or rewrite the screen, so that the row the
// reader sees would not be the one the cluster holds. Columns are as wide as their cells show on a
// terminal (runewidth): a combining mark takes no column, a wide character two, so no cell can shift the
// ones after it.
type Table struct {
	out   io.Writer
	lines []tableLine
}

// tableLine is a row, or a line outside the columns (cells nil), which ends a block of aligned rows.
type tableLine struct {
	cells []string
	text  string
}

// NewTable starts a table on out; a header, when given, is its first row.
func NewTable(out io.Writer, header ...string) *Table {
	t := &Table{out: out}
	if len(header) > 0 {
		t.Row(header...)
	}
	return t
}

// Row adds one row.
func (t *Table) Row(cells ...string) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = output.Escape(c)
	}
	t.lines = append(t.lines, tableLine{cells: row})
}

// Line adds a line outside the columns (a section's title, a blank line), escaped likewise; the rows
// before it and after it are aligned apart.
func (t *Table) Line(text string) {
	t.lines = append(t.lines, tableLine{text: output.Escape(text)})
}

// Flush writes the table.
func (t *Table) Flush() error {
	var b strings.Builder
	for start := 0; start < len(t.lines); {
		if t.lines[start].cells == nil {
			b.WriteString(t.lines[start].text + "\n")
			start++
			continue
		}
		end := start
		for end < len(t.lines) && t.lines[end].cells != nil {
			end++
		}
		writeBlock(&b, t.lines[start:end])
		start = end
	}
	t.lines = nil
	_, err := io.WriteString(t.out, b.String())
	return err
}

// writeBlock aligns consecutive rows: every column but a row's last is padded to the widest cell of that
// column, then three spaces.
func writeBlock(b *strings.Builder, rows []tableLine) {
	var widths []int
	for _, r := range rows {
		for i, c := range r.cells {
			if i == len(r.cells)-1 {
				break
			}
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], runewidth.StringWidth(c))
		}
	}
	for _, r := range rows {
		for i, c := range r.cells {
			b.WriteString(c)
			if i < len(r.cells)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-runewidth.StringWidth(c)+3))
			}
		}
		b.WriteString("\n")
	}
}

package printers

import (
	"io"
	"strings"
	"text/tabwriter"

	"github.com/federate-dev/kubectl-federate/pkg/output"
)

// Table writes rows in columns as kubectl's tables are written (three spaces between columns). Every cell
// is escaped (output.Escape): a cell may hold what a tenant, a file or the other cluster wrote, and a TAB
// or an escape sequence in it would otherwise move the columns or rewrite the screen, so that the row the
// reader sees would not be the one the cluster holds.
type Table struct {
	w *tabwriter.Writer
}

// NewTable starts a table on out; a header, when given, is its first row.
func NewTable(out io.Writer, header ...string) *Table {
	t := &Table{w: tabwriter.NewWriter(out, 0, 4, 3, ' ', 0)}
	if len(header) > 0 {
		t.Row(header...)
	}
	return t
}

// Row writes one row.
func (t *Table) Row(cells ...string) {
	for i, c := range cells {
		cells[i] = output.Escape(c)
	}
	_, _ = io.WriteString(t.w, strings.Join(cells, "\t")+"\n")
}

// Line writes a line outside the columns (a section's title, a blank line), escaped likewise.
func (t *Table) Line(text string) {
	_, _ = io.WriteString(t.w, output.Escape(text)+"\n")
}

// Flush writes what the table holds.
func (t *Table) Flush() error { return t.w.Flush() }

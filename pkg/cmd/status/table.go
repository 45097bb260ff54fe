package status

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/mattn/go-runewidth"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/views"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/status"
)

// maxWidth is the width the tables keep to for usual IDs and names (a cluster ID of a dozen characters, a
// slice of thirty): kubectl's tables hold short values, and the long ones are in -o yaml.
const maxWidth = 120

// printTable prints the selected report r as the status table: one row per credential, with short values
// (the time left, not the expiry time; a cordon in the phase, as kubectl shows a cordoned node's
// SchedulingDisabled). -o wide adds the sandbox's Pod Security level and the kind of credential; the
// namespace, user, target, mode and settings, each up to 80 characters, are in -o yaml and
// custom-columns. full is the report before --remote-cluster-id and -l, to tell "no pairing" from "none
// selected".
func (o *Options) printTable(out io.Writer, r, full *status.Report) error {
	if len(full.Credentials) == 0 {
		_, err := fmt.Fprintf(out, "Cluster %s takes part in no pairing.\n", r.ClusterID)
		return err
	}
	if len(r.Credentials) == 0 {
		o.f.Printer(o.Streams).Info("No credential of this cluster matches the selection.")
		return nil
	}
	wide := o.Output.Wide()
	cols := []string{"REMOTE", "ROLE", "KIND", "NAME", "PHASE", "LEFT"}
	if wide {
		cols = append(cols, "POD SECURITY", "CREDENTIAL")
	}
	if o.Check {
		cols = append(cols, "CHECK")
	}
	w := o.List.NewTable(out, append(cols, o.List.LabelHeaders()...)...)
	now := o.now()
	for i := range r.Credentials {
		s := &r.Credentials[i]
		row := []string{s.RemoteClusterID, s.Role, s.Kind, views.Dash(s.Name), phaseCol(s, now), left(s.NotAfter, now)}
		if wide {
			row = append(row, views.Dash(s.PodSecurity), views.Dash(s.Credential))
		}
		if o.Check {
			row = append(row, check(s.Check))
		}
		w.Row(append(row, o.List.LabelCells(s.Labels)...)...)
	}
	return w.Flush()
}

// phaseCol is the phase, with ",Cordoned" for a cordoned consumer's credentials on the provider, and the
// age of a leftover of an unfinished pairing.
func phaseCol(s *status.CredentialState, now time.Time) string {
	phase := views.Dash(s.Phase)
	if s.Role == member.RoleProvider && s.Cordoned {
		phase += ",Cordoned"
	}
	if s.Since != nil {
		phase += " for " + age(now.Sub(*s.Since))
	}
	return phase
}

// printHistoryTable prints the audit records: how long ago (-o wide: the time the API server stored
// each), the remote cluster, this cluster's role, the reason and the note, cut with "..." so that a line
// keeps within maxWidth (-o yaml and custom-columns show it whole).
func (o *Options) printHistoryTable(out io.Writer, entries []handshake.HistoryEntry, objs []*unstructured.Unstructured) error {
	first := "AGE"
	if o.Output.Wide() {
		first = "TIME"
	}
	now := o.now()
	header := []string{first, "REMOTE", "ROLE", "REASON"}
	labels := o.List.LabelHeaders()
	rows := make([][]string, 0, len(entries))
	widths := make([]int, len(header)+len(labels))
	measure := func(cells []string) {
		for i, c := range cells {
			widths[i] = max(widths[i], runewidth.StringWidth(c))
		}
	}
	measure(append(header, labels...))
	for i, e := range entries {
		when := age(now.Sub(e.Time))
		if o.Output.Wide() {
			when = e.Time.UTC().Format(time.RFC3339)
		}
		row := append([]string{when, e.RemoteClusterID, e.Role, e.Reason}, o.List.LabelCells(objs[i].GetLabels())...)
		measure(row)
		rows = append(rows, row)
	}
	room := maxWidth
	for _, w := range widths {
		room -= w + 3
	}
	room = max(room, 30) // a note is never cut below 30 columns, however wide the rest
	w := o.List.NewTable(out, append(append(header, "NOTE"), labels...)...)
	for i, e := range entries {
		r := rows[i]
		w.Row(append(append(r[:4:4], runewidth.Truncate(e.Note, room, "...")), r[4:]...)...)
	}
	return w.Flush()
}

// age is how long ago, in the largest unit that keeps it readable.
func age(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	case d >= time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	case d >= time.Minute:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}

// left is the time left, in the largest unit that keeps it readable, or "expired".
func left(t *time.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	d := t.Sub(now)
	switch {
	case d <= 0:
		return "expired"
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	case d >= time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
}

func check(c *status.CredentialCheck) string {
	if c == nil {
		return "-"
	}
	return c.State
}

func (o *Options) printHistory(ctx context.Context) error {
	all, err := handshake.History(ctx, o.cluster)
	if err != nil {
		return err
	}
	entries, objs, err := o.selectHistory(ctx, all)
	if err != nil {
		return err
	}
	switch {
	case !o.Output.Human():
		return o.Output.Print(o.Out, printers.List(objs))
	case len(all) == 0:
		_, err := fmt.Fprintln(o.Out, "No audit Event is kept on this cluster (the API server keeps Events for its --event-ttl, one hour by default).")
		return err
	case len(entries) == 0:
		o.f.Printer(o.Streams).Info("No audit Event of this cluster matches the selection.")
		return nil
	}
	return o.printHistoryTable(o.Out, entries, objs)
}

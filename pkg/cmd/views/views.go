// Package views prints the domain's listings as the tables and documents commands show: resource slices
// and extra namespaces. Commands that list the same thing print it the same way.
package views

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// Slices prints slices as a table, or, when p asks for an object format, as a List of ResourceSliceInfo.
func Slices(out io.Writer, p *printers.Flags, list []grants.SliceInfo) error {
	if p != nil && !p.Human() {
		obj, err := SliceList(list)
		if err != nil {
			return err
		}
		return p.Print(out, obj)
	}
	if len(list) == 0 {
		_, err := fmt.Fprintln(out, "No resource slices found.")
		return err
	}
	w := printers.NewTable(out, "CONSUMER", "PROVIDER", "NAME", "CLASS", "PHASE", "REQUESTED", "GRANTED", "NAMESPACE", "AUTO-ACCEPT", "EXPIRES")
	for _, s := range list {
		auto := "-"
		if s.AutoAccept {
			auto = "yes"
		}
		w.Row(Dash(s.ConsumerID), Dash(s.ProviderID), s.Name, Dash(s.Class), s.Phase,
			Dash(sandbox.FormatResourceList(s.Requested)), Dash(sandbox.FormatResourceList(s.Granted)), Dash(s.Namespace), auto, Expiry(s.NotAfter))
	}
	return w.Flush()
}

// Namespaces prints extra namespaces and requests as a table, or, when p asks for an object format, as a
// List of ExtraNamespace.
func Namespaces(out io.Writer, p *printers.Flags, list []grants.NamespaceInfo) error {
	if p != nil && !p.Human() {
		obj, err := NamespaceList(list)
		if err != nil {
			return err
		}
		return p.Print(out, obj)
	}
	if len(list) == 0 {
		_, err := fmt.Fprintln(out, "No namespace requests or extra namespaces found.")
		return err
	}
	w := printers.NewTable(out, "CONSUMER", "NAMESPACE", "PHASE", "REQUESTED", "REQUEST REASON", "ANSWER")
	for _, n := range list {
		req := "no"
		if n.Requested {
			req = "yes"
		}
		w.Row(n.ConsumerID, n.Namespace, n.Phase, req, Dash(Quoted(n.RequestReason, 60)), Dash(n.Reason))
	}
	return w.Flush()
}

// Quoted shows text another party wrote (a tenant's reason) on one table cell: in quotes, control
// characters escaped (a tenant's text must not move the reader's cursor or colour their terminal), cut
// to at most max runes. Empty stays empty.
func Quoted(s string, max int) string {
	if s == "" {
		return ""
	}
	if r := []rune(s); len(r) > max {
		s = string(r[:max-3]) + "..."
	}
	return strconv.Quote(s)
}

// Dash shows an empty value as "-".
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Expiry shows a time in UTC, RFC 3339, or "-".
func Expiry(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

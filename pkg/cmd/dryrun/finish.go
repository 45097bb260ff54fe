package dryrun

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/federate-dev/kubectl-federate/pkg/output"
)

// Finish ends a command that ran as a dry run, whatever its outcome: its stdout lines are flushed as
// comments, the objects it would have written follow on out, and stderr says which writes the server could
// not check. A run that stopped where the next step needs what only a real write yields (err is nothing
// but such stops) ends successfully, saying where it stopped. Not active: err as it is.
func (d *Recorder) Finish(err error, p *output.Printer, comments *CommentWriter, out io.Writer) error {
	if !d.Active() {
		return err
	}
	stops, stopped := Stops(err)
	if stopped {
		until := "; stdout shows what the run would have written until then"
		if len(d.Records()) == 0 {
			until = "; nothing would have been written until then"
		}
		for _, stop := range stops {
			p.Info(capitalize(stop) + until)
		}
		err = nil
	}
	if ferr := comments.Flush(); ferr != nil && err == nil {
		err = ferr
	}
	if perr := d.Print(out); perr != nil && err == nil {
		err = perr
	}
	if len(d.Records()) == 0 && !stopped {
		p.Info("Nothing would be written")
	}
	unchecked := d.Unchecked()
	clusters := make([]string, 0, len(unchecked))
	for cl := range unchecked {
		clusters = append(clusters, cl)
	}
	sort.Strings(clusters)
	for _, cl := range clusters {
		p.Warn(fmt.Sprintf("%s: %d write(s) not checked by the server, because an object they need would be created by this run: %s",
			cl, len(unchecked[cl]), strings.Join(unchecked[cl], ", ")))
	}
	return err
}

// Stops tells whether err is nothing but dry-run stops (the domain's member.DryRunStop, recognised by its
// method so that this package needs no domain type), wrapped or joined, and returns what each says. An
// error that also carries a real failure (renew --all where one provider is missing, a sandbox refusal
// beside a stop) is not a stop: it keeps its exit code.
func Stops(err error) ([]string, bool) {
	if err == nil {
		return nil, false
	}
	if stop, ok := err.(interface{ DryRunStop() string }); ok { //nolint:errorlint // a node of the tree, not its leaves (see below)
		return []string{stop.DryRunStop()}, true
	}
	switch u := err.(type) { //nolint:errorlint // this walks the tree itself: every leaf must be a stop
	case interface{ Unwrap() error }:
		return Stops(u.Unwrap())
	case interface{ Unwrap() []error }:
		var all []string
		for _, e := range u.Unwrap() {
			if e == nil {
				continue
			}
			stops, ok := Stops(e)
			if !ok {
				return nil, false
			}
			all = append(all, stops...)
		}
		return all, len(all) > 0
	}
	return nil, false
}

// capitalize makes a message's first letter upper case.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

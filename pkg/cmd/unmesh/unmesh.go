// Package unmesh implements `kubectl federate unmesh`.
package unmesh

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/mesh"
	"github.com/federate-dev/kubectl-federate/pkg/lifecycle"
)

// Options are the flags of `unmesh`.
type Options struct {
	Mesh           flags.MeshFlags
	IgnoreNotFound bool

	f       *cmdutil.Factory
	members []*lifecycle.MeshMember
	cmdutil.Streams
}

// NewCmd returns the `unmesh` command.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &Options{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "unmesh (--kubeconfigs A,B,C... | --contexts A,B,C...) [--parallel N]",
		Short: "Remove every pairing between N clusters, in both directions",
		Long: cmdutil.LongDesc(`
			Undo "mesh": remove the pairing of every directed pair of the named clusters, as
			"unauthenticate" does (both sides, sandboxes included), --parallel at a time. A pair removed
			before reads "already removed"; a pair never paired reads "not found". A table on stdout;
			exit 1 if any pair failed or was not found (--ignore-not-found: only if one failed).`),
		Example: cmdutil.Examples(`
			kubectl federate unmesh --kubeconfigs a.kubeconfig,b.kubeconfig,c.kubeconfig,d.kubeconfig`),
	}, o)
	o.Mesh.AddFlags(cmd)
	flags.IgnoreNotFound(cmd, &o.IgnoreNotFound)
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete builds a connection per cluster.
func (o *Options) Complete(_ *cobra.Command, _ []string) error {
	if err := o.Mesh.Validate(); err != nil {
		return cmdutil.Usage(err)
	}
	var err error
	o.members, err = o.Mesh.Members(o.f, o.Streams)
	return err
}

// Validate checks the flags.
func (o *Options) Validate() error { return o.Mesh.Validate() }

// Run removes every directed pairing.
func (o *Options) Run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, o.Mesh.Timeout)
	defer cancel()
	start := time.Now()
	printer := o.f.Printer(o.Streams)
	board := printer.Board()
	onStart, onPair := mesh.Progress(board)
	results, err := lifecycle.Unmesh(ctx, o.members, lifecycle.MeshOptions{Parallel: o.Mesh.Parallel, OnStart: onStart, OnPair: onPair})
	board.Stop()
	if results != nil {
		if perr := mesh.Table(o.Out, results); perr != nil {
			return perr
		}
		printer.Info(fmt.Sprintf("%d directed pairs in %s", len(results), time.Since(start).Round(time.Millisecond)))
	}
	if err == nil && !o.IgnoreNotFound {
		var missing []string
		for _, r := range results {
			if r.Result == lifecycle.PairNotFound {
				missing = append(missing, r.Consumer+" -> "+r.Provider)
			}
		}
		if len(missing) > 0 {
			err = fmt.Errorf("%d pair(s) not found, never paired: %s (--ignore-not-found to accept that)", len(missing), strings.Join(missing, ", "))
		}
	}
	return cmdutil.WithDeadline(ctx, err, "--timeout "+o.Mesh.Timeout.String())
}

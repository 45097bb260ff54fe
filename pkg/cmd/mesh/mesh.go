// Package mesh implements `kubectl federate mesh`, and the result table that unmesh shares.
package mesh

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/lifecycle"
	"github.com/federate-dev/kubectl-federate/pkg/output"
)

// Options are the flags of `mesh`.
type Options struct {
	Mesh     flags.MeshFlags
	Issuance flags.IssuanceFlags

	f       *cmdutil.Factory
	members []*lifecycle.MeshMember
	cmdutil.Streams
}

// NewCmd returns the `mesh` command.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &Options{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "mesh (--kubeconfigs A,B,C... | --contexts A,B,C...) [--parallel N]",
		Short: "Pair N clusters in every direction, each a consumer of every other",
		Long: cmdutil.LongDesc(`
			Pair every named cluster with every other, in both directions: N clusters make N*(N-1)
			directed pairings, each what "authenticate" makes (its own sandbox, its own identity), run
			--parallel at a time. Each cluster is initialized once first (with the ID it has, or a new one).

			On a terminal, a live line per running pair (its time so far); each pair's outcome as a line on
			stderr as it ends; at the end, a table on stdout (pair, result, time).
			It exits 1 if any pair failed. Running it again finishes only what is missing: a pair whose
			identity is in place and valid for more than a day is kept. "unmesh" undoes it.`),
		Example: cmdutil.Examples(`
			# Four clusters, one kubeconfig each
			kubectl federate mesh --kubeconfigs a.kubeconfig,b.kubeconfig,c.kubeconfig,d.kubeconfig

			# Three contexts of one kubeconfig, six pairs at once
			kubectl federate mesh --contexts east,west,north --parallel 6`),
	}, o)
	o.Mesh.AddFlags(cmd)
	o.Issuance.AddFlags(cmd)
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete builds a connection per cluster.
func (o *Options) Complete(_ *cobra.Command, _ []string) error {
	if err := o.Mesh.Validate(); err != nil {
		return cmdutil.Usage(err) // before any connection is built
	}
	var err error
	o.members, err = o.Mesh.Members(o.f, o.Streams)
	return err
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if err := o.Mesh.Validate(); err != nil {
		return err
	}
	return o.Issuance.Validate()
}

// Run pairs every directed pair.
func (o *Options) Run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, o.Mesh.Timeout)
	defer cancel()
	start := time.Now()
	printer := o.f.Printer(o.Streams)
	board := printer.Board()
	onStart, onPair := Progress(board)
	results, err := lifecycle.Mesh(ctx, o.members, lifecycle.MeshOptions{Parallel: o.Mesh.Parallel, OnStart: onStart, OnPair: onPair, RenewBefore: 24 * time.Hour,
		Issue: lifecycle.AuthenticateOptions{Expiration: o.Issuance.Expiration, ClusterRole: o.Issuance.ClusterRole, Sandbox: o.Issuance.RawSandbox,
			Credential: o.Issuance.Credential.String(), SignerTimeout: o.Issuance.SignerTimeout,
			MaxExpiration: o.Issuance.MaxExpiration, Given: o.Issuance.Given()}})
	board.Stop()
	if results != nil {
		if perr := Table(o.Out, results); perr != nil {
			return perr
		}
		printer.Info(fmt.Sprintf("%d directed pairs in %s", len(results), time.Since(start).Round(time.Millisecond)))
	}
	return cmdutil.WithDeadline(ctx, err, "--timeout "+o.Mesh.Timeout.String())
}

// Progress shows each pair on the board while it runs (a live line on a terminal) and its outcome as it
// ends, one line each; both are safe from the pairs' goroutines.
func Progress(b *output.Board) (onStart func(consumer, provider string), onPair func(lifecycle.PairResult)) {
	task := func(c, p string) string { return c + " -> " + p }
	return func(c, p string) { b.Start(task(c, p)) }, func(r lifecycle.PairResult) {
		line := fmt.Sprintf("%s: %s (%s)", task(r.Consumer, r.Provider), r.Result, r.Wall.Round(time.Millisecond))
		if r.Err != nil {
			line += ": " + r.Err.Error()
		}
		b.Done(task(r.Consumer, r.Provider), line, r.Err != nil)
	}
}

// Table prints the results: pair, result, time.
func Table(out io.Writer, results []lifecycle.PairResult) error {
	w := printers.NewTable(out, "CONSUMER", "PROVIDER", "RESULT", "TIME")
	for _, r := range results {
		w.Row(r.Consumer, r.Provider, r.Result, r.Wall.Round(time.Millisecond).String())
	}
	return w.Flush()
}

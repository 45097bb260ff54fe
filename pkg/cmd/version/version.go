// Package version implements `kubectl federate version`.
package version

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/views"
	"github.com/federate-dev/kubectl-federate/pkg/version"
)

// Options are the flags of `version`.
type Options struct {
	Output *printers.Flags
	cmdutil.Streams
}

// NewCmd returns the `version` command.
func NewCmd(streams cmdutil.Streams) *cobra.Command {
	o := &Options{Streams: streams}
	cmd := cmdutil.Wire(nil, &cobra.Command{
		Use:   "version",
		Short: "Print the version of kubectl federate",
		Long:  "Print the version, commit and build date of this kubectl federate binary.",
		Example: cmdutil.Examples(`
			# Print the version
			kubectl federate version

			# Print it as JSON, for scripts
			kubectl federate version -o json`),
	}, o)
	o.Output = printers.AddFlags(cmd, "", "one line")
	return cmd
}

// Complete has nothing to resolve: version talks to no cluster.
func (o *Options) Complete(_ *cobra.Command, _ []string) error { return nil }

// Validate has nothing to check: -o is checked when parsed.
func (o *Options) Validate() error { return nil }

// Run prints the version.
func (o *Options) Run(context.Context) error {
	info := version.Get()
	if !o.Output.Human() {
		obj, err := views.Object(views.KindVersion, "kubectl-federate", nil, info)
		if err != nil {
			return err
		}
		return o.Output.Print(o.Out, obj)
	}
	_, err := fmt.Fprintf(o.Out, "kubectl-federate version %s (commit %s, built %s, %s, %s)\n",
		info.Version, info.GitCommit, info.BuildDate, info.GoVersion, info.Platform)
	return err
}

// Package version implements `kubectl federate version`.
package version

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/util"
	"github.com/federate-dev/kubectl-federate/pkg/version"
)

// Options are the flags of `version`.
type Options struct {
	Output *util.OutputFormat
	util.Streams
}

// NewOptions returns Options with defaults.
func NewOptions(streams util.Streams) *Options {
	return &Options{Output: util.NewOutputFormat("json", "yaml"), Streams: streams}
}

// NewCmd returns the `version` command.
func NewCmd(streams util.Streams) *cobra.Command {
	o := NewOptions(streams)
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of kubectl federate",
		Long:  "Print the version, commit and build date of this kubectl federate binary.",
		Example: util.Examples(`
			# Print the version
			kubectl federate version

			# Print it as JSON, for scripts
			kubectl federate version -o json`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true
			return o.Run()
		},
	}
	cmd.Flags().VarP(o.Output, "output", "o", "Output format. One of: (json, yaml)")
	_ = cmd.RegisterFlagCompletionFunc("output", util.CompleteValues(o.Output.Allowed()))
	return cmd
}

// Run prints the version.
func (o *Options) Run() error {
	info := version.Get()
	if o.Output.Value != "" {
		return util.Print(o.Out, o.Output.Value, info)
	}
	_, err := fmt.Fprintf(o.Out, "kubectl-federate version %s (commit %s, built %s, %s, %s)\n",
		info.Version, info.GitCommit, info.BuildDate, info.GoVersion, info.Platform)
	return err
}

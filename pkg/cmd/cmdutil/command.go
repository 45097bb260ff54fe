package cmdutil

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
)

// Options is the one shape of every command, as in kubectl: the command's flags and arguments land in an
// Options value, which is completed, validated and run.
type Options interface {
	// Complete turns flags and arguments into what Run needs: files read, defaults resolved, clients
	// built. It sends no request to any cluster.
	Complete(cmd *cobra.Command, args []string) error
	// Validate checks every input without I/O. A command fails here, before it changes anything.
	Validate() error
	// Run does the work, under the command's context (interrupts, --timeout).
	Run(ctx context.Context) error
}

// Wire makes cmd run o, its whole life in one place: Complete, then Validate, then Run, then, for a command
// that takes --dry-run, the end of a dry run (what it would have written, printed after its own output;
// see dryrun.Recorder.Finish). cmd accepts no arguments unless it says otherwise. Validate's errors are
// usage errors: main points at the help. f is the command's factory, nil for a command that reaches no
// cluster.
func Wire(f *Factory, cmd *cobra.Command, o Options) *cobra.Command {
	if cmd.Args == nil {
		cmd.Args = NoArgs
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		err := run(cmd, args, o)
		if f != nil {
			err = f.finishDryRun(cmd, err)
		}
		return err
	}
	return cmd
}

func run(cmd *cobra.Command, args []string, o Options) error {
	if err := o.Complete(cmd, args); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return Usage(err)
	}
	return o.Run(cmd.Context())
}

// NoArgs refuses positional arguments as a usage error.
func NoArgs(cmd *cobra.Command, args []string) error { return Usage(cobra.NoArgs(cmd, args)) }

// SetupRoot routes every flag and argument mistake the framework finds to a UsageError, so that main can
// add the same pointer to the help whatever the command: parse errors through cobra's flag error function,
// missing required flags and broken flag groups through a check that runs before cobra's own.
func SetupRoot(root *cobra.Command) {
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		var own *FlagValueError
		if errors.As(err, &own) {
			return Usage(own.Err)
		}
		return Usage(err)
	})
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := cmd.ValidateRequiredFlags(); err != nil {
			return Usage(err)
		}
		return Usage(cmd.ValidateFlagGroups())
	}
}

// ExactArgs requires n positional arguments, named in the message (for example "NAME").
func ExactArgs(n int, names string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return UsageErrorf("%s: exactly %d argument(s) required, got %d", names, n, len(args))
		}
		return nil
	}
}

// MaximumArgs accepts at most n positional arguments, named in the message.
func MaximumArgs(n int, names string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > n {
			return UsageErrorf("%s: at most %d argument(s) accepted, got %d", names, n, len(args))
		}
		return nil
	}
}

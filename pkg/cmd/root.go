// Package cmd assembles the kubectl federate command tree.
package cmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/version"
	"github.com/federate-dev/kubectl-federate/pkg/output"
)

// NewRootCmd returns `kubectl federate` with every subcommand.
func NewRootCmd(streams genericiooptions.IOStreams) *cobra.Command {
	return NewRootCmdWithFactory(streams, cmdutil.NewFactory(streams))
}

// NewRootCmdFor is NewRootCmd for one command line: it builds only the commands named among args, and lists
// the others by name and description, which is all the root's help and cobra's command lookup read of them.
func NewRootCmdFor(streams genericiooptions.IOStreams, args []string) *cobra.Command {
	return newRoot(streams, cmdutil.NewFactory(streams), func(name string) bool { return slices.Contains(args, name) })
}

// NewRootCmdWithFactory is NewRootCmd connecting through f: a test factory runs every command against fake
// clusters.
func NewRootCmdWithFactory(streams genericiooptions.IOStreams, f *cmdutil.Factory) *cobra.Command {
	return newRoot(streams, f, func(string) bool { return true })
}

func newRoot(streams genericiooptions.IOStreams, f *cmdutil.Factory, built func(name string) bool) *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-federate",
		Short: "Give one cluster a limited, expiring identity on another",
		Long: cmdutil.LongDesc(`
			kubectl federate gives a consumer cluster a least-privilege, expiring client-certificate
			identity on a provider cluster, and takes it away again. It runs entirely on the client,
			through the administrators' kubeconfigs: no controller is installed on either cluster.

			Run "kubectl federate authenticate" when you hold both kubeconfigs, or the step-by-step
			commands (create nonce, generate tenant, generate identity, import identity) when each
			administrator holds only their own cluster.`),
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl federate"},
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	cmdutil.SetupRoot(root)
	// -v N, as kubectl's: client-go logs its requests through klog (6: each request, 8: bodies, 9: curl).
	verbosity := 0
	root.PersistentFlags().IntVarP(&verbosity, "v", "v", 0, "Log level of client-go's request logging on stderr, as kubectl's -v (6: each request and its answer, 8: bodies)")
	validate := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		klog.LogToStderr(false)
		if verbosity == 0 {
			// Without -v, client-go says nothing on its own (a throttled request's raw log line among
			// ours): stderr carries this command's lines only.
			klog.SetOutput(io.Discard)
			return validate(cmd, args)
		}
		if err := fs.Set("v", strconv.Itoa(verbosity)); err != nil {
			return cmdutil.Usage(fmt.Errorf("-v %d: %w", verbosity, err))
		}
		klog.SetOutput(streams.ErrOut)
		return validate(cmd, args)
	}
	// Flag descriptions wrap at HelpWidth, as kubectl's do, instead of running one line per flag however long.
	root.SetUsageFunc(usage)
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	f.Flags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().Var(&f.Color, "color", "When to use colour and spinners on stderr. One of: (auto, always, never); auto honours NO_COLOR and a non-terminal stderr")
	_ = root.RegisterFlagCompletionFunc("color", cmdutil.CompleteValues(output.ColorModes))
	// kubectl's --as, --as-group and --request-timeout are shown (an administrator acting as a less
	// privileged operator, a script bounding each request); the rest of kubectl's connection flags work
	// but stay out of every command's help.
	for _, name := range []string{"as-uid", "as-user-extra", "certificate-authority", "client-certificate", "client-key",
		"disable-compression", "insecure-skip-tls-verify", "namespace", "server", "tls-server-name", "token"} {
		if err := root.PersistentFlags().MarkHidden(name); err != nil {
			panic(err) // a name here that no flag has: a programming error the first test run shows
		}
	}
	root.AddCommand(version.NewCmd(streams))
	// During a dry run the commands' own stdout lines become YAML comments, and the objects the run
	// would have written follow as YAML documents (cmdutil.Wire ends each command so): stdout stays one
	// YAML stream.
	cmdStreams := streams
	cmdStreams.Out = f.Out()
	addCommands(root, f, cmdStreams, built)
	return root
}

// HelpWidth is the column at which help text wraps.
const HelpWidth = 120

// Execute runs the command line args (nil: the process's) and returns the exit code, having printed the
// error once, as "error: ...", with the pointer to the help for a usage error.
func Execute(ctx context.Context, root *cobra.Command, streams genericiooptions.IOStreams, args []string) int {
	if args != nil {
		root.SetArgs(args)
	}
	c, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	// A cluster that cannot be reached is said in the user's terms alone: which flag, which server, why.
	var conn *cmdutil.ConnectionError
	if errors.As(err, &conn) {
		err = conn
	}
	err = flags.NextStep(err)
	// One error line, whatever the error quotes (a request's target, a file's field): escaped.
	fmt.Fprintf(streams.ErrOut, "error: %s\n", output.Escape(err.Error()))
	var usage *cmdutil.UsageError
	// A command that cannot run (the root, a group) was given an unknown subcommand: a usage error too.
	if errors.As(err, &usage) || !c.Runnable() {
		fmt.Fprintf(streams.ErrOut, "See '%s -h' for help and examples\n", c.CommandPath())
	}
	return cmdutil.ExitCode(err)
}

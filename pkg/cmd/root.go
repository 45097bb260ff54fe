// Package cmd assembles the kubectl federate command tree.
package cmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"

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

// NewRootCmdWithFactory is NewRootCmd connecting through f: a test factory runs every command against fake
// clusters.
func NewRootCmdWithFactory(streams genericiooptions.IOStreams, f *cmdutil.Factory) *cobra.Command {
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
		if verbosity > 0 {
			fs := flag.NewFlagSet("klog", flag.ContinueOnError)
			klog.InitFlags(fs)
			if err := fs.Set("v", strconv.Itoa(verbosity)); err != nil {
				return cmdutil.Usage(fmt.Errorf("-v %d: %w", verbosity, err))
			}
			klog.SetOutput(streams.ErrOut)
			klog.LogToStderr(false)
		}
		return validate(cmd, args)
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	f.Flags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().Var(&f.Color, "color", "When to use colour and spinners on stderr. One of: (auto, always, never); auto honours NO_COLOR and a non-terminal stderr")
	_ = root.RegisterFlagCompletionFunc("color", cmdutil.CompleteValues(output.ColorModes))
	for _, name := range []string{"as", "as-group", "as-uid", "as-user-extra", "cache-dir", "certificate-authority",
		"client-certificate", "client-key", "disable-compression", "insecure-skip-tls-verify", "namespace", "password",
		"request-timeout", "server", "tls-server-name", "token", "username"} {
		_ = root.PersistentFlags().MarkHidden(name)
	}
	root.AddCommand(version.NewCmd(streams))
	// During a dry run the commands' own stdout lines become YAML comments, and the objects the run
	// would have written follow as YAML documents: stdout stays one YAML stream.
	cmdStreams := streams
	comments := f.NewCommentWriter(streams.Out)
	cmdStreams.Out = comments
	addCommands(root, f, cmdStreams)
	printDryRun(root, f, streams, comments)
	return root
}

// printDryRun makes every command that takes --dry-run end, whatever its outcome, by printing what the
// dry run would have written, and saying on stderr which writes the server could not check.
func printDryRun(c *cobra.Command, f *cmdutil.Factory, streams genericiooptions.IOStreams, comments *cmdutil.CommentWriter) {
	for _, sub := range c.Commands() {
		printDryRun(sub, f, streams, comments)
	}
	run := c.RunE
	if run == nil || c.Flags().Lookup("dry-run") == nil {
		return
	}
	c.RunE = func(cmd *cobra.Command, args []string) error {
		err := run(cmd, args)
		d := f.DryRun()
		if !d.Active() {
			return err
		}
		p := f.Printer(streams)
		// A dry run that reached a step needing what only a real write yields stops there, successfully.
		stops, stopped := dryRunStops(err)
		if stopped {
			until := "; stdout shows what the run would have written until then"
			if len(d.Records()) == 0 {
				until = "; nothing would have been written until then"
			}
			for _, stop := range stops {
				p.Info(cmdutil.Capitalize(stop) + until)
			}
			err = nil
		}
		if ferr := comments.Flush(); ferr != nil && err == nil {
			err = ferr
		}
		if perr := d.Print(streams.Out); perr != nil && err == nil {
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
}

// dryRunStops tells whether err is nothing but dry-run stops (see handshake.DryRunStop), wrapped or
// joined, and returns what each says. An error that also carries a real failure (renew --all where one
// provider is missing, a sandbox refusal beside a stop) is not a stop: it keeps its exit code.
func dryRunStops(err error) ([]string, bool) {
	if err == nil {
		return nil, false
	}
	if stop, ok := err.(interface{ DryRunStop() string }); ok { //nolint:errorlint // a node of the tree, not its leaves (see below)
		return []string{stop.DryRunStop()}, true
	}
	switch u := err.(type) { //nolint:errorlint // this walks the tree itself: every leaf must be a stop
	case interface{ Unwrap() error }:
		return dryRunStops(u.Unwrap())
	case interface{ Unwrap() []error }:
		var all []string
		for _, e := range u.Unwrap() {
			if e == nil {
				continue
			}
			stops, ok := dryRunStops(e)
			if !ok {
				return nil, false
			}
			all = append(all, stops...)
		}
		return all, len(all) > 0
	}
	return nil, false
}

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

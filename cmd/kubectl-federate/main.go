// Command kubectl-federate is the kubectl federate plugin.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // OIDC and other auth providers named in kubeconfigs

	"github.com/federate-dev/kubectl-federate/pkg/cmd"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
)

func main() {
	os.Exit(run())
}

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { // a second Ctrl-C exits at once
		<-ctx.Done()
		stop()
	}()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	root := cmd.NewRootCmd(streams)
	c, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(os.Stderr, "error: %v\n", err)
	var usage *cmdutil.UsageError
	// A command that cannot run (the root, a group) was given an unknown subcommand: a usage error too.
	if errors.As(err, &usage) || !c.Runnable() {
		fmt.Fprintf(os.Stderr, "See '%s -h' for help and examples\n", c.CommandPath())
	}
	return cmdutil.ExitCode(err)
}

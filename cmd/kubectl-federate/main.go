// Command kubectl-federate is the kubectl federate plugin.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // OIDC and other auth providers named in kubeconfigs

	"github.com/federate-dev/kubectl-federate/internal/startup"
	"github.com/federate-dev/kubectl-federate/pkg/cmd"
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
	// The collector keeps its start-up pace through --help and usage errors, which end before any command
	// runs; cobra calls its initializers only for a command that runs (internal/startup says why).
	cobra.OnInitialize(startup.Done)
	return cmd.Execute(ctx, cmd.NewRootCmdFor(streams, os.Args[1:]), streams, nil)
}

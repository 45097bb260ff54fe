// Command kubectl-federate is the kubectl federate plugin.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // OIDC and other auth providers named in kubeconfigs

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
	return cmd.Execute(ctx, cmd.NewRootCmd(streams), streams, nil)
}

// Package get implements `kubectl federate get`.
package get

import (
	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
)

// NewCmd returns the `get` group.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	cmd := cmdutil.NewGroup("get", "Print a federation value: a nonce, a kubeconfig, resource slices", "Print a federation value stored on this cluster, for pipes and scripts.")
	cmd.AddCommand(NewCmdNonce(f, streams), NewCmdKubeconfig(f, streams), NewCmdResourceSlices(f, streams), NewCmdAuthenticator(f, streams))
	return cmd
}

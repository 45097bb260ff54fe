// Package create implements `kubectl federate create`.
package create

import (
	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
)

// NewCmd returns the `create` group.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	cmd := cmdutil.NewGroup("create", "Create a federation resource: a nonce, a resource slice, a resource slice class", "Create a federation resource on this cluster.")
	cmd.AddCommand(NewCmdNonce(f, streams), NewCmdResourceSlice(f, streams), NewCmdResourceSliceClass(f, streams))
	return cmd
}

// Package generate implements `kubectl federate generate`.
package generate

import (
	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
)

// NewCmd returns the `generate` group.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	cmd := cmdutil.NewGroup("generate", "Generate a document for the other cluster's administrator: a tenant or an identity",
		"Generate a document to hand to the other cluster's administrator. Documents carry no secret.")
	cmd.AddCommand(NewCmdTenant(f, streams), NewCmdIdentity(f, streams))
	return cmd
}

// Package uncordon implements `kubectl federate uncordon`.
package uncordon

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cordon"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/lifecycle"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// NewCmd returns the `uncordon` group.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	cmd := cmdutil.NewGroup("uncordon", "Let a cordoned consumer start workloads again: a tenant",
		"Lift a cordon: the consumer cluster may start workloads on this (provider) cluster again.")
	cmd.AddCommand(cordon.NewTenantCmd(f, streams, cordon.TenantVerb{
		Use:   "tenant --remote-cluster-id CONSUMER",
		Short: "Let a cordoned consumer start workloads again (provider side)",
		Long: `
			Lift "cordon tenant" (or the cordon that "drain tenant" leaves): the consumer CONSUMER may create
			pods and workloads again in its tenant namespace and every namespace granted to it. Safe to run
			on a consumer that is not cordoned.`,
		Example: `
			# Let the consumer "edge-1" start workloads again
			kubectl federate uncordon tenant --remote-cluster-id edge-1`,
		Run: func(ctx context.Context, c *member.Cluster, id string) (handshake.Outcome, error) {
			return lifecycle.Uncordon(ctx, c, id)
		},
		Done:    "tenant/%s uncordoned",
		Already: "tenant/%s already uncordoned",
	}))
	return cmd
}

// Package drain implements `kubectl federate drain`.
package drain

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cordon"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/lifecycle"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// NewCmd returns the `drain` group.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	cmd := cmdutil.NewGroup("drain", "Cordon a consumer and delete what it runs here: a tenant",
		"Cordon a consumer cluster on this (provider) cluster and delete every workload and pod it runs.")
	cmd.AddCommand(cordon.NewTenantCmd(f, streams, cordon.TenantVerb{
		Use:   "tenant --remote-cluster-id CONSUMER",
		Short: "Cordon a consumer and delete every workload and pod it runs (provider side)",
		Long: `
			Cordon the consumer CONSUMER (see "cordon tenant"), then delete every workload (Deployments,
			StatefulSets, ReplicaSets, DaemonSets, Jobs, CronJobs, ReplicationControllers) and every pod in
			its tenant namespace and every namespace granted to it. Its identities keep their rights, so it
			can see what happened and clean up its other objects; it starts nothing until "uncordon tenant".
			To take its rights away too, use "revoke".`,
		Example: `
			# Empty the consumer "edge-1"'s namespaces before maintenance, then let it back
			kubectl federate drain tenant --remote-cluster-id edge-1
			kubectl federate uncordon tenant --remote-cluster-id edge-1`,
		Run: func(ctx context.Context, c *member.Cluster, id string) (handshake.Outcome, error) {
			return handshake.Done, lifecycle.Drain(ctx, c, id)
		},
		Done: "tenant/%s drained",
	}))
	return cmd
}

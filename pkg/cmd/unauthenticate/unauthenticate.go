// Package unauthenticate implements `kubectl federate unauthenticate`.
package unauthenticate

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/util"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// Options are the flags of `unauthenticate`.
type Options struct {
	KeepNamespaces  bool
	Force           bool
	ClusterID       string
	RemoteClusterID string
	Timeout         time.Duration

	local, remote *util.Factory
	pair          *util.Pair
	util.Streams
}

// NewCmd returns the `unauthenticate` command.
func NewCmd(f *util.Factory, streams util.Streams) *cobra.Command {
	o := &Options{Timeout: 2 * time.Minute, local: f, Streams: streams}
	cmd := &cobra.Command{
		Use:   "unauthenticate --kubeconfig CONSUMER --remote-kubeconfig PROVIDER [--keep-namespaces]",
		Short: "Revoke this (consumer) cluster's identity on a provider cluster and remove the pairing",
		Long: util.LongDesc(`
			Undo "authenticate" (or the manual flow) on both clusters. On the provider it revokes the
			consumer as "revoke" does (the RoleBinding first, so the consumer's certificate grants nothing
			from that moment, then every workload and pod in its sandbox and the tokens it could hold),
			then deletes the Tenant (and the pinned handshake key), any unused nonce, leftover CSRs and,
			unless --keep-namespaces, the sandbox namespace, waiting until it is gone. On the consumer it
			deletes the Identity, the kubeconfig Secret and any pending client key from federate-system.
			The other direction of a two-way pairing is not touched. Running it again succeeds and changes
			nothing.

			If either cluster cannot be reached, nothing is changed, unless --force: then the reachable
			side is cleaned, the command lists what it could not clean on the other side and exits 1,
			and a later run with both sides reachable finishes the job. Name the unreachable side's
			cluster ID with --cluster-id (consumer) or --remote-cluster-id (provider).`),
		Example: util.Examples(`
			# Remove the pairing between two clusters
			kubectl federate unauthenticate --kubeconfig consumer.kubeconfig --remote-kubeconfig provider.kubeconfig

			# The consumer cluster is gone for good: revoke it on the provider anyway
			kubectl federate unauthenticate --kubeconfig dead-consumer.kubeconfig --remote-kubeconfig provider.kubeconfig \
			  --force --cluster-id edge-1

			# Keep the provider's sandbox namespace and its data (its workloads are still stopped)
			kubectl federate unauthenticate --context edge-1 --remote-context gpu-farm --keep-namespaces`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Timeout <= 0 {
				return fmt.Errorf("--timeout %s: must be positive", o.Timeout)
			}
			for flag, id := range map[string]string{"--cluster-id": o.ClusterID, "--remote-cluster-id": o.RemoteClusterID} {
				if id != "" {
					if err := handshake.ValidateClusterID(flag, id); err != nil {
						return err
					}
				}
			}
			if err := o.Complete(); err != nil {
				return err
			}
			cmd.SilenceUsage = true
			return o.Run(cmd.Context())
		},
	}
	o.remote = util.AddRemoteFlags(cmd.Flags(), streams)
	cmd.Flags().BoolVar(&o.KeepNamespaces, "keep-namespaces", false, "Keep the provider's sandbox namespace and its data (workloads and pods are still deleted)")
	cmd.Flags().BoolVar(&o.Force, "force", false, "Clean the reachable side even if the other cannot be reached (then exit 1, listing what was left)")
	cmd.Flags().StringVar(&o.ClusterID, "cluster-id", "", "The consumer's cluster ID, needed with --force when the consumer is unreachable")
	cmd.Flags().StringVar(&o.RemoteClusterID, "remote-cluster-id", "", "The provider's cluster ID, needed with --force when the provider is unreachable")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "How long the removal may take before it is abandoned (exit code 124)")
	return cmd
}

// Complete builds both clusters' clients.
func (o *Options) Complete() error {
	var err error
	o.pair, err = util.NewPair(o.local, o.remote, o.Streams)
	return err
}

// Run removes the pairing.
func (o *Options) Run(ctx context.Context) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if err := handshake.Unauthenticate(ctx, o.pair.Consumer, o.pair.Provider, handshake.UnauthenticateOptions{
		KeepNamespaces: o.KeepNamespaces, Force: o.Force, ConsumerID: o.ClusterID, ProviderID: o.RemoteClusterID,
	}); err != nil {
		return util.WithDeadline(ctx, err, "--timeout "+o.Timeout.String())
	}
	o.pair.Printer.Info(util.Summary(o.local, o.remote, time.Since(start).Round(time.Millisecond)))
	return nil
}

package create

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/util"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// NonceOptions are the flags of `create nonce`.
type NonceOptions struct {
	RemoteClusterID string
	TTL             time.Duration

	cluster *handshake.Cluster
	util.Streams
}

// NewCmdNonce returns `create nonce`.
func NewCmdNonce(f *util.Factory, streams util.Streams) *cobra.Command {
	o := &NonceOptions{TTL: handshake.DefaultNonceTTL, Streams: streams}
	cmd := &cobra.Command{
		Use:   "nonce --remote-cluster-id CONSUMER [--ttl 1h]",
		Short: "Create a single-use nonce for a consumer cluster (provider side)",
		Long: util.LongDesc(`
			Create a single-use nonce that entitles the consumer cluster CONSUMER to request one identity
			on this (provider) cluster, and the consumer's tenant namespace federate-tenant-CONSUMER.

			The nonce is 32 random bytes, expires after --ttl and is consumed when an identity is issued.
			It is stored in the federate-system namespace, which no issued identity can read. Hand it to
			the consumer's administrator over a channel you trust (print it with "get nonce"): whoever
			holds it can request the consumer's identity until it is used or expires.

			If an unused, unexpired nonce for CONSUMER exists, it is kept. The cluster is initialized
			first if it never was.`),
		Example: util.Examples(`
			# Create a nonce for the consumer cluster "edge-1", valid for 30 minutes, and print it
			kubectl federate create nonce --remote-cluster-id edge-1 --ttl 30m
			kubectl federate get nonce --remote-cluster-id edge-1 > nonce.txt`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(f); err != nil {
				return err
			}
			cmd.SilenceUsage = true
			return o.Run(cmd)
		},
	}
	util.RemoteClusterIDFlag(f, cmd, &o.RemoteClusterID, "The ID of the consumer cluster the nonce is for")
	cmd.Flags().DurationVar(&o.TTL, "ttl", o.TTL, "How long the nonce stays valid if unused")
	return cmd
}

// Complete builds the cluster client.
func (o *NonceOptions) Complete(f *util.Factory) error {
	var err error
	o.cluster, _, err = f.Cluster(f.Printer(o.Streams))
	return err
}

// Validate checks the flags.
func (o *NonceOptions) Validate() error {
	if err := handshake.ValidateClusterID("--remote-cluster-id", o.RemoteClusterID); err != nil {
		return err
	}
	if o.TTL < time.Minute || o.TTL > 7*24*time.Hour {
		return fmt.Errorf("--ttl %s: must be between 1m and 168h", o.TTL)
	}
	return nil
}

// Run creates the nonce.
func (o *NonceOptions) Run(cmd *cobra.Command) error {
	n, created, err := o.cluster.CreateNonce(cmd.Context(), o.RemoteClusterID, o.TTL)
	if err != nil {
		return err
	}
	verb := "created"
	if !created {
		verb = "unchanged"
	}
	_, err = fmt.Fprintf(o.Out, "nonce/%s %s (expires %s)\n", o.RemoteClusterID, verb, n.ExpiresAt.UTC().Format(time.RFC3339))
	return err
}

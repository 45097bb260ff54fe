package create

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// NonceOptions are the flags of `create nonce`.
type NonceOptions struct {
	RemoteClusterID string
	TTL             time.Duration

	f       *cmdutil.Factory
	cluster *handshake.Cluster
	cmdutil.Streams
}

// NewCmdNonce returns `create nonce`.
func NewCmdNonce(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &NonceOptions{TTL: handshake.DefaultNonceTTL, f: f, Streams: streams}
	cmd := cmdutil.Wire(&cobra.Command{
		Use:   "nonce --remote-cluster-id CONSUMER [--ttl 1h]",
		Short: "Create a single-use nonce for a consumer cluster (provider side)",
		Long: cmdutil.LongDesc(`
			Create a single-use nonce that entitles the consumer cluster CONSUMER to request one identity
			on this (provider) cluster. Nothing else is created: the consumer's sandbox namespace
			federate-tenant-CONSUMER is created when its identity is issued.

			The nonce is 32 random bytes, expires after --ttl and is consumed when an identity is issued.
			It is stored in the federate-system namespace, which no issued identity can read. Hand it to
			the consumer's administrator over a channel you trust (print it with "get nonce"): whoever
			holds it can request the consumer's identity until it is used or expires.

			If an unused, unexpired nonce for CONSUMER exists, it is kept. Expired nonces, of any
			consumer, are removed, judged by the API server's clock. The cluster is initialized first if
			it never was.`),
		Example: cmdutil.Examples(`
			# Create a nonce for the consumer cluster "edge-1", valid for 30 minutes, and print it
			kubectl federate create nonce --remote-cluster-id edge-1 --ttl 30m
			kubectl federate get nonce --remote-cluster-id edge-1 > nonce.txt`),
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the consumer cluster the nonce is for")
	cmdutil.DurationFlag(cmd.Flags(), &o.TTL, "ttl", o.TTL, time.Minute, 168*time.Hour, "How long the nonce stays valid if unused")
	return cmd
}

// Complete builds the cluster client.
func (o *NonceOptions) Complete(_ *cobra.Command, _ []string) error {
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
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
func (o *NonceOptions) Run(ctx context.Context) error {
	n, created, err := o.cluster.CreateNonce(ctx, o.RemoteClusterID, o.TTL)
	if err != nil {
		return flags.RemoteIDError(err)
	}
	verb := "created"
	if !created {
		verb = "unchanged"
	}
	_, err = fmt.Fprintf(o.Out, "nonce/%s %s (expires %s)\n", o.RemoteClusterID, verb, n.ExpiresAt.UTC().Format(time.RFC3339))
	return err
}

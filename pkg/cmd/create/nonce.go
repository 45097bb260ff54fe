package create

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
)

// NonceOptions are the flags of `create nonce`.
type NonceOptions struct {
	ClusterID       string
	RemoteClusterID string
	TTL             time.Duration
	ttlGiven        bool
	Output          *printers.NameFlag

	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewCmdNonce returns `create nonce`.
func NewCmdNonce(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &NonceOptions{TTL: handshake.DefaultNonceTTL, f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "nonce --remote-cluster-id CONSUMER [--cluster-id PROVIDER] [--ttl 1h]",
		Short: "Create a single-use nonce for a consumer cluster (provider side)",
		Long: cmdutil.LongDesc(`
			Create a single-use nonce that entitles the consumer cluster CONSUMER to request one identity
			on this (provider) cluster. Nothing else is created: the consumer's sandbox namespace
			federate-tenant-CONSUMER is created when its identity is issued.

			The nonce is 32 random bytes, expires after --ttl (from 1m to 168h, default 1h) and is
			consumed when an identity is issued. It is stored in the federate-system namespace, which no
			issued identity can read. Hand it to the consumer's administrator over a channel you trust
			(print it with "get nonce", which adds this cluster's ID and CONSUMER): whoever holds it can
			request the consumer's identity until it is used or expires.

			On a cluster never initialized, --cluster-id names this cluster and initializes it (see
			"kubectl federate init"); without it the command refuses rather than derive an ID the
			consumer does not expect. On an initialized cluster --cluster-id must be its ID.

			If an unused, unexpired nonce for CONSUMER exists, it is kept. Expired nonces, of any
			consumer, are removed, judged by the API server's clock.`),
		Example: cmdutil.Examples(`
			# On a new provider "gpu-farm": a nonce for the consumer cluster "edge-1", valid for 30 minutes
			kubectl federate create nonce --cluster-id gpu-farm --remote-cluster-id edge-1 --ttl 30m
			kubectl federate get nonce --remote-cluster-id edge-1 > nonce.txt`),
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the consumer cluster the nonce is for")
	flags.ClusterIDVar(cmd.Flags(), &o.ClusterID, "cluster-id", "The ID of this (provider) cluster: initializes a cluster never initialized with it, must match an initialized one")
	cmdutil.DurationFlag(cmd.Flags(), &o.TTL, "ttl", o.TTL, time.Minute, 168*time.Hour, "How long the nonce stays valid if unused")
	o.Output = printers.AddNameFlag(cmd, "one line")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete builds the cluster client.
func (o *NonceOptions) Complete(cmd *cobra.Command, _ []string) error {
	o.ttlGiven = cmd.Flags().Changed("ttl")
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the flags.
func (o *NonceOptions) Validate() error {
	if o.ClusterID != "" {
		if o.ClusterID == o.RemoteClusterID {
			return fmt.Errorf("--cluster-id and --remote-cluster-id: must differ, both are %q", o.ClusterID)
		}
	}
	if o.TTL < time.Minute || o.TTL > 7*24*time.Hour {
		return fmt.Errorf("--ttl %s: must be between 1m and 168h", o.TTL)
	}
	return nil
}

// Run creates the nonce.
func (o *NonceOptions) Run(ctx context.Context) error {
	n, created, err := handshake.CreateNonce(ctx, o.cluster, handshake.NonceOptions{ClusterID: o.ClusterID, ConsumerID: o.RemoteClusterID, TTL: o.TTL})
	var conflict *member.IDConflictError
	switch {
	case errors.Is(err, member.ErrNoClusterID):
		// The nonce carries this cluster's ID to the consumer: it must be the one its administrator chose.
		return fmt.Errorf("%w: name this cluster with --cluster-id (the consumer will know it by that ID), or run kubectl federate init --cluster-id ID first", err)
	case errors.As(err, &conflict):
		return fmt.Errorf("--cluster-id: %w", err)
	case err != nil:
		return flags.RemoteIDError(err)
	}
	verb := "created"
	if !created {
		verb = "unchanged"
		if o.ttlGiven {
			// The nonce may be with the consumer already: its life is not lengthened or cut behind its back.
			o.f.Printer(o.Streams).Warn(fmt.Sprintf("An unused nonce for %s was kept, as it was: it expires %s, not after the --ttl %s given; "+
				"for another expiry, delete it (kubectl federate delete nonce --remote-cluster-id %s) and create it again",
				o.RemoteClusterID, n.ExpiresAt.UTC().Format(time.RFC3339), cmdutil.FormatDuration(o.TTL), o.RemoteClusterID))
		}
	}
	if o.Output.Name() { // the Secret that holds it, in federate-system
		return o.Output.Print(o.Out, printers.Ref{APIVersion: "v1", Kind: "Secret", Name: nonce.SecretName(o.RemoteClusterID)})
	}
	_, err = fmt.Fprintf(o.Out, "nonce/%s %s (expires %s)\n", o.RemoteClusterID, verb, n.ExpiresAt.UTC().Format(time.RFC3339))
	return err
}

// Package initialize implements `kubectl federate init`.
package initialize

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// Options are the flags of `init`.
type Options struct {
	ClusterID string

	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewCmd returns the `init` command.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &Options{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "init [--cluster-id ID]",
		Short: "Prepare this cluster for kubectl federate",
		Long: cmdutil.LongDesc(`
			Prepare this cluster for kubectl federate, once: create the federate-system namespace holding
			the cluster ID and the cluster's Ed25519 handshake key pair, install the Tenant and Identity
			CRDs, the federate-tenant ClusterRole that tenants are bound to in their namespace, and the
			sandbox's admission policies with their bindings.

			The cluster ID names this cluster to its peers and must be a DNS label of at most 47
			characters. Without --cluster-id it is "cluster-" followed by the first 8 characters of the
			kube-system namespace's UID. The other commands initialize a cluster implicitly when needed.
			Re-running init puts back any sandbox admission policy, binding or the federate-tenant
			ClusterRole that was deleted or changed (with a warning for each), and changes nothing else;
			asking for a different ID on an initialized cluster fails.`),
		Example: cmdutil.Examples(`
			# Initialize the current cluster with a chosen ID
			kubectl federate init --cluster-id eu-west-prod

			# Initialize it with the default ID, and show the result
			kubectl federate init && kubectl federate info`),
	}, o)
	flags.ClusterIDVar(cmd.Flags(), &o.ClusterID, "cluster-id", "The ID of this cluster, a DNS label (default: derived from the kube-system namespace UID)")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete builds the cluster client.
func (o *Options) Complete(_ *cobra.Command, _ []string) error {
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the flags.
func (o *Options) Validate() error {
	return nil // --cluster-id is checked when parsed
}

// Run initializes the cluster.
func (o *Options) Run(ctx context.Context) error {
	self, created, err := sandbox.InitCreated(ctx, o.cluster, o.ClusterID)
	var conflict *member.IDConflictError
	if errors.As(err, &conflict) {
		return fmt.Errorf("--cluster-id: %w", err)
	}
	if err != nil {
		return err
	}
	if !created {
		o.cluster.Reporter().Info(fmt.Sprintf("Cluster %q already initialized", self.ClusterID))
	}
	_, err = fmt.Fprintf(o.Out, "cluster/%s initialized\n", self.ClusterID)
	return err
}

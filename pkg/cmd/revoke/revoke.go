// Package revoke implements `kubectl federate revoke`.
package revoke

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/lifecycle"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Options are the flags of `revoke`.
type Options struct {
	RemoteClusterID string
	Timeout         time.Duration
	IgnoreNotFound  bool
	Output          *printers.NameFlag

	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewCmd returns the `revoke` command.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &Options{Timeout: flags.DefaultTimeout, f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "revoke --remote-cluster-id CONSUMER | revoke namespace NAME --remote-cluster-id CONSUMER",
		Short: "Take a consumer's rights away at once and stop what it runs (provider side)",
		Long: cmdutil.LongDesc(`
			Revoke the consumer cluster CONSUMER on this (provider) cluster alone, for example when the
			consumer is compromised. The RoleBindings of its sandbox namespace federate-tenant-CONSUMER,
			of its resource slices' namespaces and of its extra namespaces are deleted first, then the
			ClusterRoles and ClusterRoleBindings of its identity-exchange credentials: from that
			moment its certificates are authorized for nothing more than any authenticated user. Then
			every workload and pod in those namespaces is deleted (their containers
			are killed, which ends open exec, attach and port-forward streams), Secrets of type
			kubernetes.io/service-account-token are deleted and the default ServiceAccount is replaced
			(tokens bound to the old one stop working), and the Tenant is marked Revoked.

			The namespaces, their data and the Tenant stay for inspection; "unauthenticate" (with --force
			if the consumer is gone) removes them. A later "authenticate" or "generate identity" issues
			a new identity into the same sandbox. Running revoke again succeeds, says "already revoked",
			and changes nothing. A consumer this cluster has no record of (no Tenant, live, revoked or
			removed) is an error, NotFound, exit 1, naming the consumers it has; --ignore-not-found makes
			that exit 0.`),
		Example: cmdutil.Examples(`
			# The consumer "edge-1" is compromised: revoke it now
			kubectl federate revoke --remote-cluster-id edge-1

			# Later, remove the pairing; with the consumer unreachable, this cleans the provider side only
			kubectl federate unauthenticate --kubeconfig edge-1.kubeconfig --remote-kubeconfig provider.kubeconfig \
			  --force --cluster-id edge-1`),
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the consumer cluster to revoke")
	cmdutil.TimeoutFlag(cmd.Flags(), &o.Timeout, o.Timeout, "the revocation")
	flags.IgnoreNotFound(cmd, &o.IgnoreNotFound)
	o.Output = printers.AddNameFlag(cmd, "one line")
	cmd.AddCommand(NewCmdNamespace(f, streams))
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
	return nil // --timeout is checked when parsed (cmdutil.TimeoutFlag)
}

// Run revokes the consumer.
func (o *Options) Run(ctx context.Context) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	self, err := o.cluster.Load(ctx)
	if err != nil {
		return cmdutil.WithDeadline(ctx, err, "--timeout "+o.Timeout.String())
	}
	if self.ClusterID == o.RemoteClusterID {
		return fmt.Errorf("--remote-cluster-id %q: %w", o.RemoteClusterID, member.ErrOwnID)
	}
	outcome, err := lifecycle.Revoke(ctx, o.cluster, o.RemoteClusterID)
	if o.IgnoreNotFound && errors.Is(err, handshake.ErrNotFound) {
		return nil
	}
	if err != nil {
		return cmdutil.WithDeadline(ctx, flags.NotFoundHint(err, "--remote-cluster-id"), "--timeout "+o.Timeout.String())
	}
	switch {
	case o.Output.Name():
		err = o.Output.Print(o.Out, printers.Ref{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.TenantKind, Name: o.RemoteClusterID})
	case outcome == handshake.Already:
		_, err = fmt.Fprintf(o.Out, "tenant.federate.dev/%s already revoked\n", o.RemoteClusterID)
	default:
		_, err = fmt.Fprintf(o.Out, "tenant.federate.dev/%s revoked in %s\n", o.RemoteClusterID, time.Since(start).Round(time.Millisecond))
	}
	if err != nil || outcome == handshake.Already {
		return err
	}
	if o.cluster.DryRun {
		return nil // nothing was unbound: no word on what a token may still do
	}
	if t, _ := handshake.FederatedTenant(ctx, o.cluster, o.RemoteClusterID); t != nil {
		o.cluster.Reporter().Info("The authenticator entry of issuer " + t.Spec.Federated.Issuer + " may stay in this cluster's authentication configuration: the user it maps the consumer's tokens to is bound to nothing now. A later authenticate issues under a new user and audience; kubectl federate unauthenticate prints the entry to remove")
	}
	return nil
}

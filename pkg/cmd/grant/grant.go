// Package grant implements `kubectl federate grant`.
package grant

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/views"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// NewCmd returns the `grant` group.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	cmd := cmdutil.NewGroup("grant", "Give a consumer more on this cluster: a namespace", "Give a consumer cluster more on this (provider) cluster.")
	cmd.AddCommand(NewCmdNamespace(f, streams))
	return cmd
}

// NamespaceOptions are the flags of `grant namespace`.
type NamespaceOptions struct {
	Name            string
	RemoteClusterID string
	PodSecurity     *cmdutil.Enum
	Quota           string
	Output          *printers.Flags

	f       *cmdutil.Factory
	cluster *member.Cluster
	sandbox *sandbox.Options
	quota   corev1.ResourceList
	changed bool
	cmdutil.Streams
}

// NewCmdNamespace returns `grant namespace`.
func NewCmdNamespace(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &NamespaceOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:     "namespace [NAME] --remote-cluster-id CONSUMER [--quota NAME=QTY,...]",
		Aliases: []string{"namespaces", "ns"},
		Short:   "Give a consumer one more namespace where its identity works, or list its requests (provider side)",
		Long: cmdutil.LongDesc(`
			Create the namespace NAME for the consumer cluster CONSUMER and bind its pairing's current
			identity there with the same ClusterRole as in its tenant namespace. NAME is a sandbox like
			the tenant namespace: Pod Security, ResourceQuota, LimitRange, the sandbox admission policy, a
			NetworkPolicy and a default ServiceAccount without token, with the tenant namespace's settings
			unless --pod-security says otherwise.

			Its quota is carved out of the consumer's total (the quota chosen at pairing): modest defaults
			(4 pods, 1 CPU, 2Gi of memory, ...; see docs/grants.md), which --quota overrides or extends, are
			taken from the tenant namespace's quota. A namespace that needs more than remains of the total
			is refused, with nothing created, and the error lists what remains.

			A NAME already in use by anything but an extra namespace of CONSUMER is refused, never adopted,
			and the consumer's request for it (if any) is answered Refused. Names starting with kube-,
			federate- or fs-, and "default", are reserved. Granting again converges.

			Renewing the pairing ("authenticate" again) moves the binding in every extra namespace to the
			new user; "revoke" removes it; "unauthenticate" deletes every extra namespace. Without NAME,
			the consumer's requests ("kubectl federate request namespace" on its side) and extra
			namespaces are listed.`),
		Example: cmdutil.Examples(`
			# See what the consumer "edge-1" asked for, then grant it the namespace "edge-1-ci"
			kubectl federate grant namespace --remote-cluster-id edge-1
			kubectl federate grant namespace edge-1-ci --remote-cluster-id edge-1

			# A namespace with more pods and CPU than the defaults, taken from the consumer's total
			kubectl federate grant namespace edge-1-batch --remote-cluster-id edge-1 --quota pods=8,requests.cpu=2,limits.cpu=4`),
		Args: cmdutil.MaximumArgs(1, "NAME"),
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the consumer cluster")
	cmd.ValidArgsFunction = flags.CompleteExtraNamespaces(f)
	o.PodSecurity = cmdutil.NewEnum("", sandbox.PodSecurityLevels...)
	cmdutil.AddEnumFlag(cmd, o.PodSecurity, "pod-security", "", "Pod Security level enforced in the namespace (default: the tenant namespace's)")
	cmd.Flags().StringVar(&o.Quota, "quota", "", "Hard limits of the namespace's ResourceQuota, over the grant defaults, as NAME=QUANTITY pairs; carved out of the consumer's total")
	o.Output = printers.AddFlags(cmd, "", "a table when listing")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads the name and builds the cluster client.
func (o *NamespaceOptions) Complete(cmd *cobra.Command, args []string) error {
	if len(args) == 1 {
		o.Name = args[0]
	}
	o.changed = cmd.Flags().Changed("pod-security") || cmd.Flags().Changed("quota")
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the flags.
func (o *NamespaceOptions) Validate() error {
	if o.Name == "" {
		if o.changed {
			return errors.New("NAME: is required with --pod-security or --quota")
		}
		return nil
	}
	if err := grants.ValidateExtraNamespace("NAME", o.Name); err != nil {
		return err
	}
	if !o.changed {
		return nil
	}
	var err error
	if o.quota, err = sandbox.ParseResourceList("--quota", o.Quota); err != nil {
		return err
	}
	if o.PodSecurity.String() == "" {
		return nil // the tenant namespace's guardrails
	}
	sb, err := sandbox.Options{PodSecurity: o.PodSecurity.String()}.Validate()
	if err != nil {
		return fmt.Errorf("--pod-security: %w", err)
	}
	o.sandbox = &sb
	return nil
}

// Run grants the namespace, or lists the requests.
func (o *NamespaceOptions) Run(ctx context.Context) error {
	if o.Name == "" {
		list, err := grants.ExtraNamespaces(ctx, o.cluster, o.RemoteClusterID, false)
		if err != nil {
			return err
		}
		return views.Namespaces(o.Out, o.Output, list)
	}
	if o.sandbox != nil && o.sandbox.PodSecurity == sandbox.PodSecurityPrivileged {
		o.cluster.Report.Warn("--pod-security privileged: the consumer may run privileged pods in " + o.Name + ", which means root on this cluster's nodes")
	}
	if err := grants.GrantNamespace(ctx, o.cluster, grants.GrantNamespaceOptions{ConsumerID: o.RemoteClusterID, Name: o.Name, Sandbox: o.sandbox, Quota: o.quota}); err != nil {
		return err
	}
	if o.Output == nil || o.Output.Human() {
		_, err := fmt.Fprintf(o.Out, "namespace/%s granted to %s\n", o.Name, o.RemoteClusterID)
		return err
	}
	// -o prints the extra namespace as granted, read back as a listing shows it, as kubectl create -o does.
	list, err := grants.ExtraNamespaces(ctx, o.cluster, o.RemoteClusterID, false)
	if err != nil {
		return err
	}
	for _, n := range list {
		if n.Namespace == o.Name {
			obj, err := views.ExtraNamespace(&n)
			if err != nil {
				return err
			}
			return o.Output.Print(o.Out, obj)
		}
	}
	return fmt.Errorf("namespace %s was granted but is not listed among consumer %q's extra namespaces", o.Name, o.RemoteClusterID)
}

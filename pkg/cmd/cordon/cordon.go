// Package cordon implements `kubectl federate cordon`, and the tenant command shape that uncordon and
// drain share with it.
package cordon

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/lifecycle"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// NewCmd returns the `cordon` group.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	cmd := cmdutil.NewGroup("cordon", "Stop a consumer from starting new workloads here: a tenant",
		"Keep a consumer cluster from starting new workloads on this (provider) cluster, while what it runs keeps running.")
	cmd.AddCommand(NewTenantCmd(f, streams, TenantVerb{
		Use:   "tenant --remote-cluster-id CONSUMER",
		Short: "Stop a consumer from starting new workloads; what runs keeps running (provider side)",
		Long: `
			Cordon the consumer CONSUMER in its tenant namespace and every namespace granted to it (resource
			slices, extra namespaces): from now on its identities may not create pods or workloads, nor
			scale a workload up. What runs keeps running, and its controllers keep replacing failed pods.
			The API server enforces it (admission policies bound to the namespaces labelled
			federate.dev/cordoned=true); the Tenant's status says cordoned, and "kubectl federate status"
			shows it. "uncordon tenant" lifts it; "drain tenant" also deletes what runs.`,
		Example: `
			# Stop the consumer "edge-1" from starting anything new
			kubectl federate cordon tenant --remote-cluster-id edge-1`,
		Run: func(ctx context.Context, c *member.Cluster, id string) (handshake.Outcome, error) {
			return lifecycle.Cordon(ctx, c, id)
		},
		Done:    "tenant/%s cordoned",
		Already: "tenant/%s already cordoned",
	}))
	return cmd
}

// TenantVerb is what a provider-side command on one consumer does.
type TenantVerb struct {
	Use, Short, Long, Example string
	Run                       func(ctx context.Context, c *member.Cluster, consumerID string) (handshake.Outcome, error)
	Done                      string // the result line on stdout, with the consumer ID
	Already                   string // the line when nothing had to change ("" : Done)
}

// TenantOptions are the arguments of `cordon tenant`, `uncordon tenant` and `drain tenant`.
type TenantOptions struct {
	ConsumerID      string
	RemoteClusterID string
	IgnoreNotFound  bool
	Output          *printers.NameFlag

	verb    TenantVerb
	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewTenantCmd returns a provider-side command on one consumer.
func NewTenantCmd(f *cmdutil.Factory, streams cmdutil.Streams, verb TenantVerb) *cobra.Command {
	o := &TenantOptions{f: f, Streams: streams, verb: verb}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:     verb.Use,
		Aliases: []string{"tenants"},
		Short:   verb.Short,
		Long: cmdutil.LongDesc(verb.Long + `

			The consumer is named by --remote-cluster-id, like every other command (the positional
			CONSUMER is accepted too). A consumer this cluster has no Tenant for is an error, NotFound,
			exit 1, naming the consumers it has (--ignore-not-found: exit 0).`),
		Example: cmdutil.Examples(verb.Example),
		Args:    cmdutil.MaximumArgs(1, "CONSUMER"),
		// CONSUMER completes as --remote-cluster-id does, from this cluster's tenants (never file names).
		ValidArgsFunction: flags.CompleteConsumers(f),
	}, o)
	flags.OptionalRemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the consumer cluster")
	flags.IgnoreNotFound(cmd, &o.IgnoreNotFound)
	o.Output = printers.AddNameFlag(cmd, "one line")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads the consumer ID and builds the cluster client.
func (o *TenantOptions) Complete(_ *cobra.Command, args []string) error {
	if len(args) == 1 {
		o.ConsumerID = args[0]
	}
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the consumer ID: given once, as --remote-cluster-id or CONSUMER.
func (o *TenantOptions) Validate() error {
	switch {
	case o.RemoteClusterID != "" && o.ConsumerID != "" && o.RemoteClusterID != o.ConsumerID:
		return fmt.Errorf("--remote-cluster-id %q and CONSUMER %q: name the consumer once", o.RemoteClusterID, o.ConsumerID)
	case o.RemoteClusterID == "" && o.ConsumerID == "":
		return fmt.Errorf("--remote-cluster-id: required, the ID of the consumer cluster")
	case o.RemoteClusterID == "":
		o.RemoteClusterID = o.ConsumerID
	}
	return member.ValidateClusterID("--remote-cluster-id", o.RemoteClusterID)
}

// Run applies the verb and prints its result line.
func (o *TenantOptions) Run(ctx context.Context) error {
	outcome, err := o.verb.Run(ctx, o.cluster, o.RemoteClusterID)
	if o.IgnoreNotFound && errors.Is(err, handshake.ErrNotFound) {
		return nil
	}
	if err != nil {
		return flags.NotFoundHint(err, "--remote-cluster-id")
	}
	if o.Output.Name() {
		return o.Output.Print(o.Out, printers.Ref{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.TenantKind, Name: o.RemoteClusterID})
	}
	line := o.verb.Done
	if outcome == handshake.Already && o.verb.Already != "" {
		line = o.verb.Already
	}
	_, err = fmt.Fprintf(o.Out, line+"\n", o.RemoteClusterID)
	return err
}

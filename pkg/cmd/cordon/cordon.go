// Package cordon implements `kubectl federate cordon`, and the tenant command shape that uncordon and
// drain share with it.
package cordon

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// NewCmd returns the `cordon` group.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	cmd := cmdutil.NewGroup("cordon", "Stop a consumer from starting new workloads here: a tenant",
		"Keep a consumer cluster from starting new workloads on this (provider) cluster, while what it runs keeps running.")
	cmd.AddCommand(NewTenantCmd(f, streams, TenantVerb{
		Use:   "tenant CONSUMER",
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
			kubectl federate cordon tenant edge-1`,
		Run:  func(ctx context.Context, c *handshake.Cluster, id string) error { return c.Cordon(ctx, id) },
		Done: "tenant/%s cordoned",
	}))
	return cmd
}

// TenantVerb is what a provider-side command on one consumer does.
type TenantVerb struct {
	Use, Short, Long, Example string
	Run                       func(ctx context.Context, c *handshake.Cluster, consumerID string) error
	Done                      string // the result line on stdout, with the consumer ID
}

// TenantOptions are the arguments of `cordon tenant`, `uncordon tenant` and `drain tenant`.
type TenantOptions struct {
	ConsumerID string

	verb    TenantVerb
	f       *cmdutil.Factory
	cluster *handshake.Cluster
	cmdutil.Streams
}

// NewTenantCmd returns a provider-side command on one consumer.
func NewTenantCmd(f *cmdutil.Factory, streams cmdutil.Streams, verb TenantVerb) *cobra.Command {
	o := &TenantOptions{f: f, Streams: streams, verb: verb}
	cmd := cmdutil.Wire(&cobra.Command{
		Use:     verb.Use,
		Aliases: []string{"tenants"},
		Short:   verb.Short,
		Long:    cmdutil.LongDesc(verb.Long),
		Example: cmdutil.Examples(verb.Example),
		Args:    cmdutil.ExactArgs(1, "CONSUMER"),
	}, o)
	return cmd
}

// Complete reads the consumer ID and builds the cluster client.
func (o *TenantOptions) Complete(_ *cobra.Command, args []string) error {
	o.ConsumerID = args[0]
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the consumer ID.
func (o *TenantOptions) Validate() error {
	return handshake.ValidateClusterID("CONSUMER", o.ConsumerID)
}

// Run applies the verb and prints its result line.
func (o *TenantOptions) Run(ctx context.Context) error {
	if err := o.verb.Run(ctx, o.cluster, o.ConsumerID); err != nil {
		return err
	}
	_, err := fmt.Fprintf(o.Out, o.verb.Done+"\n", o.ConsumerID)
	return err
}

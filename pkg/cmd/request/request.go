// Package request implements `kubectl federate request`.
package request

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/views"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// NewCmd returns the `request` group.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	cmd := cmdutil.NewGroup("request", "Ask a provider for more: a namespace, an exchange credential", "Ask a provider cluster for more, through the pairing's own identity.")
	cmd.AddCommand(NewCmdNamespace(f, streams), NewCmdExchange(f, streams))
	return cmd
}

// NamespaceOptions are the flags of `request namespace`.
type NamespaceOptions struct {
	Name            string
	RemoteClusterID string
	Reason          string
	Output          *printers.Flags
	Pair            *flags.PairFlags

	f       *cmdutil.Factory
	oneShot bool
	local   *member.Cluster
	pair    *flags.Pair
	cmdutil.Streams
}

// NewCmdNamespace returns `request namespace`.
func NewCmdNamespace(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &NamespaceOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:     "namespace [NAME] --remote-cluster-id PROVIDER [--reason TEXT]",
		Aliases: []string{"namespaces", "ns"},
		Short:   "Ask a provider for one more namespace where this cluster's identity works (consumer side)",
		Long: cmdutil.LongDesc(`
			Ask the provider cluster PROVIDER, which this cluster is paired with, for the namespace NAME:
			a NamespaceRequest is left in this cluster's tenant namespace on the provider, through the
			pairing's own kubeconfig. The provider's administrator sees it ("kubectl federate grant
			namespace --remote-cluster-id THIS") and grants it, after which the pairing's identity works in
			NAME as in the tenant namespace ("kubectl --namespace NAME ..." with "get kubeconfig").

			Without NAME, this cluster's requests and the provider's answers are listed. With
			--remote-kubeconfig or --remote-context (you hold the provider's administrator kubeconfig
			too), the namespace is requested and granted at once. Asking again changes nothing.`),
		Example: cmdutil.Examples(`
			# Ask the provider "gpu-farm" for the namespace "edge-1-ci", then see the answer
			kubectl federate request namespace edge-1-ci --remote-cluster-id gpu-farm --reason "CI runners"
			kubectl federate request namespace --remote-cluster-id gpu-farm

			# Request and grant at once, holding both kubeconfigs
			kubectl federate request namespace edge-1-ci --kubeconfig edge-1.kubeconfig --remote-kubeconfig gpu-farm.kubeconfig`),
		Args: cmdutil.MaximumArgs(1, "NAME"),
	}, o)
	flags.OptionalRemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the provider cluster (required unless --remote-kubeconfig or --remote-context names it)")
	cmd.Flags().StringVar(&o.Reason, "reason", "", "A note to the provider's administrator")
	o.Output = printers.AddFlags(cmd, "", "a table when listing")
	o.Pair = flags.AddPairFlags(cmd, f, streams, "the request")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads the name and builds the clients.
func (o *NamespaceOptions) Complete(cmd *cobra.Command, args []string) error {
	if len(args) == 1 {
		o.Name = args[0]
	}
	t, err := o.Pair.CompleteLocalOrPair(o.Streams)
	o.oneShot, o.pair, o.local = t.OneShot(), t.Pair, t.Local
	return err
}

// Validate checks the flags.
func (o *NamespaceOptions) Validate() error {
	if err := o.Pair.RequireRemoteID(o.RemoteClusterID); err != nil {
		return err
	}
	if o.Name != "" {
		if err := grants.ValidateExtraNamespace("NAME", o.Name); err != nil {
			return err
		}
	} else if o.oneShot {
		return errors.New("NAME: is required with --remote-kubeconfig or --remote-context")
	}
	if len(o.Reason) > 1024 {
		return fmt.Errorf("--reason: is %d characters, at most 1024 are kept", len(o.Reason))
	}
	return nil
}

// Run requests (and in one shot grants) the namespace, or lists the requests.
func (o *NamespaceOptions) Run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, o.Pair.Timeout)
	defer cancel()
	if o.oneShot {
		start := time.Now()
		if err := o.both(ctx); err != nil {
			return o.Pair.TimeoutError(ctx, flags.PairError(err))
		}
		o.pair.Printer.Info(o.Pair.Summary(time.Since(start)))
		_, err := fmt.Fprintf(o.Out, "namespace/%s granted\n", o.Name)
		return err
	}
	via, err := handshake.ViaPairing(ctx, o.local, o.RemoteClusterID)
	if err != nil {
		return err
	}
	if o.Name == "" {
		self, err := o.local.Load(ctx)
		if err != nil {
			return err
		}
		list, err := grants.ExtraNamespaces(ctx, via, self.ClusterID, true)
		if err != nil {
			return err
		}
		return views.Namespaces(o.Out, o.Output, list)
	}
	if err := grants.RequestNamespace(ctx, o.local, via, o.Name, o.Reason); err != nil {
		return cmdutil.WithDeadline(ctx, err, "--timeout "+o.Pair.Timeout.String())
	}
	_, err = fmt.Fprintf(o.Out, "namespacerequest/%s created\n", o.Name)
	return err
}

// both requests the namespace on the provider as its administrator and grants it.
func (o *NamespaceOptions) both(ctx context.Context) error {
	cSelf, err := o.pair.Consumer.Load(ctx)
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	pSelf, err := o.pair.Provider.Load(ctx)
	if err != nil {
		return fmt.Errorf("provider: %w", err)
	}
	if o.RemoteClusterID != "" && o.RemoteClusterID != pSelf.ClusterID {
		return fmt.Errorf("--remote-cluster-id %q: the provider is initialized with cluster ID %q", o.RemoteClusterID, pSelf.ClusterID)
	}
	if err := grants.RequestNamespace(ctx, o.pair.Consumer, o.pair.Provider, o.Name, o.Reason); err != nil {
		return fmt.Errorf("provider: %w", err)
	}
	if err := grants.GrantNamespace(ctx, o.pair.Provider, grants.GrantNamespaceOptions{ConsumerID: cSelf.ClusterID, Name: o.Name}); err != nil {
		return fmt.Errorf("provider: %w", err)
	}
	return nil
}

package get

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// KubeconfigOptions are the flags of `get kubeconfig`.
type KubeconfigOptions struct {
	RemoteClusterID string
	ResourceSlice   string
	Source          flags.ExchangeSource // kubeconfig_exchange.go
	Pair            *flags.PairFlags

	f       *cmdutil.Factory
	cluster *member.Cluster
	pair    *flags.Pair
	cmdutil.Streams
}

// NewCmdKubeconfig returns `get kubeconfig`.
func NewCmdKubeconfig(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &KubeconfigOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "kubeconfig --remote-cluster-id PROVIDER [--resource-slice NAME | --for-user USER]",
		Short: "Print the kubeconfig this cluster holds for a provider cluster (consumer side)",
		Long: cmdutil.LongDesc(`
			Print the kubeconfig stored by "import identity" (or "authenticate") in the Secret
			kubeconfig-controlplane-PROVIDER of the namespace federate-system. It holds the
			identity's private key: write it only where the key may live.

			With --for-user, the identity-exchange rules ("exchange apply") decide what USER gets: a
			privileged rule gives the pairing's kubeconfig; a static or external rule gives a credential
			of its own that may act as the rule's target on the provider and as nobody else. That
			credential needs the provider's consent: the first run leaves a request through the pairing
			and names the command its administrator runs ("allow exchange"); run again once it is
			allowed. With --remote-kubeconfig or --remote-context (you hold the provider's administrator
			kubeconfig too) it is issued at once. A valid credential is reused. --for-user is asserted by
			whoever runs this command with access to this cluster's federate-system.`),
		Example: cmdutil.Examples(`
			# Use the identity on the provider "gpu-farm" from this machine
			kubectl federate get kubeconfig --remote-cluster-id gpu-farm > gpu-farm.kubeconfig
			chmod 600 gpu-farm.kubeconfig
			kubectl --kubeconfig gpu-farm.kubeconfig auth whoami

			# The kubeconfig of the resource slice "batch" on that provider
			kubectl federate get kubeconfig --remote-cluster-id gpu-farm --resource-slice batch > batch.kubeconfig

			# What the identity-exchange rules give alice of the group dev on gpu-farm
			kubectl federate get kubeconfig --remote-cluster-id gpu-farm --for-user alice --for-group dev > alice.kubeconfig

			# The same, with the provider's consent at once
			kubectl federate get kubeconfig --remote-cluster-id gpu-farm --for-user alice \
			  --remote-kubeconfig gpu-farm-admin.kubeconfig`),
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the provider cluster")
	cmd.Flags().StringVar(&o.ResourceSlice, "resource-slice", "", "Print the kubeconfig of this resource slice instead of the pairing's")
	o.Source.AddFlags(cmd)
	o.Pair = flags.AddPairFlags(cmd, f, streams, "an exchange in one shot")
	// --for-user writes (the exchange request, its key, the provider's consent in one shot).
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete builds the cluster clients.
func (o *KubeconfigOptions) Complete(_ *cobra.Command, _ []string) error {
	t, err := o.Pair.CompleteLocalOrPair(o.Streams)
	if err != nil {
		return err
	}
	o.pair, o.cluster = t.Pair, t.Local
	if t.OneShot() {
		o.cluster = t.Pair.Consumer
	}
	return nil
}

// Validate checks the flags.
func (o *KubeconfigOptions) Validate() error {
	if err := o.validateExchange(); err != nil {
		return err
	}
	if o.ResourceSlice != "" {
		if err := member.ValidateSliceName("--resource-slice", o.ResourceSlice); err != nil {
			return err
		}
	}
	return nil
}

// Run prints the kubeconfig.
func (o *KubeconfigOptions) Run(ctx context.Context) error {
	if o.Source.Given() {
		return o.runExchange(ctx)
	}
	get := func(ctx context.Context, providerID string) ([]byte, error) {
		return handshake.GetKubeconfig(ctx, o.cluster, providerID)
	}
	if o.ResourceSlice != "" {
		get = func(ctx context.Context, providerID string) ([]byte, error) {
			return handshake.GetSliceKubeconfig(ctx, o.cluster, providerID, o.ResourceSlice)
		}
	}
	data, err := get(ctx, o.RemoteClusterID)
	if err != nil {
		return err
	}
	_, err = o.Out.Write(data)
	return err
}

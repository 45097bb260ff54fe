package get

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// KubeconfigOptions are the flags of `get kubeconfig`.
type KubeconfigOptions struct {
	RemoteClusterID string
	ResourceSlice   string

	f       *cmdutil.Factory
	cluster *handshake.Cluster
	cmdutil.Streams
}

// NewCmdKubeconfig returns `get kubeconfig`.
func NewCmdKubeconfig(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &KubeconfigOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(&cobra.Command{
		Use:   "kubeconfig --remote-cluster-id PROVIDER [--resource-slice NAME]",
		Short: "Print the kubeconfig this cluster holds for a provider cluster (consumer side)",
		Long: cmdutil.LongDesc(`
			Print the kubeconfig stored by "import identity" (or "authenticate") in the Secret
			kubeconfig-controlplane-PROVIDER of the namespace federate-system. It holds the
			identity's private key: write it only where the key may live.`),
		Example: cmdutil.Examples(`
			# Use the identity on the provider "gpu-farm" from this machine
			kubectl federate get kubeconfig --remote-cluster-id gpu-farm > gpu-farm.kubeconfig
			chmod 600 gpu-farm.kubeconfig
			kubectl --kubeconfig gpu-farm.kubeconfig auth whoami

			# The kubeconfig of the resource slice "batch" on that provider
			kubectl federate get kubeconfig --remote-cluster-id gpu-farm --resource-slice batch > batch.kubeconfig`),
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the provider cluster")
	cmd.Flags().StringVar(&o.ResourceSlice, "resource-slice", "", "Print the kubeconfig of this resource slice instead of the pairing's")
	return cmd
}

// Complete builds the cluster client.
func (o *KubeconfigOptions) Complete(_ *cobra.Command, _ []string) error {
	var err error
	o.cluster, _, err = flags.Cluster(o.f, handshake.Discard)
	return err
}

// Validate checks the flags.
func (o *KubeconfigOptions) Validate() error {
	if o.ResourceSlice != "" {
		if err := handshake.ValidateSliceName("--resource-slice", o.ResourceSlice); err != nil {
			return err
		}
	}
	return handshake.ValidateClusterID("--remote-cluster-id", o.RemoteClusterID)
}

// Run prints the kubeconfig.
func (o *KubeconfigOptions) Run(ctx context.Context) error {
	get := o.cluster.GetKubeconfig
	if o.ResourceSlice != "" {
		get = func(ctx context.Context, providerID string) ([]byte, error) {
			return o.cluster.GetSliceKubeconfig(ctx, providerID, o.ResourceSlice)
		}
	}
	data, err := get(ctx, o.RemoteClusterID)
	if err != nil {
		return err
	}
	_, err = o.Out.Write(data)
	return err
}

package get

import (
	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/util"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// KubeconfigOptions are the flags of `get kubeconfig`.
type KubeconfigOptions struct {
	RemoteClusterID string

	cluster *handshake.Cluster
	util.Streams
}

// NewCmdKubeconfig returns `get kubeconfig`.
func NewCmdKubeconfig(f *util.Factory, streams util.Streams) *cobra.Command {
	o := &KubeconfigOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "kubeconfig --remote-cluster-id PROVIDER",
		Short: "Print the kubeconfig this cluster holds for a provider cluster (consumer side)",
		Long: util.LongDesc(`
			Print the kubeconfig stored by "import identity" (or "authenticate") in the Secret
			kubeconfig-controlplane-PROVIDER of the namespace federate-tenant-PROVIDER. It holds the
			identity's private key: write it only where the key may live.`),
		Example: util.Examples(`
			# Use the identity on the provider "gpu-farm" from this machine
			kubectl federate get kubeconfig --remote-cluster-id gpu-farm > gpu-farm.kubeconfig
			chmod 600 gpu-farm.kubeconfig
			kubectl --kubeconfig gpu-farm.kubeconfig auth whoami`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := handshake.ValidateClusterID("--remote-cluster-id", o.RemoteClusterID); err != nil {
				return err
			}
			var err error
			if o.cluster, _, err = f.Cluster(handshake.Discard); err != nil {
				return err
			}
			cmd.SilenceUsage = true
			data, err := o.cluster.GetKubeconfig(cmd.Context(), o.RemoteClusterID)
			if err != nil {
				return err
			}
			_, err = o.Out.Write(data)
			return err
		},
	}
	util.RemoteClusterIDFlag(f, cmd, &o.RemoteClusterID, "The ID of the provider cluster")
	return cmd
}

// Package importcmd implements `kubectl federate import`.
package importcmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/util"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// NewCmd returns the `import` group.
func NewCmd(f *util.Factory, streams util.Streams) *cobra.Command {
	cmd := util.NewGroup("import", "Import a document from the other cluster's administrator: an identity", "Import a document generated on the other cluster.")
	cmd.AddCommand(NewCmdIdentity(f, streams))
	return cmd
}

// IdentityOptions are the flags of `import identity`.
type IdentityOptions struct {
	Filename string

	identity *v1alpha1.Identity
	cluster  *handshake.Cluster
	util.Streams
}

// NewCmdIdentity returns `import identity`.
func NewCmdIdentity(f *util.Factory, streams util.Streams) *cobra.Command {
	o := &IdentityOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "identity -f identity.yaml",
		Short: "Import the Identity issued by a provider cluster (consumer side)",
		Long: util.LongDesc(`
			Import the Identity document a provider's administrator generated for this cluster: check
			that it was issued to this cluster, for the client key this cluster is waiting with, then
			store the kubeconfig (certificate and key) in the Secret kubeconfig-controlplane-PROVIDER and
			the Identity itself in the namespace federate-tenant-PROVIDER. Importing the same Identity
			again changes nothing.`),
		Example: util.Examples(`
			# Import the identity and print the resulting kubeconfig
			kubectl federate import identity -f identity.yaml
			kubectl federate get kubeconfig --remote-cluster-id gpu-farm

			# Import it from a pipe
			ssh provider-admin@bastion cat identity.yaml | kubectl federate import identity -f -`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(f); err != nil {
				return err
			}
			cmd.SilenceUsage = true
			return o.Run(cmd)
		},
	}
	cmd.Flags().StringVarP(&o.Filename, "filename", "f", "", "The provider's identity.yaml (- for stdin)")
	_ = cmd.MarkFlagRequired("filename")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	return cmd
}

// Complete reads and decodes the Identity and builds the cluster client.
func (o *IdentityOptions) Complete(f *util.Factory) error {
	data, err := util.ReadInput("-f", o.Filename, o.In, handshake.MaxDocumentSize)
	if err != nil {
		return err
	}
	if o.identity, err = handshake.DecodeIdentity(o.Filename, data); err != nil {
		return err
	}
	o.cluster, _, err = f.Cluster(f.Printer(o.Streams).Scoped("local"))
	return err
}

// Run imports the identity.
func (o *IdentityOptions) Run(cmd *cobra.Command) error {
	res, err := o.cluster.ImportIdentity(cmd.Context(), o.identity)
	if err != nil {
		return err
	}
	verb := "imported"
	if res.AlreadyImported {
		verb = "unchanged"
	}
	_, err = fmt.Fprintf(o.Out, "identity.federate.dev/%s %s (user %s, expires %s, kubeconfig in secret %s/%s)\n",
		handshake.IdentityName(o.identity.Spec.ClusterID), verb, res.User, res.NotAfter.UTC().Format(time.RFC3339), res.Namespace, res.KubeconfigSecret)
	return err
}

package importcmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// ResourceSliceOptions are the flags of `import resourceslice`.
type ResourceSliceOptions struct {
	Name            string
	RemoteClusterID string
	Filename        string

	f       *cmdutil.Factory
	cluster *member.Cluster
	answer  *v1alpha1.ResourceSlice
	cmdutil.Streams
}

// NewCmdResourceSlice returns `import resourceslice`.
func NewCmdResourceSlice(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &ResourceSliceOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:     "resourceslice NAME --remote-cluster-id PROVIDER [-f granted.yaml]",
		Aliases: []string{"resourceslices", "fslice"},
		Short:   "Store the credential a provider granted for a resource slice (consumer side)",
		Long: cmdutil.LongDesc(`
			Import the credential the provider cluster PROVIDER issued for this cluster's ResourceSlice
			NAME. The provider's answer is read from this cluster's tenant namespace on the provider,
			through the pairing's kubeconfig, or from -f (the file "accept resourceslice -o yaml" wrote).

			A denied slice fails with the provider's reason; a slice not answered yet fails saying what
			the provider's administrator runs. Otherwise the certificate must certify the slice's client
			key waiting in federate-system, as the user that key entitles, for the namespace that slice
			must have. Before anything is stored, the new credential reads its own ResourceQuota on the
			provider, which proves it works and records the grant as the provider's API server enforces
			it. Then the kubeconfig is stored in the Secret kubeconfig-resource-PROVIDER.NAME, an Identity
			of type Resource named resource-PROVIDER.NAME is recorded (both in federate-system) and the
			waiting key is dropped. Importing again changes nothing.`),
		Example: cmdutil.Examples(`
			# Import the slice "batch" once the provider "gpu-farm" accepted it, and use it
			kubectl federate import resourceslice batch --remote-cluster-id gpu-farm
			kubectl get secret -n federate-system kubeconfig-resource-gpu-farm.batch -o jsonpath='{.data.kubeconfig}' \
			  | base64 -d > batch.kubeconfig`),
		Args: cmdutil.ExactArgs(1, "NAME"),
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the provider cluster")
	cmd.ValidArgsFunction = flags.CompleteSlices(f)
	cmd.Flags().StringVarP(&o.Filename, "filename", "f", "", "The provider's granted ResourceSlice as a file (- for stdin), instead of reading it through the pairing")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads the name and the file and builds the cluster client.
func (o *ResourceSliceOptions) Complete(_ *cobra.Command, args []string) error {
	o.Name = args[0]
	if o.Filename != "" {
		data, err := cmdutil.ReadInput("-f", o.Filename, o.In, handshake.MaxDocumentSize)
		if err != nil {
			return err
		}
		if o.answer, err = handshake.DecodeResourceSlice(o.Filename, data); err != nil {
			return flags.FileKindHint(err)
		}
	}
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the flags.
func (o *ResourceSliceOptions) Validate() error {
	if err := member.ValidateSliceName("NAME", o.Name); err != nil {
		return err
	}
	return nil
}

// Run imports the slice's credential.
func (o *ResourceSliceOptions) Run(ctx context.Context) error {
	var via *member.Cluster
	if o.answer == nil {
		var err error
		if via, err = handshake.ViaPairing(ctx, o.cluster, o.RemoteClusterID); err != nil {
			return err
		}
	}
	res, err := grants.ImportSlice(ctx, o.cluster, grants.ImportSliceOptions{ProviderID: o.RemoteClusterID, Name: o.Name, Answer: o.answer,
		Provider: via, FromFile: o.answer != nil})
	if err != nil {
		return flags.RemoteIDError(err)
	}
	verb := "imported"
	if res.AlreadyImported {
		verb = "unchanged"
	}
	_, err = fmt.Fprintf(o.Out, "identity.federate.dev/%s %s (granted %s in namespace %s, user %s, expires %s, kubeconfig in secret %s/%s)\n",
		member.SliceIdentityName(o.RemoteClusterID, o.Name), verb, sandbox.FormatResourceList(res.Granted), res.Namespace, res.User,
		res.NotAfter.UTC().Format(time.RFC3339), member.SystemNamespace, res.KubeconfigSecret)
	return err
}

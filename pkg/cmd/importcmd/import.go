// Package importcmd implements `kubectl federate import`.
package importcmd

import (
	"context"
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

// NewCmd returns the `import` group.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	cmd := cmdutil.NewGroup("import", "Import what the other cluster's administrator issued: an identity, a resource slice", "Import a credential issued on the other cluster.")
	cmd.AddCommand(NewCmdIdentity(f, streams), NewCmdResourceSlice(f, streams))
	return cmd
}

// IdentityOptions are the flags of `import identity`.
type IdentityOptions struct {
	Filename string
	Output   *printers.NameFlag

	f        *cmdutil.Factory
	identity *v1alpha1.Identity
	cluster  *member.Cluster
	cmdutil.Streams
}

// NewCmdIdentity returns `import identity`.
func NewCmdIdentity(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &IdentityOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "identity -f identity.yaml",
		Short: "Import the Identity issued by a provider cluster (consumer side)",
		Long: cmdutil.LongDesc(`
			Import the Identity document a provider's administrator generated for this cluster: check
			that it was issued to this cluster, for the client key this cluster is waiting with, then
			store the kubeconfig (certificate and key) in the Secret kubeconfig-controlplane-PROVIDER and
			the Identity itself, both in the namespace federate-system, which no tenant can read. Importing the same Identity
			again changes nothing.`),
		Example: cmdutil.Examples(`
			# Import the identity and print the resulting kubeconfig
			kubectl federate import identity -f identity.yaml
			kubectl federate get kubeconfig --remote-cluster-id gpu-farm

			# Import it from a pipe
			ssh provider-admin@bastion cat identity.yaml | kubectl federate import identity -f -`),
	}, o)
	cmd.Flags().StringVarP(&o.Filename, "filename", "f", "", "The provider's identity.yaml (- for stdin)")
	_ = cmd.MarkFlagRequired("filename")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	o.Output = printers.AddNameFlag(cmd, "one line")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads and decodes the Identity and builds the cluster client.
func (o *IdentityOptions) Complete(_ *cobra.Command, _ []string) error {
	data, err := cmdutil.ReadInput("-f", o.Filename, o.In, handshake.MaxDocumentSize)
	if err != nil {
		return err
	}
	if o.identity, err = handshake.DecodeIdentity(o.Filename, data); err != nil {
		return flags.FileKindHint(err)
	}
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams).Scoped("local"))
	return err
}

// Validate has nothing to check beyond what decoding checked: the document's fields are checked against
// this cluster in Run.
func (o *IdentityOptions) Validate() error { return nil }

// Run imports the identity.
func (o *IdentityOptions) Run(ctx context.Context) error {
	res, err := handshake.ImportIdentity(ctx, o.cluster, o.identity)
	if err != nil {
		return err
	}
	verb := "imported"
	if res.AlreadyImported {
		verb = "unchanged"
	}
	if o.Output.Name() {
		// The Identity, and the Secret that holds its kubeconfig (a federated pairing's stores none).
		refs := []printers.Ref{{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.IdentityKind, Name: member.IdentityName(o.identity.Spec.ClusterID)}}
		if res.Federated == nil {
			refs = append(refs, printers.Ref{APIVersion: "v1", Kind: "Secret", Name: res.KubeconfigSecret})
		}
		if err := o.Output.Print(o.Out, refs...); err != nil {
			return err
		}
	}
	if res.Federated != nil {
		// Nothing stored: the pairing is ready once the provider takes a token minted here for its user.
		sa := res.Federated.ServiceAccount
		if o.Output.Name() {
			return flags.NotTrustedExit(lifecycle.ProveFederated(ctx, o.cluster, nil, o.identity, "", nil))
		}
		if _, err := fmt.Fprintf(o.Out, "identity.federate.dev/%s %s (user %s, federated: tokens of ServiceAccount %s/%s minted on demand, no credential stored)\n",
			member.IdentityName(o.identity.Spec.ClusterID), verb, res.User, sa.Namespace, sa.Name); err != nil {
			return err
		}
		return flags.NotTrustedExit(lifecycle.ProveFederated(ctx, o.cluster, nil, o.identity, "", nil))
	}
	if o.Output.Name() {
		return nil
	}
	_, err = fmt.Fprintf(o.Out, "identity.federate.dev/%s %s (user %s, expires %s, kubeconfig in secret %s/%s)\n",
		member.IdentityName(o.identity.Spec.ClusterID), verb, res.User, res.NotAfter.UTC().Format(time.RFC3339), res.Namespace, res.KubeconfigSecret)
	return err
}

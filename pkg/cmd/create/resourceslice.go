package create

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// ResourceSliceOptions are the flags of `create resourceslice`.
type ResourceSliceOptions struct {
	Name            string
	RemoteClusterID string
	Class           string
	Resources       *flags.SliceResources
	KeyAlgorithm    *cmdutil.Enum
	Submit          bool
	Expiration      time.Duration
	Credential      flags.CredentialFlags
	Output          *printers.Flags
	Pair            *flags.PairFlags

	f       *cmdutil.Factory
	oneShot bool
	local   *member.Cluster
	pair    *flags.Pair
	opts    grants.SliceRequestOptions
	cmdutil.Streams
}

// NewCmdResourceSlice returns `create resourceslice`.
func NewCmdResourceSlice(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &ResourceSliceOptions{f: f, Streams: streams, Submit: true, Expiration: handshake.DefaultExpiration}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:     "resourceslice NAME --remote-cluster-id PROVIDER --cpu QTY --memory QTY [--class CLASS]",
		Aliases: []string{"resourceslices", "fslice"},
		Short:   "Ask a provider for resources with an identity of their own (consumer side)",
		Long: cmdutil.LongDesc(`
			Ask the provider cluster PROVIDER, which this cluster is already paired with, for an amount of
			its resources (a ResourceSlice) with an identity of its own, confined to a namespace of its own
			whose quota is what the provider grants.

			A fresh client key is made for the slice; it never leaves this cluster (it waits in the Secret
			resource-PROVIDER.NAME-pending-key of federate-system). The request carries a CSR for that
			key and the signature of this cluster's handshake key, which the provider pinned when the
			pairing was made, over the provider, this cluster, the slice's name, its class, the resources
			asked and the CSR: a request altered on the way, or made by anyone else, is refused.

			The request is recorded in federate-system and left in this cluster's tenant namespace on the
			provider through the pairing's own kubeconfig. The provider's administrator then accepts it
			("kubectl federate accept resourceslice NAME --remote-cluster-id THIS"), and you import the
			credential ("kubectl federate import resourceslice NAME --remote-cluster-id PROVIDER").

			With --remote-kubeconfig or --remote-context (you hold the provider's administrator
			kubeconfig too), all of it happens at once: the request, the provider's acceptance under the
			slice's class, and the import. With --submit=false nothing is sent: print the request with -o
			yaml and hand it to the provider's administrator, who accepts it with -f.

			Running it again with the same name reuses the waiting key; once a slice is imported, running
			it again asks for a new key and user (a renewal), and the old certificate loses its rights
			when the new one is granted.`),
		Example: cmdutil.Examples(`
			# Ask the provider "gpu-farm" for 2 CPUs and 4Gi of memory, then import the credential once accepted
			kubectl federate create resourceslice batch --remote-cluster-id gpu-farm --cpu 2 --memory 4Gi
			kubectl federate import resourceslice batch --remote-cluster-id gpu-farm

			# The same in one step, holding both clusters' kubeconfigs, under the provider's class "gpu"
			kubectl federate create resourceslice train --cpu 8 --memory 32Gi --pods 10 --class gpu \
			  --kubeconfig edge-1.kubeconfig --remote-kubeconfig gpu-farm.kubeconfig

			# Write the signed request to a file for the provider's administrator
			kubectl federate create resourceslice batch --remote-cluster-id gpu-farm --cpu 2 --memory 4Gi \
			  --submit=false -o yaml > slice.yaml`),
		Args: cmdutil.ExactArgs(1, "NAME"),
	}, o)
	flags.OptionalRemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the provider cluster (required unless --remote-kubeconfig or --remote-context names it)")
	cmd.Flags().StringVar(&o.Class, "class", "", "The provider's ResourceSliceClass to ask under (default: the provider's default class)")
	_ = cmd.RegisterFlagCompletionFunc("class", flags.CompleteClasses(f))
	o.Resources = flags.AddSliceResources(cmd, "", "asked for")
	o.KeyAlgorithm = flags.KeyAlgorithm(cmd)
	cmd.Flags().BoolVar(&o.Submit, "submit", o.Submit, "Leave the request on the provider through the pairing's kubeconfig (false: only record and print it)")
	cmdutil.DurationFlag(cmd.Flags(), &o.Expiration, "expiration", o.Expiration, handshake.MinExpiration, handshake.MaxExpiration, "With --remote-kubeconfig: requested lifetime of the slice's certificate or token")
	o.Credential.AddFlags(cmd)
	o.Output = printers.AddFlags(cmd, "", "a line per step on stderr, nothing on stdout")
	o.Pair = flags.AddPairFlags(cmd, f, streams, "the whole request")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads the name and builds the clients: this cluster's, and in one shot the provider's.
func (o *ResourceSliceOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Name = args[0]
	o.opts = grants.SliceRequestOptions{ProviderID: o.RemoteClusterID, Name: o.Name, Class: o.Class, Resources: o.Resources.Values(),
		KeyAlgorithm: o.KeyAlgorithm.String()}
	t, err := o.Pair.CompleteLocalOrPair(o.Streams)
	o.oneShot, o.pair, o.local = t.OneShot(), t.Pair, t.Local
	return err
}

// Validate checks the flags.
func (o *ResourceSliceOptions) Validate() error {
	if err := member.ValidateSliceName("NAME", o.Name); err != nil {
		return err
	}
	if err := o.Pair.RequireRemoteID(o.RemoteClusterID); err != nil {
		return err
	}
	if o.Class != "" {
		if err := member.ValidateSliceName("--class", o.Class); err != nil {
			return err
		}
	}
	if _, err := grants.ParseSliceResources("--", o.opts.Resources); err != nil {
		return err
	}
	if o.oneShot && !o.Submit {
		return fmt.Errorf("--submit=false: cannot be combined with --remote-kubeconfig/--remote-context, which submit and accept at once")
	}
	if o.Expiration < handshake.MinExpiration {
		return fmt.Errorf("--expiration %s: must be at least %s (the Kubernetes CSR API minimum)", o.Expiration, handshake.MinExpiration)
	}
	if !o.oneShot && (o.Credential.Credential.String() != credential.CredentialCertificate) {
		return fmt.Errorf("--credential: the provider chooses it when it accepts (accept resourceslice --credential); here it needs --remote-kubeconfig or --remote-context")
	}
	return o.Credential.Validate()
}

// Run requests the slice, and in one shot accepts and imports it.
func (o *ResourceSliceOptions) Run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, o.Pair.Timeout)
	defer cancel()
	if !o.oneShot {
		slice, err := grants.RequestSlice(ctx, o.local, o.opts)
		if err != nil {
			return o.Pair.TimeoutError(ctx, flags.RemoteIDError(err))
		}
		if o.Submit {
			via, err := handshake.ViaPairing(ctx, o.local, o.RemoteClusterID)
			if err != nil {
				return err
			}
			if err := grants.SubmitSlice(ctx, o.local, via, slice); err != nil {
				return o.Pair.TimeoutError(ctx, fmt.Errorf("leaving the request on provider %q: %w", o.RemoteClusterID, err))
			}
			o.local.Report.Info(fmt.Sprintf("Next: the provider's administrator runs \"kubectl federate accept resourceslice %s --remote-cluster-id %s\"; then import it here",
				o.Name, slice.Spec.ClusterID))
		}
		return o.print(slice)
	}
	start := time.Now()
	res, slice, err := o.oneShotRun(ctx)
	if err != nil {
		return o.Pair.TimeoutError(ctx, o.Credential.CredentialError(flags.PairError(err)))
	}
	o.pair.Printer.Info(fmt.Sprintf("Resource slice %s granted %s in %s as %s until %s; kubeconfig in Secret %s/%s",
		o.Name, sandbox.FormatResourceList(res.Granted), res.Namespace, res.User, res.NotAfter.UTC().Format(time.RFC3339),
		member.SystemNamespace, res.KubeconfigSecret))
	o.pair.Printer.Info(o.Pair.Summary(time.Since(start)))
	return o.print(slice)
}

func (o *ResourceSliceOptions) oneShotRun(ctx context.Context) (*grants.SliceImport, any, error) {
	consumer, provider := o.pair.Consumer, o.pair.Provider
	pSelf, err := provider.Load(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("provider: %w", err)
	}
	if o.opts.ProviderID == "" {
		o.opts.ProviderID = pSelf.ClusterID
	} else if o.opts.ProviderID != pSelf.ClusterID {
		return nil, nil, fmt.Errorf("--remote-cluster-id %q: the provider is initialized with cluster ID %q", o.opts.ProviderID, pSelf.ClusterID)
	}
	slice, err := grants.RequestSlice(ctx, consumer, o.opts)
	if err != nil {
		return nil, nil, fmt.Errorf("consumer: %w", err)
	}
	if err := grants.SubmitSlice(ctx, consumer, provider, slice); err != nil {
		return nil, nil, fmt.Errorf("provider: %w", err)
	}
	accept := grants.AcceptSliceOptions{ConsumerID: slice.Spec.ClusterID, Name: o.Name, Expiration: o.Expiration,
		Credential: o.Credential.Credential.String(), SignerTimeout: o.Credential.SignerTimeout}
	if provider.DryRun {
		// The submitted slice was not stored: the provider answers the request as this run made it.
		accept.Request = slice
	}
	granted, err := grants.AcceptSlice(ctx, provider, accept)
	if err != nil {
		return nil, nil, fmt.Errorf("provider: %w", err)
	}
	if !o.Output.Human() {
		flags.WarnToken(o.pair.Printer, granted.Status.Credential, "The printed ResourceSlice")
	}
	res, err := grants.ImportSlice(ctx, consumer, grants.ImportSliceOptions{ProviderID: o.opts.ProviderID, Name: o.Name, Answer: granted, Provider: provider})
	if err != nil {
		return nil, nil, fmt.Errorf("consumer: %w", err)
	}
	return res, granted, nil
}

func (o *ResourceSliceOptions) print(obj any) error {
	if o.Output.Human() {
		return nil
	}
	return o.Output.PrintObject(o.Out, obj)
}

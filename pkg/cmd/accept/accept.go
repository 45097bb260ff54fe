// Package accept implements `kubectl federate accept`.
package accept

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/views"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// NewCmd returns the `accept` group.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	cmd := cmdutil.NewGroup("accept", "Grant a consumer's request: a resource slice", "Grant a request a consumer cluster left on this (provider) cluster.")
	cmd.AddCommand(NewCmdResourceSlice(f, streams))
	return cmd
}

// ResourceSliceOptions are the flags of `accept resourceslice`.
type ResourceSliceOptions struct {
	Name            string
	RemoteClusterID string
	Filename        string
	Pending         bool
	Grant           *flags.SliceResources
	Expiration      time.Duration
	Credential      flags.CredentialFlags
	Output          *printers.Flags

	f       *cmdutil.Factory
	cluster *member.Cluster
	request *v1alpha1.ResourceSlice
	cmdutil.Streams
}

// NewCmdResourceSlice returns `accept resourceslice`.
func NewCmdResourceSlice(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &ResourceSliceOptions{f: f, Streams: streams, Expiration: handshake.DefaultExpiration}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:     "resourceslice NAME --remote-cluster-id CONSUMER [--cpu QTY] [-f slice.yaml]",
		Aliases: []string{"resourceslices", "fslice"},
		Short:   "Grant a consumer's resource slice and issue its identity (provider side)",
		Long: cmdutil.LongDesc(`
			Grant the ResourceSlice NAME that the consumer cluster CONSUMER left in its tenant namespace
			federate-tenant-CONSUMER (or that its administrator handed you, with -f).

			Nothing is created unless every check passes: CONSUMER has an active identity on this cluster,
			and the request's signature verifies with the handshake key pinned for CONSUMER over this
			provider, CONSUMER, the slice's name, its class, the resources asked and its CSR, whose subject
			is exactly the user its key entitles. Then the slice's class decides the grant: what is asked,
			lowered to the class's maximum (or denied, if the class says so), and lowered further by
			--cpu, --memory, --pods and --ephemeral-storage, which can never raise it.

			The slice gets its own sandbox namespace (fs-CONSUMER-NAME-HASH) whose ResourceQuota is the
			grant, with the class's Pod Security level and the sandbox's admission policy, limits and
			network policy; a certificate for the slice's own user is issued through the CSR API and the
			class's ClusterRole is bound to that user there, and nowhere else. The grant, the namespace, the
			user and the certificate (public) are recorded in the slice's status, which the consumer reads
			to import its credential. Accepting the same request again changes nothing.

			With --pending, every slice not yet answered whose class accepts it without a decision per
			slice (--auto-accept) is accepted, of CONSUMER or, without --remote-cluster-id, of every
			consumer: run it from a cron job to serve such classes. With no NAME and no --pending, the
			slices are listed.`),
		Example: cmdutil.Examples(`
			# See what the consumer "edge-1" asked for, then grant its slice "batch", with 1 CPU only
			kubectl federate accept resourceslice --remote-cluster-id edge-1
			kubectl federate accept resourceslice batch --remote-cluster-id edge-1 --cpu 1

			# Accept a request handed over as a file, and write the grant for the consumer
			kubectl federate accept resourceslice batch --remote-cluster-id edge-1 -f slice.yaml -o yaml > granted.yaml

			# From a cron job: accept every pending slice of auto-accept classes
			kubectl federate accept resourceslice --pending`),
		Args: cmdutil.MaximumArgs(1, "NAME"),
	}, o)
	flags.OptionalRemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the consumer cluster (required with NAME)")
	cmd.ValidArgsFunction = flags.CompleteSlices(f)
	cmd.Flags().StringVarP(&o.Filename, "filename", "f", "", "The consumer's ResourceSlice as a file (- for stdin), instead of the one it left on this cluster")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	cmd.Flags().BoolVar(&o.Pending, "pending", false, "Accept every pending slice whose class has auto-accept")
	o.Grant = flags.AddSliceResources(cmd, "", "granted, if less than the class gives")
	cmdutil.DurationFlag(cmd.Flags(), &o.Expiration, "expiration", o.Expiration, handshake.MinExpiration, handshake.MaxExpiration, "Requested lifetime of the slice's certificate or token; the signer or the API server may shorten it")
	o.Credential.AddFlags(cmd)
	o.Output = printers.AddFlags(cmd, "", "a line per slice; a table when listing")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads the name and the file, and builds the cluster client.
func (o *ResourceSliceOptions) Complete(_ *cobra.Command, args []string) error {
	if len(args) == 1 {
		o.Name = args[0]
	}
	if o.Filename != "" {
		data, err := cmdutil.ReadInput("-f", o.Filename, o.In, handshake.MaxDocumentSize)
		if err != nil {
			return err
		}
		if o.request, err = handshake.DecodeResourceSlice(o.Filename, data); err != nil {
			return flags.FileKindHint(err)
		}
	}
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the flags.
func (o *ResourceSliceOptions) Validate() error {
	grant := o.Grant.Values()
	switch {
	case o.Pending && o.Name != "":
		return errors.New("--pending: accepts every pending slice, so it takes no NAME")
	case o.Pending && (o.Filename != "" || len(grant) > 0):
		return errors.New("--pending: cannot be combined with -f or a grant (--cpu, --memory, --pods, --ephemeral-storage)")
	case o.Name == "" && !o.Pending && (o.Filename != "" || len(grant) > 0):
		return errors.New("NAME: is required with -f or a grant")
	case o.Name != "" && o.RemoteClusterID == "":
		return errors.New("--remote-cluster-id: is required with NAME")
	}
	if o.Name != "" {
		if err := member.ValidateSliceName("NAME", o.Name); err != nil {
			return err
		}
	}
	if _, err := grants.ParseSliceQuantities("--", grant); err != nil {
		return err
	}
	if o.Expiration < handshake.MinExpiration {
		return fmt.Errorf("--expiration %s: must be at least %s (the Kubernetes CSR API minimum)", o.Expiration, handshake.MinExpiration)
	}
	return o.Credential.Validate()
}

// Run accepts one slice, every pending auto-accept slice, or lists them.
func (o *ResourceSliceOptions) Run(ctx context.Context) error {
	if o.Name == "" {
		list, err := grants.ProviderSlices(ctx, o.cluster, o.RemoteClusterID)
		if err != nil {
			return err
		}
		if !o.Pending {
			return views.Slices(o.Out, o.Output, list)
		}
		return o.acceptPending(ctx, list)
	}
	grant, _ := grants.ParseSliceQuantities("", o.Grant.Values())
	slice, err := grants.AcceptSlice(ctx, o.cluster, grants.AcceptSliceOptions{ConsumerID: o.RemoteClusterID, Name: o.Name, Request: o.request,
		Grant: grant, Expiration: o.Expiration, Credential: o.Credential.Credential.String(), SignerTimeout: o.Credential.SignerTimeout})
	if err != nil {
		return o.Credential.CredentialError(flags.SliceGrantError(err))
	}
	if !o.Output.Human() {
		flags.WarnToken(o.cluster.Report, slice.Status.Credential, "The printed ResourceSlice")
		return o.Output.PrintObject(o.Out, slice)
	}
	_, err = fmt.Fprintf(o.Out, "resourceslice/%s accepted: %s in namespace %s for %s\n", o.Name,
		sandbox.FormatResourceList(slice.Status.Granted), slice.Status.Namespace, o.RemoteClusterID)
	return err
}

// acceptPending accepts each pending slice of an auto-accept class, and reports each outcome; it fails if
// any failed.
func (o *ResourceSliceOptions) acceptPending(ctx context.Context, list []grants.SliceInfo) error {
	var errs []error
	n := 0
	for _, s := range list {
		if s.Phase != grants.SlicePending || !s.AutoAccept {
			continue
		}
		n++
		slice, err := grants.AcceptSlice(ctx, o.cluster, grants.AcceptSliceOptions{ConsumerID: s.ConsumerID, Name: s.Name, Expiration: o.Expiration,
			RequireAutoAccept: true, Credential: o.Credential.Credential.String(), SignerTimeout: o.Credential.SignerTimeout})
		if err != nil {
			errs = append(errs, fmt.Errorf("resource slice %s of %s: %w", s.Name, s.ConsumerID, o.Credential.CredentialError(err)))
			continue
		}
		if _, err := fmt.Fprintf(o.Out, "resourceslice/%s accepted: %s in namespace %s for %s\n", s.Name,
			sandbox.FormatResourceList(slice.Status.Granted), slice.Status.Namespace, s.ConsumerID); err != nil {
			return err
		}
	}
	if n == 0 {
		o.cluster.Report.Info("No pending slice of an auto-accept class")
	}
	return errors.Join(errs...)
}

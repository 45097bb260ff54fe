package get

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/views"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// ResourceSlicesOptions are the flags of `get resourceslices`.
type ResourceSlicesOptions struct {
	RemoteClusterID string
	Output          *printers.Flags

	f       *cmdutil.Factory
	cluster *member.Cluster
	report  member.Reporter
	cmdutil.Streams
}

// NewCmdResourceSlices returns `get resourceslices`.
func NewCmdResourceSlices(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &ResourceSlicesOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:     "resourceslices [--remote-cluster-id REMOTE]",
		Aliases: []string{"resourceslice", "fslice", "fslices"},
		Short:   "List the resource slices this cluster grants and holds",
		Long: cmdutil.LongDesc(`
			List the ResourceSlices this cluster takes part in: as a provider, the requests consumers left in
			their tenant namespaces and what was granted (the CONSUMER column); as a consumer, the slices it
			asked of providers and imported (the PROVIDER column). --remote-cluster-id keeps one pairing.

			A consumer's slices are shown as each provider sees them now, read through the pairing: a slice
			the provider denied reads Denied (its reason in -o yaml), one it granted that is not imported
			yet reads Accepted, and one whose request the provider deleted reads Removed. A provider that
			cannot be reached leaves its slices as this cluster last recorded them, with a warning.

			"kubectl get resourceslices" names Kubernetes' own dynamic resource allocation kind; this
			tool's are "kubectl get resourceslices.federate.dev -A" (short name fslice).`),
		Example: cmdutil.Examples(`
			kubectl federate get resourceslices
			kubectl federate get resourceslices --remote-cluster-id edge-1 -o yaml`),
	}, o)
	flags.OptionalRemoteClusterID(f, cmd, &o.RemoteClusterID, "Only the slices of the pairing with this cluster")
	o.Output = printers.AddFlags(cmd, "", "a table")
	return cmd
}

// Complete builds the cluster client.
func (o *ResourceSlicesOptions) Complete(_ *cobra.Command, _ []string) error {
	var err error
	o.report = o.f.Printer(o.Streams)
	o.cluster, _, err = flags.Cluster(o.f, o.report)
	return err
}

// Validate checks the flags.
func (o *ResourceSlicesOptions) Validate() error {
	return nil
}

// Run lists the slices, the provider's first.
func (o *ResourceSlicesOptions) Run(ctx context.Context) error {
	provided, err := grants.ProviderSlices(ctx, o.cluster, o.RemoteClusterID)
	if err != nil {
		return err
	}
	held, err := grants.ConsumerSlices(ctx, o.cluster, o.RemoteClusterID)
	if err != nil {
		return err
	}
	held, unread, err := grants.WithProviderAnswers(ctx, o.cluster, held)
	if err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(unread)) {
		o.report.Warn(fmt.Sprintf("Provider %q not read through the pairing (%v): its slices show what this cluster last recorded", id, unread[id]))
	}
	return views.Slices(o.Out, o.Output, append(provided, held...))
}

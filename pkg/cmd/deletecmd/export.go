package deletecmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	formats "github.com/federate-dev/kubectl-federate/pkg/export"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// ExportOptions are the arguments and flags of `delete export`.
type ExportOptions struct {
	Format          string
	RemoteClusterID string
	ResourceSlice   string
	Namespace       string
	Name            string
	IgnoreNotFound  bool
	Output          *printers.NameFlag

	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewCmdExport returns `delete export`.
func NewCmdExport(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &ExportOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:     "export FORMAT --remote-cluster-id PROVIDER [--resource-slice SLICE] [-n NAMESPACE]",
		Aliases: []string{"exports"},
		Short:   "Delete one export of a credential, and its record (consumer side)",
		Long: cmdutil.LongDesc(`
			Delete the export that "kubectl federate export FORMAT" wrote with the same --remote-cluster-id,
			--resource-slice, --name and namespace: its Admiralty Target or ClusterProfile first, then its
			Secret, then the record of it in federate-system, by which renewals rewrite it. The tool that
			read it loses its access to the provider; the credential itself, and its other exports, stay.

			Only what the export wrote is deleted, each object by the UID recorded when it was written: an
			object made again under its name by someone else is left alone. A Secret deleted by hand leaves
			the record (and the Target or ClusterProfile): "status -o yaml" lists that export with state
			SecretGone, and this command deletes what remains. An export this cluster has no record of is
			an error, NotFound, exit 1, naming the exports of that credential (--ignore-not-found: exit 0).`),
		Example: cmdutil.Examples(`
			# Argo CD no longer deploys to the provider "gpu-farm"
			kubectl federate delete export argocd --remote-cluster-id gpu-farm -n argocd

			# The Flux kubeconfig of the resource slice "batch", named ci
			kubectl federate delete export kubeconfig --remote-cluster-id gpu-farm --resource-slice batch --name ci -n flux-system`),
		Args: cmdutil.ExactArgs(1, "FORMAT"),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return formats.Formats, cobra.ShellCompDirectiveNoFileComp
		},
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the provider cluster whose credential was exported")
	cmd.Flags().StringVar(&o.ResourceSlice, "resource-slice", "", "The resource slice whose credential was exported, instead of the pairing's")
	_ = cmd.RegisterFlagCompletionFunc("resource-slice", flags.CompleteSlices(f))
	// kubectl's -n: the root's hidden connection flag, shown here because it says where the export is.
	cmd.Flags().StringVarP(f.Flags.Namespace, "namespace", "n", "", "The namespace of the export (default: the kubeconfig context's, else default)")
	cmd.Flags().StringVar(&o.Name, "name", "", "The cluster's name in the tool, as export --name gave it (default: the provider's ID, PROVIDER-SLICE for a slice)")
	flags.IgnoreNotFound(cmd, &o.IgnoreNotFound)
	o.Output = printers.AddNameFlag(cmd, "a line per object deleted")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads the format and the namespace, and builds the cluster client.
func (o *ExportOptions) Complete(_ *cobra.Command, args []string) error {
	o.Format = args[0]
	var err error
	if o.Namespace, err = o.f.Namespace(); err != nil {
		return err
	}
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks every input, as export does.
func (o *ExportOptions) Validate() error {
	if err := formats.ValidateFormat(o.Format); err != nil {
		return fmt.Errorf("FORMAT: %w", err)
	}
	if o.ResourceSlice != "" {
		if err := member.ValidateSliceName("--resource-slice", o.ResourceSlice); err != nil {
			return err
		}
	}
	if o.Name != "" {
		if err := formats.ValidateName(o.Name); err != nil {
			return fmt.Errorf("--name %w", err)
		}
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return fmt.Errorf("-n %q: not a namespace name (%s)", o.Namespace, strings.Join(errs, "; "))
	}
	return nil
}

// Run deletes the export and says what went.
func (o *ExportOptions) Run(ctx context.Context) error {
	removed, err := handshake.DeleteExport(ctx, o.cluster, handshake.ExportOptions{Format: o.Format, ProviderID: o.RemoteClusterID, Slice: o.ResourceSlice,
		Namespace: o.Namespace, Name: o.Name})
	if o.IgnoreNotFound && errors.Is(err, handshake.ErrNotFound) {
		return nil
	}
	if removed != nil { // what went before a failure is said too
		if perr := o.print(removed); perr != nil && err == nil {
			err = perr
		}
	}
	return flags.NotFoundHint(err, "FORMAT, --name and -n")
}

func (o *ExportOptions) print(r *handshake.RemovedExport) error {
	if o.Output.Name() {
		var refs []printers.Ref
		for _, d := range r.Deleted {
			refs = append(refs, exportRef(d.Kind, d.Name))
		}
		if r.Record != "" { // the record in federate-system went too
			refs = append(refs, exportRef("Secret", r.Record))
		}
		return o.Output.Print(o.Out, refs...)
	}
	for _, d := range r.Deleted {
		if _, err := fmt.Fprintf(o.Out, "%s/%s deleted (namespace %s)\n", exportKind(d.Kind), d.Name, d.Namespace); err != nil {
			return err
		}
	}
	if r.SecretGone {
		_, err := fmt.Fprintf(o.Out, "secret/%s was gone already (namespace %s): its export record deleted\n", r.Secret, r.Namespace)
		return err
	}
	return nil
}

// exportKind is an export's kind as kubectl names it (export prints the same).
func exportKind(kind string) string {
	switch kind {
	case formats.TargetKind:
		return "target." + formats.TargetGVR.Group
	case formats.ClusterProfileKind:
		return "clusterprofile." + formats.ClusterProfileGroupResource.Group
	}
	return "secret"
}

func exportRef(kind, name string) printers.Ref {
	switch kind {
	case formats.TargetKind:
		return printers.Ref{APIVersion: formats.TargetGVR.GroupVersion().String(), Kind: kind, Name: name}
	case formats.ClusterProfileKind:
		return printers.Ref{APIVersion: formats.ClusterProfileGroupResource.Group + "/" + formats.ClusterProfileVersions[0], Kind: kind, Name: name}
	}
	return printers.Ref{APIVersion: "v1", Kind: "Secret", Name: name}
}

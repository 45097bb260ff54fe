// Package export implements `kubectl federate export`.
package export

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	formats "github.com/federate-dev/kubectl-federate/pkg/export"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/credential"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Options are the arguments and flags of `export`.
type Options struct {
	Format          string
	RemoteClusterID string
	ResourceSlice   string
	Namespace       string
	Name            string
	Key             string
	Exec            bool
	ExecCommand     string
	ClusterInfo     bool
	Output          *printers.Flags

	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewCmd returns the `export` command.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &Options{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "export FORMAT --remote-cluster-id PROVIDER [--resource-slice NAME] [-n NAMESPACE] [--exec]",
		Short: "Write a credential this cluster holds in the format a multi-cluster tool reads (consumer side)",
		Long: cmdutil.LongDesc(`
			Write the pairing's credential for the provider PROVIDER (or, with --resource-slice, a
			resource slice's) as the objects a multi-cluster tool reads, on this (the consumer) cluster,
			in the namespace -n (as kubectl chooses it: -n, else the kubeconfig context's, else
			default), which must exist. FORMAT is one of:

			  kubeconfig        a Secret NAME-kubeconfig with the kubeconfig under the key kubeconfig, and
			                    under --key too (value: Flux's kubeConfig.secretRef, Cluster API's
			                    <cluster>-kubeconfig)
			  argocd            an Argo CD cluster Secret NAME (label argocd.argoproj.io/secret-type:
			                    cluster; name, server, config and namespaces, the identity's namespace)
			  cluster-gateway   a KubeVela cluster-gateway cluster Secret NAME (endpoint, ca.crt, and
			                    tls.crt/tls.key or token, by its credential-type label)
			  admiralty         an Admiralty Target NAME with its kubeconfig Secret NAME-kubeconfig; the
			                    Target API must be served (Admiralty installed): nothing else is installed
			  clusterprofile    a ClusterProfile NAME (multicluster.x-k8s.io, in the version served) whose
			                    status.accessProviders kubectl-federate and kubeconfig-secretreader name
			                    the provider's server and CA and, as their plugin's configuration, the
			                    Secret NAME-kubeconfig (key credential) that holds the credential; never a
			                    secret. Its CRD must be installed: nothing else is installed

			NAME is --name, by default the provider's ID (PROVIDER-SLICE for a slice). Every object carries
			the pairing's labels (federate.dev/remote-cluster-id, federate.dev/role=consumer, and
			federate.dev/resource-slice for a slice) with federate.dev/export-format, so that "renew" and a
			re-run of "authenticate" rewrite it in place with the new credential, "unauthenticate" and
			"delete resourceslice" delete it, and "status -o yaml" lists it. An object of that name that
			is not this export is never replaced. Running the command again is safe.

			With --exec (formats kubeconfig and argocd) the client written holds no credential: it runs
			the credential plugin ("kubectl federate credential", --exec-command where the tool runs it),
			which reads the credential from the same Secret (key credential) every time its
			expirationTimestamp passes, so a client built once follows every renewal without a restart.
			The kubeconfig hands the plugin that Secret as its cluster's configuration
			(provideClusterInfo); Argo CD's execProviderConfig names it in the plugin's arguments, or,
			with --provide-cluster-info (Argo CD 3.5 and later), in its config.

			A federated pairing (authenticate --credential federated) holds no credential to copy: only
			--exec exports it, and the client written runs "kubectl federate credential
			--remote-cluster-id PROVIDER", which mints a token of the pairing's ServiceAccount on this
			cluster every time it runs; the Secret holds none. Whoever runs it (the tool's own
			ServiceAccount) needs, on this cluster, get on identities.federate.dev in federate-system and
			create on serviceaccounts/token of that ServiceAccount. Any other format would store a token,
			and is refused.

			With -o yaml or -o json the objects are printed instead, and nothing is written. The Secrets
			hold the credential's private key or token: write them only where it may live.
			docs/integrations.md says where each format comes from.`),
		Example: cmdutil.Examples(`
			# Argo CD on this cluster deploys to the provider "gpu-farm", in the identity's namespace
			kubectl federate export argocd --remote-cluster-id gpu-farm -n argocd

			# Flux's Kustomizations reach the provider through the Secret gpu-farm-kubeconfig (key value)
			kubectl federate export kubeconfig --remote-cluster-id gpu-farm -n flux-system --key value

			# A kubeconfig whose client runs the credential plugin: built once, it follows every renewal
			kubectl federate export kubeconfig --exec --remote-cluster-id gpu-farm -n flux-system

			# Argo CD runs the plugin (in its images at /custom-tools) instead of holding the credential
			kubectl federate export argocd --exec --exec-command /custom-tools/kubectl-federate \
			  --remote-cluster-id gpu-farm -n argocd

			# KubeVela's cluster-gateway reads its clusters from vela-system
			kubectl federate export cluster-gateway --remote-cluster-id gpu-farm -n vela-system

			# An Admiralty Target for the resource slice "batch", in the namespace whose pods it schedules
			kubectl federate export admiralty --remote-cluster-id gpu-farm --resource-slice batch -n jobs

			# A ClusterProfile in the cluster inventory "fleet" (Argo CD, multicluster-runtime, MultiKueue)
			kubectl federate export clusterprofile --remote-cluster-id gpu-farm -n fleet

			# Print the objects instead of writing them
			kubectl federate export argocd --remote-cluster-id gpu-farm -n argocd -o yaml`),
		Args: cmdutil.ExactArgs(1, "FORMAT"),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return formats.Formats, cobra.ShellCompDirectiveNoFileComp
		},
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the provider cluster whose credential is exported")
	cmd.Flags().StringVar(&o.ResourceSlice, "resource-slice", "", "Export this resource slice's credential instead of the pairing's")
	// kubectl's -n: the root's hidden connection flag, shown here because it says where the export goes.
	cmd.Flags().StringVarP(f.Flags.Namespace, "namespace", "n", "", "The namespace on this cluster to write the objects in (default: the kubeconfig context's, else default)")
	cmd.Flags().StringVar(&o.Name, "name", "", "The cluster's name in the tool, which names the objects (default: the provider's ID, PROVIDER-SLICE for a slice)")
	cmd.Flags().StringVar(&o.Key, "key", "", "Format kubeconfig: also write the kubeconfig under this data key (value, for Flux and Cluster API)")
	cmd.Flags().BoolVar(&o.Exec, "exec", false, "Formats kubeconfig and argocd: a client that runs the credential plugin (kubectl federate credential), which reads the credential from this Secret every time, instead of holding it")
	cmd.Flags().StringVar(&o.ExecCommand, "exec-command", "kubectl-federate", "With --exec: the plugin's command where the client runs (a path in the tool's image)")
	cmd.Flags().BoolVar(&o.ClusterInfo, "provide-cluster-info", false, "Format argocd with --exec: name the Secret in execProviderConfig.config with provideClusterInfo (Argo CD 3.5 and later) instead of in the plugin's arguments")
	o.Output = printers.AddFlags(cmd, "", "write the objects, one line each")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads the format and the namespace, and builds the cluster client.
func (o *Options) Complete(_ *cobra.Command, args []string) error {
	o.Format = args[0]
	var err error
	if o.Namespace, err = o.f.Namespace(); err != nil {
		return err
	}
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks every input.
func (o *Options) Validate() error {
	if err := formats.ValidateFormat(o.Format); err != nil {
		return fmt.Errorf("FORMAT: %w", err)
	}
	// -o prints the credential itself; a dry run's stdout (a CI log) must not hold it.
	if !o.Output.Human() && o.f.DryRun().Active() {
		return fmt.Errorf("--dry-run and -o %s: give one (-o prints the objects, credential included, and writes nothing; --dry-run shows what would be written, its values redacted)", o.Output.Format())
	}
	if o.ResourceSlice != "" {
		if err := member.ValidateSliceName("--resource-slice", o.ResourceSlice); err != nil {
			return err
		}
	}
	name := o.Name
	if name == "" {
		name = handshake.DefaultExportName(o.RemoteClusterID, o.ResourceSlice)
	}
	if err := formats.ValidateName(name); err != nil {
		if o.Name == "" {
			return fmt.Errorf("--name: the default name %w", err)
		}
		return fmt.Errorf("--name %w", err)
	}
	if o.Key != "" {
		if o.Format != formats.FormatKubeconfig {
			return fmt.Errorf("--key: only format %s writes an extra key, not %s", formats.FormatKubeconfig, o.Format)
		}
		if err := formats.ValidateKey(o.Key); err != nil {
			return fmt.Errorf("--key %w", err)
		}
	}
	if err := o.validateExec(); err != nil {
		return err
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return fmt.Errorf("-n %q: not a namespace name (%s)", o.Namespace, strings.Join(errs, "; "))
	}
	return nil
}

func (o *Options) validateExec() error {
	switch {
	case o.Exec && o.Format != formats.FormatKubeconfig && o.Format != formats.FormatArgoCD:
		return fmt.Errorf("--exec: only formats %s and %s write a client that runs the plugin, not %s", formats.FormatKubeconfig, formats.FormatArgoCD, o.Format)
	case !o.Exec && (o.ClusterInfo || o.ExecCommand != "kubectl-federate"):
		return errors.New("--exec-command and --provide-cluster-info: only with --exec")
	case o.ClusterInfo && o.Format != formats.FormatArgoCD:
		return errors.New("--provide-cluster-info: only format argocd asks for it (a kubeconfig always provides the cluster's information)")
	case o.Exec && o.ExecCommand == "":
		return errors.New("--exec-command: must not be empty")
	}
	return nil
}

func (o *Options) options() handshake.ExportOptions {
	opts := handshake.ExportOptions{Format: o.Format, ProviderID: o.RemoteClusterID, Slice: o.ResourceSlice, Namespace: o.Namespace, Name: o.Name, Key: o.Key}
	if o.Exec {
		// A kubeconfig hands the plugin the Secret to read as the cluster's configuration; Argo CD before
		// 3.5 cannot, so the plugin's arguments name it.
		opts.Exec = &formats.Exec{Command: o.ExecCommand, Args: credential.ClusterInfoArgs(), ClusterInfo: true}
		if o.Format == formats.FormatArgoCD && !o.ClusterInfo {
			name := o.Name
			if name == "" {
				name = handshake.DefaultExportName(o.RemoteClusterID, o.ResourceSlice)
			}
			opts.Exec = &formats.Exec{Command: o.ExecCommand, Args: credential.PluginArgs(formats.SecretName(o.Format, name), formats.CredentialKey, o.Namespace)}
		}
		opts.MintArgs = credential.MintArgs(o.RemoteClusterID) // for a federated pairing's, which no Secret holds
	}
	return opts
}

// Run writes the export, or prints its objects.
func (o *Options) Run(ctx context.Context) error {
	if !o.Output.Human() {
		return o.print(ctx)
	}
	written, err := handshake.Export(ctx, o.cluster, o.options())
	switch {
	case errors.Is(err, handshake.ErrTargetNotServed):
		return fmt.Errorf("FORMAT %s: %w (-o yaml prints them); nothing was written", o.Format, err)
	case errors.Is(err, handshake.ErrClusterProfileNotServed):
		// Printed, a ClusterProfile would be applied without its status: no advice to print it.
		return fmt.Errorf("FORMAT %s: %w; nothing was written", o.Format, err)
	}
	if err != nil {
		return o.hint(err)
	}
	for _, w := range written {
		kind := "secret"
		switch w.Kind { // as kubectl names them
		case formats.TargetKind:
			kind = "target." + formats.TargetGVR.Group
		case formats.ClusterProfileKind:
			kind = "clusterprofile." + formats.ClusterProfileGroupResource.Group
		}
		if _, err := fmt.Fprintf(o.Out, "%s/%s %s (namespace %s)\n", kind, w.Name, w.Action, w.Namespace); err != nil {
			return err
		}
	}
	return nil
}

// print is the seam a dry run shares: the objects Export would write, built from the same credential.
func (o *Options) print(ctx context.Context) error {
	objs, err := handshake.BuildExport(ctx, o.cluster, o.options())
	if err != nil {
		return o.hint(err)
	}
	var items []*unstructured.Unstructured
	for _, obj := range objs.List() {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		// A built object has no creation time: left out, so the output applies cleanly.
		unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
		items = append(items, &unstructured.Unstructured{Object: m})
	}
	if len(items) == 1 {
		return o.Output.Print(o.Out, items[0])
	}
	return o.Output.Print(o.Out, printers.List(items))
}

// hint names the flag behind a domain error.
func (o *Options) hint(err error) error {
	var nf *handshake.NamespaceNotFoundError
	if errors.As(err, &nf) {
		return fmt.Errorf("-n %s: %w", o.Namespace, err)
	}
	if errors.Is(err, formats.ErrMintedNeedsExec) {
		return fmt.Errorf("%w: add --exec; nothing was written", err)
	}
	return err
}

// Package credential implements `kubectl federate credential`, the exec credential plugin.
package credential

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// DefaultRefresh is how far ahead the expirationTimestamp of a credential handed out lies: client-go
// runs the plugin again only once that time has passed (or after a 401, which a credential renewed away
// does not get: it still authenticates, and is refused with a 403), so this is the longest a client keeps
// a credential after a renewal stored the next one, and the least a renewal must keep the old one
// authorized (renew --overlap). Thirty seconds costs a client one plugin run and one Secret read on the
// consumer every half minute, and lets renew end its overlap 45 s after storing the new credential.
const DefaultRefresh = 30 * time.Second

// guardEnv is set while the plugin reads the consumer cluster: a kubeconfig that reached the consumer
// through this very plugin would run it again, for ever.
const guardEnv = "KUBECTL_FEDERATE_CREDENTIAL_PLUGIN"

// Options are the flags of `credential`.
type Options struct {
	RemoteClusterID string
	ResourceSlice   string
	Secret          string
	Key             string
	Refresh         time.Duration

	request   *kubeconfig.ExecRequest
	ref       *kubeconfig.SecretRef // from --secret or the request's config
	namespace string
	f         *cmdutil.Factory
	cluster   *member.Cluster
	cmdutil.Streams
}

// NewCmd returns the `credential` command.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &Options{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "credential (--remote-cluster-id PROVIDER [--resource-slice NAME] | --secret NAME)",
		Short: "Print, as an exec credential plugin, the credential this cluster holds on a provider (consumer side)",
		Long: cmdutil.LongDesc(`
			Print the credential this (consumer) cluster holds now on the provider PROVIDER (or its resource
			slice NAME) as a client-go ExecCredential: the answer of an exec credential plugin
			(client.authentication.k8s.io/v1, or v1beta1 when the client asks in that version). Name it in
			a kubeconfig's users[].user.exec, an Argo CD cluster's execProviderConfig or a ClusterProfile
			access provider, and every client built from it follows renew by itself.

			The credential is read from this cluster, as every command reads it: --kubeconfig and --context,
			KUBECONFIG, or the pod's service account when it runs in a pod. With --remote-cluster-id it is
			the one federate-system holds; with --secret, the kubeconfig under --key (default kubeconfig)
			of that Secret in -n, such as an export's. Run by a client that provides cluster information
			(provideClusterInfo: true), it reads the cluster's extension client.authentication.k8s.io/exec
			instead, {name, key, namespace, context}: the configuration of the reference
			kubeconfig-secretreader plugin, so that this command is a ClusterProfile access provider.

			Its expirationTimestamp is --refresh-after from now (or the credential's own expiry, if
			sooner): client-go runs the plugin again only after it, or after a 401, and a credential
			renewed away is refused with a 403. So a client reads the credential again at least that often,
			and renew keeps the old credential authorized for --overlap (45s, this default plus 15s), enough
			for every client to have read the new one. A revoked credential is refused at once, whatever a
			client holds. docs/integrations.md shows each way to use it.`),
		Example: cmdutil.Examples(`
			# The credential of the pairing with the provider "gpu-farm", as client-go reads it
			kubectl federate credential --remote-cluster-id gpu-farm

			# A kubeconfig user that runs it
			#   user:
			#     exec:
			#       apiVersion: client.authentication.k8s.io/v1
			#       command: kubectl-federate
			#       args: [credential, --remote-cluster-id, gpu-farm]
			#       interactiveMode: Never

			# What "export kubeconfig --exec" writes: the plugin reads the export's own Secret
			kubectl federate export kubeconfig --exec --remote-cluster-id gpu-farm -n flux-system

			# Read an export's Secret, as a pod in the namespace argocd does
			kubectl federate credential --secret gpu-farm --key credential -n argocd`),
	}, o)
	flags.OptionalRemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the provider cluster whose credential to print")
	cmd.Flags().StringVar(&o.ResourceSlice, "resource-slice", "", "Print this resource slice's credential instead of the pairing's")
	cmd.Flags().StringVar(&o.Secret, "secret", "", "Read the credential from the kubeconfig in this Secret (in -n) instead")
	cmd.Flags().StringVar(&o.Key, "key", handshake.KubeconfigKey, "With --secret: the Secret's data key holding the kubeconfig")
	// kubectl's -n: the root's hidden connection flag, shown here because it says where --secret is.
	cmd.Flags().StringVarP(f.Flags.Namespace, "namespace", "n", "", "With --secret: its namespace (default: the kubeconfig context's, or the pod's)")
	cmdutil.DurationFlag(cmd.Flags(), &o.Refresh, "refresh-after", DefaultRefresh, time.Second, 24*time.Hour,
		"How soon a client runs the plugin again: the expirationTimestamp printed is this far ahead")
	return cmd
}

// Complete reads the client's request and builds the cluster client.
func (o *Options) Complete(_ *cobra.Command, _ []string) error {
	if os.Getenv(guardEnv) != "" {
		return errors.New("the kubeconfig this plugin reads the consumer cluster with runs this plugin itself: give the consumer's own (--kubeconfig, KUBECONFIG)")
	}
	var err error
	if o.request, err = kubeconfig.ParseExecRequest(os.Getenv(kubeconfig.ExecInfoEnv)); err != nil {
		return err
	}
	if len(o.request.Config) > 0 {
		ref, err := kubeconfig.ParseSecretRef(o.request.Config)
		if err != nil {
			return fmt.Errorf("%s: %w", kubeconfig.ExecInfoEnv, err)
		}
		o.ref = &ref
	} else if o.Secret != "" {
		o.ref = &kubeconfig.SecretRef{Name: o.Secret, Key: o.Key}
	}
	if o.ref != nil && o.ref.Namespace == "" {
		if o.namespace, err = o.f.Namespace(); err != nil {
			return err
		}
		o.ref.Namespace = o.namespace
	}
	o.cluster, _, err = flags.Cluster(o.f, member.Discard)
	return err
}

// Validate checks that exactly one source is named.
func (o *Options) Validate() error {
	fromConfig := len(o.request.Config) > 0
	switch {
	case fromConfig && (o.RemoteClusterID != "" || o.Secret != ""):
		return fmt.Errorf("--remote-cluster-id and --secret: the client provides the cluster's configuration (%s spec.cluster.config); give neither", kubeconfig.ExecInfoEnv)
	case o.RemoteClusterID != "" && o.Secret != "":
		return errors.New("--remote-cluster-id and --secret: give one")
	case o.RemoteClusterID == "" && o.ref == nil:
		return errors.New("--remote-cluster-id or --secret: one is required (or a client's cluster configuration, provideClusterInfo: true)")
	case o.ResourceSlice != "" && o.RemoteClusterID == "":
		return errors.New("--resource-slice: only with --remote-cluster-id")
	case o.Secret == "" && o.Key != handshake.KubeconfigKey:
		return errors.New("--key: only with --secret")
	}
	if o.ResourceSlice != "" {
		if err := member.ValidateSliceName("--resource-slice", o.ResourceSlice); err != nil {
			return err
		}
	}
	return nil
}

// Run reads the credential and prints it as an ExecCredential.
func (o *Options) Run(ctx context.Context) error {
	// Read before the credential: a credential replaced after this moment is never kept past now+refresh.
	now := time.Now()
	_ = os.Setenv(guardEnv, "1")
	defer func() { _ = os.Unsetenv(guardEnv) }()
	p, err := handshake.HeldCredential(ctx, o.cluster, handshake.CredentialSource{ProviderID: o.RemoteClusterID, Slice: o.ResourceSlice, Secret: o.ref})
	if err != nil {
		return err
	}
	at, err := kubeconfig.RefreshAt(p, now, o.Refresh)
	if err != nil {
		return fmt.Errorf("%w; renew it", err)
	}
	out, err := kubeconfig.ExecCredential(o.request.APIVersion, p, at)
	if err != nil {
		return err
	}
	_, err = o.Out.Write(out)
	return err
}

// PluginArgs are the arguments that make this command read the credential in a Secret: what an exported
// client runs when it cannot hand the plugin the cluster's configuration (Argo CD before 3.5).
func PluginArgs(secret, key, namespace string) []string {
	return []string{"credential", "--secret", secret, "--key", key, "--namespace", namespace}
}

// MintArgs are the arguments that make this command mint a federated pairing's token on the consumer
// each time it runs: what a federated pairing's exported client runs, since no Secret holds its credential.
func MintArgs(providerID string) []string {
	return []string{"credential", "--remote-cluster-id", providerID}
}

// ClusterInfoArgs are the arguments of a client that hands the plugin the cluster's configuration.
func ClusterInfoArgs() []string { return []string{"credential"} }

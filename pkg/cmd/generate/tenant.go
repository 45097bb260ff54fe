package generate

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
)

// TenantOptions are the flags of `generate tenant`.
type TenantOptions struct {
	RemoteClusterID string
	Nonce           string
	NonceFile       string
	ProxyURL        string
	KeyAlgorithm    *cmdutil.Enum
	Output          *cmdutil.Enum

	f       *cmdutil.Factory
	cluster *handshake.Cluster
	cmdutil.Streams
}

// NewCmdTenant returns `generate tenant`.
func NewCmdTenant(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &TenantOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(&cobra.Command{
		Use:   "tenant --remote-cluster-id PROVIDER (--nonce-file FILE | --nonce NONCE) [--proxy-url URL]",
		Short: "Generate the signed Tenant request for a provider cluster (consumer side)",
		Long: cmdutil.LongDesc(`
			Generate the Tenant document that asks the provider cluster PROVIDER for an identity, using
			the nonce its administrator gave you: prefer --nonce-file (a file, or - for stdin), which keeps
			the nonce out of the process list and the shell history, over --nonce.

			This cluster generates a fresh client key (ECDSA P-256 unless --key-algorithm says otherwise)
			and keeps it in a Secret in its namespace federate-system; the key never leaves this cluster.
			The Tenant holds a CSR for that key and this cluster's Ed25519 signature over the provider ID,
			this cluster's ID, the nonce, the CSR and the proxy URL. It carries no secret: send it to the
			provider's administrator, who runs "generate identity -f tenant.yaml".

			This command writes to this cluster: it initializes it if needed, and creates the key Secret.
			Re-running it with the same nonce reuses the key.`),
		Example: cmdutil.Examples(`
			# Request an identity on the provider "gpu-farm"
			kubectl federate generate tenant --remote-cluster-id gpu-farm --nonce-file nonce.txt > tenant.yaml

			# The same, with the nonce on stdin and the provider reached through a proxy
			kubectl federate generate tenant --remote-cluster-id gpu-farm --nonce-file - --proxy-url http://proxy:3128 < nonce.txt > tenant.yaml`),
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the provider cluster")
	cmd.Flags().StringVar(&o.Nonce, "nonce", "", "The nonce the provider's administrator gave you (visible in the process list: prefer --nonce-file)")
	cmd.Flags().StringVar(&o.NonceFile, "nonce-file", "", "File holding the nonce the provider's administrator gave you (- for stdin)")
	cmd.MarkFlagsOneRequired("nonce", "nonce-file")
	cmd.MarkFlagsMutuallyExclusive("nonce", "nonce-file")
	cmd.Flags().StringVar(&o.ProxyURL, "proxy-url", "", "Proxy through which this cluster reaches the provider's API server, written into its kubeconfig")
	o.KeyAlgorithm = flags.KeyAlgorithm(cmd)
	o.Output = printers.AddOutputFlag(cmd, "yaml", "", "yaml", "json")
	return cmd
}

// Complete reads the nonce from --nonce-file, trimming the white space a file or a terminal adds, and
// builds the cluster client.
func (o *TenantOptions) Complete(_ *cobra.Command, _ []string) error {
	if o.NonceFile != "" {
		data, err := cmdutil.ReadInput("--nonce-file", o.NonceFile, o.In, 4096)
		if err != nil {
			return err
		}
		o.Nonce = strings.TrimSpace(string(data))
	}
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams).Scoped("local"))
	return err
}

// Validate checks the flags.
func (o *TenantOptions) Validate() error {
	if err := handshake.ValidateClusterID("--remote-cluster-id", o.RemoteClusterID); err != nil {
		return err
	}
	if _, err := nonce.Parse(o.Nonce); err != nil {
		flag := "--nonce"
		if o.NonceFile != "" {
			flag = "--nonce-file " + o.NonceFile
		}
		return fmt.Errorf("%s: %w", flag, err)
	}
	if o.ProxyURL != "" {
		if err := kubeconfig.ValidateProxy(o.ProxyURL); err != nil {
			return fmt.Errorf("--proxy-url: %w", err)
		}
	}
	return nil
}

// Run generates the Tenant and prints it.
func (o *TenantOptions) Run(ctx context.Context) error {
	t, err := o.cluster.GenerateTenant(ctx, handshake.TenantOptions{
		ProviderID: o.RemoteClusterID, Nonce: o.Nonce, ProxyURL: o.ProxyURL, KeyAlgorithm: o.KeyAlgorithm.String(),
	})
	if err != nil {
		return flags.RemoteIDError(err)
	}
	return printers.PrintObject(o.Out, o.Output.String(), t)
}

package generate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
)

// TenantOptions are the flags of `generate tenant`.
type TenantOptions struct {
	ClusterID       string
	RemoteClusterID string
	Nonce           string
	NonceFile       string
	ProxyURL        string
	KeyAlgorithm    *cmdutil.Enum
	Federated       flags.FederatedFlags
	Output          *printers.Flags

	ticket    nonce.Ticket // what --nonce or --nonce-file holds
	ticketErr error

	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewCmdTenant returns `generate tenant`.
func NewCmdTenant(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &TenantOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "tenant (--nonce-file FILE | --nonce NONCE) [--proxy-url URL]",
		Short: "Generate the signed Tenant request for a provider cluster (consumer side)",
		Long: cmdutil.LongDesc(`
			Generate the Tenant document that asks a provider cluster for an identity, using the nonce
			its administrator gave you: prefer --nonce-file (a file, or - for stdin), which keeps the
			nonce out of the process list and the shell history, over --nonce.

			The nonce, as "get nonce" prints it, names the provider and the consumer ID it was made for,
			sealed with it: --remote-cluster-id is then not needed (if given, it must be that provider).
			A cluster never initialized is initialized with that consumer ID, and says so; a cluster
			initialized under another ID is refused, naming both, before anything is written. A bare
			nonce (43 characters, from an older kubectl federate) names neither: give
			--remote-cluster-id, and --cluster-id on a cluster never initialized.

			This cluster generates a fresh client key (ECDSA P-256 unless --key-algorithm says otherwise)
			and keeps it in a Secret in its namespace federate-system; the key never leaves this cluster.
			The Tenant holds a CSR for that key and this cluster's Ed25519 signature over the provider ID,
			this cluster's ID, the nonce, the CSR and the proxy URL. It carries no secret: send it to the
			provider's administrator, who runs "generate identity -f tenant.yaml".

			This command writes to this cluster: it initializes it if needed, and creates the key Secret.
			Re-running it with the same nonce reuses the key.

			With --service-account NAMESPACE:NAME it asks for a federated identity instead: no client key
			and no CSR; the Tenant names this cluster's ServiceAccount token issuer (read from its
			discovery document) and that one ServiceAccount (pinned by its UID), whose tokens the
			provider's API server is to trust once its administrator installs the entry "get
			authenticator" prints there. Only the nonce-derived key that proves identity.yaml unchanged
			waits in the Secret until "import identity". It says, as warnings, what the provider's API
			server will lack of this issuer, seen from here (anonymous access to the discovery document,
			a name only this cluster resolves).`),
		Example: cmdutil.Examples(`
			# Request an identity on the provider that made nonce.txt
			kubectl federate generate tenant --nonce-file nonce.txt > tenant.yaml

			# The same, with the nonce on stdin and the provider reached through a proxy
			kubectl federate generate tenant --nonce-file - --proxy-url http://proxy:3128 < nonce.txt > tenant.yaml

			# Ask for a federated identity: the provider will trust this cluster's ServiceAccount ci/deployer
			kubectl federate generate tenant --nonce-file nonce.txt --service-account ci:deployer > tenant.yaml`),
	}, o)
	flags.OptionalRemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the provider cluster (default: the one the nonce names; required with a bare nonce)")
	flags.ClusterIDVar(cmd.Flags(), &o.ClusterID, "cluster-id", "The ID of this (consumer) cluster: initializes a cluster never initialized with it (default: the consumer ID the nonce names)")
	cmd.Flags().StringVar(&o.Nonce, "nonce", "", "The nonce the provider's administrator gave you (visible in the process list: prefer --nonce-file)")
	cmd.Flags().StringVar(&o.NonceFile, "nonce-file", "", "File holding the nonce the provider's administrator gave you (- for stdin)")
	cmd.MarkFlagsOneRequired("nonce", "nonce-file")
	cmd.MarkFlagsMutuallyExclusive("nonce", "nonce-file")
	cmd.Flags().StringVar(&o.ProxyURL, "proxy-url", "", "Proxy through which this cluster reaches the provider's API server, written into its kubeconfig")
	o.KeyAlgorithm = flags.KeyAlgorithm(cmd)
	o.Federated.AddFlags(cmd)
	o.Output = printers.AddFlags(cmd, "yaml", "")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads the nonce from --nonce-file, trimming the white space a file or a terminal adds, and
// builds the cluster client.
func (o *TenantOptions) Complete(_ *cobra.Command, _ []string) error {
	if o.NonceFile != "" {
		// Read as much as a tenant.yaml may hold: a file of another step is named, not cut off.
		data, err := cmdutil.ReadInput("--nonce-file", o.NonceFile, o.In, handshake.MaxDocumentSize)
		if err != nil {
			return err
		}
		o.Nonce = strings.TrimSpace(string(data))
	}
	o.ticket, o.ticketErr = nonce.ParseTicket(o.Nonce)
	var notTicket *nonce.NotATicketError
	switch {
	case o.ticketErr == nil:
	case flags.FileKind([]byte(o.Nonce)) != "":
		o.ticketErr = flags.WrongFileError(flags.FileKind([]byte(o.Nonce)), "a nonce")
	case errors.As(o.ticketErr, &notTicket) && notTicket.ResultLine():
		o.ticketErr = fmt.Errorf("%w: the line to hand over is what kubectl federate get nonce --remote-cluster-id CONSUMER prints on the provider", o.ticketErr)
	case errors.As(o.ticketErr, &notTicket):
		o.ticketErr = fmt.Errorf("%w (the one line kubectl federate get nonce prints on the provider)", o.ticketErr)
	}
	if err := o.Federated.Complete(); err != nil {
		return err
	}
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams).Scoped("local"))
	return err
}

// nonceFlag names where the nonce came from, for messages.
func (o *TenantOptions) nonceFlag() string {
	if o.NonceFile != "" {
		return "--nonce-file " + o.NonceFile
	}
	return "--nonce"
}

// Validate checks the flags against each other and against the IDs the nonce names.
func (o *TenantOptions) Validate() error {
	if o.ticketErr != nil {
		return fmt.Errorf("%s: %w", o.nonceFlag(), o.ticketErr)
	}
	for _, id := range []struct{ what, v string }{
		{o.nonceFlag() + ": provider", o.ticket.ProviderID}, {o.nonceFlag() + ": consumer", o.ticket.ConsumerID},
		{"--remote-cluster-id", o.RemoteClusterID}, {"--cluster-id", o.ClusterID},
	} {
		if id.v == "" {
			continue
		}
		if err := member.ValidateClusterID(id.what, id.v); err != nil {
			return err
		}
	}
	switch {
	case o.ticket.Bare() && o.RemoteClusterID == "":
		return fmt.Errorf("--remote-cluster-id: required with a bare nonce, which does not name its provider (the nonce \"get nonce\" prints names it)")
	case !o.ticket.Bare() && o.RemoteClusterID != "" && o.RemoteClusterID != o.ticket.ProviderID:
		return fmt.Errorf("--remote-cluster-id %q: the nonce in %s was made by provider %q; drop the flag, or ask %q's administrator for a nonce",
			o.RemoteClusterID, o.nonceFlag(), o.ticket.ProviderID, o.RemoteClusterID)
	case !o.ticket.Bare() && o.ClusterID != "" && o.ClusterID != o.ticket.ConsumerID:
		return fmt.Errorf("--cluster-id %q: the nonce in %s was made for consumer %q; drop the flag, or ask the provider's administrator for a nonce for %q",
			o.ClusterID, o.nonceFlag(), o.ticket.ConsumerID, o.ClusterID)
	}
	if o.ProxyURL != "" {
		if err := kubeconfig.ValidateProxy(o.ProxyURL); err != nil {
			return fmt.Errorf("--proxy-url: %w", err)
		}
	}
	return o.Federated.Validate()
}

// Run generates the Tenant and prints it.
func (o *TenantOptions) Run(ctx context.Context) error {
	provider, consumer := cmp.Or(o.RemoteClusterID, o.ticket.ProviderID), cmp.Or(o.ClusterID, o.ticket.ConsumerID)
	t, err := handshake.GenerateTenant(ctx, o.cluster, handshake.TenantOptions{
		ProviderID: provider, ConsumerID: consumer, Nonce: o.ticket.Nonce, ProxyURL: o.ProxyURL, KeyAlgorithm: o.KeyAlgorithm.String(),
		Federated: o.Federated.Options(),
	})
	var conflict *member.IDConflictError
	switch {
	case errors.As(err, &conflict) && o.ticket.Bare():
		return fmt.Errorf("--cluster-id: %w", err)
	case errors.As(err, &conflict):
		return fmt.Errorf("the nonce in %s was made for consumer %q, but this cluster is initialized as %q: ask the provider's administrator for a nonce for %q (create nonce --remote-cluster-id %s), or run this against the cluster %q",
			o.nonceFlag(), conflict.Want, conflict.Have, conflict.Have, conflict.Have, conflict.Want)
	case errors.Is(err, member.ErrNoClusterID):
		return fmt.Errorf("%w: a bare nonce does not name the consumer ID it was made for; give it with --cluster-id, or use the nonce as \"get nonce\" prints it", err)
	case err != nil:
		return flags.RemoteIDError(err)
	}
	return o.Output.PrintObject(o.Out, t)
}

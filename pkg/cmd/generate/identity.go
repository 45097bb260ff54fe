package generate

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// IdentityOptions are the flags of `generate identity`.
type IdentityOptions struct {
	RemoteClusterID string
	Filename        string
	Issuance        flags.IssuanceFlags
	Output          *printers.Flags

	f       *cmdutil.Factory
	tenant  *v1alpha1.Tenant
	cluster *member.Cluster
	server  string
	ca      []byte
	cmdutil.Streams
}

// NewCmdIdentity returns `generate identity`.
func NewCmdIdentity(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &IdentityOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "identity --remote-cluster-id CONSUMER -f tenant.yaml [--expiration 2160h]",
		Short: "Verify a consumer's Tenant and issue its identity (provider side)",
		Long: cmdutil.LongDesc(`
			Verify the Tenant of the consumer cluster CONSUMER and, if it is genuine, issue its identity
			and print the Identity document to hand back to the consumer's administrator.

			The Tenant is read from -f (a file, or - for stdin), which must hold exactly that one Tenant and
			nothing else: never "kubectl apply" a file received from another party, which would create
			whatever it holds with your rights. Before anything is created, it must pass every check:
			the nonce created for CONSUMER exists and has not expired, the signature verifies with the
			Tenant's handshake key for this provider, this consumer, that nonce and that exact CSR, the
			handshake key is the one pinned for CONSUMER (if any), and the CSR asks for exactly the user
			this nonce entitles, in the tenants group, with no alternative names or extensions.

			Then a CertificateSigningRequest with a generated name is created for the signer
			kubernetes.io/kube-apiserver-client, the nonce is consumed, the sandbox namespace
			federate-tenant-CONSUMER is created or converged (Pod Security level, ResourceQuota,
			LimitRange, NetworkPolicy, a default ServiceAccount without token; see --pod-security and
			--quota), exactly that CSR is approved, the certificate is checked against the request, the
			ClusterRole --cluster-role is bound to the new user in the sandbox (and to no earlier user),
			and the Tenant's status records the certificate's actual expiry and the sandbox. The Identity
			carries the certificate, the API server URL and its CA, each field sealed with a MAC keyed from
			the nonce: no secret. Re-running it for the same Tenant prints the same Identity.`),
		Example: cmdutil.Examples(`
			# Issue the identity the consumer "edge-1" asked for in tenant.yaml
			kubectl federate generate identity --remote-cluster-id edge-1 -f tenant.yaml > identity.yaml

			# The same for 30 days, a public API server name, and a larger sandbox
			kubectl federate generate identity --remote-cluster-id edge-1 -f tenant.yaml --expiration 720h \
			  --api-server https://k8s.example.com:6443 --quota pods=50,requests.cpu=16 > identity.yaml`),
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the consumer cluster")
	cmd.Flags().StringVarP(&o.Filename, "filename", "f", "", "The consumer's tenant.yaml (- for stdin)")
	_ = cmd.MarkFlagRequired("filename")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	o.Issuance.Federated = true
	o.Issuance.AddFlags(cmd)
	o.Output = printers.AddFlags(cmd, "yaml", "")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads and decodes the Tenant, resolves the API server and CA and builds the cluster client.
func (o *IdentityOptions) Complete(_ *cobra.Command, _ []string) error {
	data, err := cmdutil.ReadInput("-f", o.Filename, o.In, handshake.MaxDocumentSize)
	if err != nil {
		return err
	}
	if o.tenant, err = handshake.DecodeTenant(o.Filename, data); err != nil {
		return flags.FileKindHint(err)
	}
	cluster, clients, err := flags.Cluster(o.f, o.f.Printer(o.Streams).Scoped("local"))
	if err != nil {
		return err
	}
	o.cluster = cluster
	o.server, o.ca, err = o.Issuance.Resolve(clients.Config)
	return err
}

// Validate checks the flags.
func (o *IdentityOptions) Validate() error {
	return o.Issuance.Validate()
}

// Run issues the identity and prints it.
func (o *IdentityOptions) Run(ctx context.Context) error {
	o.Issuance.Warn(o.cluster.Report)
	id, err := handshake.IssueIdentity(ctx, o.cluster, handshake.IssueOptions{ConsumerID: o.RemoteClusterID, Tenant: o.tenant,
		APIServer: o.server, CA: o.ca, Expiration: o.Issuance.Expiration, ClusterRole: o.Issuance.ClusterRole, Sandbox: o.Issuance.RawSandbox,
		Credential: o.Issuance.Credential.String(), SignerTimeout: o.Issuance.SignerTimeout,
		MaxExpiration: o.Issuance.MaxExpiration, Given: o.Issuance.Given()})
	if errors.Is(err, member.ErrOtherConsumer) {
		// The next step: the request is genuine for its own consumer, which needs its own nonce.
		return fmt.Errorf("%w; if the request really comes from %q, create a nonce for it (kubectl federate create nonce --remote-cluster-id %s) and have it generate a new Tenant",
			err, o.tenant.Spec.ClusterID, o.tenant.Spec.ClusterID)
	}
	if err != nil {
		return flags.NonceHint(o.Issuance.CredentialError(err), o.RemoteClusterID)
	}
	flags.WarnToken(o.cluster.Report, id.Spec.Credential, "The identity")
	if id.Spec.Federated != nil {
		o.cluster.Reporter().Info("Federated: this cluster's API server trusts consumer " + o.RemoteClusterID + " only once its authenticator entry is installed; print it with: kubectl federate get authenticator --remote-cluster-id " + o.RemoteClusterID)
	}
	return o.Output.PrintObject(o.Out, id)
}

package generate

import (
	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/util"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// IdentityOptions are the flags of `generate identity`.
type IdentityOptions struct {
	RemoteClusterID string
	Filename        string
	Issuance        util.IssuanceFlags
	Output          *util.OutputFormat

	cluster *handshake.Cluster
	issue   handshake.IssueOptions
	util.Streams
}

// NewCmdIdentity returns `generate identity`.
func NewCmdIdentity(f *util.Factory, streams util.Streams) *cobra.Command {
	o := &IdentityOptions{Output: util.NewOutputFormat("yaml", "json"), Streams: streams}
	o.Output.Value = "yaml"
	cmd := &cobra.Command{
		Use:   "identity --remote-cluster-id CONSUMER -f tenant.yaml [--expiration 2160h]",
		Short: "Verify a consumer's Tenant and issue its identity (provider side)",
		Long: util.LongDesc(`
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
		Example: util.Examples(`
			# Issue the identity the consumer "edge-1" asked for in tenant.yaml
			kubectl federate generate identity --remote-cluster-id edge-1 -f tenant.yaml > identity.yaml

			# The same for 30 days, a public API server name, and a larger sandbox
			kubectl federate generate identity --remote-cluster-id edge-1 -f tenant.yaml --expiration 720h \
			  --api-server https://k8s.example.com:6443 --quota pods=50,requests.cpu=16 > identity.yaml`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(f); err != nil {
				return err
			}
			cmd.SilenceUsage = true
			return o.Run(cmd)
		},
	}
	util.RemoteClusterIDFlag(f, cmd, &o.RemoteClusterID, "The ID of the consumer cluster")
	cmd.Flags().StringVarP(&o.Filename, "filename", "f", "", "The consumer's tenant.yaml (- for stdin)")
	_ = cmd.MarkFlagRequired("filename")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	o.Issuance.AddFlags(cmd)
	cmd.Flags().VarP(o.Output, "output", "o", "Output format. One of: (yaml, json)")
	_ = cmd.RegisterFlagCompletionFunc("output", util.CompleteValues(o.Output.Allowed()))
	return cmd
}

// Validate checks the flags.
func (o *IdentityOptions) Validate() error {
	if err := handshake.ValidateClusterID("--remote-cluster-id", o.RemoteClusterID); err != nil {
		return err
	}
	return o.Issuance.Validate()
}

// Complete reads the Tenant file, resolves the API server and CA and builds the cluster client.
func (o *IdentityOptions) Complete(f *util.Factory) error {
	data, err := util.ReadInput("-f", o.Filename, o.In, handshake.MaxDocumentSize)
	if err != nil {
		return err
	}
	tenant, err := handshake.DecodeTenant(o.Filename, data)
	if err != nil {
		return err
	}
	cluster, clients, err := f.Cluster(f.Printer(o.Streams).Scoped("local"))
	if err != nil {
		return err
	}
	server, ca, err := o.Issuance.Resolve(clients.Config)
	if err != nil {
		return err
	}
	o.cluster = cluster
	o.issue = handshake.IssueOptions{ConsumerID: o.RemoteClusterID, Tenant: tenant, APIServer: server, CA: ca,
		Expiration: o.Issuance.Expiration, ClusterRole: o.Issuance.ClusterRole, Sandbox: o.Issuance.Sandbox}
	return nil
}

// Run issues the identity and prints it.
func (o *IdentityOptions) Run(cmd *cobra.Command) error {
	o.Issuance.Warn(o.cluster.Report)
	id, err := o.cluster.IssueIdentity(cmd.Context(), o.issue)
	if err != nil {
		return err
	}
	return util.PrintObject(o.Out, o.Output.Value, id)
}

package generate

import (
	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
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
		Use:   "identity --remote-cluster-id CONSUMER [-f tenant.yaml] [--expiration 2160h]",
		Short: "Verify a consumer's Tenant and issue its identity (provider side)",
		Long: util.LongDesc(`
			Verify the Tenant of the consumer cluster CONSUMER and, if it is genuine, issue its identity
			and print the Identity document to hand back to the consumer's administrator.

			The Tenant is read from -f (a file, or - for stdin) or, without -f, from the cluster where
			"kubectl apply -f tenant.yaml" put it. Before anything is created, it must pass every check:
			the nonce created for CONSUMER exists and has not expired, the signature verifies with the
			Tenant's handshake key for this provider, this consumer, that nonce and that exact CSR, the
			handshake key is the one pinned for CONSUMER (if any), and the CSR asks for exactly the user
			this nonce entitles, in the tenants group, with no alternative names or extensions.

			Then the nonce is consumed, the CSR is signed by this cluster's CSR API (signer
			kubernetes.io/kube-apiserver-client), the ClusterRole --cluster-role is bound to the new user
			in the namespace federate-tenant-CONSUMER (and to no earlier user), and the Tenant's status
			records the certificate's actual expiry. The Identity carries the certificate, the API server
			URL and its CA: no secret. Re-running it for the same Tenant prints the same Identity.`),
		Example: util.Examples(`
			# Apply the consumer's request, then issue its identity
			kubectl apply -f tenant.yaml
			kubectl federate generate identity --remote-cluster-id edge-1 > identity.yaml

			# Issue from the file directly, for 30 days, with a custom role and a public API server name
			kubectl federate generate identity --remote-cluster-id edge-1 -f tenant.yaml --expiration 720h \
			  --cluster-role edge-workloads --api-server https://k8s.example.com:6443 > identity.yaml`),
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
	cmd.Flags().StringVarP(&o.Filename, "filename", "f", "", "The consumer's tenant.yaml (- for stdin); default: the Tenant applied in the cluster")
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
	var tenant *v1alpha1.Tenant
	if o.Filename != "" {
		data, err := util.ReadInput("-f", o.Filename, o.In, handshake.MaxDocumentSize)
		if err != nil {
			return err
		}
		if tenant, err = handshake.DecodeTenant(o.Filename, data); err != nil {
			return err
		}
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
		Expiration: o.Issuance.Expiration, ClusterRole: o.Issuance.ClusterRole}
	return nil
}

// Run issues the identity and prints it.
func (o *IdentityOptions) Run(cmd *cobra.Command) error {
	id, err := o.cluster.IssueIdentity(cmd.Context(), o.issue)
	if err != nil {
		return err
	}
	return util.PrintObject(o.Out, o.Output.Value, id)
}

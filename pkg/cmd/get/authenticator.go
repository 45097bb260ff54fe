package get

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// AuthenticatorOptions are the flags of `get authenticator`.
type AuthenticatorOptions struct {
	RemoteClusterID string

	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewCmdAuthenticator returns `get authenticator`.
func NewCmdAuthenticator(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &AuthenticatorOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "authenticator [--remote-cluster-id CONSUMER]",
		Short: "Print the authenticator entries this API server needs for its federated pairings (provider side)",
		Long: cmdutil.LongDesc(`
			Print, as an AuthenticationConfiguration (apiserver.config.k8s.io/v1), the jwt entries this
			(provider) cluster's API server needs to trust its federated consumers: one per active
			federated pairing, or only CONSUMER's. Each trusts the consumer's ServiceAccount token
			issuer for one audience, accepts the tokens of one ServiceAccount only (by name and UID,
			living a day at most), and maps them to the pairing's user, in no group.

			No API request can write an API server's configuration: merge the entries into the jwt list
			of the file its --authentication-config names, on every control-plane host, replacing any
			entry of the same issuer url; the API server reloads it by itself. docs/federated.md shows
			where managed providers differ. The entries are made from the Tenants' records, so this
			prints the same entries "authenticate" and "generate identity" issued.`),
		Example: cmdutil.Examples(`
			# The entry of the federated consumer "edge-1", to merge into the provider's configuration
			kubectl federate get authenticator --remote-cluster-id edge-1 > edge-1-authn.yaml

			# Every federated consumer's
			kubectl federate get authenticator`),
	}, o)
	flags.OptionalRemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the federated consumer whose entry to print (default: every one's)")
	return cmd
}

// Complete builds the cluster client.
func (o *AuthenticatorOptions) Complete(_ *cobra.Command, _ []string) error {
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the flags.
func (o *AuthenticatorOptions) Validate() error { return nil }

// Run prints the entries.
func (o *AuthenticatorOptions) Run(ctx context.Context) error {
	entries, err := handshake.Authenticators(ctx, o.cluster, o.RemoteClusterID)
	if err != nil {
		return flags.NotFoundHint(err, "--remote-cluster-id")
	}
	data, err := handshake.AuthenticationConfigYAML(entries...)
	if err != nil {
		return err
	}
	_, err = o.Out.Write(data)
	return err
}

// Package authenticate implements `kubectl federate authenticate`.
package authenticate

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/lifecycle"
)

// Options are the flags of `authenticate`.
type Options struct {
	IDs          flags.ClusterIDs
	ProxyURL     string
	KeyAlgorithm *cmdutil.Enum
	Issuance     flags.IssuanceFlags
	Federated    flags.FederatedFlags
	Pair         *flags.PairFlags

	pair   *flags.Pair
	server string
	ca     []byte
	cmdutil.Streams
}

// NewCmd returns the `authenticate` command.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &Options{Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "authenticate --kubeconfig CONSUMER --remote-kubeconfig PROVIDER",
		Short: "Give this (consumer) cluster an identity on a provider cluster, in one step",
		Long: cmdutil.LongDesc(`
			Give the consumer cluster (--kubeconfig, --context) a least-privilege, expiring identity on
			the provider cluster (--remote-kubeconfig, --remote-context), when one machine holds both
			kubeconfigs. It runs the manual flow's steps in one process: the provider creates a nonce,
			the consumer generates its signed Tenant with a fresh client key, the provider verifies it and
			issues a certificate through its CSR API, and the consumer stores the resulting kubeconfig in
			the Secret kubeconfig-controlplane-PROVIDER of its namespace federate-system.

			On the provider, the identity is bound in the sandbox namespace federate-tenant-CONSUMER, which
			the API server itself keeps in bounds: Pod Security (--pod-security, restricted by default), a
			ResourceQuota and LimitRange (--quota, --default-requests, --default-limits), the
			federate-sandbox admission policy, a NetworkPolicy and a default ServiceAccount without token.

			Clusters that were never initialized are initialized, with --cluster-id and
			--remote-cluster-id or the default IDs (see "kubectl federate init"). Running it again
			renews the identity: a new key and certificate, a new user, and the old certificate loses
			its rights. Progress goes to stderr, one line per step, (local) for the consumer and
			(remote) for the provider.

			With --credential federated and --service-account NAMESPACE:NAME, the consumer stores no
			credential at all: the provider's API server trusts the consumer's own ServiceAccount tokens
			(structured authentication), for that one ServiceAccount, and the consumer mints a short token
			whenever it needs one. The tool cannot write an API server's configuration: it prints, on
			stdout, the AuthenticationConfiguration entry to merge into the file the provider's API server
			reads (--authentication-config), and proves the pairing through a token minted on the consumer.
			Until the provider takes that token for the pairing's user and authorizes it, the pairing is
			not ready: the run exits 4 naming what is missing; install the entry and run it again, or prove
			it with "status --check". See docs/federated.md.

			Exit codes: 0 success, 1 error, 4 a federated pairing set up but not proven, 124 when
			--timeout expires.`),
		Example: cmdutil.Examples(`
			# Federate two clusters
			kubectl federate authenticate --kubeconfig consumer.kubeconfig --remote-kubeconfig provider.kubeconfig

			# Name both clusters, ask for a 7-day certificate and a custom role
			kubectl federate authenticate --context edge-1 --remote-context gpu-farm \
			  --cluster-id edge-1 --remote-cluster-id gpu-farm --expiration 168h --cluster-role edge-workloads

			# No credential at all: the provider trusts edge-1's ServiceAccount ci/deployer; save the entry to install
			kubectl federate authenticate --context edge-1 --remote-context gpu-farm \
			  --credential federated --service-account ci:deployer > gpu-farm-authn.yaml`),
	}, o)
	o.Pair = flags.AddPairFlags(cmd, f, streams, "the whole handshake")
	o.IDs.AddFlags(cmd, "The ID to initialize the consumer cluster with, if it never was", "The ID to initialize the provider cluster with, if it never was")
	cmd.Flags().StringVar(&o.ProxyURL, "proxy-url", "", "Proxy through which the consumer reaches the provider's API server")
	o.KeyAlgorithm = flags.KeyAlgorithm(cmd)
	o.Issuance.Federated = true
	o.Issuance.AddFlags(cmd)
	o.Federated.AddFlags(cmd)
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete builds both clusters' clients and resolves the provider's API server and CA.
func (o *Options) Complete(_ *cobra.Command, _ []string) error {
	var err error
	if o.pair, err = o.Pair.Complete(o.Streams); err != nil {
		return err
	}
	if o.server, o.ca, err = o.Issuance.Resolve(o.pair.Remote.Config); err != nil {
		return err
	}
	return o.Federated.Complete()
}

// Validate checks the flags: the pair, the IDs, the proxy, then the issuance choices.
func (o *Options) Validate() error {
	if err := o.Pair.Validate(); err != nil {
		return err
	}
	if err := o.IDs.Validate(); err != nil {
		return err
	}
	if o.ProxyURL != "" {
		if err := kubeconfig.ValidateProxy(o.ProxyURL); err != nil {
			return fmt.Errorf("--proxy-url: %w", err)
		}
	}
	if err := o.Issuance.Validate(); err != nil {
		return err
	}
	if err := o.Federated.Validate(); err != nil {
		return err
	}
	return flags.ValidateFederatedCredential(o.Issuance.Credential.String(), o.Issuance.Given()[handshake.SettingCredential], &o.Federated)
}

// Run performs the handshake.
func (o *Options) Run(ctx context.Context) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.Pair.Timeout)
	defer cancel()
	o.Issuance.Warn(o.pair.Provider.Report)
	res, err := lifecycle.Authenticate(ctx, o.pair.Consumer, o.pair.Provider, lifecycle.AuthenticateOptions{
		ConsumerID: o.IDs.Local, ProviderID: o.IDs.Remote, ProxyURL: o.ProxyURL, KeyAlgorithm: o.KeyAlgorithm.String(),
		APIServer: o.server, CA: o.ca, Expiration: o.Issuance.Expiration, ClusterRole: o.Issuance.ClusterRole,
		Sandbox: o.Issuance.RawSandbox, Credential: o.Issuance.Credential.String(), SignerTimeout: o.Issuance.SignerTimeout,
		MaxExpiration: o.Issuance.MaxExpiration, Given: o.Issuance.Given(), Federated: o.Federated.Options(),
	})
	if res != nil && res.Authenticator != nil {
		// The entry is the run's data, printed whether the pairing is proven or not: it is what the
		// provider's administrator installs.
		if perr := flags.PrintAuthenticator(o.Out, o.pair.Printer, res.Authenticator); perr != nil {
			return perr
		}
	}
	if err != nil {
		return flags.NotTrustedExit(o.Pair.TimeoutError(ctx, o.Issuance.CredentialError(flags.PairError(err))))
	}
	if res.Federated != nil {
		sa := res.Federated.ServiceAccount
		o.pair.Printer.Info(fmt.Sprintf("Authenticated as %s: tokens of ServiceAccount %s/%s for audience %s, minted on demand; no credential stored",
			res.User, sa.Namespace, sa.Name, res.Federated.Audience))
	} else {
		o.pair.Printer.Info(fmt.Sprintf("Authenticated as %s until %s; kubeconfig in Secret %s/%s",
			res.User, res.NotAfter.UTC().Format(time.RFC3339), res.Namespace, res.KubeconfigSecret))
	}
	o.pair.Printer.Info(o.Pair.Summary(time.Since(start)))
	return nil
}

// Package authenticate implements `kubectl federate authenticate`.
package authenticate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/util"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
)

// DefaultTimeout bounds a two-cluster command.
const DefaultTimeout = 2 * time.Minute

// Options are the flags of `authenticate`.
type Options struct {
	ClusterID       string
	RemoteClusterID string
	ProxyURL        string
	KeyAlgorithm    string
	Timeout         time.Duration
	Issuance        util.IssuanceFlags

	local, remote *util.Factory
	pair          *util.Pair
	server        string
	ca            []byte
	util.Streams
}

// NewCmd returns the `authenticate` command.
func NewCmd(f *util.Factory, streams util.Streams) *cobra.Command {
	o := &Options{Timeout: DefaultTimeout, KeyAlgorithm: handshake.KeyECDSAP256, local: f, Streams: streams}
	cmd := &cobra.Command{
		Use:   "authenticate --kubeconfig CONSUMER --remote-kubeconfig PROVIDER",
		Short: "Give this (consumer) cluster an identity on a provider cluster, in one step",
		Long: util.LongDesc(`
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
			(remote) for the provider. Exit codes: 0 success, 1 error, 124 when --timeout expires.`),
		Example: util.Examples(`
			# Federate two clusters
			kubectl federate authenticate --kubeconfig consumer.kubeconfig --remote-kubeconfig provider.kubeconfig

			# Name both clusters, ask for a 7-day certificate and a custom role
			kubectl federate authenticate --context edge-1 --remote-context gpu-farm \
			  --cluster-id edge-1 --remote-cluster-id gpu-farm --expiration 168h --cluster-role edge-workloads`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(); err != nil {
				return err
			}
			cmd.SilenceUsage = true
			return o.Run(cmd.Context())
		},
	}
	o.remote = util.AddRemoteFlags(cmd.Flags(), streams)
	fs := cmd.Flags()
	fs.StringVar(&o.ClusterID, "cluster-id", "", "The ID to initialize the consumer cluster with, if it never was")
	fs.StringVar(&o.RemoteClusterID, "remote-cluster-id", "", "The ID to initialize the provider cluster with, if it never was")
	fs.StringVar(&o.ProxyURL, "proxy-url", "", "Proxy through which the consumer reaches the provider's API server")
	fs.StringVar(&o.KeyAlgorithm, "key-algorithm", o.KeyAlgorithm, "Algorithm of the new client key. One of: ("+strings.Join(handshake.KeyAlgorithms, ", ")+")")
	_ = cmd.RegisterFlagCompletionFunc("key-algorithm", util.CompleteValues(handshake.KeyAlgorithms))
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "How long the whole handshake may take before it is abandoned (exit code 124)")
	o.Issuance.AddFlags(cmd)
	return cmd
}

// Validate checks the flags.
func (o *Options) Validate() error {
	for flag, id := range map[string]string{"--cluster-id": o.ClusterID, "--remote-cluster-id": o.RemoteClusterID} {
		if id != "" {
			if err := handshake.ValidateClusterID(flag, id); err != nil {
				return err
			}
		}
	}
	if o.ClusterID != "" && o.ClusterID == o.RemoteClusterID {
		return util.UsageErrorf("", "--cluster-id and --remote-cluster-id: must differ, both are %q", o.ClusterID)
	}
	if o.ProxyURL != "" {
		if err := kubeconfig.ValidateProxy(o.ProxyURL); err != nil {
			return fmt.Errorf("--proxy-url: %w", err)
		}
	}
	if err := handshake.ValidateKeyAlgorithm(o.KeyAlgorithm); err != nil {
		return fmt.Errorf("--key-algorithm %w", err)
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout %s: must be positive", o.Timeout)
	}
	return o.Issuance.Validate()
}

// Complete builds both clusters' clients and resolves the provider's API server and CA.
func (o *Options) Complete() error {
	var err error
	if o.pair, err = util.NewPair(o.local, o.remote, o.Streams); err != nil {
		return err
	}
	o.server, o.ca, err = o.Issuance.Resolve(o.pair.Remote.Config)
	return err
}

// Run performs the handshake.
func (o *Options) Run(ctx context.Context) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	o.Issuance.Warn(o.pair.Provider.Report)
	res, err := handshake.Authenticate(ctx, o.pair.Consumer, o.pair.Provider, handshake.AuthenticateOptions{
		ConsumerID: o.ClusterID, ProviderID: o.RemoteClusterID, ProxyURL: o.ProxyURL, KeyAlgorithm: o.KeyAlgorithm,
		APIServer: o.server, CA: o.ca, Expiration: o.Issuance.Expiration, ClusterRole: o.Issuance.ClusterRole,
		Sandbox: o.Issuance.Sandbox,
	})
	if err != nil {
		return util.WithDeadline(ctx, err, "--timeout "+o.Timeout.String())
	}
	o.pair.Printer.Info(fmt.Sprintf("Authenticated as %s until %s; kubeconfig in Secret %s/%s",
		res.User, res.NotAfter.UTC().Format(time.RFC3339), res.Namespace, res.KubeconfigSecret))
	o.pair.Printer.Info(util.Summary(o.local, o.remote, time.Since(start).Round(time.Millisecond)))
	return nil
}

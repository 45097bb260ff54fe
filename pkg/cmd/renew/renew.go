// Package renew implements `kubectl federate renew`.
package renew

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/credential"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/lifecycle"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/status"
)

// Options are the flags of `renew`.
type Options struct {
	RemoteClusterID string
	All             bool
	ExpiringWithin  time.Duration
	KubeconfigDir   string
	ProxyURL        string
	Issuance        flags.IssuanceFlags
	KeyAlgorithm    *cmdutil.Enum
	Pair            *flags.PairFlags
	Overlap         time.Duration

	f       *cmdutil.Factory
	streams cmdutil.Streams
	cmdutil.Streams
}

// NewCmd returns the `renew` command.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &Options{f: f, streams: streams, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "renew (--remote-cluster-id ID --remote-kubeconfig FILE | --all --remote-kubeconfig-dir DIR)",
		Short: "Renew every credential of a pairing with fresh keys and users (consumer and provider at once)",
		Long: cmdutil.LongDesc(`
			Renew every credential this (consumer) cluster holds on a provider: the pairing's identity (a new
			nonce, request and certificate or token) and each resource slice it imported (asked again with a
			new key and granted within what it had). Each new credential has a new user, so the old ones are
			refused afterwards. It needs the provider's kubeconfig, like authenticate.

			The old credentials stay authorized beside the new ones for --overlap (45s by default), so
			that a client that read one (through the credential plugin, whose expirationTimestamp is 30s
			ahead, or an export a tool reads again) keeps working until it reads the new one; then this
			command takes them out of their RoleBindings, and prints when. That is the longest a renewed-away
			credential works: the command waits for it (Ctrl-C ends the overlap at once; a run killed
			before leaves them bound until the next renew, authenticate or revoke of the pairing). With
			--overlap 0 they are refused at once. A changed --cluster-role has no overlap. revoke is not
			delayed by it: it cuts the old credentials with the new ones.

			A renewal keeps everything the pairing was given: the API server, CA and proxy URL of the
			consumer's kubeconfig, the lifetime and its maximum, the role, the credential kind and the
			sandbox (Pod Security level, quota, limits, allowed classes, tolerations, schedulers), as
			recorded when it was issued. A flag given explicitly changes that one setting; each change is
			printed as "setting: old -> new", and one that widens what the tenant gets as a WARNING.

			--all renews every provider this cluster holds credentials on, or with --expiring-within only
			those with a credential that expires within that window, reading each provider's kubeconfig from
			--remote-kubeconfig-dir (a file named after the provider's cluster ID, optionally with .kubeconfig
			or .yaml). It prints one line per provider and exits 1 if any could not be renewed.`),
		Example: cmdutil.Examples(`
			# Renew the pairing with the provider "gpu-farm" and its slices
			kubectl federate renew --remote-cluster-id gpu-farm --remote-kubeconfig gpu-farm.kubeconfig

			# From a daily cron or CI job on the consumer: renew whatever expires within 30 days
			kubectl federate renew --all --expiring-within 720h --remote-kubeconfig-dir /etc/federate/providers`),
	}, o)
	flags.OptionalRemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the provider cluster (without --all)")
	cmd.Flags().BoolVar(&o.All, "all", false, "Renew every provider this cluster holds credentials on (see --expiring-within)")
	cmdutil.DurationFlag(cmd.Flags(), &o.ExpiringWithin, "expiring-within", 0, 0, 3650*24*time.Hour, "With --all: only the providers with a credential expiring within this duration, e.g. 720h")
	cmd.Flags().StringVar(&o.KubeconfigDir, "remote-kubeconfig-dir", "", "With --all: a directory holding one kubeconfig per provider, named after its cluster ID")
	_ = cmd.MarkFlagDirname("remote-kubeconfig-dir")
	o.Issuance.AddFlags(cmd)
	cmd.Flags().StringVar(&o.ProxyURL, "proxy-url", "", "Proxy through which the consumer reaches the provider's API server (a renewal keeps the recorded one)")
	o.KeyAlgorithm = flags.KeyAlgorithm(cmd)
	o.Pair = flags.AddPairFlags(cmd, f, streams, "renewing one provider")
	cmdutil.DurationFlag(cmd.Flags(), &o.Overlap, "overlap", DefaultOverlap, 0, time.Hour,
		"How long the old credentials stay authorized beside the new ones, for clients to read the new ones; 0 refuses them at once")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// DefaultOverlap is the credential plugin's horizon (a client reads the credential again within it) and
// 15 s: the longest a request sent before it may wait in the API server's priority and fairness queues
// before it is authorized (a quarter of the default 60 s request timeout).
const DefaultOverlap = credential.DefaultRefresh + 15*time.Second

// retireTimeout bounds the end of an overlap, which runs even after an interrupt.
const retireTimeout = 30 * time.Second

// Complete has nothing to resolve before Validate: the clusters are built per provider in Run.
func (o *Options) Complete(_ *cobra.Command, _ []string) error { return nil }

// Validate checks the flags.
func (o *Options) Validate() error {
	if o.All {
		switch {
		case o.RemoteClusterID != "" || o.Pair.Given():
			return errors.New("--all: renews every provider from --remote-kubeconfig-dir; it takes no --remote-cluster-id or --remote-kubeconfig")
		case o.KubeconfigDir == "":
			return errors.New("--remote-kubeconfig-dir: is required with --all")
		}
		if st, err := os.Stat(o.KubeconfigDir); err != nil || !st.IsDir() {
			return fmt.Errorf("--remote-kubeconfig-dir %q: is not a directory", o.KubeconfigDir)
		}
	} else {
		if o.KubeconfigDir != "" || o.ExpiringWithin != 0 {
			return errors.New("--remote-kubeconfig-dir and --expiring-within: only with --all")
		}
		if err := flags.RequireRemoteClusterID(o.RemoteClusterID); err != nil {
			return err
		}
		if err := o.Pair.Validate(); err != nil {
			return err
		}
	}
	if o.ExpiringWithin < 0 {
		return fmt.Errorf("--expiring-within %s: must not be negative", o.ExpiringWithin)
	}
	if o.ProxyURL != "" {
		if err := kubeconfig.ValidateProxy(o.ProxyURL); err != nil {
			return fmt.Errorf("--proxy-url: %w", err)
		}
	}
	return o.Issuance.Validate()
}

// Run renews one provider, or every due one.
func (o *Options) Run(ctx context.Context) error {
	if !o.All {
		pair, err := o.Pair.Complete(o.streams)
		if err != nil {
			return err
		}
		done, err := o.renewOne(ctx, pair, o.RemoteClusterID)
		return errors.Join(err, o.endOverlap(ctx, []*renewed{done}))
	}
	local, _, err := flags.Cluster(o.f, o.f.Printer(o.streams).Scoped("local"))
	if err != nil {
		return err
	}
	report, err := status.Status(ctx, local, false)
	if err != nil {
		return err
	}
	due := map[string]*time.Time{} // provider -> its earliest expiry
	deadline := o.f.ServerNow().Add(o.ExpiringWithin)
	consumers := map[string]bool{}
	for _, s := range report.Credentials {
		if s.Role == member.RoleProvider {
			consumers[s.RemoteClusterID] = true
		}
	}
	for _, s := range report.Credentials {
		if s.Role != member.RoleConsumer || s.Kind == status.KindExchange || s.NotAfter == nil {
			continue
		}
		if first, ok := due[s.RemoteClusterID]; !ok || s.NotAfter.Before(*first) {
			due[s.RemoteClusterID] = s.NotAfter
		}
	}
	providers := make([]string, 0, len(due))
	for p := range due {
		providers = append(providers, p)
	}
	slices.Sort(providers)
	if len(providers) == 0 {
		// Silence would read as "all renewed". A provider's credentials are renewed by its consumers.
		msg := "Nothing to renew: this cluster holds no credential on any provider"
		if len(consumers) > 0 {
			msg += fmt.Sprintf(" (it is the provider of %d consumer(s), which renew from their side: run renew with a consumer's --kubeconfig)", len(consumers))
		}
		local.Reporter().Warn(msg)
		return nil
	}
	var errs []error
	var overlaps []*renewed
	for _, p := range providers {
		if o.ExpiringWithin > 0 && due[p].After(deadline) {
			fmt.Fprintf(o.Out, "pairing/%s not due (first expiry %s)\n", p, due[p].UTC().Format(time.RFC3339))
			continue
		}
		done, err := o.renewFromDir(ctx, p)
		overlaps = append(overlaps, done)
		if err != nil {
			fmt.Fprintf(o.Out, "pairing/%s failed: %v\n", p, err)
			errs = append(errs, fmt.Errorf("provider %q: %w", p, err))
		}
	}
	// One wait for every provider: their overlaps run at the same time.
	if err := o.endOverlap(ctx, overlaps); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d provider(s) not renewed: %w", len(errs), len(providers), errors.Join(errs...))
	}
	return nil
}

// renewFromDir renews one provider with the kubeconfig named after it in --remote-kubeconfig-dir.
func (o *Options) renewFromDir(ctx context.Context, providerID string) (*renewed, error) {
	var path string
	for _, name := range []string{providerID, providerID + ".kubeconfig", providerID + ".yaml"} {
		if st, err := os.Stat(filepath.Join(o.KubeconfigDir, name)); err == nil && !st.IsDir() {
			path = filepath.Join(o.KubeconfigDir, name)
			break
		}
	}
	if path == "" {
		return nil, fmt.Errorf("no kubeconfig for it in --remote-kubeconfig-dir %s (a file %s, %s.kubeconfig or %s.yaml)", o.KubeconfigDir, providerID, providerID, providerID)
	}
	remote := o.f.NewSibling(o.streams)
	remote.Flags.KubeConfig = &path
	printer := o.f.Printer(o.streams)
	consumer, _, err := flags.Cluster(o.f, printer.Scoped("local"))
	if err != nil {
		return nil, err
	}
	provider, clients, err := flags.Cluster(remote, printer.Scoped(providerID))
	if err != nil {
		return nil, err
	}
	return o.renewOne(ctx, &flags.Pair{Printer: printer, Consumer: consumer, Provider: provider, Remote: clients}, providerID)
}

// renewed is one provider's renewal whose overlap is running: the users it left bound, until when.
type renewed struct {
	providerID string
	provider   *member.Cluster
	res        *lifecycle.RenewResult
	until      time.Time
	failed     bool // the renewal failed after the provider bound the new user: no overlap is owed
}

func (o *Options) renewOne(ctx context.Context, pair *flags.Pair, providerID string) (*renewed, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Pair.Timeout)
	defer cancel()
	server, ca, err := o.Issuance.Resolve(pair.Remote.Config)
	if err != nil {
		return nil, err
	}
	if self, err := pair.Provider.Load(ctx); err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	} else if self.ClusterID != providerID {
		return nil, fmt.Errorf("--remote-cluster-id %q: the provider's kubeconfig reaches cluster %q", providerID, self.ClusterID)
	}
	start := time.Now()
	res, err := lifecycle.Renew(ctx, pair.Consumer, pair.Provider, lifecycle.RenewOptions{APIServer: server, CA: ca, ProxyURL: o.ProxyURL,
		Expiration: o.Issuance.Expiration, MaxExpiration: o.Issuance.MaxExpiration, ClusterRole: o.Issuance.ClusterRole,
		Sandbox: o.Issuance.RawSandbox, Credential: o.Issuance.Credential.String(),
		KeyAlgorithm: o.KeyAlgorithm.String(), SignerTimeout: o.Issuance.SignerTimeout, Given: o.Issuance.Given(),
		Overlap: o.Overlap > 0 && !o.f.DryRun().Active()})
	// Every new credential is stored (and every export rewritten) by now: a client reads it within the
	// plugin's horizon from here.
	var done *renewed
	if res != nil && len(res.Retiring) > 0 {
		done = &renewed{providerID: providerID, provider: pair.Provider, res: res, until: time.Now().Add(o.Overlap), failed: err != nil}
	}
	if res != nil && res.ControlPlane != nil {
		fmt.Fprintf(o.Out, "pairing/%s renewed: %s until %s, %d resource slice(s), in %s\n", providerID, res.ControlPlane.User,
			res.ControlPlane.NotAfter.UTC().Format(time.RFC3339), len(res.Slices), time.Since(start).Round(time.Millisecond))
	}
	if res != nil && res.Federated {
		fmt.Fprintf(o.Out, "pairing/%s has nothing to rotate: federated, it holds no credential (its tokens are minted on demand and expire by themselves); %d resource slice(s) renewed, in %s\n",
			providerID, len(res.Slices), time.Since(start).Round(time.Millisecond))
	}
	if done != nil && !done.failed {
		fmt.Fprintf(o.Out, "pairing/%s previous credential(s) %s authorized until %s (--overlap %s), for clients to read the new ones\n",
			providerID, users(res.Retiring), done.until.UTC().Format(time.RFC3339), o.Overlap)
	}
	return done, o.Pair.TimeoutError(ctx, flags.PairError(err))
}

// endOverlap waits until each overlap ends and takes the renewed-away users out of their bindings; on an
// interrupt, or for a renewal that failed, at once. It runs on a context of its own, so that an interrupt
// still ends the overlap.
func (o *Options) endOverlap(ctx context.Context, all []*renewed) error {
	var errs []error
	for _, d := range all {
		if d == nil {
			continue
		}
		if !d.failed && handshake.WaitUntil(ctx, d.until) != nil {
			fmt.Fprintf(o.ErrOut, "Interrupted: the overlap of pairing/%s ends now; clients still using its previous credential(s) are refused until they read the new ones\n", d.providerID)
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), retireTimeout)
		err := d.res.Retire(rctx, d.provider)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("pairing/%s: %w", d.providerID, err))
			continue
		}
		fmt.Fprintf(o.Out, "pairing/%s previous credential(s) %s refused\n", d.providerID, users(d.res.Retiring))
	}
	return errors.Join(errs...)
}

func users(rs []handshake.Retiring) string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.User
	}
	return strings.Join(out, ", ")
}

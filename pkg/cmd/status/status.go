// Package status implements `kubectl federate status`.
package status

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
	"github.com/federate-dev/kubectl-federate/pkg/status"
)

// Options are the flags of `status`.
type Options struct {
	Check          bool
	ExpiringWithin time.Duration
	History        bool
	// RemoteClusterID shows only the pairings with that remote cluster.
	RemoteClusterID string
	Output          *printers.Flags
	List            *printers.ListFlags

	f       *cmdutil.Factory
	cluster *member.Cluster
	now     func() time.Time
	cmdutil.Streams
}

// NewCmd returns the `status` command.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &Options{f: f, Streams: streams, now: time.Now}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "status [--check] [--expiring-within DURATION] [--remote-cluster-id ID] [-o json|yaml|wide]",
		Short: "List every pairing of this cluster and every credential under it, with its expiry",
		Long: cmdutil.LongDesc(`
			List every credential of every pairing this cluster takes part in, in both roles: the
			identities it issued as a provider (each consumer's pairing identity and its resource slices'),
			and the identities it holds as a consumer, with their kind, credential (certificate or token),
			user, expiry, time left and sandbox level.

			--check also proves each credential this cluster holds, through it: not that it
			authenticates (a revoked certificate still does) but that the provider authorizes it for what
			it was issued for. A pairing's or a slice's identity must be allowed to create pods in its
			namespace (a SelfSubjectAccessReview) and not be refused them by admission (a dry-run pod); an
			exchange credential must act as its target. Each gets one state: ok, revoked (no longer
			authenticated, or authenticated but authorized for nothing it was issued for), cordoned,
			expired or unreachable, with the reason. On a provider, --check also looks for a
			NetworkPolicy engine among the cluster's DaemonSets (Calico, Cilium, kube-router, Antrea and
			others it knows) and warns when none runs: the sandbox's NetworkPolicy is then stored but not
			enforced.

			--expiring-within makes the command a monitor of what "renew" renews (a pairing's identity
			or a resource slice's). Exchange credentials are listed with their expiry but not counted:
			"renew" does not renew them; "get kubeconfig --for-user" asks for a new one in its last hour,
			which the provider consents to again.

			Exit codes, for scripts: 0 all is well; 4 --check found a credential not ok (revoked,
			cordoned, expired or unreachable); 3 --expiring-within found an active credential expiring
			within the window (a credential --check found revoked counts as revoked, not expiring); 1 the
			command could not run. 4 wins over 3. The list is printed either way.

			--history lists the audit trail instead, oldest first, in the order the API server stored
			the Events, with how long ago it stored each (-o wide: the time).

			The tables are kubectl's: one row per record, for grep and awk, with short values (time
			left as 89d, ages as 5m), fitting 120 columns for usual IDs and names. A history note is cut
			with "..." to fit. Everything else (the expiry time, namespace, user, target, mode, recorded
			settings, the whole note) is in -o yaml, and any of it makes a column with -o custom-columns.

			--remote-cluster-id, -l, --sort-by, -L and --no-headers work as kubectl get's, over the
			items -o json prints: -l matches their labels, which are federate.dev/remote-cluster-id,
			federate.dev/role, and the labels its administrator gave the pairing's record (the provider's
			Tenant, the consumer's Identity; kubectl label). --expiring-within and --check count only
			the rows shown.`),
		Example: cmdutil.Examples(`
			# Everything this cluster provides and holds
			kubectl federate status

			# From a daily CI job: fail (exit 3) when anything expires within 30 days, prove the held ones work
			kubectl federate status --check --expiring-within 720h

			# As JSON, for scripts
			kubectl federate status -o json

			# Who issued, renewed, revoked, granted, cordoned or drained what, and when
			kubectl federate status --history

			# One remote cluster's credentials, soonest expiry first, with their users
			kubectl federate status --remote-cluster-id gpu-farm --sort-by .status.notAfter \
			  -o custom-columns=KIND:.status.kind,NAME:.status.name,USER:.status.user,EXPIRES:.status.notAfter`),
	}, o)
	cmd.Flags().BoolVar(&o.Check, "check", false, "Prove, through each credential this cluster holds, that the provider authorizes it for what it was issued for (exit code 4 if one is not ok)")
	cmdutil.DurationFlag(cmd.Flags(), &o.ExpiringWithin, "expiring-within", 0, 0, 3650*24*time.Hour, "Exit with code 3 when an active credential that renew renews expires within this duration, e.g. 720h")
	cmd.Flags().BoolVar(&o.History, "history", false, "Show the audit trail instead: every issuance, import, renewal, revocation, grant, cordon and drain recorded on this cluster (as long as its API server keeps Events)")
	flags.OptionalRemoteClusterID(f, cmd, &o.RemoteClusterID, "Show only the pairings with this remote cluster (a name this cluster has no record of is NotFound)")
	o.Output = printers.AddFlags(cmd, "", "a table", "wide")
	o.List = printers.AddListFlags(cmd, o.Output)
	return cmd
}

// Complete builds the cluster client.
func (o *Options) Complete(_ *cobra.Command, _ []string) error {
	var err error
	o.cluster, _, err = flags.Cluster(o.f, member.Discard)
	return err
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if o.ExpiringWithin < 0 {
		return fmt.Errorf("--expiring-within %s: must not be negative", o.ExpiringWithin)
	}
	if o.History && (o.Check || o.ExpiringWithin > 0) {
		return fmt.Errorf("--history: cannot be combined with --check or --expiring-within")
	}
	return nil
}

// Run prints the report, then fails with the monitoring exit codes.
func (o *Options) Run(ctx context.Context) error {
	if o.History {
		return o.printHistory(ctx)
	}
	full, err := status.Status(ctx, o.cluster, false) // checked once selected: only what is shown is dialled
	if err != nil {
		return err
	}
	report, items, err := o.selectReport(ctx, full)
	if err != nil {
		return err
	}
	if o.Output.Human() {
		err = o.printTable(o.Out, report, full)
	} else {
		err = o.Output.Print(o.Out, printers.List(items))
	}
	if err != nil {
		return err
	}
	if o.Check {
		if err := o.checkNetworkPolicy(ctx, report); err != nil {
			return err
		}
	}
	return o.verdict(report)
}

// checkNetworkPolicy warns, on a cluster that provides to a consumer, when no NetworkPolicy engine runs
// (its tenants' sandboxes then hold at admission only, not on the network), and when the cluster's pod
// address ranges are unknown (the sandboxes' egress then reaches the pods of namespaces with no policy).
func (o *Options) checkNetworkPolicy(ctx context.Context, report *status.Report) error {
	if !slices.ContainsFunc(report.Credentials, func(s status.CredentialState) bool { return s.Role == member.RoleProvider }) {
		return nil
	}
	var engine string
	var pods sandbox.PodRanges
	if err := parallel.All(
		func() (err error) { engine, err = status.NetworkPolicyEngine(ctx, o.cluster); return err },
		func() (err error) { pods, err = sandbox.DetectPodRanges(ctx, o.cluster); return err },
	); err != nil {
		return err
	}
	if engine == "" {
		o.f.Printer(o.Streams).Warn(status.NoEngineWarning)
	}
	if !pods.Known() {
		o.f.Printer(o.Streams).Warn(sandbox.PodRangesUnknown)
	}
	return nil
}

// verdict turns what a monitor watches for into the exit code: failed checks first, then expiry.
func (o *Options) verdict(report *status.Report) error {
	var failed, expiring, next []string
	now := o.now()
	for _, s := range report.Credentials {
		if s.Check != nil && !s.Check.OK {
			failed = append(failed, describe(s)+": "+s.Check.State+" ("+s.Check.Error+")")
			if step := nextStep(s); !slices.Contains(next, step) {
				next = append(next, step)
			}
			continue // revoked, cordoned, expired or unreachable: reported as such, not as expiring
		}
		// Only what renew renews: an exchange credential lasts 30 days, so a monthly window would always
		// hold one, and only a new request with the provider's consent replaces it.
		if o.ExpiringWithin > 0 && s.Active() && s.Renewable() && s.NotAfter != nil && s.NotAfter.Before(now.Add(o.ExpiringWithin)) {
			expiring = append(expiring, fmt.Sprintf("%s expires %s", describe(s), s.NotAfter.UTC().Format(time.RFC3339)))
		}
	}
	if len(failed) > 0 {
		return &cmdutil.CodedError{Code: cmdutil.ExitCheckFailed, Err: fmt.Errorf("%d credential(s) not ok: %s; %s", len(failed), strings.Join(failed, "; "), strings.Join(next, "; "))}
	}
	if len(expiring) > 0 {
		return &cmdutil.CodedError{Code: cmdutil.ExitExpiring, Err: fmt.Errorf("%d credential(s) expire within %s: %s", len(expiring), o.ExpiringWithin, strings.Join(expiring, "; "))}
	}
	return nil
}

// nextStep is what to do about a credential a check found not ok, one step per state and kind: renew
// cannot bring back a revoked or cordoned one.
func nextStep(s status.CredentialState) string {
	switch {
	case s.Check.State == status.CheckExpired && s.Renewable():
		return "an expired one is renewed with kubectl federate renew"
	case s.Check.State == status.CheckExpired:
		return "an expired exchange credential is asked for anew with kubectl federate get kubeconfig --for-user"
	case s.Check.State == status.CheckCordoned:
		return "a cordoned consumer starts no new workloads until the provider's administrator runs kubectl federate uncordon tenant"
	case s.Check.State == status.CheckUnreachable:
		return "an unreachable provider: check its API server address and your network (kubectl federate info shows the address)"
	case s.Role == member.RoleProvider:
		return "a revoked credential is issued anew only when its consumer asks again"
	case s.Kind == status.KindExchange:
		return "a revoked exchange credential is asked for anew with kubectl federate get kubeconfig --for-user"
	}
	return "a revoked pairing is authenticated again (kubectl federate authenticate, or the manual flow) with the provider's consent"
}

func describe(s status.CredentialState) string {
	what := fmt.Sprintf("%s %s of %s", s.Role, s.Kind, s.RemoteClusterID)
	if s.Name != "" {
		what += " (" + s.Name + ")"
	}
	return what
}

// Package allow implements `kubectl federate allow`.
package allow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/views"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// NewCmd returns the `allow` group.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	cmd := cmdutil.NewGroup("allow", "Consent to a consumer's request: an identity exchange", "Consent, as the provider's administrator, to what a consumer asked for through its pairing.")
	cmd.AddCommand(NewCmdExchange(f, streams))
	return cmd
}

// ExchangeOptions are the flags of `allow exchange`.
type ExchangeOptions struct {
	Names              []string
	RemoteClusterID    string
	AllowReach         []string
	AllowUnconstrained bool
	Expiration         time.Duration
	keepExpiration     bool
	Output             *printers.Flags

	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewCmdExchange returns `allow exchange`.
func NewCmdExchange(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &ExchangeOptions{f: f, Streams: streams, Expiration: exchange.ExchangeExpiration}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "exchange [NAME...] --remote-cluster-id CONSUMER",
		Short: "Issue the exchange credentials a consumer asked for, by name (provider side)",
		Long: cmdutil.LongDesc(`
			A consumer whose identity-exchange rule maps one of its users to a target identity asks,
			through its pairing, for a credential that may act as that target on this cluster, within a
			scope (verbs on resources in namespaces), and nothing else: an ExchangeRequest in its tenant
			namespace. Without NAME, the consumer's requests are listed: each one's target, its scope
			(cluster-wide when it names no namespace), its REACH (what the scope holds beyond a namespaced
			share: cluster-wide writes, Secrets, RBAC, impersonation, ServiceAccount tokens, CSR approval,
			nodes/proxy) and, for a pending one, from access reviews, how much of the scope the target
			itself may do here (TARGET MAY) and what the target itself reaches beyond a namespaced share
			(TARGET REACH: what it could do through a credential not held to its scope).

			NAME (as listed, one or more) answers exactly those requests. A request's name is a hash of
			everything it asks and it cannot change once made, so a name is answered with what was listed
			under it, never with anything the consumer adds later. Each is checked: a target in the system:
			namespace, a CSR for any other user than the credential's, a name that is not its content's, a
			user revoked before, a scope naming a namespace this cluster lacks, or a reach you did not accept
			(--allow-reach NAME) is refused with nothing created. The credential is bound with constrained
			impersonation: impersonate:user-info on the target, and impersonate-on:user-info:VERB on the
			scope only, which the API server enforces along with the target's own rights. This cluster's
			support for it is proven first by a probe; without it, nothing is issued unless you pass
			--allow-unconstrained, which grants the legacy impersonate verb (everything the target may do,
			after a check of the target's reach) with a WARNING. Allowing again changes nothing, and never
			widens a grant; a revoked request is never answered again.`),
		Example: cmdutil.Examples(`
			# What does the consumer edge-1 ask for?
			kubectl federate allow exchange --remote-cluster-id edge-1

			# Issue the one credential listed under that name
			kubectl federate allow exchange mapping-1f0c3b9a0d6e4a2b8c7d5e3f1a2b4c6d --remote-cluster-id edge-1

			# Issue one whose scope reaches Secrets, knowingly
			kubectl federate allow exchange reader-9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d --remote-cluster-id edge-1 \
			  --allow-reach reader-9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d`),
		Args: cobra.ArbitraryArgs,
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the consumer cluster")
	cmd.Flags().StringArrayVar(&o.AllowReach, "allow-reach", nil, "Accept the listed REACH of this request (one of the NAMEs; repeat for more)")
	cmd.Flags().BoolVar(&o.AllowUnconstrained, "allow-unconstrained", false,
		"On a cluster without constrained impersonation, grant the legacy impersonate verb: the credential may do everything its target may")
	cmdutil.DurationFlag(cmd.Flags(), &o.Expiration, "expiration", o.Expiration, 10*time.Minute, handshake.MaxExpiration, "Lifetime asked for the credentials issued (default: the one this rule, target and scope were last issued with, else 30d; capped at the pairing's --max-expiration)")
	o.Output = printers.AddFlags(cmd, "", "a table", "wide")
	cmd.ValidArgsFunction = flags.CompleteExchangeRequests(f)
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads the names and builds the client.
func (o *ExchangeOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Names = args
	// Not given: each request gets the lifetime its grant was last issued with (or the default).
	o.keepExpiration = !cmd.Flags().Changed("expiration")
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the flags.
func (o *ExchangeOptions) Validate() error {
	for _, n := range o.Names {
		if len(n) > 253 || member.ValidateSliceName("NAME", strings.SplitN(n, "-", 2)[0]) != nil || !strings.Contains(n, "-") {
			return fmt.Errorf("NAME %q: must be a request's name as listed, <rule>-<32 hex digits>", n)
		}
	}
	for _, n := range o.AllowReach {
		if !slices.Contains(o.Names, n) {
			return fmt.Errorf("--allow-reach %q: must be one of the NAMEs answered in this run", n)
		}
	}
	if len(o.Names) == 0 && (len(o.AllowReach) > 0 || o.AllowUnconstrained) {
		return errors.New("--allow-reach and --allow-unconstrained: only with the NAMEs of the requests to answer")
	}
	if o.Expiration < 10*time.Minute {
		return fmt.Errorf("--expiration %s: must be at least 10m", o.Expiration)
	}
	return nil
}

// expiration is the lifetime to ask, 0 to keep the recorded one.
func (o *ExchangeOptions) expiration() time.Duration {
	if o.keepExpiration {
		return 0
	}
	return o.Expiration
}

// Run lists or answers the requests.
func (o *ExchangeOptions) Run(ctx context.Context) error {
	var list []exchange.Info
	var err error
	if len(o.Names) == 0 {
		list, err = exchange.Requests(ctx, o.cluster, o.RemoteClusterID)
	} else {
		list, err = exchange.AllowExchange(ctx, o.cluster, exchange.AllowExchangeOptions{ConsumerID: o.RemoteClusterID, Names: o.Names,
			AllowReach: o.AllowReach, AllowUnconstrained: o.AllowUnconstrained, Expiration: o.expiration()})
		err = ExchangeError(err)
	}
	if perr := o.print(list); perr != nil && err == nil {
		err = perr
	}
	return err
}

// ExchangeError adds to the domain's refusals the flag that overrides them.
func ExchangeError(err error) error {
	var reach *exchange.ReachError
	var unconstrained *exchange.UnconstrainedError
	switch {
	case errors.As(err, &reach):
		return fmt.Errorf("%w (--allow-reach %s)", err, reach.Name)
	case errors.As(err, &unconstrained):
		return fmt.Errorf("%w (--allow-unconstrained)", err)
	}
	return err
}

func (o *ExchangeOptions) print(list []exchange.Info) error {
	if !o.Output.Human() {
		obj, err := views.ExchangeList(list)
		if err != nil {
			return err
		}
		return o.Output.Print(o.Out, obj)
	}
	if len(list) == 0 {
		if len(o.Names) == 0 {
			_, err := fmt.Fprintf(o.Out, "No exchange requests from consumer %s.\n", o.RemoteClusterID)
			return err
		}
		return nil
	}
	wide := o.Output.Wide()
	header := []string{"NAME", "TARGET", "SCOPE", "REACH", "TARGET MAY", "TARGET REACH", "PHASE", "MODE"}
	if wide {
		header = append(header, "KEY SHA256", "REASON")
	}
	w := printers.NewTable(o.Out, header...)
	for _, e := range list {
		target := e.User
		if len(e.Groups) > 0 {
			target += " (groups " + strings.Join(e.Groups, ",") + ")"
		}
		if e.UID != "" {
			target += " (uid " + e.UID + ")"
		}
		may := "-"
		if e.TargetAccess != nil {
			may = e.TargetAccess.String()
		}
		targetReach := "-"
		if e.TargetAccess != nil { // asked for pending requests only
			targetReach = dash(strings.Join(e.TargetReach, ", "))
		}
		row := []string{e.Name, target, e.Scope.String(), dash(strings.Join(e.Reach, ", ")), may, targetReach, e.Phase, dash(e.Mode)}
		if wide {
			row = append(row, dash(e.KeySHA256), dash(e.Reason))
		}
		w.Row(row...)
	}
	return w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Package allow implements `kubectl federate allow`.
package allow

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// NewCmd returns the `allow` group.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	cmd := cmdutil.NewGroup("allow", "Consent to a consumer's request: an identity exchange", "Consent, as the provider's administrator, to what a consumer asked for through its pairing.")
	cmd.AddCommand(NewCmdExchange(f, streams))
	return cmd
}

// ExchangeOptions are the flags of `allow exchange`.
type ExchangeOptions struct {
	Name            string
	RemoteClusterID string
	Rule            string
	Expiration      time.Duration
	Output          *cmdutil.Enum

	f       *cmdutil.Factory
	cluster *handshake.Cluster
	cmdutil.Streams
}

// NewCmdExchange returns `allow exchange`.
func NewCmdExchange(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &ExchangeOptions{f: f, Streams: streams, Expiration: handshake.ExchangeExpiration}
	cmd := cmdutil.Wire(&cobra.Command{
		Use:   "exchange [NAME] --remote-cluster-id CONSUMER [--rule RULE]",
		Short: "Issue the exchange credentials a consumer asked for under a rule (provider side)",
		Long: cmdutil.LongDesc(`
			A consumer whose identity-exchange rule maps one of its users to a target identity asks,
			through its pairing, for a credential that may impersonate that target on this cluster and
			nothing else (an ExchangeRequest in its tenant namespace). Without NAME or --rule, the
			consumer's requests are listed with their targets. NAME (as listed) answers that one request;
			--rule answers every request of that rule, including any the consumer left since you listed
			them. Each request answered is checked:
			a target in the system: namespace, a CSR for any other user than the credential's, or a
			name that is not its rule and target's is refused with nothing created; otherwise the
			certificate is issued through the CSR API, and a ClusterRole allowing to impersonate exactly
			the target (user, groups, UID), bound cluster-wide to the credential's user, is created. The
			target needs its own RBAC on this cluster to do anything. Allowing again changes nothing.`),
		Example: cmdutil.Examples(`
			# What does the consumer edge-1 ask for?
			kubectl federate allow exchange --remote-cluster-id edge-1

			# Issue the one credential listed as mapping-53495394
			kubectl federate allow exchange mapping-53495394 --remote-cluster-id edge-1

			# Issue every credential asked for under its rule "mapping"
			kubectl federate allow exchange --remote-cluster-id edge-1 --rule mapping`),
		Args: cmdutil.MaximumArgs(1, "NAME"),
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the consumer cluster")
	cmd.Flags().StringVar(&o.Rule, "rule", "", "Issue the credentials asked for under this rule of the consumer")
	cmd.Flags().DurationVar(&o.Expiration, "expiration", o.Expiration, "Life of the credentials issued")
	o.Output = printers.AddOutputFlag(cmd, "", "a table", "yaml", "json")
	return cmd
}

// Complete reads the name and builds the client.
func (o *ExchangeOptions) Complete(_ *cobra.Command, args []string) error {
	if len(args) == 1 {
		o.Name = args[0]
	}
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the flags.
func (o *ExchangeOptions) Validate() error {
	if err := handshake.ValidateClusterID("--remote-cluster-id", o.RemoteClusterID); err != nil {
		return err
	}
	if o.Rule != "" {
		if err := handshake.ValidateSliceName("--rule", o.Rule); err != nil {
			return err
		}
	}
	if o.Name != "" {
		if err := handshake.ValidateExtraNamespace("NAME", o.Name); err != nil {
			return fmt.Errorf("NAME %q: must be a request's name as listed, <rule>-<8 hex digits>", o.Name)
		}
	}
	if o.Expiration < 10*time.Minute {
		return fmt.Errorf("--expiration %s: must be at least 10m", o.Expiration)
	}
	return nil
}

// Run lists or answers the requests.
func (o *ExchangeOptions) Run(ctx context.Context) error {
	var list []handshake.ExchangeInfo
	var err error
	if o.Rule == "" && o.Name == "" {
		list, err = o.cluster.ExchangeRequests(ctx, o.RemoteClusterID)
	} else {
		list, err = o.cluster.AllowExchange(ctx, handshake.AllowExchangeOptions{ConsumerID: o.RemoteClusterID, Rule: o.Rule, Name: o.Name, Expiration: o.Expiration})
	}
	if perr := o.print(list); perr != nil && err == nil {
		err = perr
	}
	return err
}

func (o *ExchangeOptions) print(list []handshake.ExchangeInfo) error {
	if f := o.Output.String(); f != "" {
		if list == nil {
			list = []handshake.ExchangeInfo{}
		}
		return printers.Print(o.Out, f, list)
	}
	if len(list) == 0 {
		if o.Rule == "" && o.Name == "" {
			_, err := fmt.Fprintf(o.Out, "No exchange requests from consumer %s.\n", o.RemoteClusterID)
			return err
		}
		return nil
	}
	w := tabwriter.NewWriter(o.Out, 0, 4, 3, ' ', 0)
	fmt.Fprintln(w, "NAME\tRULE\tTARGET USER\tGROUPS\tUID\tPHASE\tREASON")
	for _, e := range list {
		reason := e.Reason
		if reason == "" {
			reason = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Name, e.Rule, e.User, dash(strings.Join(e.Groups, ",")), dash(e.UID), e.Phase, reason)
	}
	return w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

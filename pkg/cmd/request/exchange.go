package request

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/views"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// ExchangeOptions are the flags of `request exchange`.
type ExchangeOptions struct {
	RemoteClusterID string
	Source          flags.ExchangeSource
	Output          *printers.Flags

	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// ExchangeRequested is what `request exchange` prints with -o.
type ExchangeRequested struct {
	Request    string          `json:"request"`
	ProviderID string          `json:"providerID"`
	Rule       string          `json:"rule"`
	Target     exchange.Target `json:"target"`
	Scope      exchange.Scope  `json:"scope"`
	Phase      string          `json:"phase"`
}

// NewCmdExchange returns `request exchange`.
func NewCmdExchange(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &ExchangeOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "exchange --remote-cluster-id PROVIDER --for-user USER [--for-group GROUP ...]",
		Short: "Ask a provider for the exchange credential a user's rule gives (consumer side)",
		Long: cmdutil.LongDesc(`
			Resolve the identity-exchange rules ("exchange apply") for USER reaching PROVIDER and leave,
			through the pairing's own identity, the ExchangeRequest of the credential they give: its rule,
			its target and its scope (the rule's scope: verbs on resources in namespaces, cluster-wide when
			it names none; by default get, list and watch on the common workload kinds, never Secrets).
			The request's name, printed on stdout, is what the provider's administrator answers ("allow
			exchange NAME"); "get kubeconfig --for-user USER" then prints the credential. A privileged rule
			needs no request (it hands out the pairing's own kubeconfig). Asking again changes nothing.`),
		Example: cmdutil.Examples(`
			# Ask the provider gpu-farm for alice's credential, and send its name to that administrator
			kubectl federate request exchange --remote-cluster-id gpu-farm --for-user alice --for-group dev`),
		Args: cmdutil.NoArgs,
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the provider cluster")
	o.Source.AddFlags(cmd)
	o.Output = printers.AddFlags(cmd, "", "the request's name")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete builds the client.
func (o *ExchangeOptions) Complete(_ *cobra.Command, _ []string) error {
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the flags.
func (o *ExchangeOptions) Validate() error {
	return o.Source.Validate()
}

// Run leaves the request and prints its name.
func (o *ExchangeOptions) Run(ctx context.Context) error {
	res, err := exchange.ResolveExchange(ctx, o.cluster, o.Source.Request(o.RemoteClusterID), exchange.Client{})
	if errors.Is(err, exchange.ErrNoExchangeRule) {
		return fmt.Errorf("--for-user %q: %w", o.Source.User, err)
	}
	if err != nil {
		return err
	}
	if res.Target == nil {
		return fmt.Errorf("--for-user %q: rule %q is a privileged rule, which hands out the pairing's own kubeconfig and needs no request: kubectl federate get kubeconfig --remote-cluster-id %s prints it",
			o.Source.User, res.Rule.Name, o.RemoteClusterID)
	}
	via, err := handshake.ViaPairing(ctx, o.cluster, o.RemoteClusterID)
	if err != nil {
		return err
	}
	opts := exchange.Options{ProviderID: o.RemoteClusterID, Rule: res.Rule.Name, Target: *res.Target, Scope: res.Rule.GrantScope()}
	out := ExchangeRequested{ProviderID: o.RemoteClusterID, Rule: res.Rule.Name, Target: *res.Target, Scope: opts.Scope}
	got, err := exchange.RequestExchange(ctx, o.cluster, via, opts)
	var pending *exchange.PendingError
	switch {
	case errors.As(err, &pending):
		out.Request, out.Phase = pending.Request, exchange.ExchangePending
		o.f.Printer(o.Streams).Info(flags.PendingHint(err).Error())
	case err != nil:
		return err
	default:
		out.Request, out.Phase = got.Request, exchange.ExchangeIssued
		o.f.Printer(o.Streams).Info("ExchangeRequest " + got.Request + " is already issued: kubectl federate get kubeconfig --remote-cluster-id " +
			o.RemoteClusterID + " --for-user " + o.Source.User + " prints its kubeconfig")
	}
	if !o.Output.Human() {
		obj, err := views.Object(views.KindExchangeSubmission, out.Request, map[string]string{member.LabelRemoteClusterID: o.RemoteClusterID, member.LabelRole: member.RoleConsumer}, out)
		if err != nil {
			return err
		}
		return o.Output.Print(o.Out, obj)
	}
	_, err = fmt.Fprintln(o.Out, out.Request)
	return err
}

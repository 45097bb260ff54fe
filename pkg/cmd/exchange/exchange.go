// Package exchange implements `kubectl federate exchange`: the consumer's identity-exchange rules.
package exchange

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/views"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// NewCmd returns the `exchange` group.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	cmd := cmdutil.NewGroup("exchange", "Map this cluster's users to identities on providers: apply, get, resolve",
		"Identity-exchange rules (cluster-gateway's ClientIdentityExchanger) say which of this cluster's users reach a provider as the pairing's identity and which as another identity. See docs/exchange.md.")
	cmd.AddCommand(NewCmdApply(f, streams), NewCmdGet(f, streams), NewCmdResolve(f, streams))
	return cmd
}

// ApplyOptions are the flags of `exchange apply`.
type ApplyOptions struct {
	Filename string

	data    []byte
	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewCmdApply returns `exchange apply`.
func NewCmdApply(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &ApplyOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "apply -f FILENAME",
		Short: "Store this cluster's identity-exchange rules (consumer side)",
		Long: cmdutil.LongDesc(`
			Check a rule file (kind ClusterGatewayConfiguration) and store it in the ConfigMap
			federate-exchange-rules of the namespace federate-system, replacing the rules stored before.
			A file with any mistake is refused with the field named, and the stored rules stay as they
			were. Applying the same file again changes nothing.

			Patterns are regular expressions anchored at both ends; source.cluster is the ID of the
			provider the user reaches; ExternalIdentityExchanger URLs are https (http only to a loopback
			address).`),
		Example: cmdutil.Examples(`
			# Store the rules, then see them
			kubectl federate exchange apply -f rules.yaml
			kubectl federate exchange get`),
		Args: cmdutil.NoArgs,
	}, o)
	cmd.Flags().StringVarP(&o.Filename, "filename", "f", "", `The rule file ("-" reads standard input)`)
	_ = cmd.MarkFlagRequired("filename")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads the file and builds the client.
func (o *ApplyOptions) Complete(_ *cobra.Command, _ []string) error {
	var err error
	if o.data, err = cmdutil.ReadInput("--filename", o.Filename, o.In, exchange.MaxFileSize); err != nil {
		return err
	}
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the rule file.
func (o *ApplyOptions) Validate() error {
	if _, err := exchange.Parse(o.data); err != nil {
		return fmt.Errorf("--filename %s: %w", o.Filename, err)
	}
	return nil
}

// Run stores the rules.
func (o *ApplyOptions) Run(ctx context.Context) error {
	what, err := exchange.ApplyExchangeRules(ctx, o.cluster, o.data)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.Out, "configmap/%s %s\n", exchange.ExchangeRulesConfigMap, what)
	return err
}

// GetOptions are the flags of `exchange get`.
type GetOptions struct {
	Output *printers.Flags

	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewCmdGet returns `exchange get`.
func NewCmdGet(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &GetOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:     "get [-o yaml|json]",
		Aliases: []string{"rules"},
		Short:   "Print this cluster's identity-exchange rules (consumer side)",
		Long: cmdutil.LongDesc(`
			Print the rules stored by "exchange apply": a table by default, in the order they are
			weighed (the highest priority first, file order among equals: the first that matches a
			user decides), or the rule file as stored (-o yaml) or as JSON.`),
		Example: cmdutil.Examples(`
			# The rules, highest priority first
			kubectl federate exchange get

			# The stored file, to edit and apply again
			kubectl federate exchange get -o yaml > rules.yaml`),
		Args: cmdutil.NoArgs,
	}, o)
	o.Output = printers.AddFlags(cmd, "", "a table")
	return cmd
}

// Complete builds the client.
func (o *GetOptions) Complete(_ *cobra.Command, _ []string) error {
	var err error
	o.cluster, _, err = flags.Cluster(o.f, member.Discard)
	return err
}

// Validate has nothing to check: -o is checked when parsed.
func (o *GetOptions) Validate() error { return nil }

// Run prints the rules.
func (o *GetOptions) Run(ctx context.Context) error {
	cfg, data, err := exchange.Rules(ctx, o.cluster)
	if err != nil {
		return err
	}
	switch {
	case o.Output.Format() == "yaml":
		_, err = o.Out.Write(data) // the file as stored, comments and order kept, to edit and apply again
		return err
	case !o.Output.Human():
		// The stored file is itself a Kubernetes-style object (ClusterGatewayConfiguration).
		var u unstructured.Unstructured
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			return err
		}
		if u.GetName() == "" {
			u.SetName(exchange.ExchangeRulesConfigMap) // a rule file names nothing: it is stored under this name
		}
		return o.Output.Print(o.Out, &u)
	}
	w := printers.NewTable(o.Out, "NAME", "TYPE", "PRIORITY", "SOURCE", "TARGET")
	for _, r := range exchange.InOrder(cfg.Spec.ClientIdentityExchanger.Rules) {
		w.Row(r.Name, r.Type, strconv.Itoa(r.Priority), source(r.Source), targetOf(&r))
	}
	return w.Flush()
}

func source(s exchange.Source) string {
	out := ""
	for _, kv := range [][2]string{{"user", s.User}, {"userPattern", s.UserPattern}, {"group", s.Group}, {"groupPattern", s.GroupPattern},
		{"uid", s.UID}, {"uidPattern", s.UIDPattern}, {"cluster", s.Cluster}, {"clusterPattern", s.ClusterPattern}} {
		if kv[1] != "" {
			if out != "" {
				out += ","
			}
			out += kv[0] + "=" + kv[1]
		}
	}
	return out
}

func targetOf(r *exchange.Rule) string {
	switch r.Type {
	case exchange.Privileged:
		return "(the pairing's identity)"
	case exchange.External:
		return "(asked of " + r.URL + ")"
	}
	return describe(r.Target)
}

func describe(t *exchange.Target) string {
	if t == nil {
		return "(the pairing's identity)"
	}
	s := "user=" + t.User
	for _, g := range t.Groups {
		s += ",group=" + g
	}
	if t.UID != "" {
		s += ",uid=" + t.UID
	}
	return s
}

// ResolveOptions are the flags of `exchange resolve`.
type ResolveOptions struct {
	RemoteClusterID string
	Source          flags.ExchangeSource
	Output          *printers.Flags

	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewCmdResolve returns `exchange resolve`.
func NewCmdResolve(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &ResolveOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "resolve --remote-cluster-id PROVIDER --for-user USER [--for-group GROUP ...] [--for-uid UID]",
		Short: "Show which rule decides for a user reaching a provider, and the identity it gives (consumer side)",
		Long: cmdutil.LongDesc(`
			Resolve the stored identity-exchange rules for USER (with its groups and UID) reaching the
			provider PROVIDER: the highest priority among the matching rules wins, the first in the
			file among equals. An ExternalIdentityExchanger rule asks its service. Nothing is issued.
			When no rule matches, or the service refuses, the command fails: nothing would be handed
			out.`),
		Example: cmdutil.Examples(`
			# Which identity does alice of the group sudoer get on the provider gpu-farm?
			kubectl federate exchange resolve --remote-cluster-id gpu-farm --for-user alice --for-group sudoer

			# As JSON
			kubectl federate exchange resolve --remote-cluster-id gpu-farm --for-user alice -o json`),
		Args: cmdutil.NoArgs,
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the provider cluster the user reaches (source.cluster in the rules)")
	o.Source.AddFlags(cmd)
	_ = cmd.MarkFlagRequired("for-user")
	o.Output = printers.AddFlags(cmd, "", "a table")
	return cmd
}

// Complete builds the client.
func (o *ResolveOptions) Complete(_ *cobra.Command, _ []string) error {
	var err error
	o.cluster, _, err = flags.Cluster(o.f, member.Discard)
	return err
}

// Validate checks the flags.
func (o *ResolveOptions) Validate() error {
	return o.Source.Validate()
}

// Resolved is what `exchange resolve` prints.
type Resolved struct {
	Rule     string           `json:"rule"`
	Type     string           `json:"type"`
	Priority int              `json:"priority"`
	Pairing  bool             `json:"pairingIdentity"`
	Target   *exchange.Target `json:"target,omitempty"`
}

// Run resolves and prints.
func (o *ResolveOptions) Run(ctx context.Context) error {
	res, err := exchange.ResolveExchange(ctx, o.cluster, o.Source.Request(o.RemoteClusterID), exchange.Client{})
	if errors.Is(err, exchange.ErrNoExchangeRule) {
		return fmt.Errorf("--for-user %q: %w", o.Source.User, err)
	}
	if err != nil {
		return err
	}
	v := Resolved{Rule: res.Rule.Name, Type: res.Rule.Type, Priority: res.Rule.Priority, Pairing: res.Target == nil, Target: res.Target}
	if !o.Output.Human() {
		obj, err := views.Object(views.KindExchangeResolution, v.Rule, map[string]string{member.LabelRemoteClusterID: o.RemoteClusterID}, v)
		if err != nil {
			return err
		}
		return o.Output.Print(o.Out, obj)
	}
	w := printers.NewTable(o.Out, "RULE", "TYPE", "PRIORITY", "IDENTITY")
	w.Row(v.Rule, v.Type, strconv.Itoa(v.Priority), describe(v.Target))
	return w.Flush()
}

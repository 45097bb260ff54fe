// Package verify implements `kubectl federate verify`.
package verify

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/federate-dev/kubectl-federate/pkg/kube"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/views"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/verify"
)

// KindVerifyCheck is one row of `verify` as -o prints it: named <remote>.<check>[.<name>] ("cluster" for the
// cluster's own checks), lowercase, with the row's fields under status.
const KindVerifyCheck = "VerifyCheck"

// Options are the flags of `verify`.
type Options struct {
	RemoteClusterID string
	ResourceSlice   string
	ExtraNamespace  string
	Repair          bool
	Output          *printers.Flags

	f       *cmdutil.Factory
	cluster *member.Cluster
	clients *cmdutil.Clients
	cmdutil.Streams
}

// NewCmd returns the `verify` command.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &Options{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "verify [--remote-cluster-id CONSUMER [--resource-slice NAME]] [--repair]",
		Short: "Prove, now, that every tenant's sandbox holds and what each identity can reach (provider side)",
		Long: cmdutil.LongDesc(`
			Prove, on this provider and now, that each consumer's sandbox still holds, whatever its
			administrators changed since the pairing. For every tenant (or the one --remote-cluster-id
			names, or one of its resource slices or extra namespaces), verify:

			* sends the sandbox's escape corpus as each identity that works in each sandbox namespace,
			  impersonating its user and groups, every write a server-side dry run: privileged pods and
			  the host's namespaces, hostPath, host ports, capabilities, claims of a volume or of another
			  namespace's data, placement on the control plane, projected tokens, cluster-scoped writes,
			  other namespaces, Secrets outside its own, RBAC bind, escalate and impersonate, CSR
			  approval, nodes/proxy, more than the quota. Each must be refused by the guard meant to
			  refuse it (escapes);
			* names every binding that gives an identity more than its sandbox binds: one added to the
			  tenants group kubectl-federate:tenants, to its user, or to system:authenticated (rights);
			* compares each sandbox namespace's own objects with what issuance makes of its records: Pod
			  Security labels, allowed lists, quota (the ledger's share), LimitRange, NetworkPolicy,
			  default ServiceAccount, RoleBinding (sandbox), and the admission policies, their bindings
			  and the tenant role with what init installs (admission, tenant-role);
			* asks again what each exchange credential reaches, and reports what its administrator did
			  not accept: a target that gained rights beyond its scope, a scope that reaches further
			  (exchange);
			* looks for a NetworkPolicy engine and the pod address ranges (warnings: verify can only
			  suspect an engine it does not know).

			It writes nothing. --repair then restores, with init's and issuance's own code, what they
			own and differs (each restored object said on stderr; --dry-run shows the writes instead),
			and verifies again: it never binds, widens or removes what someone else bound.

			One row per tenant and check: ok, BROKEN: ... (an escape admitted, rights beyond the
			sandbox), drift: ... (an object that differs from what init or issuance make), warning:
			..., error: ... (a check that could not be made).

			Exit codes, for a cron job or a CI step: 0 everything holds; 4 something does not hold (a
			row BROKEN or drift; with --repair, after the repair); 1 the command could not run, or a
			check could not be made (an error row) and nothing else failed. Warnings do not change it.`),
		Example: cmdutil.Examples(`
			# Every tenant of this provider: exit 4 if anything does not hold
			kubectl federate verify

			# One consumer, as JSON for a monitoring job
			kubectl federate verify --remote-cluster-id edge-1 -o json

			# Restore what init and issuance own, then verify again
			kubectl federate verify --repair`),
	}, o)
	flags.OptionalRemoteClusterID(f, cmd, &o.RemoteClusterID, "Verify only this consumer's sandbox")
	cmd.Flags().StringVar(&o.ResourceSlice, "resource-slice", "", "Verify only this resource slice of the consumer (with --remote-cluster-id)")
	cmd.Flags().StringVar(&o.ExtraNamespace, "extra-namespace", "", "Verify only this extra namespace of the consumer (with --remote-cluster-id)")
	cmd.Flags().BoolVar(&o.Repair, "repair", false, "Restore what init and issuance own and differs, with their own code, then verify again")
	cmd.MarkFlagsMutuallyExclusive("resource-slice", "extra-namespace")
	o.Output = printers.AddFlags(cmd, "", "a table", "wide")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete builds the cluster client.
func (o *Options) Complete(_ *cobra.Command, _ []string) error {
	var err error
	o.cluster, o.clients, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the flags.
func (o *Options) Validate() error {
	switch {
	case o.ResourceSlice != "" && o.RemoteClusterID == "":
		return fmt.Errorf("--resource-slice: needs --remote-cluster-id, the consumer it was granted to")
	case o.ExtraNamespace != "" && o.RemoteClusterID == "":
		return fmt.Errorf("--extra-namespace: needs --remote-cluster-id, the consumer it was granted to")
	case o.ResourceSlice != "":
		return member.ValidateSliceName("--resource-slice", o.ResourceSlice)
	}
	return nil
}

// Run verifies, repairs when asked and verifies again, prints the rows, and turns them into the exit code.
func (o *Options) Run(ctx context.Context) error {
	opts := verify.Options{Scope: verify.Scope{ConsumerID: o.RemoteClusterID, Slice: o.ResourceSlice, Namespace: o.ExtraNamespace}}
	if o.f.Connector != nil {
		// A world of fake clusters authenticates no one: the fake is reached as it is.
		opts.As = func(string, []string) (kube.Interface, error) { return o.clients.Kube, nil }
	}
	res, err := verify.Verify(ctx, o.cluster, opts)
	if err != nil {
		return flags.NotFoundHint(err, "--remote-cluster-id")
	}
	if o.Repair {
		if res, err = o.repair(ctx, res, opts); err != nil {
			return err
		}
	}
	if err := o.print(res.Report); err != nil {
		return err
	}
	return verdict(res.Report)
}

// repair restores what init and issuance own, says each object restored, and verifies again (a dry run
// changed nothing: what it found stands).
func (o *Options) repair(ctx context.Context, res *verify.Result, opts verify.Options) (*verify.Result, error) {
	restored, err := verify.Repair(ctx, o.cluster, res)
	p := o.f.Printer(o.Streams)
	verb := "Restored"
	if o.cluster.DryRun {
		verb = "Would restore"
	}
	for _, f := range restored {
		p.Info(verb + " " + f.Object + " (" + strings.TrimPrefix(f.Message, f.Object+": ") + ")")
	}
	if err != nil {
		return nil, err
	}
	if len(restored) == 0 && len(verify.Repairable(res.Rows)) == 0 {
		p.Info("Nothing that init or issuance own needed restoring")
		return res, nil
	}
	if o.cluster.DryRun {
		return res, nil
	}
	opts.Retry = true
	return verify.Verify(ctx, o.cluster, opts)
}

// verdict is the exit code: 4 when something does not hold, 1 when only a check could not be made.
func verdict(r *verify.Report) error {
	failing := r.Failing()
	if len(failing) == 0 {
		return nil
	}
	parts := make([]string, 0, len(failing))
	broken := false
	for _, row := range failing {
		broken = broken || verify.IsBroken(row.State)
		parts = append(parts, strings.TrimSpace(dash(row.RemoteClusterID)+" "+row.Check+" "+row.Name)+": "+row.State)
	}
	if !broken {
		return &cmdutil.CodedError{Code: cmdutil.ExitError, Err: fmt.Errorf("%d check(s) could not be made: %s", len(failing), strings.Join(parts, "; "))}
	}
	return &cmdutil.CodedError{Code: cmdutil.ExitCheckFailed, Err: fmt.Errorf("%d check(s) do not hold: %s; the rows say what and the object behind it (--repair restores what init and issuance own)",
		len(failing), strings.Join(parts, "; "))}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (o *Options) print(r *verify.Report) error {
	if !o.Output.Human() {
		obj, err := List(r)
		if err != nil {
			return err
		}
		return o.Output.Print(o.Out, obj)
	}
	cols := []string{"REMOTE", "CHECK", "NAME", "RESULT"}
	if o.Output.Wide() {
		cols = append(cols, "OBJECTS")
	}
	w := printers.NewTable(o.Out, cols...)
	for _, row := range r.Rows {
		cells := []string{dash(row.RemoteClusterID), row.Check, dash(row.Name), row.Result()}
		if o.Output.Wide() {
			var objects []string
			for _, f := range row.Findings {
				if f.Object != "" && !slices.Contains(objects, f.Object) {
					objects = append(objects, f.Object)
				}
			}
			cells = append(cells, dash(strings.Join(objects, "; ")))
		}
		w.Row(cells...)
	}
	return w.Flush()
}

// List is a report as a List of VerifyCheck.
func List(r *verify.Report) (runtime.Object, error) {
	items := make([]*unstructured.Unstructured, 0, len(r.Rows))
	for i := range r.Rows {
		row := &r.Rows[i]
		parts := []string{row.RemoteClusterID, row.Check, row.Name}
		labels := map[string]string{}
		if row.RemoteClusterID == "" {
			parts = []string{"cluster", row.Check}
		} else {
			labels[member.LabelRemoteClusterID], labels[member.LabelRole] = row.RemoteClusterID, member.RoleProvider
		}
		name := strings.ToLower(strings.ReplaceAll(strings.Join(parts, "."), " ", "-"))
		u, err := views.Object(KindVerifyCheck, name, labels, row)
		if err != nil {
			return nil, err
		}
		items = append(items, u)
	}
	return printers.List(items), nil
}

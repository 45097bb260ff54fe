package create

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// ResourceSliceClassOptions are the flags of `create resourceslice-class`.
type ResourceSliceClassOptions struct {
	Name        string
	Max         *flags.SliceResources
	MaxQuota    string
	OverMax     *cmdutil.Enum
	ClusterRole string
	PodSecurity *cmdutil.Enum
	AutoAccept  bool
	Output      *printers.Flags

	f       *cmdutil.Factory
	cluster *member.Cluster
	spec    v1alpha1.ResourceSliceClassSpec
	cmdutil.Streams
}

// NewCmdResourceSliceClass returns `create resourceslice-class`.
func NewCmdResourceSliceClass(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &ResourceSliceClassOptions{f: f, Streams: streams, ClusterRole: member.DefaultClusterRole}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:     "resourceslice-class NAME [--max-cpu QTY] [--max-memory QTY] [--max-pods N] [--max-ephemeral-storage QTY] [--max-quota NAME=QTY,...] [--over-max clamp|deny] [--cluster-role ROLE] [--pod-security LEVEL] [--auto-accept]",
		Aliases: []string{"resourcesliceclass"},
		Short:   "Define a policy for the resource slices consumers ask of this cluster (provider side)",
		Long: cmdutil.LongDesc(`
			Create or update the ResourceSliceClass NAME on this (provider) cluster: the most a slice of
			the class may get, what happens to a request over it (--over-max clamp grants the maximum,
			deny refuses the whole request), the ClusterRole bound to the slice's identity in its
			namespace, the Pod Security level enforced there, and whether "accept resourceslice
			--pending" grants the class's slices without a decision per slice (--auto-accept).

			A slice's namespace has a quota on more than what a slice asks for: storage, PVCs, Services,
			Secrets, ConfigMaps and counts of each workload kind, which it gets as a modest allowance
			(docs/grants.md). --max-quota bounds those too, by their quota names. Without --max-cpu,
			--max-memory, --max-pods or --max-ephemeral-storage, a slice is bounded in those only by what
			remains of its consumer's total.

			A slice that names no class gets the class "default": unless you create one of that name, it
			grants what is asked, binds federate-tenant and enforces restricted, as Liqo does by default.
			A slice that names a class this cluster does not define is not accepted. Changing a class
			changes the slices accepted after it, not those already granted.`),
		Example: cmdutil.Examples(`
			# At most 4 CPUs, 8Gi and 20 pods per slice, clamped, accepted by a cron job's --pending run
			kubectl federate create resourceslice-class small --max-cpu 4 --max-memory 8Gi --max-pods 20 --auto-accept

			# Compute only: no storage, no PVCs, at most 2 Secrets per slice
			kubectl federate create resourceslice-class compute --max-cpu 8 \
			  --max-quota requests.storage=0,persistentvolumeclaims=0,secrets=2

			# GPU work: a custom role, baseline Pod Security, requests over the maximum refused
			kubectl federate create resourceslice-class gpu --max-cpu 16 --max-memory 64Gi --over-max deny \
			  --cluster-role gpu-workloads --pod-security baseline`),
		Args: cmdutil.ExactArgs(1, "NAME"),
	}, o)
	o.Max = flags.AddSliceResources(cmd, "max-", "a slice of the class may get at most")
	cmd.Flags().StringVar(&o.MaxQuota, "max-quota", "", "Maxima of the other quotas of a slice's namespace, as NAME=QUANTITY pairs ("+
		strings.Join(grants.ClassQuotaResources(), ", ")+")")
	o.OverMax = cmdutil.NewEnum("clamp", "clamp", "deny")
	cmdutil.AddEnumFlag(cmd, o.OverMax, "over-max", "", "What a request over the maximum gets: the maximum, or a denial")
	cmd.Flags().StringVar(&o.ClusterRole, "cluster-role", o.ClusterRole, "The ClusterRole bound to a slice's identity in its namespace")
	o.PodSecurity = cmdutil.NewEnum(sandbox.PodSecurityRestricted, sandbox.PodSecurityLevels...)
	cmdutil.AddEnumFlag(cmd, o.PodSecurity, "pod-security", "", "Pod Security level enforced in a slice's namespace")
	cmd.Flags().BoolVar(&o.AutoAccept, "auto-accept", false, "Let \"accept resourceslice --pending\" grant this class's slices without naming them")
	o.Output = printers.AddFlags(cmd, "", "one line")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads the name and builds the cluster client.
func (o *ResourceSliceClassOptions) Complete(_ *cobra.Command, args []string) error {
	o.Name = args[0]
	o.spec = v1alpha1.ResourceSliceClassSpec{Max: o.Max.Values(), OverMax: strings.ToUpper(o.OverMax.String()[:1]) + o.OverMax.String()[1:],
		ClusterRole: o.ClusterRole, PodSecurity: o.PodSecurity.String(), AutoAccept: o.AutoAccept}
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the flags.
func (o *ResourceSliceClassOptions) Validate() error {
	if err := member.ValidateSliceName("NAME", o.Name); err != nil {
		return err
	}
	if _, err := grants.ParseSliceQuantities("--max-", o.spec.Max); err != nil {
		return err
	}
	// --max-quota names the other quotas (validated as such below); the slice resources have flags of
	// their own.
	quota, err := sandbox.ParseResourceList("--max-quota", o.MaxQuota)
	if err != nil {
		return err
	}
	others := map[string]string{}
	for name := range quota {
		if slices.Contains(grants.SliceResources, string(name)) {
			return fmt.Errorf("--max-quota: %s is bounded by --max-%s", name, name)
		}
	}
	for _, kv := range strings.Split(o.MaxQuota, ",") { // the values as written (parsed above)
		if name, value, ok := strings.Cut(strings.TrimSpace(kv), "="); ok {
			others[name] = value
		}
	}
	if _, err := grants.ParseClassMax("--max-quota ", others); err != nil {
		return err
	}
	maps.Copy(o.spec.Max, others)
	if o.ClusterRole == "" {
		return fmt.Errorf("--cluster-role: must not be empty")
	}
	_, err = grants.ValidateSliceClass(o.Name, o.spec)
	return err
}

// Run applies the class.
func (o *ResourceSliceClassOptions) Run(ctx context.Context) error {
	if o.PodSecurity.String() == sandbox.PodSecurityPrivileged {
		o.cluster.Report.Warn("--pod-security privileged: the slices of this class may run privileged pods, which means root on this cluster's nodes")
	}
	cls, outcome, err := grants.ApplySliceClass(ctx, o.cluster, grants.SliceClassOptions{Name: o.Name, Spec: o.spec})
	if err != nil {
		return err
	}
	if !o.Output.Human() {
		return o.Output.PrintObject(o.Out, cls)
	}
	_, err = fmt.Fprintf(o.Out, "resourcesliceclass/%s %s\n", o.Name, outcome)
	return err
}

// Package info implements `kubectl federate info`.
package info

import (
	"context"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/views"
	"github.com/federate-dev/kubectl-federate/pkg/lifecycle"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// Options are the flags of `info`.
type Options struct {
	Output *printers.Flags

	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewCmd returns the `info` command.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &Options{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "info [-o json|yaml]",
		Short: "Show this cluster's federation identity, tenants and identities",
		Long: cmdutil.LongDesc(`
			Show this cluster's ID and handshake key fingerprint, the consumers it serves as a provider
			(Tenants, with their sandbox's Pod Security level and the main amounts of their quota: the
			whole quota with -o wide, -o yaml or -o json) and the providers it holds identities on
			(Identities), with their expiry.`),
		Example: cmdutil.Examples(`
			# Show the current cluster's federation state
			kubectl federate info

			# The same as JSON, for scripts
			kubectl federate info -o json`),
	}, o)
	o.Output = printers.AddFlags(cmd, "", "a table", "wide")
	return cmd
}

// Complete builds the cluster client.
func (o *Options) Complete(_ *cobra.Command, _ []string) error {
	var err error
	o.cluster, _, err = flags.Cluster(o.f, member.Discard)
	return err
}

// Validate has nothing to check: -o is checked when parsed.
func (o *Options) Validate() error { return nil }

// Run prints the information.
func (o *Options) Run(ctx context.Context) error {
	info, err := lifecycle.Pairings(ctx, o.cluster)
	if err != nil {
		return err
	}
	if !o.Output.Human() {
		obj, err := views.ClusterInfoObject(info)
		if err != nil {
			return err
		}
		return o.Output.Print(o.Out, obj)
	}
	return printHuman(o.Out, info, o.Output.Wide())
}

// mainQuota is what a table shows of a quota in 120 columns: compute requests and pods.
func mainQuota(q map[string]string) string {
	var parts []string
	for _, k := range []struct{ key, label string }{{"requests.cpu", "cpu"}, {"requests.memory", "memory"}, {"pods", "pods"}} {
		if v, ok := q[k.key]; ok {
			parts = append(parts, k.label+" "+v)
		}
	}
	return views.Dash(strings.Join(parts, ", "))
}

func printHuman(out io.Writer, info *lifecycle.ClusterInfo, wide bool) error {
	w := printers.NewTable(out)
	w.Row("Cluster ID:", info.ClusterID)
	w.Row("Handshake key:", info.Fingerprint)
	w.Line("")
	w.Line("TENANTS (consumers of this cluster)")
	if len(info.Tenants) == 0 {
		w.Line("  none")
	} else {
		if wide {
			w.Row("  CONSUMER", "NAMESPACE", "PHASE", "CREDENTIAL", "ROLE", "POD SECURITY", "QUOTA", "EXPIRES")
		} else {
			w.Row("  CONSUMER", "NAMESPACE", "PHASE", "POD SECURITY", "QUOTA", "EXPIRES")
		}
		for _, t := range info.Tenants {
			level, quota := "-", "-"
			if t.Sandbox != nil {
				level, quota = views.Dash(t.Sandbox.PodSecurity), mainQuota(t.Sandbox.Quota)
				if wide {
					quota = views.Dash(sandbox.FormatResourceList(t.Sandbox.Quota))
				}
			}
			if wide {
				w.Row("  "+t.ConsumerID, t.Namespace, views.Dash(t.Phase), t.Credential, views.Dash(t.ClusterRole), level, quota, views.Expiry(t.NotAfter))
			} else {
				w.Row("  "+t.ConsumerID, t.Namespace, views.Dash(t.Phase), level, quota, views.Expiry(t.NotAfter))
			}
		}
	}
	w.Line("")
	w.Line("IDENTITIES (this cluster on providers)")
	if len(info.Identities) == 0 {
		w.Line("  none")
	} else {
		if wide {
			w.Row("  PROVIDER", "TYPE", "SLICE", "CREDENTIAL", "API SERVER", "KUBECONFIG SECRET", "EXPIRES")
		} else {
			w.Row("  PROVIDER", "TYPE", "SLICE", "CREDENTIAL", "API SERVER", "EXPIRES")
		}
		for _, i := range info.Identities {
			if wide {
				w.Row("  "+i.ProviderID, i.Type, views.Dash(i.ResourceSlice), i.Credential, i.APIServer, i.Namespace+"/"+views.Dash(i.KubeconfigSecret), views.Expiry(i.NotAfter))
			} else {
				w.Row("  "+i.ProviderID, i.Type, views.Dash(i.ResourceSlice), i.Credential, i.APIServer, views.Expiry(i.NotAfter))
			}
		}
	}
	return w.Flush()
}

// Package info implements `kubectl federate info`.
package info

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/util"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// Options are the flags of `info`.
type Options struct {
	Output *util.OutputFormat

	cluster *handshake.Cluster
	util.Streams
}

// NewCmd returns the `info` command.
func NewCmd(f *util.Factory, streams util.Streams) *cobra.Command {
	o := &Options{Output: util.NewOutputFormat("json", "yaml"), Streams: streams}
	cmd := &cobra.Command{
		Use:   "info [-o json|yaml]",
		Short: "Show this cluster's federation identity, tenants and identities",
		Long: util.LongDesc(`
			Show this cluster's ID and handshake key fingerprint, the consumers it serves as a provider
			(Tenants, with their sandbox's Pod Security level and quota) and the providers it holds
			identities on (Identities), with their expiry.`),
		Example: util.Examples(`
			# Show the current cluster's federation state
			kubectl federate info

			# The same as JSON, for scripts
			kubectl federate info -o json`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.cluster, _, err = f.Cluster(handshake.Discard); err != nil {
				return err
			}
			cmd.SilenceUsage = true
			return o.Run(cmd)
		},
	}
	cmd.Flags().VarP(o.Output, "output", "o", "Output format. One of: (json, yaml)")
	_ = cmd.RegisterFlagCompletionFunc("output", util.CompleteValues(o.Output.Allowed()))
	return cmd
}

// Run prints the information.
func (o *Options) Run(cmd *cobra.Command) error {
	info, err := o.cluster.Info(cmd.Context())
	if err != nil {
		return err
	}
	if o.Output.Value != "" {
		return util.Print(o.Out, o.Output.Value, info)
	}
	return printHuman(o.Out, info)
}

func printHuman(out io.Writer, info *handshake.ClusterInfo) error {
	w := tabwriter.NewWriter(out, 0, 4, 3, ' ', 0)
	fmt.Fprintf(w, "Cluster ID:\t%s\n", info.ClusterID)
	fmt.Fprintf(w, "Handshake key:\t%s\n", info.Fingerprint)
	fmt.Fprintf(w, "\nTENANTS (consumers of this cluster)\n")
	if len(info.Tenants) == 0 {
		fmt.Fprintln(w, "  none")
	} else {
		fmt.Fprintln(w, "  CONSUMER\tNAMESPACE\tPHASE\tROLE\tPOD SECURITY\tQUOTA\tEXPIRES")
		for _, t := range info.Tenants {
			level, quota := "-", "-"
			if t.Sandbox != nil {
				level, quota = dash(t.Sandbox.PodSecurity), dash(handshake.FormatResourceList(t.Sandbox.Quota))
			}
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ConsumerID, t.Namespace, dash(t.Phase), dash(t.ClusterRole), level, quota, expiry(t.NotAfter))
		}
	}
	fmt.Fprintf(w, "\nIDENTITIES (this cluster on providers)\n")
	if len(info.Identities) == 0 {
		fmt.Fprintln(w, "  none")
	} else {
		fmt.Fprintln(w, "  PROVIDER\tAPI SERVER\tKUBECONFIG SECRET\tEXPIRES")
		for _, i := range info.Identities {
			fmt.Fprintf(w, "  %s\t%s\t%s/%s\t%s\n", i.ProviderID, i.APIServer, i.Namespace, dash(i.KubeconfigSecret), expiry(i.NotAfter))
		}
	}
	return w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func expiry(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

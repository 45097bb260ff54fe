package get

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/util"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// NonceOptions are the flags of `get nonce`.
type NonceOptions struct {
	RemoteClusterID string
	Output          *util.OutputFormat

	cluster *handshake.Cluster
	util.Streams
}

// NewCmdNonce returns `get nonce`.
func NewCmdNonce(f *util.Factory, streams util.Streams) *cobra.Command {
	o := &NonceOptions{Output: util.NewOutputFormat("json", "yaml"), Streams: streams}
	cmd := &cobra.Command{
		Use:   "nonce --remote-cluster-id CONSUMER",
		Short: "Print the nonce created for a consumer cluster (provider side)",
		Long: util.LongDesc(`
			Print the unused, unexpired nonce created for the consumer cluster CONSUMER by "create nonce".

			Only the nonce is written to stdout, with a trailing newline only on a terminal, so that
			$(kubectl federate get nonce ...) is exact. -o json or yaml adds its expiry.`),
		Example: util.Examples(`
			# Save the nonce for the consumer cluster "edge-1" to a file
			kubectl federate get nonce --remote-cluster-id edge-1 > nonce.txt`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := handshake.ValidateClusterID("--remote-cluster-id", o.RemoteClusterID); err != nil {
				return err
			}
			var err error
			if o.cluster, _, err = f.Cluster(handshake.Discard); err != nil {
				return err
			}
			cmd.SilenceUsage = true
			return o.Run(cmd)
		},
	}
	util.RemoteClusterIDFlag(f, cmd, &o.RemoteClusterID, "The ID of the consumer cluster the nonce is for")
	cmd.Flags().VarP(o.Output, "output", "o", "Output format. One of: (json, yaml); default is the bare nonce")
	_ = cmd.RegisterFlagCompletionFunc("output", util.CompleteValues(o.Output.Allowed()))
	return cmd
}

// Run prints the nonce.
func (o *NonceOptions) Run(cmd *cobra.Command) error {
	n, err := o.cluster.GetNonce(cmd.Context(), o.RemoteClusterID)
	if err != nil {
		return err
	}
	if o.Output.Value != "" {
		return util.Print(o.Out, o.Output.Value, struct {
			ConsumerID string    `json:"consumerID"`
			Nonce      string    `json:"nonce"`
			ExpiresAt  time.Time `json:"expiresAt"`
		}{n.ConsumerID, n.Value, n.ExpiresAt.UTC()})
	}
	if printers.IsTerminal(o.Out) {
		_, err = fmt.Fprintln(o.Out, n.Value)
	} else {
		_, err = fmt.Fprint(o.Out, n.Value)
	}
	return err
}

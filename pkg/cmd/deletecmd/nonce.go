package deletecmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// NonceOptions are the flags of `delete nonce`.
type NonceOptions struct {
	RemoteClusterID string
	IgnoreNotFound  bool

	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewCmdNonce returns `delete nonce`.
func NewCmdNonce(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &NonceOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "nonce --remote-cluster-id CONSUMER",
		Short: "Delete the unused nonce of a pairing begun and abandoned (provider side)",
		Long: cmdutil.LongDesc(`
			Delete the nonce made by "create nonce" for the consumer cluster CONSUMER, while it is unused:
			a pairing begun and never finished, or a nonce you suspect leaked. "status" lists unused
			nonces with their age. A nonce already used reads "already used" (its record goes with
			"unauthenticate"); a consumer with no nonce here is an error, NotFound, exit 1
			(--ignore-not-found: exit 0).`),
		Example: cmdutil.Examples(`
			# The consumer "edge-1" will not pair after all
			kubectl federate delete nonce --remote-cluster-id edge-1`),
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the consumer cluster the nonce was made for")
	flags.IgnoreNotFound(cmd, &o.IgnoreNotFound)
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete builds the cluster client.
func (o *NonceOptions) Complete(_ *cobra.Command, _ []string) error {
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the flags.
func (o *NonceOptions) Validate() error {
	return nil
}

// Run deletes the nonce.
func (o *NonceOptions) Run(ctx context.Context) error {
	outcome, err := handshake.DeleteNonce(ctx, o.cluster, o.RemoteClusterID)
	if o.IgnoreNotFound && errors.Is(err, handshake.ErrNotFound) {
		return nil
	}
	if err != nil {
		return flags.NotFoundHint(err, "--remote-cluster-id")
	}
	if outcome == handshake.Already {
		_, err = fmt.Fprintf(o.Out, "nonce/%s already used\n", o.RemoteClusterID)
		return err
	}
	_, err = fmt.Fprintf(o.Out, "nonce/%s deleted\n", o.RemoteClusterID)
	return err
}

package get

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/printers"

	cmdprinters "github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/views"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// NonceOptions are the flags of `get nonce`.
type NonceOptions struct {
	RemoteClusterID string
	Output          *cmdprinters.Flags

	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewCmdNonce returns `get nonce`.
func NewCmdNonce(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &NonceOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "nonce --remote-cluster-id CONSUMER",
		Short: "Print the nonce created for a consumer cluster (provider side)",
		Long: cmdutil.LongDesc(`
			Print the unused, unexpired nonce created for the consumer cluster CONSUMER by "create nonce",
			with this cluster's ID and CONSUMER, on one line:

			    federate-nonce.v1.PROVIDER.CONSUMER.NONCE.MAC

			The MAC, keyed from the nonce, seals the two IDs: "generate tenant" reads them, so the
			consumer's administrator types no ID, a consumer cluster never initialized takes the ID
			CONSUMER, and an edited ID is refused. Send the whole line over a channel you trust: it holds
			the nonce.

			Only that line is written to stdout, with a trailing newline only on a terminal, so that
			$(kubectl federate get nonce ...) is exact. -o json or yaml prints its parts instead, with the
			expiry ("ticket" is the line above). Expired nonces are removed first (judged by the API
			server's clock); asking for one says it expired.`),
		Example: cmdutil.Examples(`
			# Save the nonce for the consumer cluster "edge-1" to a file
			kubectl federate get nonce --remote-cluster-id edge-1 > nonce.txt`),
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the consumer cluster the nonce is for")
	o.Output = cmdprinters.AddFlags(cmd, "", "the bare nonce")
	return cmd
}

// Complete builds the cluster client; progress (expired nonces removed) goes to stderr.
func (o *NonceOptions) Complete(_ *cobra.Command, _ []string) error {
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the flags.
func (o *NonceOptions) Validate() error {
	return nil
}

// Run prints the nonce.
func (o *NonceOptions) Run(ctx context.Context) error {
	n, ticket, err := handshake.GetNonce(ctx, o.cluster, o.RemoteClusterID)
	if errors.Is(err, nonce.ErrNotFound) {
		// A typo is said as one, before any advice to make a nonce for it.
		if typo := o.nearbyNonce(ctx); typo != nil {
			return typo
		}
	}
	if err != nil {
		return flags.NonceHint(flags.RemoteIDError(err), o.RemoteClusterID)
	}
	if !o.Output.Human() {
		obj, err := views.Object(views.KindNonceTicket, n.ConsumerID, map[string]string{member.LabelRemoteClusterID: n.ConsumerID, member.LabelRole: member.RoleProvider}, struct {
			ProviderID string    `json:"providerID"`
			ConsumerID string    `json:"consumerID"`
			Nonce      string    `json:"nonce"`
			ExpiresAt  time.Time `json:"expiresAt"`
			Ticket     string    `json:"ticket"`
		}{ticket.ProviderID, n.ConsumerID, n.Value, n.ExpiresAt.UTC(), ticket.String()})
		if err != nil {
			return err
		}
		return o.Output.Print(o.Out, obj)
	}
	if printers.IsTerminal(o.Out) {
		_, err = fmt.Fprintln(o.Out, ticket.String())
	} else {
		_, err = fmt.Fprint(o.Out, ticket.String())
	}
	return err
}

// nearbyNonce is a NotFound naming the consumer with an unused nonce whose ID is nearest the one given, when
// it is near enough to be what was meant; nil otherwise.
func (o *NonceOptions) nearbyNonce(ctx context.Context) error {
	unused, err := o.cluster.Nonces().ListUnused(ctx)
	if err != nil {
		return nil //nolint:nilerr // the advice is extra: the nonce's own error is said instead
	}
	known := make([]string, 0, len(unused))
	for _, u := range unused {
		known = append(known, u.ConsumerID)
	}
	nf := handshake.NotFound("nonce for consumer", o.RemoteClusterID, "on this cluster (never created, or used already)", known)
	if !nf.Nearby() {
		return nil
	}
	return fmt.Errorf("--remote-cluster-id: %w", nf)
}

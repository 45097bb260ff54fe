// Package unauthenticate implements `kubectl federate unauthenticate`.
package unauthenticate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/lifecycle"
)

// Options are the flags of `unauthenticate`.
type Options struct {
	KeepNamespaces bool
	Force          bool
	IgnoreNotFound bool
	IDs            flags.ClusterIDs
	Pair           *flags.PairFlags

	pair *flags.Pair
	cmdutil.Streams
}

// NewCmd returns the `unauthenticate` command.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &Options{Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "unauthenticate --kubeconfig CONSUMER --remote-kubeconfig PROVIDER [--keep-namespaces]",
		Short: "Revoke this (consumer) cluster's identity on a provider cluster and remove the pairing",
		Long: cmdutil.LongDesc(`
			Undo "authenticate" (or the manual flow) on both clusters. On the provider it revokes the
			consumer as "revoke" does (the RoleBinding first, so the consumer's certificate grants nothing
			from that moment, then every workload and pod in its sandbox and the tokens it could hold),
			then deletes the Tenant (and the pinned handshake key), any unused nonce, leftover CSRs and,
			unless --keep-namespaces, the sandbox namespace, waiting until it is gone. On the consumer it
			deletes the Identity, the kubeconfig Secret and any pending client key from federate-system.
			The other direction of a two-way pairing is not touched. Running it again succeeds and changes
			nothing.

			If either cluster cannot be reached, nothing is changed, unless --force: then the reachable
			side is cleaned, the command lists what it could not clean on the other side and exits 1,
			and a later run with both sides reachable finishes the job. Name the unreachable side's
			cluster ID with --cluster-id (consumer) or --remote-cluster-id (provider).`),
		Example: cmdutil.Examples(`
			# Remove the pairing between two clusters
			kubectl federate unauthenticate --kubeconfig consumer.kubeconfig --remote-kubeconfig provider.kubeconfig

			# The consumer cluster is gone for good: revoke it on the provider anyway
			kubectl federate unauthenticate --kubeconfig dead-consumer.kubeconfig --remote-kubeconfig provider.kubeconfig \
			  --force --cluster-id edge-1

			# Keep the provider's sandbox namespace and its data (its workloads are still stopped)
			kubectl federate unauthenticate --context edge-1 --remote-context gpu-farm --keep-namespaces`),
	}, o)
	o.Pair = flags.AddPairFlags(cmd, f, streams, "the removal")
	cmd.Flags().BoolVar(&o.KeepNamespaces, "keep-namespaces", false, "Keep the provider's sandbox namespace and its data (workloads and pods are still deleted)")
	cmd.Flags().BoolVar(&o.Force, "force", false, "Clean the reachable side even if the other cannot be reached (then exit 1, listing what was left)")
	flags.IgnoreNotFound(cmd, &o.IgnoreNotFound)
	o.IDs.AddFlags(cmd, "The consumer's cluster ID, needed with --force when the consumer is unreachable",
		"The provider's cluster ID, needed with --force when the provider is unreachable")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete builds both clusters' clients.
func (o *Options) Complete(_ *cobra.Command, _ []string) error {
	var err error
	o.pair, err = o.Pair.Complete(o.Streams)
	return err
}

// Validate checks the flags: the pair, then the IDs.
func (o *Options) Validate() error {
	if err := o.Pair.Validate(); err != nil {
		return err
	}
	return o.IDs.Validate()
}

// Run removes the pairing.
func (o *Options) Run(ctx context.Context) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.Pair.Timeout)
	defer cancel()
	var entry *handshake.JWTAuthenticator
	outcome, err := lifecycle.Unauthenticate(ctx, o.pair.Consumer, o.pair.Provider, lifecycle.UnauthenticateOptions{
		KeepNamespaces: o.KeepNamespaces, Force: o.Force, ConsumerID: o.IDs.Local, ProviderID: o.IDs.Remote,
		Authenticator: func(e *handshake.JWTAuthenticator) { entry = e },
	})
	if entry != nil {
		// A federated pairing's last trace is the provider's authenticator entry, which no API request
		// can remove: printed (stdout) for its administrator to take out of the file.
		if perr := flags.PrintRemovedAuthenticator(o.Out, o.pair.Printer, entry); perr != nil {
			return errors.Join(err, perr)
		}
	}
	var swapped *lifecycle.SwappedError
	var conn *cmdutil.ConnectionError
	switch {
	case !o.Force && errors.As(err, &conn):
		// Nothing was changed; the way on is a flag of this command.
		conn.Next = "nothing was changed; to remove this pairing from the reachable cluster alone, add --force"
		switch {
		case conn.Flag == "--remote-kubeconfig" && o.IDs.Remote == "":
			conn.Next += " --remote-cluster-id PROVIDER"
		case conn.Flag == "--kubeconfig" && o.IDs.Local == "":
			conn.Next += " --cluster-id CONSUMER"
		}
		return conn
	case errors.As(err, &swapped):
		return fmt.Errorf("%w; run: kubectl federate unauthenticate %s %s", err, o.Pair.Remote.ConnectionFlags("--"), o.Pair.Local.ConnectionFlags("--remote-"))
	case o.IgnoreNotFound && errors.Is(err, handshake.ErrNotFound):
		return nil
	case errors.Is(err, handshake.ErrNotFound):
		return fmt.Errorf("%w (--ignore-not-found to accept that)", err)
	case err != nil:
		return o.Pair.TimeoutError(ctx, flags.PairError(err))
	case outcome == handshake.Already:
		o.pair.Printer.Info("The pairing was already removed: nothing to do")
		return nil
	}
	o.pair.Printer.Info(o.Pair.Summary(time.Since(start)))
	return nil
}

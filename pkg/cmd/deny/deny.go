// Package deny implements `kubectl federate deny`.
package deny

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// NewCmd returns the `deny` group.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	cmd := cmdutil.NewGroup("deny", "Refuse a consumer's request: a resource slice, an exchange credential", "Refuse a request a consumer cluster left on this (provider) cluster.")
	cmd.AddCommand(NewCmdResourceSlice(f, streams), NewCmdExchange(f, streams))
	return cmd
}

// ResourceSliceOptions are the flags of `deny resourceslice`.
type ResourceSliceOptions struct {
	Name            string
	RemoteClusterID string
	Reason          string

	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewCmdResourceSlice returns `deny resourceslice`.
func NewCmdResourceSlice(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &ResourceSliceOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:     "resourceslice NAME --remote-cluster-id CONSUMER --reason TEXT",
		Aliases: []string{"resourceslices", "fslice"},
		Short:   "Refuse a consumer's resource slice, saying why (provider side)",
		Long: cmdutil.LongDesc(`
			Answer the ResourceSlice NAME that the consumer cluster CONSUMER left in its tenant namespace
			with a refusal: its status says Denied and gives --reason, which the consumer's "import
			resourceslice" shows. Nothing is created. A slice already accepted is not denied: "delete
			resourceslice" takes its identity and namespace away.`),
		Example: cmdutil.Examples(`
			# Refuse the slice "train" of the consumer "edge-1"
			kubectl federate deny resourceslice train --remote-cluster-id edge-1 --reason "no GPU capacity until March"`),
		Args: cmdutil.ExactArgs(1, "NAME"),
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the consumer cluster")
	cmd.Flags().StringVar(&o.Reason, "reason", "", "Why the slice is refused, shown to the consumer")
	cmd.ValidArgsFunction = flags.CompleteSlices(f)
	_ = cmd.MarkFlagRequired("reason")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads the name and builds the cluster client.
func (o *ResourceSliceOptions) Complete(_ *cobra.Command, args []string) error {
	o.Name = args[0]
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the flags.
func (o *ResourceSliceOptions) Validate() error {
	if err := member.ValidateSliceName("NAME", o.Name); err != nil {
		return err
	}
	return validateReason(o.Reason)
}

// Run denies the slice.
func (o *ResourceSliceOptions) Run(ctx context.Context) error {
	if err := grants.DenySlice(ctx, o.cluster, o.RemoteClusterID, o.Name, o.Reason); err != nil {
		return err
	}
	_, err := fmt.Fprintf(o.Out, "resourceslice/%s denied\n", o.Name)
	return err
}

// ExchangeOptions are the flags of `deny exchange`.
type ExchangeOptions struct {
	Name            string
	RemoteClusterID string
	Reason          string
	IgnoreNotFound  bool

	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewCmdExchange returns `deny exchange`.
func NewCmdExchange(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &ExchangeOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "exchange NAME --remote-cluster-id CONSUMER --reason TEXT",
		Short: "Refuse a consumer's exchange request, or revoke the credential it was issued (provider side)",
		Long: cmdutil.LongDesc(`
			Answer the ExchangeRequest NAME (as "allow exchange" lists it) of the consumer cluster
			CONSUMER with a refusal. A pending request is marked Refused with --reason, which the
			consumer's "get kubeconfig --for-user" shows, and nothing is issued. A request already issued
			has its credential revoked: its user is recorded as revoked for good, its RBAC deleted, the
			API server confirmed to refuse it, and the request marked Revoked. A request refused or
			revoked before reads "already denied"; a name this cluster has no record of is an error,
			NotFound, exit 1 (--ignore-not-found: exit 0).`),
		Example: cmdutil.Examples(`
			# Refuse a request of the consumer "edge-1"
			kubectl federate deny exchange mapping-1f0c3b9a0d6e4a2b8c7d5e3f1a2b4c6d --remote-cluster-id edge-1 \
			  --reason "not for prod"`),
		Args: cmdutil.ExactArgs(1, "NAME"),
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the consumer cluster")
	cmd.Flags().StringVar(&o.Reason, "reason", "", "Why the request is refused, shown to the consumer")
	cmd.ValidArgsFunction = flags.CompleteExchangeRequests(f)
	_ = cmd.MarkFlagRequired("reason")
	flags.IgnoreNotFound(cmd, &o.IgnoreNotFound)
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads the name and builds the cluster client.
func (o *ExchangeOptions) Complete(_ *cobra.Command, args []string) error {
	o.Name = args[0]
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the flags.
func (o *ExchangeOptions) Validate() error {
	if len(o.Name) > 253 || !strings.Contains(o.Name, "-") {
		return fmt.Errorf("NAME %q: must be a request's name as listed, <rule>-<32 hex digits>", o.Name)
	}
	return validateReason(o.Reason)
}

// Run refuses the request.
func (o *ExchangeOptions) Run(ctx context.Context) error {
	outcome, err := exchange.DenyExchange(ctx, o.cluster, o.RemoteClusterID, o.Name, o.Reason)
	if o.IgnoreNotFound && errors.Is(err, handshake.ErrNotFound) {
		return nil
	}
	if err != nil {
		return flags.NotFoundHint(err, "NAME")
	}
	if outcome == handshake.Already {
		_, err = fmt.Fprintf(o.Out, "exchangerequest/%s already denied\n", o.Name)
		return err
	}
	_, err = fmt.Fprintf(o.Out, "exchangerequest/%s denied\n", o.Name)
	return err
}

// validateReason checks --reason, which the consumer reads: said, and short enough to be kept whole.
func validateReason(reason string) error {
	if strings.TrimSpace(reason) == "" {
		return errors.New("--reason: must say why")
	}
	if len(reason) > 1024 {
		return fmt.Errorf("--reason: is %d characters, at most 1024 are kept", len(reason))
	}
	return nil
}

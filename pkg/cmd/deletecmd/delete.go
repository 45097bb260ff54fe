// Package delete implements `kubectl federate delete`.
package deletecmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// NewCmd returns the `delete` group.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	cmd := cmdutil.NewGroup("delete", "Delete a grant or a leftover: a resource slice, a resource slice class, a nonce, an export",
		"Delete a grant on this cluster (and, given both kubeconfigs, on the other), an unused nonce, or an export.")
	cmd.AddCommand(NewCmdResourceSlice(f, streams), NewCmdResourceSliceClass(f, streams), NewCmdNonce(f, streams), NewCmdExport(f, streams))
	return cmd
}

// Sides of a slice.
const (
	sideAuto     = "auto"
	sideConsumer = "consumer"
	sideProvider = "provider"
	sideNone     = "" // this cluster holds nothing of the slice
)

// ResourceSliceOptions are the flags of `delete resourceslice`.
type ResourceSliceOptions struct {
	Name            string
	RemoteClusterID string
	Side            *cmdutil.Enum
	Pair            *flags.PairFlags
	IgnoreNotFound  bool

	f       *cmdutil.Factory
	oneShot bool
	local   *member.Cluster
	pair    *flags.Pair
	cmdutil.Streams
}

// NewCmdResourceSlice returns `delete resourceslice`.
func NewCmdResourceSlice(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &ResourceSliceOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:     "resourceslice NAME --remote-cluster-id REMOTE [--side consumer|provider]",
		Aliases: []string{"resourceslices", "fslice"},
		Short:   "Revoke a resource slice's identity and remove its namespace and records (either side)",
		Long: cmdutil.LongDesc(`
			Delete the ResourceSlice NAME of a pairing with the cluster REMOTE.

			On the provider (this cluster serves the consumer REMOTE): the slice's RoleBinding goes first,
			so its certificate is authorized for nothing from that moment; then its workloads and pods are
			stopped, its namespace is deleted (waited until gone), and the consumer's request and the
			slice's CSRs are removed. Only a namespace created for exactly this slice is touched.

			On the consumer (this cluster holds a slice of the provider REMOTE): the slice's Identity,
			kubeconfig, waiting key and record are removed from federate-system, and the request is
			withdrawn from the provider through the pairing's kubeconfig. The slice's client key is gone
			with its Secret, so its certificate is useless to anyone; its namespace on the provider stays
			until the provider's administrator deletes the slice there, or the pairing is removed.

			The side is found from what this cluster holds; --side chooses when it holds both (a two-way
			pairing with a slice of the same name each way). With --remote-kubeconfig or --remote-context
			(this cluster the consumer, the remote one the provider), both sides are cleaned at once,
			the provider first. Deleting a slice deleted before succeeds and says "already deleted"; a
			slice this cluster has no record of is an error, NotFound, exit 1, naming the slices it
			holds with REMOTE (--ignore-not-found: exit 0).`),
		Example: cmdutil.Examples(`
			# On the provider: take the slice "batch" of the consumer "edge-1" away
			kubectl federate delete resourceslice batch --remote-cluster-id edge-1

			# Holding both kubeconfigs: remove the slice on both clusters
			kubectl federate delete resourceslice batch --kubeconfig edge-1.kubeconfig --remote-kubeconfig gpu-farm.kubeconfig`),
		Args: cmdutil.ExactArgs(1, "NAME"),
	}, o)
	flags.OptionalRemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the other cluster of the pairing (required unless --remote-kubeconfig or --remote-context names it)")
	cmd.ValidArgsFunction = flags.CompleteSlices(f)
	flags.IgnoreNotFound(cmd, &o.IgnoreNotFound)
	o.Side = cmdutil.NewEnum(sideAuto, sideAuto, sideConsumer, sideProvider)
	cmdutil.AddEnumFlag(cmd, o.Side, "side", "", "Which side of the slice this cluster is")
	o.Pair = flags.AddPairFlags(cmd, f, streams, "the deletion")
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads the name and builds the clients.
func (o *ResourceSliceOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Name = args[0]
	t, err := o.Pair.CompleteLocalOrPair(o.Streams)
	o.oneShot, o.pair, o.local = t.OneShot(), t.Pair, t.Local
	return err
}

// Validate checks the flags.
func (o *ResourceSliceOptions) Validate() error {
	if err := member.ValidateSliceName("NAME", o.Name); err != nil {
		return err
	}
	if err := o.Pair.RequireRemoteID(o.RemoteClusterID); err != nil {
		return err
	}
	if o.oneShot && o.Side.String() == sideProvider {
		return errors.New("--side provider: with --remote-kubeconfig this cluster is the consumer and the remote one the provider")
	}
	return nil
}

// Run deletes the slice on the side(s) reachable.
func (o *ResourceSliceOptions) Run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, o.Pair.Timeout)
	defer cancel()
	if o.oneShot {
		start := time.Now()
		err := o.both(ctx)
		if err != nil {
			return o.Pair.TimeoutError(ctx, flags.PairError(err))
		}
		o.pair.Printer.Info(o.Pair.Summary(time.Since(start)))
		return nil
	}
	side, err := o.findSide(ctx, o.Side.String())
	if err != nil {
		return err
	}
	switch side {
	case sideNone:
		outcome, err := grants.SliceGone(ctx, o.local, o.RemoteClusterID, o.Name)
		if o.IgnoreNotFound && errors.Is(err, handshake.ErrNotFound) {
			return nil
		}
		if err != nil {
			return flags.NotFoundHint(err, "NAME")
		}
		if outcome == handshake.Already {
			_, err = fmt.Fprintf(o.Out, "resourceslice/%s already deleted\n", o.Name)
		}
		return err
	case sideProvider:
		if err := grants.DeleteSliceProvider(ctx, o.local, o.RemoteClusterID, o.Name); err != nil {
			return cmdutil.WithDeadline(ctx, err, "--timeout "+o.Pair.Timeout.String())
		}
		_, err := fmt.Fprintf(o.Out, "resourceslice/%s deleted\n", o.Name)
		return err
	}
	via, err := handshake.ViaPairing(ctx, o.local, o.RemoteClusterID)
	if err != nil {
		o.local.Report.Warn(fmt.Sprintf("Cannot reach provider %q through the pairing (%v): the request stays there until its administrator deletes the slice", o.RemoteClusterID, err))
		via = nil
	}
	if err := grants.DeleteSliceLocal(ctx, o.local, o.RemoteClusterID, o.Name, via); err != nil {
		return cmdutil.WithDeadline(ctx, err, "--timeout "+o.Pair.Timeout.String())
	}
	_, err = fmt.Fprintf(o.Out, "resourceslice/%s deleted\n", o.Name)
	return err
}

// findSide tells which side of the slice this cluster holds.
func (o *ResourceSliceOptions) findSide(ctx context.Context, asked string) (string, error) {
	asConsumer, err := grants.HasSliceRecord(ctx, o.local, o.RemoteClusterID, o.Name)
	if err != nil {
		return "", err
	}
	slices, err := grants.ProviderSlices(ctx, o.local, o.RemoteClusterID)
	if err != nil {
		return "", err
	}
	asProvider := false
	for _, s := range slices {
		asProvider = asProvider || s.Name == o.Name
	}
	if !asProvider {
		asProvider, err = grants.HasSliceNamespace(ctx, o.local, o.RemoteClusterID, o.Name)
		if err != nil {
			return "", err
		}
	}
	switch {
	// An explicit side deletes what this cluster holds on that side, and is NotFound like any name without
	// a record when it holds nothing there.
	case asked == sideProvider && asProvider, asked == sideConsumer && asConsumer:
		return asked, nil
	case asked == sideProvider || asked == sideConsumer:
		return sideNone, nil
	case asConsumer && asProvider:
		return "", cmdutil.UsageErrorf("--side: this cluster holds slice %q both as consumer and as provider of %q; say which to delete", o.Name, o.RemoteClusterID)
	case asProvider:
		return sideProvider, nil
	case asConsumer:
		return sideConsumer, nil
	}
	return sideNone, nil
}

// both deletes the slice on the provider, then on the consumer.
func (o *ResourceSliceOptions) both(ctx context.Context) error {
	cSelf, err := o.pair.Consumer.Load(ctx)
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	pSelf, err := o.pair.Provider.Load(ctx)
	if err != nil {
		return fmt.Errorf("provider: %w", err)
	}
	if o.RemoteClusterID != "" && o.RemoteClusterID != pSelf.ClusterID {
		return fmt.Errorf("--remote-cluster-id %q: the provider is initialized with cluster ID %q", o.RemoteClusterID, pSelf.ClusterID)
	}
	held, err := grants.HasSliceRecord(ctx, o.pair.Consumer, pSelf.ClusterID, o.Name)
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	provided, err := grants.HasSliceNamespace(ctx, o.pair.Provider, cSelf.ClusterID, o.Name)
	if err != nil {
		return fmt.Errorf("provider: %w", err)
	}
	if !held && !provided {
		outcome, err := grants.SliceGone(ctx, o.pair.Provider, cSelf.ClusterID, o.Name)
		if o.IgnoreNotFound && errors.Is(err, handshake.ErrNotFound) {
			return nil
		}
		if err != nil {
			return flags.NotFoundHint(err, "NAME")
		}
		if outcome == handshake.Already {
			_, err = fmt.Fprintf(o.Out, "resourceslice/%s already deleted\n", o.Name)
		}
		return err
	}
	if err := grants.DeleteSliceProvider(ctx, o.pair.Provider, cSelf.ClusterID, o.Name); err != nil {
		return fmt.Errorf("provider: %w", err)
	}
	if err := grants.DeleteSliceLocal(ctx, o.pair.Consumer, pSelf.ClusterID, o.Name, nil); err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	_, err = fmt.Fprintf(o.Out, "resourceslice/%s deleted\n", o.Name)
	return err
}

// ResourceSliceClassOptions are the flags of `delete resourceslice-class`.
type ResourceSliceClassOptions struct {
	Name           string
	IgnoreNotFound bool

	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewCmdResourceSliceClass returns `delete resourceslice-class`.
func NewCmdResourceSliceClass(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &ResourceSliceClassOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:     "resourceslice-class NAME",
		Aliases: []string{"resourcesliceclass"},
		Short:   "Delete a resource slice class (provider side); slices granted under it keep their grant",
		Long: cmdutil.LongDesc(`
			Delete the ResourceSliceClass NAME. Slices already granted under it keep their namespace,
			quota and identity; slices asking for it afterwards are not accepted.`),
		Example: cmdutil.Examples(`
			kubectl federate delete resourceslice-class gpu`),
		Args: cmdutil.ExactArgs(1, "NAME"),
	}, o)
	flags.IgnoreNotFound(cmd, &o.IgnoreNotFound)
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads the name and builds the cluster client.
func (o *ResourceSliceClassOptions) Complete(_ *cobra.Command, args []string) error {
	o.Name = args[0]
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the name.
func (o *ResourceSliceClassOptions) Validate() error {
	return member.ValidateSliceName("NAME", o.Name)
}

// Run deletes the class.
func (o *ResourceSliceClassOptions) Run(ctx context.Context) error {
	err := grants.DeleteSliceClass(ctx, o.cluster, o.Name)
	switch {
	case o.IgnoreNotFound && errors.Is(err, handshake.ErrNotFound):
		return nil
	case err != nil:
		return flags.NotFoundHint(err, "NAME")
	}
	_, err = fmt.Fprintf(o.Out, "resourcesliceclass/%s deleted\n", o.Name)
	return err
}

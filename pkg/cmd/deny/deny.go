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
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// NewCmd returns the `deny` group.
func NewCmd(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	cmd := cmdutil.NewGroup("deny", "Refuse a consumer's request: a resource slice", "Refuse a request a consumer cluster left on this (provider) cluster.")
	cmd.AddCommand(NewCmdResourceSlice(f, streams))
	return cmd
}

// ResourceSliceOptions are the flags of `deny resourceslice`.
type ResourceSliceOptions struct {
	Name            string
	RemoteClusterID string
	Reason          string

	f       *cmdutil.Factory
	cluster *handshake.Cluster
	cmdutil.Streams
}

// NewCmdResourceSlice returns `deny resourceslice`.
func NewCmdResourceSlice(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &ResourceSliceOptions{f: f, Streams: streams}
	cmd := cmdutil.Wire(&cobra.Command{
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
	_ = cmd.MarkFlagRequired("reason")
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
	if err := handshake.ValidateSliceName("NAME", o.Name); err != nil {
		return err
	}
	if err := handshake.ValidateClusterID("--remote-cluster-id", o.RemoteClusterID); err != nil {
		return err
	}
	if strings.TrimSpace(o.Reason) == "" {
		return errors.New("--reason: must say why")
	}
	if len(o.Reason) > 1024 {
		return fmt.Errorf("--reason: is %d characters, at most 1024 are kept", len(o.Reason))
	}
	return nil
}

// Run denies the slice.
func (o *ResourceSliceOptions) Run(ctx context.Context) error {
	if err := o.cluster.DenySlice(ctx, o.RemoteClusterID, o.Name, o.Reason); err != nil {
		return err
	}
	_, err := fmt.Fprintf(o.Out, "resourceslice/%s denied\n", o.Name)
	return err
}

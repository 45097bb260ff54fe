package revoke

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// NamespaceOptions are the flags of `revoke namespace`.
type NamespaceOptions struct {
	Name            string
	RemoteClusterID string
	Timeout         time.Duration
	IgnoreNotFound  bool
	Output          *printers.NameFlag

	f       *cmdutil.Factory
	cluster *member.Cluster
	cmdutil.Streams
}

// NewCmdNamespace returns `revoke namespace`.
func NewCmdNamespace(f *cmdutil.Factory, streams cmdutil.Streams) *cobra.Command {
	o := &NamespaceOptions{f: f, Streams: streams, Timeout: flags.DefaultTimeout}
	cmd := cmdutil.Wire(f, &cobra.Command{
		Use:   "namespace NAME --remote-cluster-id CONSUMER",
		Short: "Take an extra namespace away from a consumer and delete it (provider side)",
		Long: cmdutil.LongDesc(`
			Take the extra namespace NAME away from the consumer cluster CONSUMER: its RoleBinding first,
			so the pairing's identity is authorized for nothing there from that moment, then its workloads
			and pods, then the namespace itself (waited until gone) and the consumer's request for it. Only
			a namespace granted to CONSUMER with "grant namespace" is touched. Revoking a namespace that
			is gone succeeds.`),
		Example: cmdutil.Examples(`
			kubectl federate revoke namespace edge-1-ci --remote-cluster-id edge-1`),
		Args: cmdutil.ExactArgs(1, "NAME"),
	}, o)
	flags.RemoteClusterID(f, cmd, &o.RemoteClusterID, "The ID of the consumer cluster")
	cmdutil.TimeoutFlag(cmd.Flags(), &o.Timeout, o.Timeout, "the removal")
	flags.IgnoreNotFound(cmd, &o.IgnoreNotFound)
	o.Output = printers.AddNameFlag(cmd, "one line")
	cmd.ValidArgsFunction = flags.CompleteExtraNamespaces(f)
	cmdutil.AddDryRunFlag(cmd, f)
	return cmd
}

// Complete reads the name and builds the cluster client.
func (o *NamespaceOptions) Complete(_ *cobra.Command, args []string) error {
	o.Name = args[0]
	var err error
	o.cluster, _, err = flags.Cluster(o.f, o.f.Printer(o.Streams))
	return err
}

// Validate checks the flags.
func (o *NamespaceOptions) Validate() error {
	if err := grants.ValidateExtraNamespace("NAME", o.Name); err != nil {
		return err
	}
	return nil // --timeout is checked when parsed (cmdutil.TimeoutFlag)
}

// Run revokes the namespace.
func (o *NamespaceOptions) Run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	outcome, err := grants.RevokeNamespace(ctx, o.cluster, o.RemoteClusterID, o.Name)
	if o.IgnoreNotFound && errors.Is(err, handshake.ErrNotFound) {
		return nil
	}
	if err != nil {
		return cmdutil.WithDeadline(ctx, flags.NotFoundHint(err, "NAME"), "--timeout "+o.Timeout.String())
	}
	if o.Output.Name() {
		return o.Output.Print(o.Out, printers.Ref{APIVersion: "v1", Kind: "Namespace", Name: o.Name})
	}
	if outcome == handshake.Already {
		_, err = fmt.Fprintf(o.Out, "namespace/%s already revoked from %s\n", o.Name, o.RemoteClusterID)
		return err
	}
	_, err = fmt.Fprintf(o.Out, "namespace/%s revoked from %s\n", o.Name, o.RemoteClusterID)
	return err
}

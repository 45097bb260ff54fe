// Package flags holds the flag groups that know the domain, each defined once and validated in a fixed
// order, so that the same mistake gets the same message from every command: the two-cluster pair, the
// cluster IDs, the provider's issuance choices, the client key algorithm and --remote-cluster-id.
package flags

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/output"
)

// DefaultTimeout bounds a two-cluster command.
const DefaultTimeout = 2 * time.Minute

// PairFlags are the connection flags of a two-cluster command: the consumer is the root's --kubeconfig /
// --context, the provider --remote-kubeconfig / --remote-context; and the --timeout of the whole run.
type PairFlags struct {
	Local, Remote *cmdutil.Factory
	Timeout       time.Duration
	cmd           *cobra.Command
}

// AddPairFlags registers the remote connection flags and --timeout on cmd;
// timeoutOf says what --timeout bounds ("the whole handshake").
func AddPairFlags(cmd *cobra.Command, local *cmdutil.Factory, streams cmdutil.Streams, timeoutOf string) *PairFlags {
	p := &PairFlags{Local: local, Timeout: DefaultTimeout, cmd: cmd}
	p.Remote = local.AddRemoteFlags(cmd.Flags(), streams)
	cmdutil.TimeoutFlag(cmd.Flags(), &p.Timeout, p.Timeout, timeoutOf)
	return p
}

// Given tells whether a remote cluster was named: commands that also work on one cluster run in one shot
// when it was.
func (p *PairFlags) Given() bool {
	return p.cmd.Flags().Changed("remote-kubeconfig") || p.cmd.Flags().Changed("remote-context")
}

// Validate checks the pair's flags: a remote cluster is named, and the timeout is positive.
func (p *PairFlags) Validate() error {
	if !p.Given() {
		return fmt.Errorf("--remote-kubeconfig or --remote-context: one is required to name the provider cluster")
	}
	return nil // --timeout is checked when parsed (cmdutil.TimeoutFlag)
}

// LocalOrPair is what a command that runs on this cluster alone, or in one shot on both, works on.
type LocalOrPair struct {
	Local *member.Cluster // this cluster alone: no remote cluster was named
	Pair  *Pair           // both clusters, in one shot
}

// OneShot tells whether the command runs on both clusters.
func (l LocalOrPair) OneShot() bool { return l.Pair != nil }

// CompleteLocalOrPair builds the pair's clients when a remote cluster was named, else this cluster's.
func (p *PairFlags) CompleteLocalOrPair(streams cmdutil.Streams) (LocalOrPair, error) {
	if p.Given() {
		pair, err := p.Complete(streams)
		return LocalOrPair{Pair: pair}, err
	}
	c, _, err := Cluster(p.Local, p.Local.Printer(streams))
	return LocalOrPair{Local: c}, err
}

// RequireRemoteID is the check of --remote-cluster-id for a command that runs alone or in one shot:
// alone, it names the other cluster; in one shot, the remote cluster's own record does.
func (p *PairFlags) RequireRemoteID(id string) error {
	if p.Given() {
		return nil
	}
	return RequireRemoteClusterID(id)
}

// Pair is what a two-cluster command works on: the consumer (local flags) and the provider (remote- flags),
// each reporting with its (local)/(remote) scope.
type Pair struct {
	Printer  *output.Printer
	Consumer *member.Cluster
	Provider *member.Cluster
	Remote   *cmdutil.Clients // the provider's connection, for its API server URL and CA
}

// Complete builds both clusters' clients and refuses two flag sets that name one API server. It checks the
// pair's flags first: without a remote cluster the clients would fall back to a default connection.
func (p *PairFlags) Complete(streams cmdutil.Streams) (*Pair, error) {
	if err := p.Validate(); err != nil {
		return nil, cmdutil.Usage(err)
	}
	pair := &Pair{Printer: p.Local.Printer(streams)}
	var lc *cmdutil.Clients
	var err error
	if pair.Consumer, lc, err = Cluster(p.Local, pair.Printer.Scoped("local")); err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	if pair.Provider, pair.Remote, err = Cluster(p.Remote, pair.Printer.Scoped("remote")); err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	if lc.Config.Host == pair.Remote.Config.Host {
		return nil, cmdutil.UsageErrorf("--kubeconfig/--context and --remote-kubeconfig/--remote-context both point at %s: name two different clusters", lc.Config.Host)
	}
	return pair, nil
}

// Summary is the closing line of a two-cluster command: wall time and requests per cluster.
func (p *PairFlags) Summary(wall time.Duration) string {
	return fmt.Sprintf("Done in %s with %d API requests to the consumer and %d to the provider",
		wall.Round(time.Millisecond), p.Local.Requests.Load(), p.Remote.Requests.Load())
}

// TimeoutError turns an error that happened because the --timeout expired into one that says so.
func (p *PairFlags) TimeoutError(ctx context.Context, err error) error {
	return cmdutil.WithDeadline(ctx, err, "--timeout "+p.Timeout.String())
}

// ClusterIDs are the --cluster-id (consumer) and --remote-cluster-id (provider) of a two-cluster command;
// what they are used for is the command's to say.
type ClusterIDs struct{ Local, Remote string }

// AddFlags registers both flags with the command's meanings.
func (c *ClusterIDs) AddFlags(cmd *cobra.Command, localUsage, remoteUsage string) {
	ClusterIDVar(cmd.Flags(), &c.Local, "cluster-id", localUsage)
	ClusterIDVar(cmd.Flags(), &c.Remote, "remote-cluster-id", remoteUsage)
}

// Validate checks the two IDs together (each was checked when parsed).
func (c *ClusterIDs) Validate() error {
	if c.Local != "" && c.Local == c.Remote {
		return fmt.Errorf("--cluster-id and --remote-cluster-id: must differ, both are %q", c.Local)
	}
	return nil
}

// KeyAlgorithm registers --key-algorithm, checked when parsed.
func KeyAlgorithm(cmd *cobra.Command) *cmdutil.Enum {
	e := cmdutil.NewEnum(credential.KeyECDSAP256, credential.KeyAlgorithms...)
	cmdutil.AddEnumFlag(cmd, e, "key-algorithm", "", "Algorithm of the new client key")
	return e
}

// PairError names the flags behind a domain error of a two-cluster command.
func PairError(err error) error {
	var ic *member.IDConflictError
	switch {
	case errors.As(err, &ic) && ic.Side == "consumer":
		return fmt.Errorf("--cluster-id: %w", err)
	case errors.As(err, &ic) && ic.Side == "provider":
		return fmt.Errorf("--remote-cluster-id: %w", err)
	case errors.Is(err, member.ErrSameCluster):
		return fmt.Errorf("%w: --kubeconfig/--context and --remote-kubeconfig/--remote-context must name two different clusters", err)
	case errors.Is(err, member.ErrNeedUnreachableID):
		return fmt.Errorf("%w: --cluster-id for the consumer, --remote-cluster-id for the provider", err)
	}
	return err
}

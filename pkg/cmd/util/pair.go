package util

import (
	"fmt"

	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/output"
)

// Pair is what a two-cluster command works on: the consumer (local flags) and the provider (remote- flags),
// each reporting with its (local)/(remote) scope.
type Pair struct {
	Printer  *output.Printer
	Consumer *handshake.Cluster
	Provider *handshake.Cluster
	Remote   *Clients // the provider's connection, for its API server URL and CA
}

// NewPair builds both clusters' clients and refuses two flags sets that name one API server.
func NewPair(local, remote *Factory, streams Streams) (*Pair, error) {
	p := &Pair{Printer: local.Printer(streams)}
	var lc *Clients
	var err error
	if p.Consumer, lc, err = local.Cluster(p.Printer.Scoped("local")); err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	if p.Provider, p.Remote, err = remote.Cluster(p.Printer.Scoped("remote")); err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	if lc.Config.Host == p.Remote.Config.Host {
		return nil, UsageErrorf("", "--kubeconfig/--context and --remote-kubeconfig/--remote-context both point at %s: name two different clusters", lc.Config.Host)
	}
	return p, nil
}

// Summary is the closing line of a two-cluster command: wall time and requests per cluster.
func Summary(local, remote *Factory, wall fmt.Stringer) string {
	return fmt.Sprintf("Done in %s with %d API requests to the consumer and %d to the provider", wall, local.Requests.Load(), remote.Requests.Load())
}

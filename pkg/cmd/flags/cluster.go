package flags

import (
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// Cluster returns the handshake view of the factory's cluster, reporting to report, with the API server's
// clock.
func Cluster(f *cmdutil.Factory, report handshake.Reporter) (*handshake.Cluster, *cmdutil.Clients, error) {
	c, err := f.Clients()
	if err != nil {
		return nil, nil, err
	}
	return &handshake.Cluster{Kube: c.Kube, Dynamic: c.Dynamic, Config: c.Config, Report: report, Now: f.ServerNow, DryRun: f.DryRun().Active()}, c, nil
}

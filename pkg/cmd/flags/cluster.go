package flags

import (
	"time"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// NewCluster is the one road from a connection to the domain's view of a cluster: the factory's own
// cluster, a mesh member's, a stored kubeconfig's (a pairing's identity) and a test's fake all become a
// member.Cluster here, with the command's dry run, and a way to reach the clusters of the kubeconfigs the
// domain stored that goes back through the same factory (DialKubeconfig: one user agent, trace and
// dry-run layer for every connection). now is the cluster's clock; nil is this machine's.
func NewCluster(f *cmdutil.Factory, c *cmdutil.Clients, report member.Reporter, now func() time.Time) *member.Cluster {
	return &member.Cluster{Kube: c.Kube, Dynamic: c.Dynamic, Config: c.Config, Report: report, Now: now, DryRun: f.DryRun().Active(),
		Dial: func(kubeconfig []byte) (*member.Cluster, error) {
			stored, err := f.DialKubeconfig(kubeconfig)
			if err != nil {
				return nil, err
			}
			return NewCluster(f, stored, nil, nil), nil
		}}
}

// Cluster returns the domain's view of the factory's cluster, reporting to report, with the API server's
// clock.
func Cluster(f *cmdutil.Factory, report member.Reporter) (*member.Cluster, *cmdutil.Clients, error) {
	c, err := f.Clients()
	if err != nil {
		return nil, nil, err
	}
	return NewCluster(f, c, report, f.ServerNow), c, nil
}

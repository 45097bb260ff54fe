package flags

import (
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Cluster returns the handshake view of the factory's cluster, reporting to report, with the API server's
// clock.
func Cluster(f *cmdutil.Factory, report member.Reporter) (*member.Cluster, *cmdutil.Clients, error) {
	c, err := f.Clients()
	if err != nil {
		return nil, nil, err
	}
	return &member.Cluster{Kube: c.Kube, Dynamic: c.Dynamic, Config: c.Config, Report: report, Now: f.ServerNow,
		DryRun: f.DryRun().Active(), Dial: Dial(f)}, c, nil
}

// Dial is how the domain reaches a cluster through a kubeconfig it stored (a pairing's identity): during
// a dry run through the factory's dry-run layer, so that writes made as that identity are held back too;
// otherwise nil, the domain's own clients (a test factory's fake clusters always go through the factory).
func Dial(f *cmdutil.Factory) member.DialFunc {
	if !f.DryRun().Active() && !f.Dials() {
		return nil
	}
	return func(kubeconfig []byte) (*member.Cluster, error) {
		c, err := f.DialKubeconfig(kubeconfig)
		if err != nil {
			return nil, err
		}
		return &member.Cluster{Kube: c.Kube, Dynamic: c.Dynamic, Config: c.Config, DryRun: f.DryRun().Active(), Dial: Dial(f)}, nil
	}
}

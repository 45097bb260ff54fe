package uncordon_test

import (
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// uncordon tenant lifts the cordon; on a consumer not cordoned it is "already uncordoned"; a consumer
// with no Tenant is NotFound (--ignore-not-found: exit 0).
func TestCommandTableUncordon(t *testing.T) {
	uncordon := []string{"uncordon", "tenant", "--kubeconfig", "farm"}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "a cordoned consumer", World: cmdtest.WorldCordoned, Args: append(uncordon, "--remote-cluster-id", "edge"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				cmdtest.WantStdout("tenant/edge uncordoned\n")(t, e, out)
				cmdtest.CordonedStatus("false")(t, e, out)
			},
			Stderr: []string{"edge uncordoned: it may start workloads again"}, Writes: cmdtest.CordonWrites},
		{Name: "-o name", World: cmdtest.WorldCordoned, Args: append(uncordon, "edge", "-o", "name"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				cmdtest.WantStdout("tenant.federate.dev/edge\n")(t, e, out)
				cmdtest.CordonedStatus("false")(t, e, out)
			}, Writes: cmdtest.CordonWrites},
		{Name: "a consumer not cordoned", World: cmdtest.WorldPaired, Args: append(uncordon, "--remote-cluster-id", "edge"),
			Stdout: cmdtest.WantStdout("tenant/edge already uncordoned\n")},
		{Name: "a consumer this cluster has no record of", World: cmdtest.WorldPaired, Args: append(uncordon, "--remote-cluster-id", "edgx"),
			Code: 1, Err: `--remote-cluster-id: consumer "edgx" not found on this cluster`},
		{Name: "--ignore-not-found", World: cmdtest.WorldPaired, Args: append(uncordon, "--remote-cluster-id", "edgx", "--ignore-not-found"),
			Stdout: cmdtest.WantStdout("")},
		{Name: "no consumer named", World: cmdtest.WorldPaired, Args: uncordon,
			Code: 1, Usage: true, Err: "--remote-cluster-id: required, the ID of the consumer cluster"},
	})
}

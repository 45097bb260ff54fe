package cmd_test

import (
	"testing"
)

// uncordon tenant lifts the cordon; on a consumer not cordoned it is "already uncordoned"; a consumer
// with no Tenant is NotFound (--ignore-not-found: exit 0).
func TestCommandTableUncordon(t *testing.T) {
	uncordon := []string{"uncordon", "tenant", "--kubeconfig", "farm"}
	runTable(t, []tableRow{
		{name: "a cordoned consumer", world: worldCordoned, args: append(uncordon, "--remote-cluster-id", "edge"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				wantStdout("tenant/edge uncordoned\n")(t, e, out)
				cordoned("false")(t, e, out)
			},
			stderr: []string{"edge uncordoned: it may start workloads again"}, writes: cordonWrites},
		{name: "a consumer not cordoned", world: worldPaired, args: append(uncordon, "--remote-cluster-id", "edge"),
			stdout: wantStdout("tenant/edge already uncordoned\n")},
		{name: "a consumer this cluster has no record of", world: worldPaired, args: append(uncordon, "--remote-cluster-id", "edgx"),
			code: 1, err: `--remote-cluster-id: consumer "edgx" not found on this cluster`},
		{name: "--ignore-not-found", world: worldPaired, args: append(uncordon, "--remote-cluster-id", "edgx", "--ignore-not-found"),
			stdout: wantStdout("")},
		{name: "no consumer named", world: worldPaired, args: uncordon,
			code: 1, usage: true, err: "--remote-cluster-id: required, the ID of the consumer cluster"},
	})
}

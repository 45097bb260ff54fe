package cmd_test

import (
	"slices"
	"testing"
)

// drain tenant cordons a consumer, then deletes every workload kind and pod in its namespaces, which the
// fakes delete in parallel (so in no set order); a consumer with no Tenant is NotFound.
func TestCommandTableDrain(t *testing.T) {
	drain := []string{"drain", "tenant", "--kubeconfig", "farm"}
	workloads := []string{"delete-collection pods", "delete-collection deployments", "delete-collection statefulsets", "delete-collection replicasets",
		"delete-collection daemonsets", "delete-collection jobs", "delete-collection cronjobs", "delete-collection replicationcontrollers"}
	emptied := func(cordon bool) func(t *testing.T, got []string) {
		return func(t *testing.T, got []string) {
			t.Helper()
			for _, w := range workloads {
				if !slices.Contains(got, w) {
					t.Errorf("farm was sent %v: no %s", got, w)
				}
			}
			// The cordon comes first, so that nothing new starts while the rest is deleted.
			if i := slices.Index(got, "patch namespaces"); cordon != (i >= 0) || (cordon && i > slices.Index(got, "delete-collection pods")) {
				t.Errorf("farm was sent %v: want the cordon first: %v", got, cordon)
			}
		}
	}
	runTable(t, []tableRow{
		{name: "a consumer", world: worldPaired, args: append(drain, "--remote-cluster-id", "edge"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				wantStdout("tenant/edge drained\n")(t, e, out)
				cordoned("true")(t, e, out)
			},
			stderr: []string{"edge cordoned in 1 namespace(s)", "Workloads and pods of edge deleted"},
			sent:   map[string]func(*testing.T, []string){"farm": emptied(true)}},
		// Cordoned before: only the deletions.
		{name: "a cordoned consumer", world: worldCordoned, args: append(drain, "--remote-cluster-id", "edge"),
			stdout: wantStdout("tenant/edge drained\n"), sent: map[string]func(*testing.T, []string){"farm": emptied(false)}},
		{name: "a consumer this cluster has no record of", world: worldPaired, args: append(drain, "--remote-cluster-id", "edgx"),
			code: 1, err: `--remote-cluster-id: consumer "edgx" not found on this cluster`},
		{name: "--ignore-not-found", world: worldPaired, args: append(drain, "--remote-cluster-id", "edgx", "--ignore-not-found"),
			stdout: wantStdout("")},
		{name: "no consumer named", world: worldPaired, args: drain,
			code: 1, usage: true, err: "--remote-cluster-id: required, the ID of the consumer cluster"},
	})
}

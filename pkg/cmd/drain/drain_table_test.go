package drain_test

import (
	"slices"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
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
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "a consumer", World: cmdtest.WorldPaired, Args: append(drain, "--remote-cluster-id", "edge"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				cmdtest.WantStdout("tenant/edge drained\n")(t, e, out)
				cmdtest.CordonedStatus("true")(t, e, out)
			},
			Stderr: []string{"edge cordoned in 1 namespace(s)", "Workloads and pods of edge deleted"},
			Sent:   map[string]func(*testing.T, []string){"farm": emptied(true)}},
		{Name: "-o name", World: cmdtest.WorldPaired, Args: append(drain, "edge", "-o", "name"),
			Stdout: cmdtest.WantStdout("tenant.federate.dev/edge\n"), Sent: map[string]func(*testing.T, []string){"farm": emptied(true)}},
		// Cordoned before: only the deletions.
		{Name: "a cordoned consumer", World: cmdtest.WorldCordoned, Args: append(drain, "--remote-cluster-id", "edge"),
			Stdout: cmdtest.WantStdout("tenant/edge drained\n"), Sent: map[string]func(*testing.T, []string){"farm": emptied(false)}},
		{Name: "a consumer this cluster has no record of", World: cmdtest.WorldPaired, Args: append(drain, "--remote-cluster-id", "edgx"),
			Code: 1, Err: `--remote-cluster-id: consumer "edgx" not found on this cluster`},
		{Name: "--ignore-not-found", World: cmdtest.WorldPaired, Args: append(drain, "--remote-cluster-id", "edgx", "--ignore-not-found"),
			Stdout: cmdtest.WantStdout("")},
		{Name: "no consumer named", World: cmdtest.WorldPaired, Args: drain,
			Code: 1, Usage: true, Err: "--remote-cluster-id: required, the ID of the consumer cluster"},
	})
}

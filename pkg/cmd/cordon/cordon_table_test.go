package cordon_test

import (
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// cordon tenant labels a consumer's namespaces cordoned and says so in its Tenant; again it is "already
// cordoned"; a consumer with no Tenant is NotFound (--ignore-not-found: exit 0).
func TestCommandTableCordon(t *testing.T) {
	cordon := []string{"cordon", "tenant", "--kubeconfig", "farm"}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "a consumer", World: cmdtest.WorldPaired, Args: append(cordon, "--remote-cluster-id", "edge"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				cmdtest.WantStdout("tenant/edge cordoned\n")(t, e, out)
				cmdtest.CordonedStatus("true")(t, e, out)
			},
			Stderr: []string{"edge cordoned in 1 namespace(s)"}, Writes: cmdtest.CordonWrites},
		{Name: "the consumer as CONSUMER", World: cmdtest.WorldPaired, Args: append(cordon, "edge"),
			Stdout: cmdtest.WantStdout("tenant/edge cordoned\n"), Writes: cmdtest.CordonWrites},
		// kubectl's -o name: the object changed as kind.group/name, nothing else on stdout; a dry run
		// keeps its documents, after the name as a comment.
		{Name: "-o name", World: cmdtest.WorldPaired, Args: append(cordon, "--remote-cluster-id", "edge", "-o", "name"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				cmdtest.WantStdout("tenant.federate.dev/edge\n")(t, e, out)
				cmdtest.CordonedStatus("true")(t, e, out)
			}, Writes: cmdtest.CordonWrites},
		{Name: "-o name, cordoned before", World: cmdtest.WorldCordoned, Args: append(cordon, "edge", "-o", "name"),
			Stdout: cmdtest.WantStdout("tenant.federate.dev/edge\n")},
		{Name: "-o name --dry-run", World: cmdtest.WorldPaired, Args: append(cordon, "edge", "-o", "name", "--dry-run"), DryRun: true,
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if !strings.HasPrefix(out, "# tenant.federate.dev/edge (dry run)\n---\n") || !strings.Contains(out, "would patch tenant/edge") {
					t.Errorf("stdout %q: want the name as a comment, then the writes", out)
				}
			}},
		{Name: "-o name, --ignore-not-found", World: cmdtest.WorldPaired, Args: append(cordon, "--remote-cluster-id", "edgx", "--ignore-not-found", "-o", "name"),
			Stdout: cmdtest.WantStdout("")},
		{Name: "-o yaml", World: cmdtest.WorldPaired, Args: append(cordon, "edge", "-o", "yaml"),
			Code: 1, Usage: true, Err: `invalid argument "yaml" for "-o, --output" flag: must be name`},
		{Name: "cordoned before", World: cmdtest.WorldCordoned, Args: append(cordon, "--remote-cluster-id", "edge"),
			Stdout: cmdtest.WantStdout("tenant/edge already cordoned\n")},
		{Name: "a consumer this cluster has no record of", World: cmdtest.WorldPaired, Args: append(cordon, "--remote-cluster-id", "edgx"),
			Code: 1, Err: `--remote-cluster-id: consumer "edgx" not found on this cluster (no Tenant federate-tenant-edgx/edgx); did you mean "edge"? (known: edge) (--ignore-not-found to accept that)`},
		{Name: "--ignore-not-found", World: cmdtest.WorldPaired, Args: append(cordon, "--remote-cluster-id", "edgx", "--ignore-not-found"),
			Stdout: cmdtest.WantStdout("")},
		{Name: "the consumer named twice, differently", World: cmdtest.WorldPaired, Args: append(cordon, "edge", "--remote-cluster-id", "lone"),
			Code: 1, Usage: true, Err: `--remote-cluster-id "lone" and CONSUMER "edge": name the consumer once`},
		{Name: "no consumer named", World: cmdtest.WorldPaired, Args: cordon,
			Code: 1, Usage: true, Err: "--remote-cluster-id: required, the ID of the consumer cluster"},
		{Name: "an ID that is no DNS label", World: cmdtest.WorldPaired, Args: append(cordon, "--remote-cluster-id", "Bad"),
			Code: 1, Usage: true, Err: `--remote-cluster-id "Bad": must be a DNS label`},
	})
}

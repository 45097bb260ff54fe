package initialize_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// init writes federate-system, the key, the ID, the role, the CRDs and the sandbox's policies, once;
// a second run changes nothing; another ID on an initialized cluster is refused.
func TestCommandTableInit(t *testing.T) {
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "with an ID", World: cmdtest.WorldBare, Args: []string{"init", "--kubeconfig", "lone", "--cluster-id", "lone"},
			Stdout: cmdtest.WantStdout("cluster/lone initialized\n"), Stderr: []string{"Cluster initialized"},
			Sent: map[string]func(*testing.T, []string){"lone": cmdtest.InitWrites}},
		// Without --cluster-id, cluster- and the start of kube-system's UID (the fakes' is 01234567...).
		{Name: "the default ID", World: cmdtest.WorldBare, Args: []string{"init", "--kubeconfig", "edge"},
			Stdout: cmdtest.WantStdout("cluster/cluster-01234567 initialized\n"),
			Sent:   map[string]func(*testing.T, []string){"edge": cmdtest.InitWrites}},
		{Name: "initialized before", World: cmdtest.WorldPaired, Args: []string{"init", "--kubeconfig", "farm", "--cluster-id", "farm"},
			Stdout: cmdtest.WantStdout("cluster/farm initialized\n"), Stderr: []string{`Cluster "farm" already initialized`}},
		{Name: "initialized before, no ID given", World: cmdtest.WorldPaired, Args: []string{"init", "--kubeconfig", "farm"},
			Stdout: cmdtest.WantStdout("cluster/farm initialized\n"), Stderr: []string{`Cluster "farm" already initialized`}},
		{Name: "another ID on an initialized cluster", World: cmdtest.WorldPaired, Args: []string{"init", "--kubeconfig", "farm", "--cluster-id", "other"},
			Code: 1, Err: `--cluster-id: cluster ID "other": this cluster is initialized with cluster ID "farm"`},
		// The dry run prints what it would write, as YAML documents, and stores nothing.
		{Name: "--dry-run", World: cmdtest.WorldBare, Args: []string{"init", "--kubeconfig", "lone", "--cluster-id", "lone", "--dry-run"}, DryRun: true,
			Stderr: []string{"(dry run) Initializing the cluster: would be done"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				refs := cmdtest.Documents(t, out)
				for _, want := range []string{"Namespace/federate-system", "ConfigMap/federate-cluster", "Secret/federate-handshake-key", "ClusterRole/federate-tenant"} {
					if !slices.Contains(refs, want) {
						t.Errorf("the dry run's cmdtest.Documents %v lack %s", refs, want)
					}
				}
				if !strings.HasPrefix(out, "# cluster/lone initialized (dry run)\n") || strings.Contains(out, "ed25519.key: LS0") {
					t.Errorf("a dry run's stdout:\n%.600s", out)
				}
			}},
		{Name: "a cluster the kubeconfig does not reach", World: cmdtest.WorldBare, Args: []string{"init", "--kubeconfig", "nowhere"},
			Code: 1, Err: `cannot connect: no cluster "nowhere"`},
		{Name: "an ID that is no DNS label", World: cmdtest.WorldBare, Args: []string{"init", "--kubeconfig", "lone", "--cluster-id", "Bad_ID"},
			Code: 1, Usage: true, Err: `--cluster-id "Bad_ID": must be a DNS label`},
		{Name: "a positional argument", World: cmdtest.WorldBare, Args: []string{"init", "--kubeconfig", "lone", "lone"},
			Code: 1, Usage: true, Err: `unknown command "lone" for "kubectl federate init"`},
	})
}

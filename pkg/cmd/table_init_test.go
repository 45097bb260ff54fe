package cmd_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// withBug marks a row that fails because of a known bug in the product: the row stays written as the
// command should behave, and is skipped with the bug's description until the bug is fixed (drop the
// withBug then). runTable builds a fresh world inside the row's own subtest, so the skip is the row's.
func withBug(bug string, row tableRow) tableRow {
	row.world = &tableWorld{fresh: true, build: func(t *testing.T) *tableEnv {
		t.Skip("bug: " + bug)
		return nil
	}}
	return row
}

// tableBare is the table clusters, none initialized.
func tableBare(t *testing.T) *tableEnv {
	return &tableEnv{w: cmdtest.NewWorld(t, tableClusters...), vars: map[string]string{}}
}

var worldBare = newWorld(tableBare)

// initWrites checks an initialization's writes: the namespace, the handshake key and the cluster ID in
// this order, then (in parallel, so in no set order) the role tenants get and the CRDs.
func initWrites(t *testing.T, got []string) {
	t.Helper()
	if !isSubsequence(got, []string{"create namespaces", "create secrets", "create configmaps"}) ||
		!slices.Contains(got, "patch clusterroles") || !slices.Contains(got, "patch customresourcedefinitions") || !slices.Contains(got, "patch validatingadmissionpolicies") {
		t.Errorf("sent %v, want an initialization", got)
	}
}

// init writes federate-system, the key, the ID, the role, the CRDs and the sandbox's policies, once;
// a second run changes nothing; another ID on an initialized cluster is refused.
func TestCommandTableInit(t *testing.T) {
	runTable(t, []tableRow{
		{name: "with an ID", world: worldBare, args: []string{"init", "--kubeconfig", "lone", "--cluster-id", "lone"},
			stdout: wantStdout("cluster/lone initialized\n"), stderr: []string{"Cluster initialized"},
			sent: map[string]func(*testing.T, []string){"lone": initWrites}},
		// Without --cluster-id, cluster- and the start of kube-system's UID (the fakes' is 01234567...).
		{name: "the default ID", world: worldBare, args: []string{"init", "--kubeconfig", "edge"},
			stdout: wantStdout("cluster/cluster-01234567 initialized\n"),
			sent:   map[string]func(*testing.T, []string){"edge": initWrites}},
		{name: "initialized before", world: worldPaired, args: []string{"init", "--kubeconfig", "farm", "--cluster-id", "farm"},
			stdout: wantStdout("cluster/farm initialized\n"), stderr: []string{`Cluster "farm" already initialized`}},
		{name: "initialized before, no ID given", world: worldPaired, args: []string{"init", "--kubeconfig", "farm"},
			stdout: wantStdout("cluster/farm initialized\n"), stderr: []string{`Cluster "farm" already initialized`}},
		{name: "another ID on an initialized cluster", world: worldPaired, args: []string{"init", "--kubeconfig", "farm", "--cluster-id", "other"},
			code: 1, err: `--cluster-id: cluster ID "other": this cluster is initialized with cluster ID "farm"`},
		// The dry run prints what it would write, as YAML documents, and stores nothing.
		{name: "--dry-run", world: worldBare, args: []string{"init", "--kubeconfig", "lone", "--cluster-id", "lone", "--dry-run"}, dryRun: true,
			stderr: []string{"(dry run) Initializing the cluster: would be done"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				refs := documents(t, out)
				for _, want := range []string{"Namespace/federate-system", "ConfigMap/federate-cluster", "Secret/federate-handshake-key", "ClusterRole/federate-tenant"} {
					if !slices.Contains(refs, want) {
						t.Errorf("the dry run's documents %v lack %s", refs, want)
					}
				}
				if !strings.HasPrefix(out, "# cluster/lone initialized (dry run)\n") || strings.Contains(out, "ed25519.key: LS0") {
					t.Errorf("a dry run's stdout:\n%.600s", out)
				}
			}},
		{name: "a cluster the kubeconfig does not reach", world: worldBare, args: []string{"init", "--kubeconfig", "nowhere"},
			code: 1, err: `cannot connect: no cluster "nowhere"`},
		{name: "an ID that is no DNS label", world: worldBare, args: []string{"init", "--kubeconfig", "lone", "--cluster-id", "Bad_ID"},
			code: 1, usage: true, err: `--cluster-id "Bad_ID": must be a DNS label`},
		{name: "a positional argument", world: worldBare, args: []string{"init", "--kubeconfig", "lone", "lone"},
			code: 1, usage: true, err: `unknown command "lone" for "kubectl federate init"`},
	})
}

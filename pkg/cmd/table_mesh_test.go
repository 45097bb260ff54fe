package cmd_test

import (
	"slices"
	"testing"
)

// tableInitialized is the three clusters initialized under their names, none paired. (Never initialized,
// the fakes would all derive one default ID from one kube-system UID: mesh would call them one cluster.)
func tableInitialized(t *testing.T) *tableEnv {
	e := tableBare(t)
	for _, n := range tableClusters {
		e.w.Init(n, n)
	}
	return e
}

// tableMeshed is tableInitialized with edge and farm meshed: each a consumer of the other.
func tableMeshed(t *testing.T) *tableEnv {
	e := tableInitialized(t)
	e.must(t, "mesh", "--kubeconfigs", "edge,farm")
	return e
}

var (
	worldInitialized = newWorld(tableInitialized)
	worldMeshed      = newWorld(tableMeshed)
)

// meshTable checks mesh's and unmesh's table: a row per directed pair, in this order, with its result.
func meshTable(want ...[3]string) func(t *testing.T, _ *tableEnv, out string) {
	return func(t *testing.T, _ *tableEnv, out string) {
		t.Helper()
		rows := tableOf(t, out, "CONSUMER", "PROVIDER", "RESULT", "TIME")
		if len(rows) != len(want) {
			t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), out)
		}
		for i, w := range want {
			wantRow(t, rows[i], map[string]string{"CONSUMER": w[0], "PROVIDER": w[1], "RESULT": w[2]})
		}
	}
}

// mesh pairs every named cluster with every other, both ways, and keeps what is in place; fewer than
// two clusters, one named twice, or one out of reach is refused with nothing written.
func TestCommandTableMesh(t *testing.T) {
	// Each side is a provider (the certificate, the sandbox's binding, its Tenant) and a consumer (its Identity).
	bothWays := map[string][]string{
		"edge": {"create certificatesigningrequests", "patch rolebindings"},
		"farm": {"create certificatesigningrequests", "patch rolebindings"},
	}
	pairedBoth := func(t *testing.T, got []string) {
		t.Helper()
		for _, w := range []string{"create certificatesigningrequests", "patch rolebindings", "patch tenants", "patch identities"} {
			if !slices.Contains(got, w) {
				t.Errorf("sent %v: no %s", got, w)
			}
		}
	}
	runTable(t, []tableRow{
		{name: "two clusters", world: worldInitialized, args: []string{"mesh", "--kubeconfigs", "edge,farm"},
			stdout: func(t *testing.T, e *tableEnv, out string) {
				meshTable([3]string{"edge", "farm", "paired"}, [3]string{"farm", "edge", "paired"})(t, e, out)
				// Each holds a kubeconfig for the other.
				kubeconfigOf(t, e.must(t, "get", "kubeconfig", "--kubeconfig", "farm", "--remote-cluster-id", "edge").Stdout, "https://edge.fake:6443", "federate-tenant-farm")
			},
			stderr: []string{"edge -> farm: paired", "farm -> edge: paired", "2 directed pairs in"},
			sent:   map[string]func(*testing.T, []string){"edge": pairedBoth, "farm": pairedBoth}},
		{name: "meshed before", world: worldMeshed, args: []string{"mesh", "--kubeconfigs", "edge,farm"},
			stdout: meshTable([3]string{"edge", "farm", "already paired"}, [3]string{"farm", "edge", "already paired"})},
		// A third cluster: only its four pairs are made.
		{name: "a cluster more", world: worldMeshed, args: []string{"mesh", "--kubeconfigs", "edge,farm,lone", "--parallel", "2"},
			stdout: meshTable([3]string{"edge", "farm", "already paired"}, [3]string{"edge", "lone", "paired"}, [3]string{"farm", "edge", "already paired"},
				[3]string{"farm", "lone", "paired"}, [3]string{"lone", "edge", "paired"}, [3]string{"lone", "farm", "paired"}),
			wrote: bothWays, sent: map[string]func(*testing.T, []string){"lone": pairedBoth}},
		{name: "a cluster out of reach", world: worldInitialized, args: []string{"mesh", "--kubeconfigs", "edge,nowhere"},
			code: 1, err: `nowhere: cannot connect: no cluster "nowhere"`},
		{name: "one cluster", world: worldInitialized, args: []string{"mesh", "--kubeconfigs", "edge"},
			code: 1, usage: true, err: "--kubeconfigs or --contexts: name at least two clusters"},
		{name: "a cluster named twice", world: worldInitialized, args: []string{"mesh", "--kubeconfigs", "edge,edge"},
			code: 1, usage: true, err: `--kubeconfigs/--contexts "edge": empty or named twice`},
		{name: "--kubeconfigs and --contexts", world: worldInitialized, args: []string{"mesh", "--kubeconfigs", "edge,farm", "--contexts", "a,b"},
			code: 1, usage: true, err: "--kubeconfigs and --contexts: name the clusters one way only"},
		{name: "--parallel 0", world: worldInitialized, args: []string{"mesh", "--kubeconfigs", "edge,farm", "--parallel", "0"},
			code: 1, usage: true, err: "--parallel 0: must be between 1 and 64"},
	})
}

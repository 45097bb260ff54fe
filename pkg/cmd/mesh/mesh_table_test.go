package mesh_test

import (
	"slices"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

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
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "two clusters", World: cmdtest.WorldInitialized, Args: []string{"mesh", "--kubeconfigs", "edge,farm"},
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				cmdtest.MeshTable([3]string{"edge", "farm", "paired"}, [3]string{"farm", "edge", "paired"})(t, e, out)
				// Each holds a kubeconfig for the other.
				cmdtest.KubeconfigOf(t, e.Must(t, "get", "kubeconfig", "--kubeconfig", "farm", "--remote-cluster-id", "edge").Stdout, "https://edge.fake:6443", "federate-tenant-farm")
			},
			Stderr: []string{"edge -> farm: paired", "farm -> edge: paired", "2 directed pairs in"},
			Sent:   map[string]func(*testing.T, []string){"edge": pairedBoth, "farm": pairedBoth}},
		{Name: "meshed before", World: cmdtest.WorldMeshed, Args: []string{"mesh", "--kubeconfigs", "edge,farm"},
			Stdout: cmdtest.MeshTable([3]string{"edge", "farm", "already paired"}, [3]string{"farm", "edge", "already paired"})},
		// A third cluster: only its four pairs are made.
		{Name: "a cluster more", World: cmdtest.WorldMeshed, Args: []string{"mesh", "--kubeconfigs", "edge,farm,lone", "--parallel", "2"},
			Stdout: cmdtest.MeshTable([3]string{"edge", "farm", "already paired"}, [3]string{"edge", "lone", "paired"}, [3]string{"farm", "edge", "already paired"},
				[3]string{"farm", "lone", "paired"}, [3]string{"lone", "edge", "paired"}, [3]string{"lone", "farm", "paired"}),
			Wrote: bothWays, Sent: map[string]func(*testing.T, []string){"lone": pairedBoth}},
		{Name: "a cluster out of reach", World: cmdtest.WorldInitialized, Args: []string{"mesh", "--kubeconfigs", "edge,nowhere"},
			Code: 1, Err: `nowhere: cannot connect: no cluster "nowhere"`},
		{Name: "one cluster", World: cmdtest.WorldInitialized, Args: []string{"mesh", "--kubeconfigs", "edge"},
			Code: 1, Usage: true, Err: "--kubeconfigs or --contexts: name at least two clusters"},
		{Name: "a cluster named twice", World: cmdtest.WorldInitialized, Args: []string{"mesh", "--kubeconfigs", "edge,edge"},
			Code: 1, Usage: true, Err: `--kubeconfigs/--contexts "edge": empty or named twice`},
		{Name: "--kubeconfigs and --contexts", World: cmdtest.WorldInitialized, Args: []string{"mesh", "--kubeconfigs", "edge,farm", "--contexts", "a,b"},
			Code: 1, Usage: true, Err: "--kubeconfigs and --contexts: name the clusters one way only"},
		{Name: "--parallel 0", World: cmdtest.WorldInitialized, Args: []string{"mesh", "--kubeconfigs", "edge,farm", "--parallel", "0"},
			Code: 1, Usage: true, Err: "--parallel 0: must be between 1 and 64"},
	})
}

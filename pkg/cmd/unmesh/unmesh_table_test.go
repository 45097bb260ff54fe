package unmesh_test

import (
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// unmesh removes every directed pairing of the named clusters; a pair removed before reads "already
// removed"; a pair never paired reads "not found" and fails the run unless --ignore-not-found.
func TestCommandTableUnmesh(t *testing.T) {
	unmeshed := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Meshed(t)
		e.Must(t, "unmesh", "--kubeconfigs", "edge,farm")
		return e
	})
	// Each side is a consumer (its records) and a provider (the binding first, the Tenant last).
	removed := map[string][]string{
		"edge": {"delete rolebindings", "delete tenants"},
		"farm": {"delete rolebindings", "delete tenants"},
	}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "two meshed clusters", World: cmdtest.WorldMeshed, Args: []string{"unmesh", "--kubeconfigs", "edge,farm"},
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				cmdtest.MeshTable([3]string{"edge", "farm", "removed"}, [3]string{"farm", "edge", "removed"})(t, e, out)
				if got := e.Must(t, "status", "--kubeconfig", "farm").Stdout; got != "Cluster farm takes part in no pairing.\n" {
					t.Errorf("farm's status after: %q, want no pairing", got)
				}
			},
			Stderr: []string{"edge -> farm: removed", "farm -> edge: removed", "2 directed pairs in"},
			Wrote:  removed},
		{Name: "unmeshed before", World: unmeshed, Args: []string{"unmesh", "--kubeconfigs", "edge,farm"},
			Stdout: cmdtest.MeshTable([3]string{"edge", "farm", "already removed"}, [3]string{"farm", "edge", "already removed"})},
		{Name: "clusters never paired", World: cmdtest.WorldInitialized, Args: []string{"unmesh", "--kubeconfigs", "edge,lone"},
			Code: 1, Err: "2 pair(s) not found, never paired: edge -> lone, lone -> edge (--ignore-not-found to accept that)",
			Stdout: cmdtest.MeshTable([3]string{"edge", "lone", "not found"}, [3]string{"lone", "edge", "not found"})},
		{Name: "--ignore-not-found", World: cmdtest.WorldInitialized, Args: []string{"unmesh", "--kubeconfigs", "edge,lone", "--ignore-not-found"},
			Stdout: cmdtest.MeshTable([3]string{"edge", "lone", "not found"}, [3]string{"lone", "edge", "not found"})},
		{Name: "--dry-run", World: cmdtest.WorldMeshed, Args: []string{"unmesh", "--kubeconfigs", "edge,farm", "--dry-run"}, DryRun: true,
			Stderr: []string{"(dry run) 2 directed pairs in"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if !cmdtest.RegexpMatch(`(?m)^# edge +farm +would be removed `, out) || !cmdtest.RegexpMatch(`(?m)^# farm +edge +would be removed `, out) {
					t.Errorf("a dry run's stdout:\n%.800s", out)
				}
			}},
		// edge consumes from farm, not the other way: farm -> edge was never paired, and is not found.
		{Name: "a one-way pairing, --ignore-not-found", World: cmdtest.WorldPaired, Args: []string{"unmesh", "--kubeconfigs", "edge,farm", "--ignore-not-found", "--parallel", "1"},
			Stdout: cmdtest.MeshTable([3]string{"edge", "farm", "removed"}, [3]string{"farm", "edge", "not found"}),
			Wrote:  map[string][]string{"edge": {"delete-collection identities"}, "farm": {"delete rolebindings", "delete tenants"}}},
		// lone was never initialized: a removal has nothing to remove there, and must not install anything.
		{Name: "a cluster never initialized", World: cmdtest.WorldPaired, Args: []string{"unmesh", "--kubeconfigs", "farm,lone", "--ignore-not-found"},
			Stdout: cmdtest.MeshTable([3]string{"farm", "lone", "not found"}, [3]string{"lone", "farm", "not found"})},
		{Name: "one cluster", World: cmdtest.WorldInitialized, Args: []string{"unmesh", "--kubeconfigs", "edge"},
			Code: 1, Usage: true, Err: "--kubeconfigs or --contexts: name at least two clusters"},
		{Name: "a cluster out of reach", World: cmdtest.WorldInitialized, Args: []string{"unmesh", "--kubeconfigs", "edge,nowhere"},
			Code: 1, Err: `nowhere: cannot connect: no cluster "nowhere"`},
	})
}

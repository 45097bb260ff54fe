package cmd_test

import (
	"testing"
)

// unmesh removes every directed pairing of the named clusters; a pair removed before reads "already
// removed"; a pair never paired reads "not found" and fails the run unless --ignore-not-found.
func TestCommandTableUnmesh(t *testing.T) {
	unmeshed := newWorld(func(t *testing.T) *tableEnv {
		e := tableMeshed(t)
		e.must(t, "unmesh", "--kubeconfigs", "edge,farm")
		return e
	})
	// Each side is a consumer (its records) and a provider (the binding first, the Tenant last).
	removed := map[string][]string{
		"edge": {"delete rolebindings", "delete tenants"},
		"farm": {"delete rolebindings", "delete tenants"},
	}
	runTable(t, []tableRow{
		{name: "two meshed clusters", world: worldMeshed, args: []string{"unmesh", "--kubeconfigs", "edge,farm"},
			stdout: func(t *testing.T, e *tableEnv, out string) {
				meshTable([3]string{"edge", "farm", "removed"}, [3]string{"farm", "edge", "removed"})(t, e, out)
				if got := e.must(t, "status", "--kubeconfig", "farm").Stdout; got != "Cluster farm takes part in no pairing.\n" {
					t.Errorf("farm's status after: %q, want no pairing", got)
				}
			},
			stderr: []string{"edge -> farm: removed", "farm -> edge: removed", "2 directed pairs in"},
			wrote:  removed},
		{name: "unmeshed before", world: unmeshed, args: []string{"unmesh", "--kubeconfigs", "edge,farm"},
			stdout: meshTable([3]string{"edge", "farm", "already removed"}, [3]string{"farm", "edge", "already removed"})},
		{name: "clusters never paired", world: worldInitialized, args: []string{"unmesh", "--kubeconfigs", "edge,lone"},
			code: 1, err: "2 pair(s) not found, never paired: edge -> lone, lone -> edge (--ignore-not-found to accept that)",
			stdout: meshTable([3]string{"edge", "lone", "not found"}, [3]string{"lone", "edge", "not found"})},
		{name: "--ignore-not-found", world: worldInitialized, args: []string{"unmesh", "--kubeconfigs", "edge,lone", "--ignore-not-found"},
			stdout: meshTable([3]string{"edge", "lone", "not found"}, [3]string{"lone", "edge", "not found"})},
		{name: "--dry-run", world: worldMeshed, args: []string{"unmesh", "--kubeconfigs", "edge,farm", "--dry-run"}, dryRun: true,
			stderr: []string{"(dry run) 2 directed pairs in"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				if !regexpMatch(`(?m)^# edge +farm +would be removed `, out) || !regexpMatch(`(?m)^# farm +edge +would be removed `, out) {
					t.Errorf("a dry run's stdout:\n%.800s", out)
				}
			}},
		// edge consumes from farm, not the other way: farm -> edge was never paired, and is not found.
		{name: "a one-way pairing, --ignore-not-found", world: worldPaired, args: []string{"unmesh", "--kubeconfigs", "edge,farm", "--ignore-not-found", "--parallel", "1"},
			stdout: meshTable([3]string{"edge", "farm", "removed"}, [3]string{"farm", "edge", "not found"}),
			wrote:  map[string][]string{"edge": {"delete-collection identities"}, "farm": {"delete rolebindings", "delete tenants"}}},
		// lone was never initialized: a removal has nothing to remove there, and must not install anything.
		{name: "a cluster never initialized", world: worldPaired, args: []string{"unmesh", "--kubeconfigs", "farm,lone", "--ignore-not-found"},
			stdout: meshTable([3]string{"farm", "lone", "not found"}, [3]string{"lone", "farm", "not found"})},
		{name: "one cluster", world: worldInitialized, args: []string{"unmesh", "--kubeconfigs", "edge"},
			code: 1, usage: true, err: "--kubeconfigs or --contexts: name at least two clusters"},
		{name: "a cluster out of reach", world: worldInitialized, args: []string{"unmesh", "--kubeconfigs", "edge,nowhere"},
			code: 1, err: `nowhere: cannot connect: no cluster "nowhere"`},
	})
}

package cmd_test

import (
	"slices"
	"strings"
	"testing"
)

// unauthenticate removes a pairing on both sides (the provider's RoleBinding first, the Tenant and its
// sandbox last); a pairing removed before is "already removed"; a pairing neither side has a record of
// is NotFound (--ignore-not-found: exit 0); names in each other's place are refused, nothing removed.
func TestCommandTableUnauthenticate(t *testing.T) {
	unauth := func(consumer, provider string, more ...string) []string {
		return append([]string{"unauthenticate", "--kubeconfig", consumer, "--remote-kubeconfig", provider}, more...)
	}
	removed := newWorld(func(t *testing.T) *tableEnv {
		e := tablePaired(t)
		e.must(t, unauth("edge", "farm")...)
		return e
	})
	// loneInit is tablePaired with lone initialized: a consumer the provider has no record of.
	loneInit := newWorld(func(t *testing.T) *tableEnv {
		e := tablePaired(t)
		e.must(t, "init", "--kubeconfig", "lone", "--cluster-id", "lone")
		return e
	})
	runTable(t, []tableRow{
		{name: "a pairing", world: worldPaired, args: unauth("edge", "farm"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				if out != "" {
					t.Errorf("stdout %q, want nothing", out)
				}
				// Neither side lists the pairing any more.
				if got := e.must(t, "status", "--kubeconfig", "farm").Stdout; strings.Contains(got, "edge") {
					t.Errorf("farm's status still lists edge:\n%s", got)
				}
			},
			stderr: []string{"(remote) Tenant federate-tenant-edge/edge marked Revoked", "(local) Identities for farm removed", "namespace federate-tenant-edge)"},
			wrote: map[string][]string{
				"edge": {"delete-collection secrets", "delete-collection identities"},
				"farm": {"delete rolebindings", "delete namespaces", "delete tenants"},
			}},
		{name: "--keep-namespaces", world: worldPaired, args: unauth("edge", "farm", "--keep-namespaces"),
			stderr: []string{"namespace federate-tenant-edge kept"},
			wrote:  map[string][]string{"edge": {"delete-collection identities"}},
			sent: map[string]func(*testing.T, []string){"farm": func(t *testing.T, got []string) {
				if !isSubsequence(got, []string{"delete rolebindings", "delete tenants"}) || slices.Contains(got, "delete namespaces") {
					t.Errorf("farm was sent %v: want the binding and the Tenant gone, the namespace kept", got)
				}
			}}},
		{name: "removed before", world: removed, args: unauth("edge", "farm"),
			stdout: wantStdout(""), stderr: []string{"The pairing was already removed: nothing to do"}},
		{name: "a consumer the provider has no record of", world: loneInit, args: unauth("lone", "farm"),
			code: 1, err: `consumer "lone" not found on the provider farm (no Tenant, and the consumer holds no identity for it); known: edge (--ignore-not-found to accept that)`},
		{name: "--ignore-not-found", world: loneInit, args: unauth("lone", "farm", "--ignore-not-found"),
			stdout: wantStdout("")},
		withBug(`a consumer never initialized reads "already removed", exit 0 (pkg/lifecycle/remove.go Unauthenticate returns handshake.Already for member.ErrNotInitialized), so --ignore-not-found changes nothing; lone was never paired with farm, which has no record of it: NotFound, exit 1, as for an initialized lone`,
			tableRow{name: "a consumer never initialized", world: worldPaired, args: unauth("lone", "farm"),
				code: 1, err: `consumer "lone" not found on the provider farm`}),
		{name: "the two clusters in each other's place", world: worldPaired, args: unauth("farm", "edge"),
			code: 1, err: `the two clusters were named in each other's place; nothing was removed; run: kubectl federate unauthenticate --kubeconfig edge --remote-kubeconfig farm`},
		// The dry run prints the deletions it would make; the Secret without its data.
		{name: "--dry-run", world: worldPaired, args: unauth("edge", "farm", "--dry-run"), dryRun: true,
			stderr: []string{"(remote) (dry run) Removing tenant edge: would be done"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				refs := documents(t, out)
				for _, want := range []string{"Identity/controlplane-farm", "Secret/kubeconfig-controlplane-farm", "Tenant/edge"} {
					if !slices.Contains(refs, want) {
						t.Errorf("the dry run's documents %v lack %s", refs, want)
					}
				}
				if strings.Contains(out, "client-key-data") {
					t.Errorf("a dry run printed the kubeconfig's key")
				}
			}},
		{name: "no provider named", world: worldPaired, args: []string{"unauthenticate", "--kubeconfig", "edge"},
			code: 1, usage: true, err: "--remote-kubeconfig or --remote-context: one is required to name the provider cluster"},
		{name: "a timeout under the minimum", world: worldPaired, args: unauth("edge", "farm", "--timeout", "0s"),
			code: 1, usage: true, err: `invalid argument "0s" for "--timeout" flag: 0s is out of range: must be from 1s to 1d`},
	})
}

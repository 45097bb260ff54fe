package cmd_test

import (
	"strings"
	"testing"
)

// delete resourceslice removes a slice on the side this cluster holds (the provider's binding first, so
// the certificate is authorized for nothing before the namespace goes), or on both at once; a name the
// cluster has no record of is NotFound and writes nothing.
func TestCommandTableDeleteResourceSlice(t *testing.T) {
	// sliceDeleted is tableImportedSlice with the slice deleted on both sides before.
	sliceDeleted := newWorld(func(t *testing.T) *tableEnv {
		e := tableImportedSlice(t)
		e.must(t, "delete", "resourceslice", "batch", "--kubeconfig", "farm", "--remote-cluster-id", "edge")
		e.must(t, "delete", "resourceslice", "batch", "--kubeconfig", "edge", "--remote-cluster-id", "farm")
		return e
	})
	del := []string{"delete", "resourceslice"}
	onFarm := []string{"--kubeconfig", "farm", "--remote-cluster-id", "edge"}
	onEdge := []string{"--kubeconfig", "edge", "--remote-cluster-id", "farm"}
	both := []string{"--kubeconfig", "edge", "--remote-kubeconfig", "farm"}
	line := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	runTable(t, []tableRow{
		{name: "on the provider", world: worldImportedSlice, args: line(del, []string{"batch"}, onFarm),
			stdout: wantStdout("resourceslice/batch deleted\n"), stderr: []string{"Resource slice batch of edge revoked and removed"},
			wrote: map[string][]string{"farm": {"delete rolebindings", "delete namespaces", "delete resourceslices"}}},
		// The consumer's own records go, and its request on the provider is withdrawn through the pairing.
		{name: "on the consumer", world: worldImportedSlice, args: line(del, []string{"batch"}, onEdge),
			stdout: wantStdout("resourceslice/batch deleted\n"), stderr: []string{"request on the provider"},
			wrote:  map[string][]string{"edge": {"delete secrets", "delete identities", "delete resourceslices"}},
			writes: map[string][]string{"farm": {"delete resourceslices"}}},
		{name: "a request not yet answered, on the provider", world: worldPendingSlice, args: line(del, []string{"batch"}, onFarm),
			stdout: wantStdout("resourceslice/batch deleted\n"),
			wrote:  map[string][]string{"farm": {"delete resourceslices"}}},
		{name: "both sides at once", world: worldImportedSlice, args: line(del, []string{"batch"}, both),
			stdout: wantStdout("resourceslice/batch deleted\n"), stderr: []string{"(remote) Resource slice batch of edge revoked and removed", "(local) Resource slice batch removed"},
			wrote: map[string][]string{"farm": {"delete rolebindings", "delete namespaces", "delete resourceslices"}, "edge": {"delete identities", "delete resourceslices"}}},
		{name: "--side provider", world: worldImportedSlice, args: line(del, []string{"batch", "--side", "provider"}, onFarm),
			stdout: wantStdout("resourceslice/batch deleted\n"),
			wrote:  map[string][]string{"farm": {"delete rolebindings", "delete namespaces", "delete resourceslices"}}},
		// --side only chooses between two records this cluster holds: without one, NotFound as ever.
		{name: "--side consumer, a slice this cluster has no record of", world: worldImportedSlice, args: line(del, []string{"nope", "--side", "consumer"}, onEdge),
			code: 1, err: `NAME: resource slice "nope" not found shared with farm`},
		{name: "--side provider, a slice this cluster has no record of", world: worldImportedSlice, args: line(del, []string{"nope", "--side", "provider"}, onFarm),
			code: 1, err: `NAME: resource slice "nope" not found shared with edge`},
		{name: "deleted before", world: sliceDeleted, args: line(del, []string{"batch"}, onFarm),
			stdout: wantStdout("resourceslice/batch already deleted\n")},
		{name: "deleted before, both sides at once", world: sliceDeleted, args: line(del, []string{"batch"}, both),
			stdout: wantStdout("resourceslice/batch already deleted\n")},
		{name: "a slice this cluster has no record of", world: worldImportedSlice, args: line(del, []string{"nope"}, onFarm),
			code: 1, err: `NAME: resource slice "nope" not found shared with edge`, stderr: []string{"--ignore-not-found"}},
		{name: "a slice no side has a record of, both sides at once", world: worldImportedSlice, args: line(del, []string{"nope"}, both),
			code: 1, err: `NAME: resource slice "nope" not found shared with edge`},
		{name: "--ignore-not-found", world: worldImportedSlice, args: line(del, []string{"nope"}, onFarm, []string{"--ignore-not-found"}),
			stdout: wantStdout("")},
		{name: "a pairing with another provider than the one reached", world: worldImportedSlice, args: line(del, []string{"batch"}, both, []string{"--remote-cluster-id", "lone"}),
			code: 1, err: `--remote-cluster-id "lone": the provider is initialized with cluster ID "farm"`},
		{name: "a name that is no DNS label", world: worldImportedSlice, args: line(del, []string{"Bad_Name"}, onFarm),
			code: 1, usage: true, err: `NAME "Bad_Name": must be a DNS label`},
		{name: "no name", world: worldImportedSlice, args: line(del, onFarm),
			code: 1, usage: true, err: "NAME: exactly 1 argument(s) required, got 0"},
		{name: "no other cluster named", world: worldImportedSlice, args: line(del, []string{"batch", "--kubeconfig", "farm"}),
			code: 1, usage: true, err: "--remote-cluster-id: must not be empty"},
		{name: "--side provider both sides at once", world: worldImportedSlice, args: line(del, []string{"batch", "--side", "provider"}, both),
			code: 1, usage: true, err: "--side provider: with --remote-kubeconfig this cluster is the consumer"},
		{name: "an unknown --side", world: worldImportedSlice, args: line(del, []string{"batch", "--side", "both"}, onFarm),
			code: 1, usage: true, err: `invalid argument "both" for "--side" flag`},
	})
}

// delete nonce removes an unused nonce; a used one reads "already used", one never made is NotFound; a
// dry run prints what it would delete and writes nothing.
func TestCommandTableDeleteNonce(t *testing.T) {
	farm := []string{"delete", "nonce", "--kubeconfig", "farm"}
	runTable(t, []tableRow{
		{name: "an unused nonce", world: worldNonce, args: append(farm, "--remote-cluster-id", "lone"),
			stdout: wantStdout("nonce/lone deleted\n"), stderr: []string{"Nonce for consumer lone deleted"},
			writes: map[string][]string{"farm": {"delete secrets"}}},
		// edge paired with its nonce: its record goes with unauthenticate, not here.
		{name: "a nonce already used", world: worldNonce, args: append(farm, "--remote-cluster-id", "edge"),
			stdout: wantStdout("nonce/edge already used\n")},
		{name: "a consumer with no nonce", world: worldNonce, args: append(farm, "--remote-cluster-id", "edgy"),
			code: 1, err: `--remote-cluster-id: unused nonce for consumer "edgy" not found`, stderr: []string{"--ignore-not-found"}},
		{name: "--ignore-not-found", world: worldNonce, args: append(farm, "--remote-cluster-id", "edgy", "--ignore-not-found"),
			stdout: wantStdout("")},
		// The dry run prints the Secret it would delete, without its data: the nonce stays off stdout.
		{name: "--dry-run", world: worldNonce, args: append(farm, "--remote-cluster-id", "lone", "--dry-run"), dryRun: true,
			stdout: func(t *testing.T, e *tableEnv, out string) {
				refs := documents(t, out)
				if len(refs) != 1 || refs[0] != "Secret/nonce-lone" || !strings.Contains(out, "# farm: would delete secret/nonce-lone in federate-system (dry run)") {
					t.Errorf("a dry run's stdout: %v\n%s", refs, out)
				}
				nonce := strings.Split(e.must(t, "get", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone").Stdout, ".")[4]
				if strings.Contains(out, nonce) || strings.Contains(out, "\ndata:") {
					t.Errorf("a dry run printed the nonce:\n%s", out)
				}
			}},
		{name: "no consumer named", world: worldNonce, args: farm,
			code: 1, usage: true, err: `required flag(s) "remote-cluster-id" not set`},
		{name: "an ID that is no DNS label", world: worldNonce, args: append(farm, "--remote-cluster-id", "-lone"),
			code: 1, usage: true, err: `--remote-cluster-id "-lone": must be a DNS label`},
		{name: "a positional argument", world: worldNonce, args: append(farm, "lone"),
			code: 1, usage: true, err: `unknown command "lone"`},
	})
}

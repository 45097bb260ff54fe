package deletecmd_test

import (
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// delete resourceslice-class removes a class on the provider; a class it has no record of is NotFound.
// (table_delete_test.go holds delete's other tables; this one is apart only to leave that file as it is.)
func TestCommandTableDeleteResourceSliceClass(t *testing.T) {
	withClass := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		e.Must(t, "create", "resourceslice-class", "small", "--kubeconfig", "farm", "--max-cpu", "4")
		return e
	})
	del := func(more ...string) []string {
		return append([]string{"delete", "resourceslice-class", "--kubeconfig", "farm"}, more...)
	}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "a class", World: withClass, Args: del("small"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				cmdtest.WantStdout("resourcesliceclass/small deleted\n")(t, e, out)
				// Gone: a second delete finds nothing.
				if r := e.World.Run(del("small")...); r.Code != 1 {
					t.Errorf("the class is still there: %s", r)
				}
			},
			Writes: map[string][]string{"farm": {"delete resourcesliceclasses", "delete resourcesliceclasses"}}},
		// The DELETE is sent and answered NotFound (as kubectl delete does): the store is as before.
		{Name: "a class this cluster has no record of", World: withClass, Args: del("nope"), DryRun: true,
			Code: 1, Err: `NAME: resource slice class "nope" not found on this cluster; known: small (--ignore-not-found to accept that)`},
		{Name: "a typo", World: withClass, Args: del("smal"), DryRun: true,
			Code: 1, Err: `NAME: resource slice class "smal" not found on this cluster; did you mean "small"?`},
		{Name: "a name that is no DNS label", World: withClass, Args: del("Bad"),
			Code: 1, Usage: true, Err: `NAME "Bad": must be a DNS label`},
		{Name: "no name", World: withClass, Args: del(),
			Code: 1, Usage: true, Err: "NAME: exactly 1 argument(s) required, got 0"},
		{Name: "--ignore-not-found", World: withClass, Args: del("nope", "--ignore-not-found"), DryRun: true,
			Stdout: cmdtest.WantStdout("")},
	})
}

// delete resourceslice removes a slice on the side this cluster holds (the provider's binding first, so
// the certificate is authorized for nothing before the namespace goes), or on both at once; a name the
// cluster has no record of is NotFound and writes nothing.
func TestCommandTableDeleteResourceSlice(t *testing.T) {
	// sliceDeleted is cmdtest.ImportedSlice with the slice deleted on both sides before.
	sliceDeleted := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.ImportedSlice(t)
		e.Must(t, "delete", "resourceslice", "batch", "--kubeconfig", "farm", "--remote-cluster-id", "edge")
		e.Must(t, "delete", "resourceslice", "batch", "--kubeconfig", "edge", "--remote-cluster-id", "farm")
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
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "on the provider", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"batch"}, onFarm),
			Stdout: cmdtest.WantStdout("resourceslice/batch deleted\n"), Stderr: []string{"Resource slice batch of edge revoked and removed"},
			Wrote: map[string][]string{"farm": {"delete rolebindings", "delete namespaces", "delete resourceslices"}}},
		// The consumer's own records go, and its request on the provider is withdrawn through the pairing.
		{Name: "on the consumer", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"batch"}, onEdge),
			Stdout: cmdtest.WantStdout("resourceslice/batch deleted\n"), Stderr: []string{"request on the provider"},
			Wrote:  map[string][]string{"edge": {"delete secrets", "delete identities", "delete resourceslices"}},
			Writes: map[string][]string{"farm": {"delete resourceslices"}}},
		{Name: "a request not yet answered, on the provider", World: cmdtest.WorldPendingSlice, Args: line(del, []string{"batch"}, onFarm),
			Stdout: cmdtest.WantStdout("resourceslice/batch deleted\n"),
			Wrote:  map[string][]string{"farm": {"delete resourceslices"}}},
		{Name: "both sides at once", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"batch"}, both),
			Stdout: cmdtest.WantStdout("resourceslice/batch deleted\n"), Stderr: []string{"(remote) Resource slice batch of edge revoked and removed", "(local) Resource slice batch of farm removed: its Identity, its kubeconfig, its record"},
			Wrote: map[string][]string{"farm": {"delete rolebindings", "delete namespaces", "delete resourceslices"}, "edge": {"delete identities", "delete resourceslices"}}},
		{Name: "--side provider", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"batch", "--side", "provider"}, onFarm),
			Stdout: cmdtest.WantStdout("resourceslice/batch deleted\n"),
			Wrote:  map[string][]string{"farm": {"delete rolebindings", "delete namespaces", "delete resourceslices"}}},
		// --side only chooses between two records this cluster holds: without one, NotFound as ever.
		{Name: "--side consumer, a slice this cluster has no record of", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"nope", "--side", "consumer"}, onEdge),
			Code: 1, Err: `NAME: resource slice "nope" not found shared with farm`},
		{Name: "--side provider, a slice this cluster has no record of", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"nope", "--side", "provider"}, onFarm),
			Code: 1, Err: `NAME: resource slice "nope" not found shared with edge`},
		{Name: "deleted before", World: sliceDeleted, Args: line(del, []string{"batch"}, onFarm),
			Stdout: cmdtest.WantStdout("resourceslice/batch already deleted\n")},
		{Name: "deleted before, both sides at once", World: sliceDeleted, Args: line(del, []string{"batch"}, both),
			Stdout: cmdtest.WantStdout("resourceslice/batch already deleted\n")},
		{Name: "a slice this cluster has no record of", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"nope"}, onFarm),
			Code: 1, Err: `NAME: resource slice "nope" not found shared with edge`, Stderr: []string{"--ignore-not-found"}},
		{Name: "a slice no side has a record of, both sides at once", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"nope"}, both),
			Code: 1, Err: `NAME: resource slice "nope" not found shared with edge`},
		{Name: "--ignore-not-found", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"nope"}, onFarm, []string{"--ignore-not-found"}),
			Stdout: cmdtest.WantStdout("")},
		{Name: "a pairing with another provider than the one reached", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"batch"}, both, []string{"--remote-cluster-id", "lone"}),
			Code: 1, Err: `--remote-cluster-id "lone": the provider is initialized with cluster ID "farm"`},
		{Name: "a name that is no DNS label", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"Bad_Name"}, onFarm),
			Code: 1, Usage: true, Err: `NAME "Bad_Name": must be a DNS label`},
		{Name: "no name", World: cmdtest.WorldImportedSlice, Args: line(del, onFarm),
			Code: 1, Usage: true, Err: "NAME: exactly 1 argument(s) required, got 0"},
		{Name: "no other cluster named", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"batch", "--kubeconfig", "farm"}),
			Code: 1, Usage: true, Err: "--remote-cluster-id: must not be empty"},
		{Name: "--side provider both sides at once", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"batch", "--side", "provider"}, both),
			Code: 1, Usage: true, Err: "--side provider: with --remote-kubeconfig this cluster is the consumer"},
		{Name: "an unknown --side", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"batch", "--side", "both"}, onFarm),
			Code: 1, Usage: true, Err: `invalid argument "both" for "--side" flag`},
	})
}

// delete nonce removes an unused nonce; a used one reads "already used", one never made is NotFound; a
// dry run prints what it would delete and writes nothing.
func TestCommandTableDeleteNonce(t *testing.T) {
	farm := []string{"delete", "nonce", "--kubeconfig", "farm"}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "an unused nonce", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "lone"),
			Stdout: cmdtest.WantStdout("nonce/lone deleted\n"), Stderr: []string{"Nonce for consumer lone deleted"},
			Writes: map[string][]string{"farm": {"delete secrets"}}},
		// edge paired with its nonce: its record goes with unauthenticate, not here.
		{Name: "a nonce already used", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "edge"),
			Stdout: cmdtest.WantStdout("nonce/edge already used\n")},
		{Name: "a consumer with no nonce", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "edgy"),
			Code: 1, Err: `--remote-cluster-id: unused nonce for consumer "edgy" not found`, Stderr: []string{"--ignore-not-found"}},
		{Name: "--ignore-not-found", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "edgy", "--ignore-not-found"),
			Stdout: cmdtest.WantStdout("")},
		// The dry run prints the Secret it would delete, without its data: the nonce stays off stdout.
		{Name: "--dry-run", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "lone", "--dry-run"), DryRun: true,
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				refs := cmdtest.Documents(t, out)
				if len(refs) != 1 || refs[0] != "Secret/nonce-lone" || !strings.Contains(out, "# farm: would delete secret/nonce-lone in federate-system (dry run)") {
					t.Errorf("a dry run's Stdout: %v\n%s", refs, out)
				}
				nonce := strings.Split(e.Must(t, "get", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone").Stdout, ".")[4]
				if strings.Contains(out, nonce) || strings.Contains(out, "\ndata:") {
					t.Errorf("a dry run printed the nonce:\n%s", out)
				}
			}},
		{Name: "no consumer named", World: cmdtest.WorldNonce, Args: farm,
			Code: 1, Usage: true, Err: `required flag(s) "remote-cluster-id" not set`},
		{Name: "an ID that is no DNS label", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "-lone"),
			Code: 1, Usage: true, Err: `--remote-cluster-id "-lone": must be a DNS label`},
		{Name: "a positional argument", World: cmdtest.WorldNonce, Args: append(farm, "lone"),
			Code: 1, Usage: true, Err: `unknown command "lone"`},
	})
}

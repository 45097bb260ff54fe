package deny_test

import (
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// deny exchange refuses a pending request or revokes an issued one (recorded as revoked before its RBAC
// goes); a request denied before reads "already denied", one never made is NotFound.
func TestCommandTableDenyExchange(t *testing.T) {
	deny := func(name string, more ...string) []string {
		return append([]string{"deny", "exchange", name, "--kubeconfig", "farm", "--remote-cluster-id", "edge"}, more...)
	}
	phase := func(want string) func(t *testing.T, e *cmdtest.Env, out string) {
		return func(t *testing.T, e *cmdtest.Env, out string) {
			t.Helper()
			cmdtest.WantStdout("exchangerequest/{request} denied\n")(t, e, out)
			list := cmdtest.JSONObject(t, e.Must(t, "allow", "exchange", "--kubeconfig", "farm", "--remote-cluster-id", "edge", "-o", "json").Stdout)
			cmdtest.WantFields(t, list, map[string]string{"items.0.metadata.name": e.Vars["request"], "items.0.status.phase": want})
			if r, _ := cmdtest.FieldAt(list, "items.0.status.reason").(string); !strings.HasSuffix(r, "by the provider: not for prod") {
				t.Errorf("reason %q, want the --reason given", r)
			}
		}
	}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "a pending request", World: cmdtest.WorldRequest, Args: deny("{request}", "--reason", "not for prod"),
			// The refusal is the provider's own record (a ConfigMap of federate-system), then the consumer's copy.
			Stdout: phase("Refused"), Writes: map[string][]string{"farm": {"create configmaps", "create events", "patch exchangerequests"}}},
		{Name: "an issued request", World: cmdtest.WorldIssued, Args: deny("{request}", "--reason", "not for prod"),
			Stdout: phase("Revoked"),
			// The revocation record first; the bindings go at once (in no order), the request is told last.
			Wrote: map[string][]string{"farm": {"create configmaps", "delete clusterrolebindings", "patch exchangerequests"}}},
		{Name: "a request denied before", World: cmdtest.WorldDenied, Args: deny("{request}", "--reason", "still no"),
			Stdout: cmdtest.WantStdout("exchangerequest/{request} already denied\n")},
		{Name: "a request this cluster has no record of", World: cmdtest.WorldRequest, Args: deny("mapping-00000000000000000000000000000000", "--reason", "no"),
			Code: 1, Err: `NAME: exchange request "mapping-00000000000000000000000000000000" not found of consumer edge`, Stderr: []string{"--ignore-not-found"}},
		{Name: "--ignore-not-found", World: cmdtest.WorldRequest, Args: deny("mapping-00000000000000000000000000000000", "--reason", "no", "--ignore-not-found"),
			Stdout: cmdtest.WantStdout("")},
		{Name: "a consumer never paired", World: cmdtest.WorldRequest, Args: []string{"deny", "exchange", "{request}", "--kubeconfig", "farm", "--remote-cluster-id", "lone", "--reason", "no"},
			Code: 1, Err: `NAME: exchange request "{request}" not found of consumer lone`},
		{Name: "no reason", World: cmdtest.WorldRequest, Args: deny("{request}"),
			Code: 1, Usage: true, Err: `required flag(s) "reason" not set`},
		{Name: "a blank reason", World: cmdtest.WorldRequest, Args: deny("{request}", "--reason", " "),
			Code: 1, Usage: true, Err: "--reason: must say why"},
		{Name: "a reason too long to keep", World: cmdtest.WorldRequest, Args: deny("{request}", "--reason", strings.Repeat("x", 1025)),
			Code: 1, Usage: true, Err: "--reason: is 1025 characters, at most 1024 are kept"},
		{Name: "a name that is no request's", World: cmdtest.WorldRequest, Args: deny("nodash", "--reason", "no"),
			Code: 1, Usage: true, Err: `NAME "nodash": must be a request's name as listed`},
		{Name: "no name", World: cmdtest.WorldRequest, Args: []string{"deny", "exchange", "--kubeconfig", "farm", "--remote-cluster-id", "edge", "--reason", "no"},
			Code: 1, Usage: true, Err: "NAME: exactly 1 argument(s) required, got 0"},
	})
}

// deny resourceslice answers a consumer's pending slice with a refusal and its reason (again: the
// answer is rewritten); a slice already granted is not denied; one never asked for is NotFound.
func TestCommandTableDenyResourceSlice(t *testing.T) {
	deny := func(more ...string) []string {
		return append([]string{"deny", "resourceslice", "--kubeconfig", "farm"}, more...)
	}
	accepted := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.PendingSlice(t)
		e.Must(t, "accept", "resourceslice", "batch", "--kubeconfig", "farm", "--remote-cluster-id", "edge")
		return e
	})
	cmdtest.RunTable(t, []cmdtest.Row{
		// The decision in the provider's ledger, then the slice's status; nothing created, nothing on edge.
		{Name: "a pending slice", World: cmdtest.WorldPendingSlice, Args: deny("batch", "--remote-cluster-id", "edge", "--reason", "no capacity"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				cmdtest.WantStdout("resourceslice/batch denied\n")(t, e, out)
				list := cmdtest.JSONObject(t, e.Must(t, "get", "resourceslices", "--kubeconfig", "farm", "-o", "json").Stdout)
				cmdtest.WantFields(t, list, map[string]string{"items.0.metadata.name": "batch", "items.0.status.phase": "Denied", "items.0.status.reason": "no capacity"})
			},
			Stderr: []string{"ResourceSlice batch of edge denied"},
			Writes: map[string][]string{"farm": {"create configmaps", "update configmaps", "patch resourceslices"}}},
		{Name: "a slice already granted", World: accepted, Args: deny("batch", "--remote-cluster-id", "edge", "--reason", "late"),
			Code: 1, Err: `resource slice "batch" of consumer "edge" is already granted: delete it to take its identity and namespace away`},
		{Name: "a slice the consumer never asked for", World: cmdtest.WorldPendingSlice, Args: deny("nope", "--remote-cluster-id", "edge", "--reason", "x"),
			Code: 1, Err: `consumer "edge" has left no ResourceSlice "nope" in federate-tenant-edge`},
		{Name: "a slice of another consumer", World: cmdtest.WorldPendingSlice, Args: deny("batch", "--remote-cluster-id", "lone", "--reason", "x"),
			Code: 1, Err: `consumer "lone" has left no ResourceSlice "batch" in federate-tenant-lone`},
		{Name: "no reason", World: cmdtest.WorldPendingSlice, Args: deny("batch", "--remote-cluster-id", "edge"),
			Code: 1, Usage: true, Err: `required flag(s) "reason" not set`},
		{Name: "a name that is no DNS label", World: cmdtest.WorldPendingSlice, Args: deny("Batch", "--remote-cluster-id", "edge", "--reason", "x"),
			Code: 1, Usage: true, Err: `NAME "Batch": must be a DNS label`},
	})
}

package grant_test

import (
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// grant namespace makes an extra sandbox for a consumer and binds its identity there (again: converges),
// or without NAME lists the consumer's requests and extra namespaces; a consumer with no Tenant, a
// reserved name or a quota over what remains is refused with nothing written.
func TestCommandTableGrantNamespace(t *testing.T) {
	grant := func(more ...string) []string {
		return append([]string{"grant", "namespace", "--kubeconfig", "farm"}, more...)
	}
	granted := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		e.Must(t, grant("team-x", "--remote-cluster-id", "edge")...)
		return e
	})
	// The ledger, the namespace, the binding first among the sandbox's parts.
	made := map[string][]string{"farm": {"update configmaps", "create namespaces", "patch rolebindings", "patch limitranges"}}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "a namespace", World: cmdtest.WorldPaired, Args: grant("team-x", "--remote-cluster-id", "edge"),
			Stdout: cmdtest.WantStdout("namespace/team-x granted to edge\n"),
			Stderr: []string{"Sandbox team-x ready for edge (Pod Security restricted", "ClusterRole federate-tenant bound in team-x to the pairing's identity"},
			Wrote:  made},
		// Again: converges, nothing created.
		{Name: "granted before", World: granted, Args: grant("team-x", "--remote-cluster-id", "edge"),
			Stdout: cmdtest.WantStdout("namespace/team-x granted to edge\n"),
			Sent: map[string]func(*testing.T, []string){"farm": func(t *testing.T, got []string) {
				if !cmdtest.IsSubsequence(got, []string{"patch rolebindings"}) || cmdtest.IsSubsequence(got, []string{"create namespaces"}) {
					t.Errorf("farm was sent %v: want the binding converged and no namespace created", got)
				}
			}}},
		{Name: "a namespace, -o json", World: cmdtest.WorldPaired, Args: grant("team-x", "--remote-cluster-id", "edge", "-o", "json"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				cmdtest.WantFields(t, cmdtest.JSONObject(t, out), map[string]string{"kind": "ExtraNamespace", "metadata.name": "team-x", "status.consumerID": "edge", "status.phase": "Granted"})
			},
			Wrote: made},
		{Name: "the list", World: granted, Args: grant("--remote-cluster-id", "edge"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				rows := cmdtest.TableOf(t, out, "CONSUMER", "NAMESPACE", "PHASE", "REQUESTED", "REQUEST REASON", "ANSWER")
				if len(rows) != 1 {
					t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
				}
				cmdtest.WantRow(t, rows[0], map[string]string{"CONSUMER": "edge", "NAMESPACE": "team-x", "PHASE": "Granted", "REQUESTED": "no"})
			}},
		{Name: "the list, -o json", World: granted, Args: grant("--remote-cluster-id", "edge", "-o", "json"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				list := cmdtest.JSONObject(t, out)
				if names := cmdtest.ListNames(t, list); len(names) != 1 || names[0] != "team-x" {
					t.Fatalf("items %v, want [team-x]", names)
				}
				cmdtest.WantFields(t, list, map[string]string{"items.0.kind": "ExtraNamespace", "items.0.status.consumerID": "edge", "items.0.status.phase": "Granted", "items.0.status.requested": "false"})
			}},
		{Name: "the list, -o yaml", World: granted, Args: grant("--remote-cluster-id", "edge", "-o", "yaml"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				cmdtest.WantFields(t, cmdtest.YAMLObject(t, out), map[string]string{"items.0.metadata.name": "team-x", `items.0.metadata.labels.federate\.dev/remote-cluster-id`: "edge"})
			}},
		{Name: "the list of a consumer with none", World: granted, Args: grant("--remote-cluster-id", "lone"),
			Stdout: cmdtest.WantStdout("No namespace requests or extra namespaces found.\n")},
		{Name: "a consumer with no Tenant", World: cmdtest.WorldPaired, Args: grant("team-y", "--remote-cluster-id", "lone"),
			Code: 1, Err: `consumer "lone" has no active identity on this provider (no Tenant federate-tenant-lone/lone): authenticate it first`},
		{Name: "more than remains of the consumer's total", World: cmdtest.WorldPaired, Args: grant("team-y", "--remote-cluster-id", "edge", "--quota", "pods=100000"),
			Code: 1, Err: `namespace "team-y" needs more than remains of consumer "edge"'s total: pods 100k (`},
		{Name: "a reserved name", World: cmdtest.WorldPaired, Args: grant("kube-x", "--remote-cluster-id", "edge"),
			Code: 1, Usage: true, Err: `NAME "kube-x": names starting with "kube-" are reserved`},
		{Name: "a quota that is no quantity", World: cmdtest.WorldPaired, Args: grant("team-y", "--remote-cluster-id", "edge", "--quota", "pods=x"),
			Code: 1, Usage: true, Err: `--quota: pods="x" is not a quantity`},
	})
}

package cmd_test

import (
	"testing"
)

// grant namespace makes an extra sandbox for a consumer and binds its identity there (again: converges),
// or without NAME lists the consumer's requests and extra namespaces; a consumer with no Tenant, a
// reserved name or a quota over what remains is refused with nothing written.
func TestCommandTableGrantNamespace(t *testing.T) {
	grant := func(more ...string) []string {
		return append([]string{"grant", "namespace", "--kubeconfig", "farm"}, more...)
	}
	granted := newWorld(func(t *testing.T) *tableEnv {
		e := tablePaired(t)
		e.must(t, grant("team-x", "--remote-cluster-id", "edge")...)
		return e
	})
	// The ledger, the namespace, the binding first among the sandbox's parts.
	made := map[string][]string{"farm": {"update configmaps", "create namespaces", "patch rolebindings", "patch limitranges"}}
	runTable(t, []tableRow{
		{name: "a namespace", world: worldPaired, args: grant("team-x", "--remote-cluster-id", "edge"),
			stdout: wantStdout("namespace/team-x granted to edge\n"),
			stderr: []string{"Sandbox team-x ready for edge (Pod Security restricted", "ClusterRole federate-tenant bound in team-x to the pairing's identity"},
			wrote:  made},
		// Again: converges, nothing created.
		{name: "granted before", world: granted, args: grant("team-x", "--remote-cluster-id", "edge"),
			stdout: wantStdout("namespace/team-x granted to edge\n"),
			sent: map[string]func(*testing.T, []string){"farm": func(t *testing.T, got []string) {
				if !isSubsequence(got, []string{"patch rolebindings"}) || isSubsequence(got, []string{"create namespaces"}) {
					t.Errorf("farm was sent %v: want the binding converged and no namespace created", got)
				}
			}}},
		{name: "a namespace, -o json", world: worldPaired, args: grant("team-x", "--remote-cluster-id", "edge", "-o", "json"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				wantFields(t, jsonObject(t, out), map[string]string{"kind": "ExtraNamespace", "metadata.name": "team-x", "status.consumerID": "edge", "status.phase": "Granted"})
			},
			wrote: made},
		{name: "the list", world: granted, args: grant("--remote-cluster-id", "edge"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				rows := tableOf(t, out, "CONSUMER", "NAMESPACE", "PHASE", "REQUESTED", "REQUEST REASON", "ANSWER")
				if len(rows) != 1 {
					t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
				}
				wantRow(t, rows[0], map[string]string{"CONSUMER": "edge", "NAMESPACE": "team-x", "PHASE": "Granted", "REQUESTED": "no"})
			}},
		{name: "the list, -o json", world: granted, args: grant("--remote-cluster-id", "edge", "-o", "json"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				list := jsonObject(t, out)
				if names := listNames(t, list); len(names) != 1 || names[0] != "team-x" {
					t.Fatalf("items %v, want [team-x]", names)
				}
				wantFields(t, list, map[string]string{"items.0.kind": "ExtraNamespace", "items.0.status.consumerID": "edge", "items.0.status.phase": "Granted", "items.0.status.requested": "false"})
			}},
		{name: "the list, -o yaml", world: granted, args: grant("--remote-cluster-id", "edge", "-o", "yaml"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				wantFields(t, yamlObject(t, out), map[string]string{"items.0.metadata.name": "team-x", `items.0.metadata.labels.federate\.dev/remote-cluster-id`: "edge"})
			}},
		{name: "the list of a consumer with none", world: granted, args: grant("--remote-cluster-id", "lone"),
			stdout: wantStdout("No namespace requests or extra namespaces found.\n")},
		{name: "a consumer with no Tenant", world: worldPaired, args: grant("team-y", "--remote-cluster-id", "lone"),
			code: 1, err: `consumer "lone" has no active identity on this provider (no Tenant federate-tenant-lone/lone): authenticate it first`},
		{name: "more than remains of the consumer's total", world: worldPaired, args: grant("team-y", "--remote-cluster-id", "edge", "--quota", "pods=100000"),
			code: 1, err: `namespace "team-y" needs pods 100k, more than remains of consumer "edge"'s total; remaining for consumer "edge": `},
		{name: "a reserved name", world: worldPaired, args: grant("kube-x", "--remote-cluster-id", "edge"),
			code: 1, usage: true, err: `NAME "kube-x": names starting with "kube-" are reserved`},
		{name: "a quota that is no quantity", world: worldPaired, args: grant("team-y", "--remote-cluster-id", "edge", "--quota", "pods=x"),
			code: 1, usage: true, err: `--quota: pods="x" is not a quantity`},
	})
}

package cmd_test

import (
	"slices"
	"testing"
)

// revoke takes a consumer's rights away on the provider alone (its RoleBindings first, then what runs,
// then the Tenant marked Revoked); again it is "already revoked"; a consumer with no Tenant is NotFound,
// naming the known ones (--ignore-not-found: exit 0).
func TestCommandTableRevoke(t *testing.T) {
	farm := []string{"revoke", "--kubeconfig", "farm"}
	revoked := newWorld(func(t *testing.T) *tableEnv {
		e := tablePaired(t)
		e.must(t, append(farm, "--remote-cluster-id", "edge")...)
		return e
	})
	runTable(t, []tableRow{
		{name: "a consumer", world: worldPaired, args: append(farm, "--remote-cluster-id", "edge"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				if !regexpMatch(`^tenant\.federate\.dev/edge revoked in \d+(\.\d+)?[µm]?s\n$`, out) {
					t.Errorf("stdout %q", out)
				}
				list := jsonObject(t, e.must(t, "status", "--kubeconfig", "farm", "-o", "json").Stdout)
				wantFields(t, list, map[string]string{"items.0.status.remoteClusterID": "edge", "items.0.status.phase": "Revoked"})
			},
			stderr: []string{"No RoleBinding left for edge", "Tenant federate-tenant-edge/edge marked Revoked"},
			// The binding goes first; the Tenant is kept, marked; nothing on the consumer.
			sent: map[string]func(*testing.T, []string){"farm": func(t *testing.T, got []string) {
				if i := slices.Index(got, "delete rolebindings"); i < 0 || i > slices.Index(got, "delete-collection pods") || !slices.Contains(got, "patch tenants") || slices.Contains(got, "delete tenants") || slices.Contains(got, "delete namespaces") {
					t.Errorf("farm was sent %v: want the binding deleted first, the pods after, the Tenant marked and kept", got)
				}
			}}},
		{name: "revoked before", world: revoked, args: append(farm, "--remote-cluster-id", "edge"),
			stdout: wantStdout("tenant.federate.dev/edge already revoked\n")},
		{name: "a consumer this cluster has no record of", world: worldPaired, args: append(farm, "--remote-cluster-id", "edgx"),
			code: 1, err: `--remote-cluster-id: consumer "edgx" not found on this cluster (no Tenant federate-tenant-edgx/edgx); did you mean "edge"? (known: edge) (--ignore-not-found to accept that)`},
		{name: "--ignore-not-found", world: worldPaired, args: append(farm, "--remote-cluster-id", "edgx", "--ignore-not-found"),
			stdout: wantStdout("")},
		{name: "a cluster never initialized", world: worldPaired, args: []string{"revoke", "--kubeconfig", "lone", "--remote-cluster-id", "edge"},
			code: 1, err: "this cluster is not initialized for kubectl federate (no ConfigMap federate-system/federate-cluster); run kubectl federate init"},
		{name: "an ID that is no DNS label", world: worldPaired, args: append(farm, "--remote-cluster-id", "Bad"),
			code: 1, usage: true, err: `--remote-cluster-id "Bad": must be a DNS label`},
		{name: "no consumer named", world: worldPaired, args: farm,
			code: 1, usage: true, err: `required flag(s) "remote-cluster-id" not set`},
	})
}

// revoke namespace takes an extra namespace away (its binding first, the namespace last); one gone is
// "already revoked"; one never granted to that consumer is NotFound (--ignore-not-found: exit 0).
func TestCommandTableRevokeNamespace(t *testing.T) {
	rev := func(more ...string) []string {
		return append([]string{"revoke", "namespace", "--kubeconfig", "farm"}, more...)
	}
	granted := newWorld(func(t *testing.T) *tableEnv {
		e := tablePaired(t)
		e.must(t, "grant", "namespace", "team-x", "--kubeconfig", "farm", "--remote-cluster-id", "edge")
		return e
	})
	gone := newWorld(func(t *testing.T) *tableEnv {
		e := granted.build(t)
		e.must(t, rev("team-x", "--remote-cluster-id", "edge")...)
		return e
	})
	runTable(t, []tableRow{
		{name: "an extra namespace", world: granted, args: rev("team-x", "--remote-cluster-id", "edge"),
			stdout: wantStdout("namespace/team-x revoked from edge\n"), stderr: []string{"Namespace team-x of edge revoked and removed"},
			wrote: map[string][]string{"farm": {"delete rolebindings", "delete-collection pods", "delete namespaces"}}},
		{name: "revoked before", world: gone, args: rev("team-x", "--remote-cluster-id", "edge"),
			stdout: wantStdout("namespace/team-x already revoked from edge\n")},
		{name: "a namespace this cluster has no record of", world: granted, args: rev("nope", "--remote-cluster-id", "edge"),
			code: 1, err: `NAME: extra namespace "nope" not found of consumer edge on this cluster; known: team-x (--ignore-not-found to accept that)`},
		{name: "a namespace of another consumer", world: granted, args: rev("team-x", "--remote-cluster-id", "lone"),
			code: 1, err: `NAME: extra namespace "team-x" not found of consumer lone`},
		{name: "--ignore-not-found", world: granted, args: rev("nope", "--remote-cluster-id", "edge", "--ignore-not-found"),
			stdout: wantStdout("")},
		// The tenant namespace is no extra namespace: revoke (the consumer) or unauthenticate takes it.
		{name: "the tenant namespace", world: granted, args: rev("federate-tenant-edge", "--remote-cluster-id", "edge"),
			code: 1, usage: true, err: `NAME "federate-tenant-edge": names starting with "federate-" are reserved`},
		{name: "a name that is no DNS label", world: granted, args: rev("Bad", "--remote-cluster-id", "edge"),
			code: 1, usage: true, err: `NAME "Bad": must be a DNS label of at most 63 characters`},
		{name: "no name", world: granted, args: rev("--remote-cluster-id", "edge"),
			code: 1, usage: true, err: "NAME: exactly 1 argument(s) required, got 0"},
	})
}

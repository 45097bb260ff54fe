package cmd_test

import (
	"regexp"
	"testing"
)

// regexpMatch tells whether s matches the expression.
func regexpMatch(expr, s string) bool { return regexp.MustCompile(expr).MatchString(s) }

// cordoned checks status on farm says whether edge is cordoned.
func cordoned(want string) func(t *testing.T, e *tableEnv, out string) {
	return func(t *testing.T, e *tableEnv, _ string) {
		t.Helper()
		list := jsonObject(t, e.must(t, "status", "--kubeconfig", "farm", "-o", "json").Stdout)
		wantFields(t, list, map[string]string{"items.0.status.remoteClusterID": "edge", "items.0.status.cordoned": want})
	}
}

// tableCordoned is tablePaired with edge cordoned on farm.
func tableCordoned(t *testing.T) *tableEnv {
	e := tablePaired(t)
	e.must(t, "cordon", "tenant", "--kubeconfig", "farm", "--remote-cluster-id", "edge")
	return e
}

var worldCordoned = newWorld(tableCordoned)

// The label on the namespaces, the Tenant's status; an event says it.
var cordonWrites = map[string][]string{"farm": {"patch namespaces", "create events", "patch tenants"}}

// cordon tenant labels a consumer's namespaces cordoned and says so in its Tenant; again it is "already
// cordoned"; a consumer with no Tenant is NotFound (--ignore-not-found: exit 0).
func TestCommandTableCordon(t *testing.T) {
	cordon := []string{"cordon", "tenant", "--kubeconfig", "farm"}
	runTable(t, []tableRow{
		{name: "a consumer", world: worldPaired, args: append(cordon, "--remote-cluster-id", "edge"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				wantStdout("tenant/edge cordoned\n")(t, e, out)
				cordoned("true")(t, e, out)
			},
			stderr: []string{"edge cordoned in 1 namespace(s)"}, writes: cordonWrites},
		{name: "the consumer as CONSUMER", world: worldPaired, args: append(cordon, "edge"),
			stdout: wantStdout("tenant/edge cordoned\n"), writes: cordonWrites},
		{name: "cordoned before", world: worldCordoned, args: append(cordon, "--remote-cluster-id", "edge"),
			stdout: wantStdout("tenant/edge already cordoned\n")},
		{name: "a consumer this cluster has no record of", world: worldPaired, args: append(cordon, "--remote-cluster-id", "edgx"),
			code: 1, err: `--remote-cluster-id: consumer "edgx" not found on this cluster (no Tenant federate-tenant-edgx/edgx); did you mean "edge"? (known: edge) (--ignore-not-found to accept that)`},
		{name: "--ignore-not-found", world: worldPaired, args: append(cordon, "--remote-cluster-id", "edgx", "--ignore-not-found"),
			stdout: wantStdout("")},
		{name: "the consumer named twice, differently", world: worldPaired, args: append(cordon, "edge", "--remote-cluster-id", "lone"),
			code: 1, usage: true, err: `--remote-cluster-id "lone" and CONSUMER "edge": name the consumer once`},
		{name: "no consumer named", world: worldPaired, args: cordon,
			code: 1, usage: true, err: "--remote-cluster-id: required, the ID of the consumer cluster"},
		{name: "an ID that is no DNS label", world: worldPaired, args: append(cordon, "--remote-cluster-id", "Bad"),
			code: 1, usage: true, err: `--remote-cluster-id "Bad": must be a DNS label`},
	})
}

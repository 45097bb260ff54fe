package cmd_test

import (
	"strings"
	"testing"
)

// exchange apply stores a rule file (a mistake stores nothing), exchange get prints the stored rules in
// the order they are weighed (or the file as stored), exchange resolve says which rule decides for a
// user; only apply writes, and only on the consumer.
func TestCommandTableExchange(t *testing.T) {
	// Literals, whose capacity is their length: each row's append makes a line of its own.
	apply := []string{"exchange", "apply", "--kubeconfig", "edge"}
	get := []string{"exchange", "get", "--kubeconfig", "edge"}
	resolve := []string{"exchange", "resolve", "--remote-cluster-id", "farm", "--kubeconfig", "edge"}
	// withFile is a world with one more file, {file}.
	withFile := func(world func(t *testing.T) *tableEnv, content string) *tableWorld {
		return newWorld(func(t *testing.T) *tableEnv {
			e := world(t)
			e.vars["file"] = tableFile(t, "file.yaml", content)
			return e
		})
	}
	changed := strings.Replace(tableRulesFile, "target: {user: bob}", "target: {user: carol}", 1)
	httpRule := strings.Replace(tableRulesFile, "type: StaticMappingIdentityExchanger\n      source: {user: alice}\n      target: {user: bob}",
		"type: ExternalIdentityExchanger\n      source: {user: alice}\n      url: http://external.exchanger/", 1)
	// rulesKept checks, after a refused apply, that the rules stored before are still the ones printed.
	rulesKept := func(t *testing.T, e *tableEnv, out string) {
		t.Helper()
		if out != "" {
			t.Errorf("a failure printed %q", out)
		}
		if got := e.must(t, "exchange", "get", "--kubeconfig", "edge", "-o", "yaml").Stdout; got != tableRulesFile {
			t.Errorf("the stored rules changed:\n%s", got)
		}
	}
	runTable(t, []tableRow{
		// apply
		{name: "apply", world: worldRulesPaths, args: append(apply, "-f", "{rules}"),
			stdout: wantStdout("configmap/federate-exchange-rules configured\n"), writes: map[string][]string{"edge": {"create configmaps"}}},
		{name: "apply the same file again", world: worldRules, args: append(apply, "-f", "{rules}"),
			stdout: wantStdout("configmap/federate-exchange-rules unchanged\n")},
		{name: "apply a changed file", world: withFile(tableRules, changed), args: append(apply, "-f", "{file}"),
			stdout: wantStdout("configmap/federate-exchange-rules configured\n"), writes: map[string][]string{"edge": {"update configmaps"}}},
		{name: "apply a file with a mistake", world: withFile(tableRules, httpRule), args: append(apply, "-f", "{file}"),
			code: 1, usage: true, err: `spec.clientIdentityExchanger.rules[0].url "http://external.exchanger/": must be https`, stdout: rulesKept},
		{name: "apply a file of another kind", world: withFile(tableRules, "apiVersion: v1\nkind: Config\n"), args: append(apply, "-f", "{file}"),
			code: 1, usage: true, err: `apiVersion "v1": must be cluster.core.oam.dev/v1alpha1 or federate.dev/v1alpha1`, stdout: rulesKept},
		{name: "apply a file that is not there", world: worldRules, args: append(apply, "-f", "/nonexistent/rules.yaml"),
			code: 1, err: "--filename: open /nonexistent/rules.yaml: no such file or directory", stdout: rulesKept},
		{name: "apply without a file", world: worldPaired, args: apply,
			code: 1, usage: true, err: `required flag(s) "filename" not set`},
		{name: "apply --dry-run", world: worldRulesPaths, args: append(apply, "-f", "{rules}", "--dry-run"), dryRun: true,
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				if refs := documents(t, out); len(refs) != 1 || refs[0] != "ConfigMap/federate-exchange-rules" ||
					!strings.Contains(out, "# edge: would create configmap/federate-exchange-rules in federate-system (dry run)") {
					t.Errorf("a dry run's stdout: %v\n%s", refs, out)
				}
			}},
		// get
		{name: "get: the rules, highest priority first", world: worldRules, args: get,
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				rows := tableOf(t, out, "NAME", "TYPE", "PRIORITY", "SOURCE", "TARGET")
				if len(rows) != 3 {
					t.Fatalf("%d rows, want 3:\n%s", len(rows), out)
				}
				wantRow(t, rows[0], map[string]string{"NAME": "admin", "TYPE": "PrivilegedIdentityExchanger", "PRIORITY": "10", "SOURCE": "user=root", "TARGET": "(the pairing's identity)"})
				wantRow(t, rows[1], map[string]string{"NAME": "mapping", "TYPE": "StaticMappingIdentityExchanger", "PRIORITY": "0", "SOURCE": "user=alice", "TARGET": "user=bob"})
				wantRow(t, rows[2], map[string]string{"NAME": "ops", "SOURCE": "group=ops,cluster=farm", "TARGET": "user=deployer,group=deployers,uid=42"})
			}},
		// The file as stored, to edit and apply again: byte for byte, comments and order kept.
		{name: "get -o yaml", world: worldRules, args: append(get, "-o", "yaml"), stdout: wantStdout(tableRulesFile)},
		{name: "get -o json", world: worldRules, args: append(get, "-o", "json"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				wantFields(t, jsonObject(t, out), map[string]string{"kind": "ClusterGatewayConfiguration", "metadata.name": "federate-exchange-rules",
					"spec.clientIdentityExchanger.rules.0.name": "mapping", "spec.clientIdentityExchanger.rules.0.target.user": "bob",
					"spec.clientIdentityExchanger.rules.1.name": "admin", "spec.clientIdentityExchanger.rules.1.priority": "10"})
			}},
		{name: "get -o name", world: worldRules, args: append(get, "-o", "name"),
			stdout: wantStdout("clustergatewayconfiguration.federate.dev/federate-exchange-rules\n")},
		{name: "get with no rules stored", world: worldPaired, args: get,
			code: 1, err: "no identity-exchange rules are stored on this cluster (no ConfigMap federate-system/federate-exchange-rules)"},
		{name: "get -o xml", world: worldRules, args: append(get, "-o", "xml"),
			code: 1, usage: true, err: `invalid argument "xml" for "-o, --output" flag`},
		{name: "get a rule by name", world: worldRules, args: append(get, "mapping"),
			code: 1, usage: true, err: `unknown command "mapping"`},
		// resolve
		{name: "resolve a static rule", world: worldRules, args: append(resolve, "--for-user", "alice"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				rows := tableOf(t, out, "RULE", "TYPE", "PRIORITY", "IDENTITY")
				if len(rows) != 1 {
					t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
				}
				wantRow(t, rows[0], map[string]string{"RULE": "mapping", "TYPE": "StaticMappingIdentityExchanger", "PRIORITY": "0", "IDENTITY": "user=bob"})
			}},
		{name: "resolve -o json", world: worldRules, args: append(resolve, "--for-user", "alice", "--for-group", "dev", "-o", "json"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				wantFields(t, jsonObject(t, out), map[string]string{"kind": "ExchangeResolution", "metadata.name": "mapping",
					`metadata.labels.federate\.dev/remote-cluster-id`: "farm", "status.rule": "mapping", "status.type": "StaticMappingIdentityExchanger",
					"status.pairingIdentity": "false", "status.target.user": "bob"})
			}},
		{name: "resolve a rule by group", world: worldRules, args: append(resolve, "--for-user", "dave", "--for-group", "ops"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				rows := tableOf(t, out, "RULE", "TYPE", "PRIORITY", "IDENTITY")
				if len(rows) != 1 {
					t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
				}
				wantRow(t, rows[0], map[string]string{"RULE": "ops", "IDENTITY": "user=deployer,group=deployers,uid=42"})
			}},
		// source.cluster keeps the ops rule to farm: reaching another provider, nothing matches.
		{name: "resolve a rule of another provider", world: worldRules, args: []string{"exchange", "resolve", "--remote-cluster-id", "lone", "--kubeconfig", "edge", "--for-user", "dave", "--for-group", "ops"},
			code: 1, err: `--for-user "dave": no identity-exchange rule matches user "dave" (groups ["ops"], uid "") reaching provider "lone"`},
		{name: "resolve a privileged rule -o yaml", world: worldRules, args: append(resolve, "--for-user", "root", "-o", "yaml"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				wantFields(t, yamlObject(t, out), map[string]string{"metadata.name": "admin", "status.pairingIdentity": "true", "status.priority": "10",
					"status.target": "<absent>"})
			}},
		{name: "resolve a user no rule matches", world: worldRules, args: append(resolve, "--for-user", "eve"),
			code: 1, err: `--for-user "eve": no identity-exchange rule matches user "eve" (groups [], uid "") reaching provider "farm": nothing is handed out`},
		{name: "resolve with no rules stored", world: worldPaired, args: append(resolve, "--for-user", "alice"),
			code: 1, err: "no identity-exchange rules are stored on this cluster"},
		{name: "resolve without a user", world: worldRules, args: resolve,
			code: 1, usage: true, err: `required flag(s) "for-user" not set`},
		{name: "resolve with an empty group", world: worldRules, args: append(resolve, "--for-user", "alice", "--for-group", ""),
			code: 1, usage: true, err: "--for-group: must not be empty"},
		{name: "resolve for a provider ID that is no DNS label", world: worldRules, args: []string{"exchange", "resolve", "--kubeconfig", "edge", "--remote-cluster-id", "Farm", "--for-user", "alice"},
			code: 1, usage: true, err: `--remote-cluster-id "Farm": must be a DNS label`},
	})
}

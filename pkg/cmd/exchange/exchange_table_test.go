package exchange_test

import (
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
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
	withFile := func(world func(t *testing.T) *cmdtest.Env, content string) *cmdtest.TableWorld {
		return cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
			e := world(t)
			e.Vars["file"] = cmdtest.File(t, "file.yaml", content)
			return e
		})
	}
	changed := strings.Replace(cmdtest.RulesFile, "target: {user: bob}", "target: {user: carol}", 1)
	httpRule := strings.Replace(cmdtest.RulesFile, "type: StaticMappingIdentityExchanger\n      source: {user: alice}\n      target: {user: bob}",
		"type: ExternalIdentityExchanger\n      source: {user: alice}\n      url: http://external.exchanger/", 1)
	// rulesKept checks, after a refused apply, that the rules stored before are still the ones printed.
	rulesKept := func(t *testing.T, e *cmdtest.Env, out string) {
		t.Helper()
		if out != "" {
			t.Errorf("a failure printed %q", out)
		}
		if got := e.Must(t, "exchange", "get", "--kubeconfig", "edge", "-o", "yaml").Stdout; got != cmdtest.RulesFile {
			t.Errorf("the stored rules changed:\n%s", got)
		}
	}
	cmdtest.RunTable(t, []cmdtest.Row{
		// apply
		{Name: "apply", World: cmdtest.WorldRulesPaths, Args: append(apply, "-f", "{rules}"),
			Stdout: cmdtest.WantStdout("configmap/federate-exchange-rules created\n"), Writes: map[string][]string{"edge": {"create configmaps"}}},
		{Name: "apply the same file again", World: cmdtest.WorldRules, Args: append(apply, "-f", "{rules}"),
			Stdout: cmdtest.WantStdout("configmap/federate-exchange-rules unchanged\n")},
		{Name: "apply a changed file", World: withFile(cmdtest.Rules, changed), Args: append(apply, "-f", "{file}"),
			Stdout: cmdtest.WantStdout("configmap/federate-exchange-rules configured\n"), Writes: map[string][]string{"edge": {"update configmaps"}}},
		{Name: "apply a file with a mistake", World: withFile(cmdtest.Rules, httpRule), Args: append(apply, "-f", "{file}"),
			Code: 1, Usage: true, Err: `spec.clientIdentityExchanger.rules[0].url "http://external.exchanger/": must be https`, Stdout: rulesKept},
		{Name: "apply a file of another kind", World: withFile(cmdtest.Rules, "apiVersion: v1\nkind: Config\n"), Args: append(apply, "-f", "{file}"),
			Code: 1, Usage: true, Err: `apiVersion "v1": must be cluster.core.oam.dev/v1alpha1 or federate.dev/v1alpha1`, Stdout: rulesKept},
		{Name: "apply a file that is not there", World: cmdtest.WorldRules, Args: append(apply, "-f", "/nonexistent/rules.yaml"),
			Code: 1, Err: "--filename: open /nonexistent/rules.yaml: no such file or directory", Stdout: rulesKept},
		{Name: "apply without a file", World: cmdtest.WorldPaired, Args: apply,
			Code: 1, Usage: true, Err: `required flag(s) "filename" not set`},
		{Name: "apply --dry-run", World: cmdtest.WorldRulesPaths, Args: append(apply, "-f", "{rules}", "--dry-run"), DryRun: true,
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if refs := cmdtest.Documents(t, out); len(refs) != 1 || refs[0] != "ConfigMap/federate-exchange-rules" ||
					!strings.Contains(out, "# edge: would create configmap/federate-exchange-rules in federate-system (dry run)") {
					t.Errorf("a dry run's Stdout: %v\n%s", refs, out)
				}
			}},
		// get
		{Name: "get: the rules, highest priority first", World: cmdtest.WorldRules, Args: get,
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				rows := cmdtest.TableOf(t, out, "NAME", "TYPE", "PRIORITY", "SOURCE", "TARGET")
				if len(rows) != 3 {
					t.Fatalf("%d rows, want 3:\n%s", len(rows), out)
				}
				cmdtest.WantRow(t, rows[0], map[string]string{"NAME": "admin", "TYPE": "PrivilegedIdentityExchanger", "PRIORITY": "10", "SOURCE": "user=root", "TARGET": "(the pairing's identity)"})
				cmdtest.WantRow(t, rows[1], map[string]string{"NAME": "mapping", "TYPE": "StaticMappingIdentityExchanger", "PRIORITY": "0", "SOURCE": "user=alice", "TARGET": "user=bob"})
				cmdtest.WantRow(t, rows[2], map[string]string{"NAME": "ops", "SOURCE": "group=ops,cluster=farm", "TARGET": "user=deployer,group=deployers,uid=42"})
			}},
		// The file as stored, to edit and apply again: byte for byte, comments and order kept.
		{Name: "get -o yaml", World: cmdtest.WorldRules, Args: append(get, "-o", "yaml"), Stdout: cmdtest.WantStdout(cmdtest.RulesFile)},
		{Name: "get -o json", World: cmdtest.WorldRules, Args: append(get, "-o", "json"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				cmdtest.WantFields(t, cmdtest.JSONObject(t, out), map[string]string{"kind": "ClusterGatewayConfiguration", "metadata.name": "federate-exchange-rules",
					"spec.clientIdentityExchanger.rules.0.name": "mapping", "spec.clientIdentityExchanger.rules.0.target.user": "bob",
					"spec.clientIdentityExchanger.rules.1.name": "admin", "spec.clientIdentityExchanger.rules.1.priority": "10"})
			}},
		{Name: "get -o name", World: cmdtest.WorldRules, Args: append(get, "-o", "name"),
			Stdout: cmdtest.WantStdout("clustergatewayconfiguration.federate.dev/federate-exchange-rules\n")},
		{Name: "get with no rules stored", World: cmdtest.WorldPaired, Args: get,
			Code: 1, Err: "no identity-exchange rules are stored on this cluster (no ConfigMap federate-system/federate-exchange-rules)"},
		{Name: "get -o xml", World: cmdtest.WorldRules, Args: append(get, "-o", "xml"),
			Code: 1, Usage: true, Err: `invalid argument "xml" for "-o, --output" flag`},
		{Name: "get a rule by name", World: cmdtest.WorldRules, Args: append(get, "mapping"),
			Code: 1, Usage: true, Err: `unknown command "mapping"`},
		// resolve
		{Name: "resolve a static rule", World: cmdtest.WorldRules, Args: append(resolve, "--for-user", "alice"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				rows := cmdtest.TableOf(t, out, "RULE", "TYPE", "PRIORITY", "IDENTITY")
				if len(rows) != 1 {
					t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
				}
				cmdtest.WantRow(t, rows[0], map[string]string{"RULE": "mapping", "TYPE": "StaticMappingIdentityExchanger", "PRIORITY": "0", "IDENTITY": "user=bob"})
			}},
		{Name: "resolve -o json", World: cmdtest.WorldRules, Args: append(resolve, "--for-user", "alice", "--for-group", "dev", "-o", "json"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				cmdtest.WantFields(t, cmdtest.JSONObject(t, out), map[string]string{"kind": "ExchangeResolution", "metadata.name": "mapping",
					`metadata.labels.federate\.dev/remote-cluster-id`: "farm", "status.rule": "mapping", "status.type": "StaticMappingIdentityExchanger",
					"status.pairingIdentity": "false", "status.target.user": "bob"})
			}},
		{Name: "resolve a rule by group", World: cmdtest.WorldRules, Args: append(resolve, "--for-user", "dave", "--for-group", "ops"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				rows := cmdtest.TableOf(t, out, "RULE", "TYPE", "PRIORITY", "IDENTITY")
				if len(rows) != 1 {
					t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
				}
				cmdtest.WantRow(t, rows[0], map[string]string{"RULE": "ops", "IDENTITY": "user=deployer,group=deployers,uid=42"})
			}},
		// source.cluster keeps the ops rule to farm: reaching another provider, nothing matches.
		{Name: "resolve a rule of another provider", World: cmdtest.WorldRules, Args: []string{"exchange", "resolve", "--remote-cluster-id", "lone", "--kubeconfig", "edge", "--for-user", "dave", "--for-group", "ops"},
			Code: 1, Err: `--for-user "dave": no identity-exchange rule matches user "dave" (groups ["ops"], uid "") reaching provider "lone"`},
		{Name: "resolve a privileged rule -o yaml", World: cmdtest.WorldRules, Args: append(resolve, "--for-user", "root", "-o", "yaml"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				cmdtest.WantFields(t, cmdtest.YAMLObject(t, out), map[string]string{"metadata.name": "admin", "status.pairingIdentity": "true", "status.priority": "10",
					"status.target": "<absent>"})
			}},
		{Name: "resolve a user no rule matches", World: cmdtest.WorldRules, Args: append(resolve, "--for-user", "eve"),
			Code: 1, Err: `--for-user "eve": no identity-exchange rule matches user "eve" (groups [], uid "") reaching provider "farm": nothing is handed out`},
		{Name: "resolve with no rules stored", World: cmdtest.WorldPaired, Args: append(resolve, "--for-user", "alice"),
			Code: 1, Err: "no identity-exchange rules are stored on this cluster"},
		{Name: "resolve without a user", World: cmdtest.WorldRules, Args: resolve,
			Code: 1, Usage: true, Err: `required flag(s) "for-user" not set`},
		{Name: "resolve with an empty group", World: cmdtest.WorldRules, Args: append(resolve, "--for-user", "alice", "--for-group", ""),
			Code: 1, Usage: true, Err: "--for-group: must not be empty"},
		{Name: "resolve for a provider ID that is no DNS label", World: cmdtest.WorldRules, Args: []string{"exchange", "resolve", "--kubeconfig", "edge", "--remote-cluster-id", "Farm", "--for-user", "alice"},
			Code: 1, Usage: true, Err: `--remote-cluster-id "Farm": must be a DNS label`},
	})
}

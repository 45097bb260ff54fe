package cmd_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// allow exchange lists a consumer's requests (table, wide, json, yaml) or answers them by name; an answer
// on a provider whose constrained impersonation cannot be proven issues nothing and leaves nothing.
func TestCommandTableAllowExchange(t *testing.T) {
	farm := []string{"allow", "exchange", "--kubeconfig", "farm", "--remote-cluster-id", "edge"}
	header := []string{"NAME", "TARGET", "SCOPE", "REACH", "TARGET MAY", "TARGET REACH", "PHASE", "MODE"}
	oneRow := func(t *testing.T, e *tableEnv, out string, header []string, want map[string]string) map[string]string {
		t.Helper()
		rows := tableOf(t, out, header...)
		if len(rows) != 1 {
			t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
		}
		want["NAME"] = e.vars["request"]
		wantRow(t, rows[0], want)
		// The rule's scope: reads of the common workload kinds in edge's tenant namespace, never Secrets.
		if s := rows[0]["SCOPE"]; !strings.HasPrefix(s, "get,list,watch on configmaps,") || !strings.HasSuffix(s, " in federate-tenant-edge") || strings.Contains(s, "secrets") {
			t.Errorf("SCOPE %q", s)
		}
		return rows[0]
	}
	// probeOnly: the probe's ServiceAccount (and its token), ClusterRole and ClusterRoleBinding, made in
	// parallel and each deleted; nothing of the request (no CSR, no RBAC, no status).
	probeOnly := func(t *testing.T, got []string) {
		want := []string{"create clusterrolebindings", "create clusterroles", "create serviceaccounts", "create serviceaccounts",
			"delete clusterrolebindings", "delete clusterroles", "delete serviceaccounts"}
		if s := slices.Sorted(slices.Values(got)); !slices.Equal(s, want) {
			t.Errorf("farm was sent %v, want only the probe's %v", got, want)
		}
	}
	runTable(t, []tableRow{
		{name: "the requests of a consumer", world: worldRequest, args: farm,
			stdout: func(t *testing.T, e *tableEnv, out string) {
				// Access reviews of the target: bob may do none of the 39 reads here.
				oneRow(t, e, out, header, map[string]string{"TARGET": "bob", "REACH": "-", "TARGET MAY": "0/39", "TARGET REACH": "-", "PHASE": "Pending", "MODE": "-"})
			}},
		{name: "-o wide", world: worldRequest, args: append(farm, "-o", "wide"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				row := oneRow(t, e, out, append(header[:len(header):len(header)], "KEY SHA256", "REASON"), map[string]string{"PHASE": "Pending", "REASON": "-"})
				if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(row["KEY SHA256"]) {
					t.Errorf("KEY SHA256 %q", row["KEY SHA256"])
				}
			}},
		{name: "-o json", world: worldRequest, args: append(farm, "-o", "json"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				list := jsonObject(t, out)
				if names := listNames(t, list); len(names) != 1 || names[0] != e.vars["request"] {
					t.Fatalf("items %v, want [%s]", names, e.vars["request"])
				}
				wantFields(t, list, map[string]string{"items.0.kind": "ExchangeRequestInfo", "items.0.status.name": e.vars["request"], "items.0.status.rule": "mapping",
					"items.0.status.consumerID": "edge", "items.0.status.phase": "Pending", "items.0.status.clusterWide": "false",
					"items.0.status.scope.namespaces.0": "federate-tenant-edge", "items.0.status.targetAccess.allowed": "0",
					`items.0.metadata.labels.federate\.dev/role`: "provider"})
			}},
		{name: "-o yaml once issued", world: worldIssued, args: append(farm, "-o", "yaml"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				list := yamlObject(t, out)
				if names := listNames(t, list); len(names) != 1 || names[0] != e.vars["request"] {
					t.Fatalf("items %v", names)
				}
				wantFields(t, list, map[string]string{"items.0.status.phase": "Issued", "items.0.status.mode": "Constrained", "items.0.status.targetAccess": "<absent>"})
			}},
		{name: "a consumer with no request", world: worldRequest, args: []string{"allow", "exchange", "--kubeconfig", "farm", "--remote-cluster-id", "lone"},
			stdout: wantStdout("No exchange requests from consumer lone.\n")},
		{name: "a consumer with no request, -o json", world: worldRequest, args: []string{"allow", "exchange", "--kubeconfig", "farm", "--remote-cluster-id", "lone", "-o", "json"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				if names := listNames(t, jsonObject(t, out)); len(names) != 0 {
					t.Errorf("items %v, want none", names)
				}
			}},
		// A fake cannot run the probe (it needs a ServiceAccount token and an HTTP round trip): the answer
		// stops there, with nothing issued and the probe's objects gone.
		{name: "a request, on a provider whose support cannot be proven", world: worldRequest, args: append(farm, "{request}"),
			code: 1, err: "could not find out whether this cluster honours constrained impersonation",
			sent: map[string]func(*testing.T, []string){"farm": probeOnly}},
		{name: "a request, --dry-run", world: worldRequest, args: append(farm, "{request}", "--dry-run"), dryRun: true,
			stderr: []string{"Stopped at the constrained-impersonation probe"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				if refs := documents(t, out); len(refs) != 0 {
					t.Errorf("a dry run stopped before any write printed %v", refs)
				}
			}},
		{name: "a request this cluster has no record of", world: worldRequest, args: append(farm, "mapping-00000000000000000000000000000000"),
			code: 1, err: `ExchangeRequest "mapping-00000000000000000000000000000000" of consumer "edge" not found in federate-tenant-edge (it has left {request})`},
		{name: "a request of a consumer never paired", world: worldRequest, args: []string{"allow", "exchange", "{request}", "--kubeconfig", "farm", "--remote-cluster-id", "lone"},
			code: 1, err: `consumer "lone" has no active identity on this provider (no Tenant federate-tenant-lone/lone)`},
		{name: "a name that is no request's", world: worldRequest, args: append(farm, "Bad_Name"),
			code: 1, usage: true, err: `NAME "Bad_Name": must be a request's name as listed, <rule>-<32 hex digits>`},
		{name: "--allow-reach of another request", world: worldRequest, args: append(farm, "{request}", "--allow-reach", "mapping-1"),
			code: 1, usage: true, err: `--allow-reach "mapping-1": must be one of the NAMEs answered in this run`},
		{name: "--allow-unconstrained without a name", world: worldRequest, args: append(farm, "--allow-unconstrained"),
			code: 1, usage: true, err: "--allow-reach and --allow-unconstrained: only with the NAMEs of the requests to answer"},
		{name: "--expiration below the minimum", world: worldRequest, args: append(farm, "{request}", "--expiration", "1m"),
			code: 1, usage: true, err: `for "--expiration" flag: 1m is out of range: must be from 10m to 3650d`},
		{name: "no consumer named", world: worldRequest, args: []string{"allow", "exchange", "--kubeconfig", "farm"},
			code: 1, usage: true, err: `required flag(s) "remote-cluster-id" not set`},
	})
}

// deny exchange refuses a pending request or revokes an issued one (recorded as revoked before its RBAC
// goes); a request denied before reads "already denied", one never made is NotFound.
func TestCommandTableDenyExchange(t *testing.T) {
	deny := func(name string, more ...string) []string {
		return append([]string{"deny", "exchange", name, "--kubeconfig", "farm", "--remote-cluster-id", "edge"}, more...)
	}
	phase := func(want string) func(t *testing.T, e *tableEnv, out string) {
		return func(t *testing.T, e *tableEnv, out string) {
			t.Helper()
			wantStdout("exchangerequest/{request} denied\n")(t, e, out)
			list := jsonObject(t, e.must(t, "allow", "exchange", "--kubeconfig", "farm", "--remote-cluster-id", "edge", "-o", "json").Stdout)
			wantFields(t, list, map[string]string{"items.0.metadata.name": e.vars["request"], "items.0.status.phase": want})
			if r, _ := fieldAt(list, "items.0.status.reason").(string); !strings.HasSuffix(r, "by the provider: not for prod") {
				t.Errorf("reason %q, want the --reason given", r)
			}
		}
	}
	runTable(t, []tableRow{
		{name: "a pending request", world: worldRequest, args: deny("{request}", "--reason", "not for prod"),
			// The refusal is the provider's own record (a ConfigMap of federate-system), then the consumer's copy.
			stdout: phase("Refused"), writes: map[string][]string{"farm": {"create configmaps", "create events", "patch exchangerequests"}}},
		{name: "an issued request", world: worldIssued, args: deny("{request}", "--reason", "not for prod"),
			stdout: phase("Revoked"),
			// The revocation record first; the bindings go at once (in no order), the request is told last.
			wrote: map[string][]string{"farm": {"create configmaps", "delete clusterrolebindings", "patch exchangerequests"}}},
		{name: "a request denied before", world: worldDenied, args: deny("{request}", "--reason", "still no"),
			stdout: wantStdout("exchangerequest/{request} already denied\n")},
		{name: "a request this cluster has no record of", world: worldRequest, args: deny("mapping-00000000000000000000000000000000", "--reason", "no"),
			code: 1, err: `NAME: exchange request "mapping-00000000000000000000000000000000" not found of consumer edge`, stderr: []string{"--ignore-not-found"}},
		{name: "--ignore-not-found", world: worldRequest, args: deny("mapping-00000000000000000000000000000000", "--reason", "no", "--ignore-not-found"),
			stdout: wantStdout("")},
		{name: "a consumer never paired", world: worldRequest, args: []string{"deny", "exchange", "{request}", "--kubeconfig", "farm", "--remote-cluster-id", "lone", "--reason", "no"},
			code: 1, err: `NAME: exchange request "{request}" not found of consumer lone`},
		{name: "no reason", world: worldRequest, args: deny("{request}"),
			code: 1, usage: true, err: `required flag(s) "reason" not set`},
		{name: "a blank reason", world: worldRequest, args: deny("{request}", "--reason", " "),
			code: 1, usage: true, err: "--reason: must say why"},
		{name: "a reason too long to keep", world: worldRequest, args: deny("{request}", "--reason", strings.Repeat("x", 1025)),
			code: 1, usage: true, err: "--reason: is 1025 characters, at most 1024 are kept"},
		{name: "a name that is no request's", world: worldRequest, args: deny("nodash", "--reason", "no"),
			code: 1, usage: true, err: `NAME "nodash": must be a request's name as listed`},
		{name: "no name", world: worldRequest, args: []string{"deny", "exchange", "--kubeconfig", "farm", "--remote-cluster-id", "edge", "--reason", "no"},
			code: 1, usage: true, err: "NAME: exactly 1 argument(s) required, got 0"},
	})
}

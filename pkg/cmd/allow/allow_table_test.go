package allow_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// allow exchange lists a consumer's requests (table, wide, json, yaml) or answers them by name; an answer
// on a provider whose constrained impersonation cannot be proven issues nothing and leaves nothing.
func TestCommandTableAllowExchange(t *testing.T) {
	farm := []string{"allow", "exchange", "--kubeconfig", "farm", "--remote-cluster-id", "edge"}
	header := []string{"NAME", "TARGET", "SCOPE", "REACH", "TARGET MAY", "TARGET REACH", "PHASE", "MODE"}
	oneRow := func(t *testing.T, e *cmdtest.Env, out string, header []string, want map[string]string) map[string]string {
		t.Helper()
		rows := cmdtest.TableOf(t, out, header...)
		if len(rows) != 1 {
			t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
		}
		want["NAME"] = e.Vars["request"]
		cmdtest.WantRow(t, rows[0], want)
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
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "the requests of a consumer", World: cmdtest.WorldRequest, Args: farm,
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				// Access reviews of the target: bob may do none of the 39 reads here.
				oneRow(t, e, out, header, map[string]string{"TARGET": "bob", "REACH": "-", "TARGET MAY": "0/39", "TARGET REACH": "-", "PHASE": "Pending", "MODE": "-"})
			}},
		{Name: "-o wide", World: cmdtest.WorldRequest, Args: append(farm, "-o", "wide"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				row := oneRow(t, e, out, append(header[:len(header):len(header)], "KEY SHA256", "REASON"), map[string]string{"PHASE": "Pending", "REASON": "-"})
				if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(row["KEY SHA256"]) {
					t.Errorf("KEY SHA256 %q", row["KEY SHA256"])
				}
			}},
		{Name: "-o json", World: cmdtest.WorldRequest, Args: append(farm, "-o", "json"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				list := cmdtest.JSONObject(t, out)
				if names := cmdtest.ListNames(t, list); len(names) != 1 || names[0] != e.Vars["request"] {
					t.Fatalf("items %v, want [%s]", names, e.Vars["request"])
				}
				cmdtest.WantFields(t, list, map[string]string{"items.0.kind": "ExchangeRequestInfo", "items.0.status.name": e.Vars["request"], "items.0.status.rule": "mapping",
					"items.0.status.consumerID": "edge", "items.0.status.phase": "Pending", "items.0.status.clusterWide": "false",
					"items.0.status.scope.namespaces.0": "federate-tenant-edge", "items.0.status.targetAccess.allowed": "0",
					`items.0.metadata.labels.federate\.dev/role`: "provider"})
			}},
		{Name: "-o yaml once issued", World: cmdtest.WorldIssued, Args: append(farm, "-o", "yaml"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				list := cmdtest.YAMLObject(t, out)
				if names := cmdtest.ListNames(t, list); len(names) != 1 || names[0] != e.Vars["request"] {
					t.Fatalf("items %v", names)
				}
				cmdtest.WantFields(t, list, map[string]string{"items.0.status.phase": "Issued", "items.0.status.mode": "Constrained", "items.0.status.targetAccess": "<absent>"})
			}},
		{Name: "a consumer with no request", World: cmdtest.WorldRequest, Args: []string{"allow", "exchange", "--kubeconfig", "farm", "--remote-cluster-id", "lone"},
			Stdout: cmdtest.WantStdout("No exchange requests from consumer lone.\n")},
		{Name: "a consumer with no request, -o json", World: cmdtest.WorldRequest, Args: []string{"allow", "exchange", "--kubeconfig", "farm", "--remote-cluster-id", "lone", "-o", "json"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if names := cmdtest.ListNames(t, cmdtest.JSONObject(t, out)); len(names) != 0 {
					t.Errorf("items %v, want none", names)
				}
			}},
		// A fake cannot run the probe (it needs a ServiceAccount token and an HTTP round trip): the answer
		// stops there, with nothing issued and the probe's objects gone.
		{Name: "a request, on a provider whose support cannot be proven", World: cmdtest.WorldRequest, Args: append(farm, "{request}"),
			Code: 1, Err: "could not find out whether this cluster honours constrained impersonation",
			Sent: map[string]func(*testing.T, []string){"farm": probeOnly}},
		{Name: "a request, --dry-run", World: cmdtest.WorldRequest, Args: append(farm, "{request}", "--dry-run"), DryRun: true,
			Stderr: []string{"Stopped at the constrained-impersonation probe"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if refs := cmdtest.Documents(t, out); len(refs) != 0 {
					t.Errorf("a dry run stopped before any write printed %v", refs)
				}
			}},
		{Name: "a request this cluster has no record of", World: cmdtest.WorldRequest, Args: append(farm, "mapping-00000000000000000000000000000000"),
			Code: 1, Err: `ExchangeRequest "mapping-00000000000000000000000000000000" of consumer "edge" not found in federate-tenant-edge (it has left {request})`},
		{Name: "a request of a consumer never paired", World: cmdtest.WorldRequest, Args: []string{"allow", "exchange", "{request}", "--kubeconfig", "farm", "--remote-cluster-id", "lone"},
			Code: 1, Err: `consumer "lone" has no active identity on this provider (no Tenant federate-tenant-lone/lone)`},
		{Name: "a name that is no request's", World: cmdtest.WorldRequest, Args: append(farm, "Bad_Name"),
			Code: 1, Usage: true, Err: `NAME "Bad_Name": must be a request's name as listed, <rule>-<32 hex digits>`},
		{Name: "--allow-reach of another request", World: cmdtest.WorldRequest, Args: append(farm, "{request}", "--allow-reach", "mapping-1"),
			Code: 1, Usage: true, Err: `--allow-reach "mapping-1": must be one of the NAMEs answered in this run`},
		{Name: "--allow-unconstrained without a name", World: cmdtest.WorldRequest, Args: append(farm, "--allow-unconstrained"),
			Code: 1, Usage: true, Err: "--allow-reach and --allow-unconstrained: only with the NAMEs of the requests to answer"},
		{Name: "--expiration below the minimum", World: cmdtest.WorldRequest, Args: append(farm, "{request}", "--expiration", "1m"),
			Code: 1, Usage: true, Err: `for "--expiration" flag: 1m is out of range: must be from 10m to 3650d`},
		{Name: "no consumer named", World: cmdtest.WorldRequest, Args: []string{"allow", "exchange", "--kubeconfig", "farm"},
			Code: 1, Usage: true, Err: `required flag(s) "remote-cluster-id" not set`},
	})
}

package cmd_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// status lists every credential of both roles (a table, -o wide, json, yaml, name), exits 3 or 4 for
// what a monitor watches, lists the audit trail with --history, and never writes.
func TestCommandTableStatus(t *testing.T) {
	header := []string{"REMOTE", "ROLE", "KIND", "NAME", "CREDENTIAL", "PHASE", "EXPIRES", "LEFT", "POD SECURITY", "CORDONED"}
	wide := append(header[:len(header):len(header)], "NAMESPACE", "USER", "TARGET", "MODE", "SETTINGS")
	check := append(header[:len(header):len(header)], "CHECK")
	left := regexp.MustCompile(`^(89|90)d$`) // a 90-day certificate issued a moment ago
	oneRow := func(t *testing.T, out string, header []string, want map[string]string) map[string]string {
		t.Helper()
		rows := tableOf(t, out, header...)
		if len(rows) != 1 {
			t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
		}
		wantRow(t, rows[0], want)
		if !left.MatchString(rows[0]["LEFT"]) {
			t.Errorf("LEFT %q, want 89d or 90d", rows[0]["LEFT"])
		}
		return rows[0]
	}
	provider := map[string]string{"REMOTE": "edge", "ROLE": "provider", "KIND": "ControlPlane", "NAME": "-", "CREDENTIAL": "Certificate", "PHASE": "Active",
		"POD SECURITY": "restricted", "CORDONED": "no"}
	consumer := map[string]string{"REMOTE": "farm", "ROLE": "consumer", "KIND": "ControlPlane", "NAME": "-", "CREDENTIAL": "Certificate", "PHASE": "-",
		"POD SECURITY": "-", "CORDONED": "-"}
	revoked := newWorld(func(t *testing.T) *tableEnv {
		e := tablePaired(t)
		e.must(t, "revoke", "--kubeconfig", "farm", "--remote-cluster-id", "edge")
		return e
	})
	cordoned := newWorld(func(t *testing.T) *tableEnv {
		e := tablePaired(t)
		e.must(t, "cordon", "tenant", "edge", "--kubeconfig", "farm")
		return e
	})
	lone := newWorld(func(t *testing.T) *tableEnv {
		e := tablePaired(t)
		e.w.Init("lone", "lone")
		return e
	})
	runTable(t, []tableRow{
		{name: "the provider's table", world: worldPaired, args: []string{"status", "--kubeconfig", "farm"},
			stdout: func(t *testing.T, _ *tableEnv, out string) { oneRow(t, out, header, provider) }},
		{name: "the consumer's table", world: worldPaired, args: []string{"status", "--kubeconfig", "edge"},
			stdout: func(t *testing.T, _ *tableEnv, out string) { oneRow(t, out, header, consumer) }},
		{name: "a cordoned consumer", world: cordoned, args: []string{"status", "--kubeconfig", "farm"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				oneRow(t, out, header, map[string]string{"REMOTE": "edge", "CORDONED": "yes"})
			}},
		{name: "-o wide", world: worldPaired, args: []string{"status", "--kubeconfig", "edge", "-o", "wide"},
			stdout: func(t *testing.T, e *tableEnv, out string) {
				row := oneRow(t, out, wide, map[string]string{"NAMESPACE": "federate-tenant-edge", "TARGET": "-", "MODE": "-", "SETTINGS": "API server=https://farm.fake:6443"})
				if row["USER"] != heldUser(t, e) {
					t.Errorf("USER %q, want the pairing's user", row["USER"])
				}
			}},
		{name: "-o wide on the provider", world: worldPaired, args: []string{"status", "--kubeconfig", "farm", "-o", "wide"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				row := oneRow(t, out, wide, map[string]string{"NAMESPACE": "federate-tenant-edge", "TARGET": "-", "MODE": "-"})
				// What a renewal keeps, in a fixed order.
				if !strings.HasPrefix(row["SETTINGS"], "role=federate-tenant; lifetime=90d; Pod Security level=restricted; API server=https://farm.fake:6443") {
					t.Errorf("SETTINGS %q", row["SETTINGS"])
				}
			}},
		{name: "-o json", world: worldPaired, args: []string{"status", "--kubeconfig", "farm", "-o", "json"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				list := jsonObject(t, out)
				if names := listNames(t, list); len(names) != 1 || names[0] != "provider.edge.controlplane" {
					t.Fatalf("items %v", names)
				}
				wantFields(t, list, map[string]string{"items.0.kind": "CredentialStatus", "items.0.status.remoteClusterID": "edge", "items.0.status.role": "provider",
					"items.0.status.kind": "ControlPlane", "items.0.status.phase": "Active", "items.0.status.credential": "Certificate",
					"items.0.status.namespace": "federate-tenant-edge", "items.0.status.podSecurity": "restricted", "items.0.status.cordoned": "false",
					"items.0.status.settings.lifetime": "90d", `items.0.metadata.labels.federate\.dev/role`: "provider"})
			}},
		{name: "-o yaml", world: worldPaired, args: []string{"status", "--kubeconfig", "edge", "-o", "yaml"},
			stdout: func(t *testing.T, e *tableEnv, out string) {
				list := yamlObject(t, out)
				if names := listNames(t, list); len(names) != 1 || names[0] != "consumer.farm.controlplane" {
					t.Fatalf("items %v", names)
				}
				wantFields(t, list, map[string]string{"items.0.status.role": "consumer", "items.0.status.remoteClusterID": "farm",
					"items.0.status.settings.API server": "https://farm.fake:6443", "items.0.status.user": heldUser(t, e)})
			}},
		{name: "-o name with a slice", world: worldImportedSlice, args: []string{"status", "--kubeconfig", "farm", "-o", "name"},
			stdout: wantStdout("credentialstatus.federate.dev/provider.edge.controlplane\ncredentialstatus.federate.dev/provider.edge.resourceslice.batch\n")},
		{name: "--check", world: worldPaired, args: []string{"status", "--kubeconfig", "edge", "--check"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				oneRow(t, out, check, map[string]string{"REMOTE": "farm", "CHECK": "ok"})
			}},
		// The fake provider runs no DaemonSet, so no NetworkPolicy engine: a warning, on stderr only.
		{name: "--check on a provider without a NetworkPolicy engine", world: worldPaired, args: []string{"status", "--kubeconfig", "farm", "--check"},
			stderr: []string{"WARNING", "no NetworkPolicy engine found on this cluster", "tenants' pods can reach the cloud's metadata addresses"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				oneRow(t, out, check, map[string]string{"REMOTE": "edge", "ROLE": "provider"})
			}},
		{name: "--check of a revoked identity", world: revoked, args: []string{"status", "--kubeconfig", "edge", "--check"},
			code: 4, err: "1 credential(s) not ok: consumer ControlPlane of farm: revoked",
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				oneRow(t, out, check, map[string]string{"CHECK": "revoked"})
			}},
		// A slice asked and not yet granted holds a key, not a credential: nothing to prove, nothing wrong.
		{name: "--check with a slice request pending", world: worldPendingSlice, args: []string{"status", "--kubeconfig", "edge", "--check"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				rows := tableOf(t, out, check...)
				if len(rows) != 2 {
					t.Fatalf("%d rows, want the identity and the pending key:\n%s", len(rows), out)
				}
				wantRow(t, rows[0], map[string]string{"KIND": "ControlPlane", "CHECK": "ok"})
				wantRow(t, rows[1], map[string]string{"KIND": "PendingKey", "NAME": "resource-farm.batch", "CHECK": "-"})
			}},
		{name: "--expiring-within a window holding the expiry", world: worldPaired, args: []string{"status", "--kubeconfig", "farm", "--expiring-within", "3650d"},
			code: 3, err: "1 credential(s) expire within 87600h0m0s: provider ControlPlane of edge expires ",
			stdout: func(t *testing.T, _ *tableEnv, out string) { oneRow(t, out, header, provider) }},
		{name: "--expiring-within a window before the expiry", world: worldPaired, args: []string{"status", "--kubeconfig", "farm", "--expiring-within", "30d"},
			stdout: func(t *testing.T, _ *tableEnv, out string) { oneRow(t, out, header, provider) }},
		// 4 wins over 3: a revoked credential is reported as revoked, not as expiring.
		{name: "--check and --expiring-within of a revoked identity", world: revoked, args: []string{"status", "--kubeconfig", "edge", "--check", "--expiring-within", "3650d"},
			code: 4, err: "consumer ControlPlane of farm: revoked",
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				oneRow(t, out, check, map[string]string{"CHECK": "revoked"})
			}},
		{name: "--history", world: worldPaired, args: []string{"status", "--kubeconfig", "farm", "--history"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				rows := tableOf(t, out, "TIME", "REMOTE", "ROLE", "REASON", "NOTE")
				if len(rows) == 0 {
					t.Fatalf("no audit record:\n%s", out)
				}
				wantRow(t, rows[0], map[string]string{"REMOTE": "edge", "ROLE": "provider", "REASON": "Issued"})
			}},
		{name: "--history -o json", world: revoked, args: []string{"status", "--kubeconfig", "farm", "--history", "-o", "json"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				list := jsonObject(t, out)
				names := listNames(t, list)
				var reasons []string
				for i := range names {
					wantFields(t, list, map[string]string{"items." + strconv.Itoa(i) + ".kind": "AuditRecord", "items." + strconv.Itoa(i) + ".status.remoteClusterID": "edge"})
					r, _ := fieldAt(list, "items."+strconv.Itoa(i)+".status.reason").(string)
					reasons = append(reasons, r)
				}
				if len(reasons) < 2 || reasons[0] != "Issued" || reasons[len(reasons)-1] != "Revoked" {
					t.Errorf("reasons %v, want Issued first, Revoked last", reasons)
				}
			}},
		{name: "a cluster in no pairing", world: lone, args: []string{"status", "--kubeconfig", "lone"},
			stdout: wantStdout("Cluster lone takes part in no pairing.\n")},
		{name: "a cluster in no pairing, -o json", world: lone, args: []string{"status", "--kubeconfig", "lone", "-o", "json"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				if names := listNames(t, jsonObject(t, out)); len(names) != 0 {
					t.Errorf("items %v, want none", names)
				}
			}},
		{name: "a cluster never initialized", world: worldPaired, args: []string{"status", "--kubeconfig", "lone"},
			code: 1, err: "this cluster is not initialized for kubectl federate", stderr: []string{"run kubectl federate init"}},
		{name: "--history with --check", world: worldPaired, args: []string{"status", "--kubeconfig", "farm", "--history", "--check"},
			code: 1, usage: true, err: "--history: cannot be combined with --check or --expiring-within"},
		{name: "a negative window", world: worldPaired, args: []string{"status", "--kubeconfig", "farm", "--expiring-within", "-1h"},
			code: 1, usage: true, err: `for "--expiring-within" flag: -1h is out of range`},
		{name: "an unknown output format", world: worldPaired, args: []string{"status", "--kubeconfig", "farm", "-o", "xml"},
			code: 1, usage: true, err: `invalid argument "xml" for "-o, --output" flag`},
		{name: "a positional argument", world: worldPaired, args: []string{"status", "edge", "--kubeconfig", "farm"},
			code: 1, usage: true, err: `unknown command "edge"`},
	})
}

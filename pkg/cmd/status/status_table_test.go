package status_test

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// status lists every credential of both roles (a table, -o wide, json, yaml, name), exits 3 or 4 for
// what a monitor watches, lists the audit trail with --history, and never writes.
func TestCommandTableStatus(t *testing.T) {
	header := []string{"REMOTE", "ROLE", "KIND", "NAME", "PHASE", "LEFT"}
	wide := append(header[:len(header):len(header)], "POD SECURITY", "CREDENTIAL")
	check := append(header[:len(header):len(header)], "CHECK")
	left := regexp.MustCompile(`^(89|90)d$`) // a 90-day certificate issued a moment ago
	oneRow := func(t *testing.T, out string, header []string, want map[string]string) map[string]string {
		t.Helper()
		rows := cmdtest.TableOf(t, out, header...)
		if len(rows) != 1 {
			t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
		}
		cmdtest.WantRow(t, rows[0], want)
		if !left.MatchString(rows[0]["LEFT"]) {
			t.Errorf("LEFT %q, want 89d or 90d", rows[0]["LEFT"])
		}
		return rows[0]
	}
	provider := map[string]string{"REMOTE": "edge", "ROLE": "provider", "KIND": "ControlPlane", "NAME": "-", "PHASE": "Active"}
	consumer := map[string]string{"REMOTE": "farm", "ROLE": "consumer", "KIND": "ControlPlane", "NAME": "-", "PHASE": "-"}
	revoked := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		e.Must(t, "revoke", "--kubeconfig", "farm", "--remote-cluster-id", "edge")
		return e
	})
	cordonedWorld := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		e.Must(t, "cordon", "tenant", "edge", "--kubeconfig", "farm")
		return e
	})
	lone := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		e.World.Init("lone", "lone")
		return e
	})
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "the provider's table", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) { oneRow(t, out, header, provider) }},
		{Name: "the consumer's table", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "edge"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) { oneRow(t, out, header, consumer) }},
		{Name: "a cordoned consumer", World: cordonedWorld, Args: []string{"status", "--kubeconfig", "farm"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				oneRow(t, out, header, map[string]string{"REMOTE": "edge", "PHASE": "Active,Cordoned"})
			}},
		// A cordoned consumer's own check: its next step is the provider's uncordon, once, not renew.
		{Name: "--check of a cordoned consumer", World: cordonedWorld, Args: []string{"status", "--kubeconfig", "edge", "--check"},
			Code: 4, Err: "1 credential(s) not ok: consumer ControlPlane of farm: cordoned (the provider cordoned this consumer: it may not start new workloads); a cordoned consumer starts no new workloads until the provider's administrator runs kubectl federate uncordon tenant",
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				oneRow(t, out, check, map[string]string{"CHECK": "cordoned"})
			}},
		{Name: "-o wide", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "edge", "-o", "wide"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				oneRow(t, out, wide, map[string]string{"POD SECURITY": "-", "CREDENTIAL": "Certificate"})
			}},
		{Name: "-o wide on the provider", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "-o", "wide"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				oneRow(t, out, wide, map[string]string{"POD SECURITY": "restricted", "CREDENTIAL": "Certificate"})
			}},
		{Name: "-o json", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "-o", "json"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				list := cmdtest.JSONObject(t, out)
				if names := cmdtest.ListNames(t, list); len(names) != 1 || names[0] != "provider.edge.controlplane" {
					t.Fatalf("items %v", names)
				}
				cmdtest.WantFields(t, list, map[string]string{"items.0.kind": "CredentialStatus", "items.0.status.remoteClusterID": "edge", "items.0.status.role": "provider",
					"items.0.status.kind": "ControlPlane", "items.0.status.phase": "Active", "items.0.status.credential": "Certificate",
					"items.0.status.namespace": "federate-tenant-edge", "items.0.status.podSecurity": "restricted", "items.0.status.cordoned": "false",
					"items.0.status.settings.lifetime": "90d", `items.0.metadata.labels.federate\.dev/role`: "provider"})
			}},
		{Name: "-o yaml", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "edge", "-o", "yaml"},
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				list := cmdtest.YAMLObject(t, out)
				if names := cmdtest.ListNames(t, list); len(names) != 1 || names[0] != "consumer.farm.controlplane" {
					t.Fatalf("items %v", names)
				}
				cmdtest.WantFields(t, list, map[string]string{"items.0.status.role": "consumer", "items.0.status.remoteClusterID": "farm",
					"items.0.status.settings.API server": "https://farm.fake:6443", "items.0.status.user": cmdtest.HeldUser(t, e)})
			}},
		{Name: "-o name with a slice", World: cmdtest.WorldImportedSlice, Args: []string{"status", "--kubeconfig", "farm", "-o", "name"},
			Stdout: cmdtest.WantStdout("credentialstatus.federate.dev/provider.edge.controlplane\ncredentialstatus.federate.dev/provider.edge.resourceslice.batch\n")},
		{Name: "--check", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "edge", "--check"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				oneRow(t, out, check, map[string]string{"REMOTE": "farm", "CHECK": "ok"})
			}},
		// The fake provider runs no DaemonSet, so no NetworkPolicy engine: a warning, on stderr only.
		{Name: "--check on a provider without a NetworkPolicy engine", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "--check"},
			Stderr: []string{"WARNING", "no NetworkPolicy engine found on this cluster", "tenants' pods can reach the cloud's metadata addresses"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				oneRow(t, out, check, map[string]string{"REMOTE": "edge", "ROLE": "provider"})
			}},
		{Name: "--check of a revoked identity", World: revoked, Args: []string{"status", "--kubeconfig", "edge", "--check"},
			Code: 4, Err: "1 credential(s) not ok: consumer ControlPlane of farm: revoked (authenticates, but may not create pods in federate-tenant-edge: authorized for nothing it was issued for); a revoked pairing is authenticated again (kubectl federate authenticate, or the manual flow) with the provider's consent",
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				oneRow(t, out, check, map[string]string{"CHECK": "revoked"})
			}},
		// A slice asked and not yet granted holds a key, not a credential: nothing to prove, nothing wrong.
		{Name: "--check with a slice request pending", World: cmdtest.WorldPendingSlice, Args: []string{"status", "--kubeconfig", "edge", "--check"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				rows := cmdtest.TableOf(t, out, check...)
				if len(rows) != 2 {
					t.Fatalf("%d rows, want the identity and the pending key:\n%s", len(rows), out)
				}
				cmdtest.WantRow(t, rows[0], map[string]string{"KIND": "ControlPlane", "CHECK": "ok"})
				cmdtest.WantRow(t, rows[1], map[string]string{"KIND": "PendingKey", "NAME": "resource-farm.batch", "CHECK": "-"})
			}},
		{Name: "--expiring-within a window holding the expiry", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "--expiring-within", "3650d"},
			Code: 3, Err: "1 credential(s) expire within 87600h0m0s: provider ControlPlane of edge expires ",
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) { oneRow(t, out, header, provider) }},
		{Name: "--expiring-within a window before the expiry", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "--expiring-within", "30d"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) { oneRow(t, out, header, provider) }},
		// 4 wins over 3: a revoked credential is reported as revoked, not as expiring.
		{Name: "--check and --expiring-within of a revoked identity", World: revoked, Args: []string{"status", "--kubeconfig", "edge", "--check", "--expiring-within", "3650d"},
			Code: 4, Err: "consumer ControlPlane of farm: revoked",
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				oneRow(t, out, check, map[string]string{"CHECK": "revoked"})
			}},
		{Name: "--history", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "--history"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				rows := cmdtest.TableOf(t, out, "AGE", "REMOTE", "ROLE", "REASON", "NOTE")
				if len(rows) == 0 {
					t.Fatalf("no audit record:\n%s", out)
				}
				cmdtest.WantRow(t, rows[0], map[string]string{"REMOTE": "edge", "ROLE": "provider", "REASON": "Issued"})
			}},
		{Name: "--history -o json", World: revoked, Args: []string{"status", "--kubeconfig", "farm", "--history", "-o", "json"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				list := cmdtest.JSONObject(t, out)
				names := cmdtest.ListNames(t, list)
				var reasons []string
				for i := range names {
					cmdtest.WantFields(t, list, map[string]string{"items." + strconv.Itoa(i) + ".kind": "AuditRecord", "items." + strconv.Itoa(i) + ".status.remoteClusterID": "edge"})
					r, _ := cmdtest.FieldAt(list, "items."+strconv.Itoa(i)+".status.reason").(string)
					reasons = append(reasons, r)
				}
				if len(reasons) < 2 || reasons[0] != "Issued" || reasons[len(reasons)-1] != "Revoked" {
					t.Errorf("reasons %v, want Issued first, Revoked last", reasons)
				}
			}},
		{Name: "a cluster in no pairing", World: lone, Args: []string{"status", "--kubeconfig", "lone"},
			Stdout: cmdtest.WantStdout("Cluster lone takes part in no pairing.\n")},
		{Name: "a cluster in no pairing, -o json", World: lone, Args: []string{"status", "--kubeconfig", "lone", "-o", "json"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if names := cmdtest.ListNames(t, cmdtest.JSONObject(t, out)); len(names) != 0 {
					t.Errorf("items %v, want none", names)
				}
			}},
		{Name: "a cluster never initialized", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "lone"},
			Code: 1, Err: "this cluster is not initialized for kubectl federate", Stderr: []string{"run kubectl federate init"}},
		{Name: "--history with --check", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "--history", "--check"},
			Code: 1, Usage: true, Err: "--history: cannot be combined with --check or --expiring-within"},
		{Name: "a negative window", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "--expiring-within", "-1h"},
			Code: 1, Usage: true, Err: `for "--expiring-within" flag: -1h is out of range`},
		{Name: "an unknown output format", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "-o", "xml"},
			Code: 1, Usage: true, Err: `invalid argument "xml" for "-o, --output" flag`},
		{Name: "a positional argument", World: cmdtest.WorldPaired, Args: []string{"status", "edge", "--kubeconfig", "farm"},
			Code: 1, Usage: true, Err: `unknown command "edge"`},
	})
}

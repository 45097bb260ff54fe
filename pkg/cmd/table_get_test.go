package cmd_test

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// get kubeconfig reads the kubeconfig a consumer holds and writes nothing, except with --for-user, where
// the first run leaves an exchange request (and its waiting key) and says it waits for consent.
func TestCommandTableGetKubeconfig(t *testing.T) {
	edge := []string{"get", "kubeconfig", "--kubeconfig", "edge"}
	runTable(t, []tableRow{
		{name: "the pairing's kubeconfig", world: worldPaired, args: append(edge, "--remote-cluster-id", "farm"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				kc := kubeconfigOf(t, out, "https://farm.fake:6443", "federate-tenant-edge")
				wantFields(t, kc, map[string]string{"current-context": "farm"})
			}},
		{name: "a resource slice's kubeconfig", world: worldImportedSlice, args: append(edge, "--remote-cluster-id", "farm", "--resource-slice", "batch"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				kc := yamlObject(t, out)
				ns, _ := fieldAt(kc, "contexts.0.context.namespace").(string)
				kubeconfigOf(t, out, "https://farm.fake:6443", ns)
				// The slice's own namespace on the provider, not the pairing's.
				if !strings.HasPrefix(ns, "fs-edge-batch-") {
					t.Errorf("the slice's kubeconfig works in %q, want its sandbox fs-edge-batch-*", ns)
				}
				wantFields(t, kc, map[string]string{"current-context": "farm.batch"})
			}},
		{name: "a provider this cluster holds nothing of", world: worldPaired, args: append(edge, "--remote-cluster-id", "lone"),
			code: 1, err: `no kubeconfig for provider "lone" (Secret federate-system/kubeconfig-controlplane-lone not found)`},
		{name: "a slice this cluster never imported", world: worldPaired, args: append(edge, "--remote-cluster-id", "farm", "--resource-slice", "nope"),
			code: 1, err: `no kubeconfig for resource slice "nope" of provider "farm" (Secret federate-system/kubeconfig-resource-farm.nope not found)`},
		{name: "a slice name that is no DNS label", world: worldPaired, args: append(edge, "--remote-cluster-id", "farm", "--resource-slice", "Bad_Name"),
			code: 1, usage: true, err: `--resource-slice "Bad_Name": must be a DNS label`},
		{name: "a provider ID that is no DNS label", world: worldPaired, args: append(edge, "--remote-cluster-id", "Farm"),
			code: 1, usage: true, err: `--remote-cluster-id "Farm": must be a DNS label`},
		{name: "no provider named", world: worldPaired, args: edge,
			code: 1, usage: true, err: `required flag(s) "remote-cluster-id" not set`},
		{name: "the provider's kubeconfig without --for-user", world: worldPaired, args: append(edge, "--remote-cluster-id", "farm", "--remote-kubeconfig", "farm"),
			code: 1, usage: true, err: "--remote-kubeconfig or --remote-context: only with --for-user"},
		{name: "--resource-slice with --for-user", world: worldRules, args: append(edge, "--remote-cluster-id", "farm", "--resource-slice", "batch", "--for-user", "alice"),
			code: 1, usage: true, err: "--resource-slice and --for-user: give one"},
		// The rules give root the pairing's identity: its kubeconfig, nothing asked of the provider.
		{name: "--for-user of a privileged rule", world: worldRules, args: append(edge, "--remote-cluster-id", "farm", "--for-user", "root"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				kc := kubeconfigOf(t, out, "https://farm.fake:6443", "federate-tenant-edge")
				wantFields(t, kc, map[string]string{"current-context": "farm", "users.0.user.as": "<absent>"})
			}},
		{name: "--for-user no rule matches", world: worldRules, args: append(edge, "--remote-cluster-id", "farm", "--for-user", "eve"),
			code: 1, err: `--for-user "eve": no identity-exchange rule matches user "eve"`},
		// The first ask leaves the request through the pairing (and its key here), and fails until consent.
		{name: "--for-user asked for the first time", world: worldRules, args: append(edge, "--remote-cluster-id", "farm", "--for-user", "alice"),
			code: 1, err: "is waiting for the provider's consent",
			stderr: []string{"kubectl federate allow exchange mapping-"},
			writes: map[string][]string{"edge": {"create secrets"}, "farm": {"create exchangerequests"}}},
		// Holding the provider's kubeconfig too is consent: the request is left as its administrator and
		// allowed at once, which on a fake stops at the constrained-impersonation probe with nothing issued.
		{name: "--for-user with the provider's kubeconfig", world: worldRules, args: append(edge, "--remote-cluster-id", "farm", "--for-user", "alice", "--remote-kubeconfig", "farm"),
			code: 1, err: "provider: could not find out whether this cluster honours constrained impersonation",
			writes: map[string][]string{"edge": {"create secrets"}},
			sent: map[string]func(*testing.T, []string){"farm": func(t *testing.T, got []string) {
				if !slices.Contains(got, "create exchangerequests") || slices.Contains(got, "create certificatesigningrequests") || slices.Contains(got, "patch exchangerequests") {
					t.Errorf("farm was sent %v: want the request left, and nothing issued", got)
				}
			}}},
		{name: "--for-user with the kubeconfig of another provider", world: worldRules, args: append(edge, "--remote-cluster-id", "lone", "--for-user", "alice", "--remote-kubeconfig", "farm"),
			code: 1, err: `--remote-cluster-id "lone": the provider is initialized with cluster ID "farm"`},
		{name: "--for-user once allowed", world: worldIssued, args: append(edge, "--remote-cluster-id", "farm", "--for-user", "alice"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				kc := kubeconfigOf(t, out, "https://farm.fake:6443", "federate-tenant-edge")
				// The exchange credential acts as the rule's target, and has a context of its own.
				wantFields(t, kc, map[string]string{"users.0.user.as": "bob", "current-context": "farm-exchange-mapping"})
			}},
		{name: "--for-user once refused", world: worldDenied, args: append(edge, "--remote-cluster-id", "farm", "--for-user", "alice"),
			code: 1, err: `was denied by provider "farm": refused by the provider: not for prod`},
		{name: "--dry-run without --for-user", world: worldPaired, args: append(edge, "--remote-cluster-id", "farm", "--dry-run"),
			code: 1, usage: true, err: "--dry-run: only with --for-user"},
	})
}

// get resourceslices lists both sides' slices: a table, or a v1 List of ResourceSliceInfo; a pairing
// with none says so; it never writes.
func TestCommandTableGetResourceSlices(t *testing.T) {
	header := []string{"CONSUMER", "PROVIDER", "NAME", "CLASS", "PHASE", "REQUESTED", "GRANTED", "NAMESPACE", "AUTO-ACCEPT", "EXPIRES"}
	pending := map[string]string{"CONSUMER": "edge", "PROVIDER": "farm", "NAME": "batch", "CLASS": "-", "PHASE": "Pending", "REQUESTED": "cpu=1,memory=1Gi", "GRANTED": "-"}
	runTable(t, []tableRow{
		{name: "provider table", world: worldPendingSlice, args: []string{"get", "resourceslices", "--kubeconfig", "farm"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				rows := tableOf(t, out, header...)
				if len(rows) != 1 {
					t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
				}
				wantRow(t, rows[0], pending)
			}},
		{name: "consumer table once imported", world: worldImportedSlice, args: []string{"get", "resourceslices", "--kubeconfig", "edge", "--remote-cluster-id", "farm"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				rows := tableOf(t, out, header...)
				if len(rows) != 1 {
					t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
				}
				wantRow(t, rows[0], map[string]string{"NAME": "batch", "CLASS": "default", "PHASE": "Imported", "GRANTED": "cpu=1,ephemeral-storage=2Gi,memory=1Gi,pods=4"})
				if !strings.HasPrefix(rows[0]["NAMESPACE"], "fs-edge-batch-") {
					t.Errorf("NAMESPACE %q, want the slice's sandbox", rows[0]["NAMESPACE"])
				}
			}},
		{name: "-o json", world: worldPendingSlice, args: []string{"get", "resourceslices", "--kubeconfig", "farm", "-o", "json"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				list := jsonObject(t, out)
				if names := listNames(t, list); len(names) != 1 || names[0] != "batch" {
					t.Fatalf("items %v, want [batch]", names)
				}
				wantFields(t, list, map[string]string{"items.0.kind": "ResourceSliceInfo", "items.0.apiVersion": "federate.dev/v1alpha1",
					"items.0.status.consumerID": "edge", "items.0.status.providerID": "farm", "items.0.status.phase": "Pending",
					"items.0.status.requested.cpu": "1", "items.0.status.requested.memory": "1Gi"})
			}},
		{name: "-o yaml on the consumer", world: worldPendingSlice, args: []string{"get", "resourceslices", "--kubeconfig", "edge", "-o", "yaml"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				list := yamlObject(t, out)
				if names := listNames(t, list); len(names) != 1 || names[0] != "batch" {
					t.Fatalf("items %v, want [batch]", names)
				}
				wantFields(t, list, map[string]string{`items.0.metadata.labels.federate\.dev/role`: "consumer", "items.0.status.providerID": "farm", "items.0.status.phase": "Pending"})
			}},
		{name: "a pairing with no slice", world: worldPendingSlice, args: []string{"get", "resourceslices", "--kubeconfig", "farm", "--remote-cluster-id", "lone"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				if out != "No resource slices found.\n" {
					t.Errorf("stdout %q, want the empty listing's line", out)
				}
			}},
		{name: "a pairing with no slice, -o json", world: worldPendingSlice, args: []string{"get", "resourceslices", "--kubeconfig", "farm", "--remote-cluster-id", "lone", "-o", "json"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				if names := listNames(t, jsonObject(t, out)); len(names) != 0 {
					t.Errorf("items %v, want none", names)
				}
			}},
		{name: "an ID that is no DNS label", world: worldPaired, args: []string{"get", "resourceslices", "--kubeconfig", "farm", "--remote-cluster-id", "Bad_ID"},
			code: 1, usage: true, err: `--remote-cluster-id "Bad_ID": must be a DNS label`},
		{name: "an unknown output format", world: worldPaired, args: []string{"get", "resourceslices", "--kubeconfig", "farm", "-o", "xml"},
			code: 1, usage: true, err: `invalid argument "xml" for "-o, --output" flag`},
		{name: "a positional argument", world: worldPaired, args: []string{"get", "resourceslices", "batch", "--kubeconfig", "farm"},
			code: 1, usage: true, err: `unknown command "batch"`},
	})
}

// get nonce prints the ticket line exactly (no newline off a terminal), or its parts with -o; a consumer
// with no nonce is NotFound with the command that makes one; it never writes.
func TestCommandTableGetNonce(t *testing.T) {
	farm := []string{"get", "nonce", "--kubeconfig", "farm"}
	parts := func(t *testing.T, obj map[string]any) {
		t.Helper()
		wantFields(t, obj, map[string]string{"kind": "NonceTicket", "apiVersion": "federate.dev/v1alpha1", "metadata.name": "lone",
			"status.providerID": "farm", "status.consumerID": "lone"})
		nonce, _ := fieldAt(obj, "status.nonce").(string)
		ticket, _ := fieldAt(obj, "status.ticket").(string)
		if len(nonce) != 43 || !strings.HasPrefix(ticket, "federate-nonce.v1.farm.lone."+nonce+".") {
			t.Errorf("nonce %q, ticket %q: want a 43-character nonce inside the ticket", nonce, ticket)
		}
		exp, err := time.Parse(time.RFC3339, fieldAt(obj, "status.expiresAt").(string))
		if err != nil || !exp.After(time.Now()) {
			t.Errorf("expiresAt %v (%v), want a time to come", fieldAt(obj, "status.expiresAt"), err)
		}
	}
	runTable(t, []tableRow{
		{name: "the ticket line", world: worldNonce, args: append(farm, "--remote-cluster-id", "lone"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				// federate-nonce.v1.PROVIDER.CONSUMER.NONCE.MAC, and nothing after it, for $(...).
				f := strings.Split(out, ".")
				if len(f) != 6 || f[0] != "federate-nonce" || f[1] != "v1" || f[2] != "farm" || f[3] != "lone" || len(f[4]) != 43 || strings.ContainsAny(out, "\n ") {
					t.Errorf("stdout %q, want exactly federate-nonce.v1.farm.lone.NONCE.MAC", out)
				}
			}},
		{name: "-o json", world: worldNonce, args: append(farm, "--remote-cluster-id", "lone", "-o", "json"),
			stdout: func(t *testing.T, _ *tableEnv, out string) { parts(t, jsonObject(t, out)) }},
		{name: "-o yaml", world: worldNonce, args: append(farm, "--remote-cluster-id", "lone", "-o", "yaml"),
			stdout: func(t *testing.T, _ *tableEnv, out string) { parts(t, yamlObject(t, out)) }},
		{name: "-o name", world: worldNonce, args: append(farm, "--remote-cluster-id", "lone", "-o", "name"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				if out != "nonceticket.federate.dev/lone\n" {
					t.Errorf("stdout %q", out)
				}
			}},
		{name: "a consumer with no nonce", world: worldNonce, args: append(farm, "--remote-cluster-id", "edgy"),
			code: 1, err: `no nonce for consumer "edgy"`, stderr: []string{"kubectl federate create nonce --remote-cluster-id edgy"}},
		// The nonce edge paired with was used: it is no longer there to print.
		{name: "a nonce already used", world: worldPaired, args: append(farm, "--remote-cluster-id", "edge"),
			code: 1, err: `no nonce for consumer "edge": it was already used`},
		{name: "no consumer named", world: worldNonce, args: farm,
			code: 1, usage: true, err: `required flag(s) "remote-cluster-id" not set`},
		{name: "an ID that is no DNS label", world: worldNonce, args: append(farm, "--remote-cluster-id", "Lone"),
			code: 1, usage: true, err: `--remote-cluster-id "Lone": must be a DNS label`},
		{name: "an unknown output format", world: worldNonce, args: append(farm, "--remote-cluster-id", "lone", "-o", "wide"),
			code: 1, usage: true, err: `invalid argument "wide" for "-o, --output" flag`},
	})
}

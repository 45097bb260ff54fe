package get_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// get kubeconfig reads the kubeconfig a consumer holds and writes nothing, except with --for-user, where
// the first run leaves an exchange request (and its waiting key) and says it waits for consent.
func TestCommandTableGetKubeconfig(t *testing.T) {
	edge := []string{"get", "kubeconfig", "--kubeconfig", "edge"}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "the pairing's kubeconfig", World: cmdtest.WorldPaired, Args: append(edge, "--remote-cluster-id", "farm"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				kc := cmdtest.KubeconfigOf(t, out, "https://farm.fake:6443", "federate-tenant-edge")
				cmdtest.WantFields(t, kc, map[string]string{"current-context": "farm"})
			}},
		{Name: "a resource slice's kubeconfig", World: cmdtest.WorldImportedSlice, Args: append(edge, "--remote-cluster-id", "farm", "--resource-slice", "batch"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				kc := cmdtest.YAMLObject(t, out)
				ns, _ := cmdtest.FieldAt(kc, "contexts.0.context.namespace").(string)
				cmdtest.KubeconfigOf(t, out, "https://farm.fake:6443", ns)
				// The slice's own namespace on the provider, not the pairing's.
				if !strings.HasPrefix(ns, "fs-edge-batch-") {
					t.Errorf("the slice's kubeconfig works in %q, want its sandbox fs-edge-batch-*", ns)
				}
				cmdtest.WantFields(t, kc, map[string]string{"current-context": "farm.batch"})
			}},
		{Name: "a provider this cluster holds nothing of", World: cmdtest.WorldPaired, Args: append(edge, "--remote-cluster-id", "lone"),
			Code: 1, Err: `provider "lone" not found among the providers this cluster holds an identity of`},
		{Name: "a typo", World: cmdtest.WorldPaired, Args: append(edge, "--remote-cluster-id", "farn"),
			Code: 1, Err: `provider "farn" not found among the providers this cluster holds an identity of (import its identity first); did you mean "farm"?`},
		{Name: "a slice this cluster never imported", World: cmdtest.WorldPaired, Args: append(edge, "--remote-cluster-id", "farm", "--resource-slice", "nope"),
			Code: 1, Err: `no kubeconfig for resource slice "nope" of provider "farm" (Secret federate-system/kubeconfig-resource-farm.nope not found)`},
		{Name: "a slice name that is no DNS label", World: cmdtest.WorldPaired, Args: append(edge, "--remote-cluster-id", "farm", "--resource-slice", "Bad_Name"),
			Code: 1, Usage: true, Err: `--resource-slice "Bad_Name": must be a DNS label`},
		{Name: "a provider ID that is no DNS label", World: cmdtest.WorldPaired, Args: append(edge, "--remote-cluster-id", "Farm"),
			Code: 1, Usage: true, Err: `--remote-cluster-id "Farm": must be a DNS label`},
		{Name: "no provider named", World: cmdtest.WorldPaired, Args: edge,
			Code: 1, Usage: true, Err: `required flag(s) "remote-cluster-id" not set`},
		{Name: "the provider's kubeconfig without --for-user", World: cmdtest.WorldPaired, Args: append(edge, "--remote-cluster-id", "farm", "--remote-kubeconfig", "farm"),
			Code: 1, Usage: true, Err: "--remote-kubeconfig or --remote-context: only with --for-user"},
		{Name: "--resource-slice with --for-user", World: cmdtest.WorldRules, Args: append(edge, "--remote-cluster-id", "farm", "--resource-slice", "batch", "--for-user", "alice"),
			Code: 1, Usage: true, Err: "--resource-slice and --for-user: give one"},
		// The rules give root the pairing's identity: its kubeconfig, nothing asked of the provider.
		{Name: "--for-user of a privileged rule", World: cmdtest.WorldRules, Args: append(edge, "--remote-cluster-id", "farm", "--for-user", "root"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				kc := cmdtest.KubeconfigOf(t, out, "https://farm.fake:6443", "federate-tenant-edge")
				cmdtest.WantFields(t, kc, map[string]string{"current-context": "farm", "users.0.user.as": "<absent>"})
			}},
		{Name: "--for-user no rule matches", World: cmdtest.WorldRules, Args: append(edge, "--remote-cluster-id", "farm", "--for-user", "eve"),
			Code: 1, Err: `--for-user "eve": no identity-exchange rule matches user "eve"`},
		// The first ask leaves the request through the pairing (and its key here), and fails until consent.
		{Name: "--for-user asked for the first time", World: cmdtest.WorldRules, Args: append(edge, "--remote-cluster-id", "farm", "--for-user", "alice"),
			Code: 1, Err: "is waiting for the provider's consent",
			Stderr: []string{"kubectl federate allow exchange mapping-"},
			Writes: map[string][]string{"edge": {"create secrets"}, "farm": {"create exchangerequests"}}},
		// Holding the provider's kubeconfig too is consent: the request is left as its administrator and
		// allowed at once, which on a fake stops at the constrained-impersonation probe with nothing issued.
		{Name: "--for-user with the provider's kubeconfig", World: cmdtest.WorldRules, Args: append(edge, "--remote-cluster-id", "farm", "--for-user", "alice", "--remote-kubeconfig", "farm"),
			Code: 1, Err: "provider: could not find out whether this cluster honours constrained impersonation",
			Writes: map[string][]string{"edge": {"create secrets"}},
			Sent: map[string]func(*testing.T, []string){"farm": func(t *testing.T, got []string) {
				if !slices.Contains(got, "create exchangerequests") || slices.Contains(got, "create certificatesigningrequests") || slices.Contains(got, "patch exchangerequests") {
					t.Errorf("farm was sent %v: want the request left, and nothing issued", got)
				}
			}}},
		{Name: "--for-user with the kubeconfig of another provider", World: cmdtest.WorldRules, Args: append(edge, "--remote-cluster-id", "lone", "--for-user", "alice", "--remote-kubeconfig", "farm"),
			Code: 1, Err: `--remote-cluster-id "lone": the provider is initialized with cluster ID "farm"`},
		{Name: "--for-user once allowed", World: cmdtest.WorldIssued, Args: append(edge, "--remote-cluster-id", "farm", "--for-user", "alice"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				kc := cmdtest.KubeconfigOf(t, out, "https://farm.fake:6443", "federate-tenant-edge")
				// The exchange credential acts as the rule's target, and has a context of its own.
				cmdtest.WantFields(t, kc, map[string]string{"users.0.user.as": "bob", "current-context": "farm-exchange-mapping"})
			}},
		{Name: "--for-user once refused", World: cmdtest.WorldDenied, Args: append(edge, "--remote-cluster-id", "farm", "--for-user", "alice"),
			Code: 1, Err: `was denied by provider "farm": refused by the provider: not for prod`},
		{Name: "--dry-run without --for-user", World: cmdtest.WorldPaired, Args: append(edge, "--remote-cluster-id", "farm", "--dry-run"),
			Code: 1, Usage: true, Err: "--dry-run: only with --for-user"},
	})
}

// get resourceslices lists both sides' slices: a table, or a v1 List of ResourceSliceInfo; a pairing
// with none says so; it never writes.
func TestCommandTableGetResourceSlices(t *testing.T) {
	header := []string{"CONSUMER", "PROVIDER", "NAME", "CLASS", "PHASE", "REQUESTED", "GRANTED", "NAMESPACE", "AUTO-ACCEPT", "EXPIRES"}
	pending := map[string]string{"CONSUMER": "edge", "PROVIDER": "farm", "NAME": "batch", "CLASS": "-", "PHASE": "Pending", "REQUESTED": "cpu=1,memory=1Gi", "GRANTED": "-"}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "provider table", World: cmdtest.WorldPendingSlice, Args: []string{"get", "resourceslices", "--kubeconfig", "farm"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				rows := cmdtest.TableOf(t, out, header...)
				if len(rows) != 1 {
					t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
				}
				cmdtest.WantRow(t, rows[0], pending)
			}},
		{Name: "consumer table once imported", World: cmdtest.WorldImportedSlice, Args: []string{"get", "resourceslices", "--kubeconfig", "edge", "--remote-cluster-id", "farm"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				rows := cmdtest.TableOf(t, out, header...)
				if len(rows) != 1 {
					t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
				}
				cmdtest.WantRow(t, rows[0], map[string]string{"NAME": "batch", "CLASS": "default", "PHASE": "Imported", "GRANTED": "cpu=1,ephemeral-storage=2Gi,memory=1Gi,pods=4"})
				if !strings.HasPrefix(rows[0]["NAMESPACE"], "fs-edge-batch-") {
					t.Errorf("NAMESPACE %q, want the slice's sandbox", rows[0]["NAMESPACE"])
				}
			}},
		{Name: "-o json", World: cmdtest.WorldPendingSlice, Args: []string{"get", "resourceslices", "--kubeconfig", "farm", "-o", "json"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				list := cmdtest.JSONObject(t, out)
				if names := cmdtest.ListNames(t, list); len(names) != 1 || names[0] != "batch" {
					t.Fatalf("items %v, want [batch]", names)
				}
				cmdtest.WantFields(t, list, map[string]string{"items.0.kind": "ResourceSliceInfo", "items.0.apiVersion": "federate.dev/v1alpha1",
					"items.0.status.consumerID": "edge", "items.0.status.providerID": "farm", "items.0.status.phase": "Pending",
					"items.0.status.requested.cpu": "1", "items.0.status.requested.memory": "1Gi"})
			}},
		{Name: "-o yaml on the consumer", World: cmdtest.WorldPendingSlice, Args: []string{"get", "resourceslices", "--kubeconfig", "edge", "-o", "yaml"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				list := cmdtest.YAMLObject(t, out)
				if names := cmdtest.ListNames(t, list); len(names) != 1 || names[0] != "batch" {
					t.Fatalf("items %v, want [batch]", names)
				}
				cmdtest.WantFields(t, list, map[string]string{`items.0.metadata.labels.federate\.dev/role`: "consumer", "items.0.status.providerID": "farm", "items.0.status.phase": "Pending"})
			}},
		{Name: "a pairing with no slice", World: cmdtest.WorldPendingSlice, Args: []string{"get", "resourceslices", "--kubeconfig", "farm", "--remote-cluster-id", "lone"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if out != "No resource slices found.\n" {
					t.Errorf("stdout %q, want the empty listing's line", out)
				}
			}},
		{Name: "a pairing with no slice, -o json", World: cmdtest.WorldPendingSlice, Args: []string{"get", "resourceslices", "--kubeconfig", "farm", "--remote-cluster-id", "lone", "-o", "json"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if names := cmdtest.ListNames(t, cmdtest.JSONObject(t, out)); len(names) != 0 {
					t.Errorf("items %v, want none", names)
				}
			}},
		{Name: "an ID that is no DNS label", World: cmdtest.WorldPaired, Args: []string{"get", "resourceslices", "--kubeconfig", "farm", "--remote-cluster-id", "Bad_ID"},
			Code: 1, Usage: true, Err: `--remote-cluster-id "Bad_ID": must be a DNS label`},
		{Name: "an unknown output format", World: cmdtest.WorldPaired, Args: []string{"get", "resourceslices", "--kubeconfig", "farm", "-o", "xml"},
			Code: 1, Usage: true, Err: `invalid argument "xml" for "-o, --output" flag`},
		{Name: "a positional argument", World: cmdtest.WorldPaired, Args: []string{"get", "resourceslices", "batch", "--kubeconfig", "farm"},
			Code: 1, Usage: true, Err: `unknown command "batch"`},
	})
}

// get nonce prints the ticket line exactly (no newline off a terminal), or its parts with -o; a consumer
// with no nonce is NotFound with the command that makes one; it never writes.
func TestCommandTableGetNonce(t *testing.T) {
	farm := []string{"get", "nonce", "--kubeconfig", "farm"}
	parts := func(t *testing.T, obj map[string]any) {
		t.Helper()
		cmdtest.WantFields(t, obj, map[string]string{"kind": "NonceTicket", "apiVersion": "federate.dev/v1alpha1", "metadata.name": "lone",
			"status.providerID": "farm", "status.consumerID": "lone"})
		nonce, _ := cmdtest.FieldAt(obj, "status.nonce").(string)
		ticket, _ := cmdtest.FieldAt(obj, "status.ticket").(string)
		if len(nonce) != 43 || !strings.HasPrefix(ticket, "federate-nonce.v1.farm.lone."+nonce+".") {
			t.Errorf("nonce %q, ticket %q: want a 43-character nonce inside the ticket", nonce, ticket)
		}
		exp, err := time.Parse(time.RFC3339, cmdtest.FieldAt(obj, "status.expiresAt").(string))
		if err != nil || !exp.After(time.Now()) {
			t.Errorf("expiresAt %v (%v), want a time to come", cmdtest.FieldAt(obj, "status.expiresAt"), err)
		}
	}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "the ticket line", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "lone"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				// federate-nonce.v1.PROVIDER.CONSUMER.NONCE.MAC, and nothing after it, for $(...).
				f := strings.Split(out, ".")
				if len(f) != 6 || f[0] != "federate-nonce" || f[1] != "v1" || f[2] != "farm" || f[3] != "lone" || len(f[4]) != 43 || strings.ContainsAny(out, "\n ") {
					t.Errorf("stdout %q, want exactly federate-nonce.v1.farm.lone.NONCE.MAC", out)
				}
			}},
		{Name: "-o json", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "lone", "-o", "json"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) { parts(t, cmdtest.JSONObject(t, out)) }},
		{Name: "-o yaml", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "lone", "-o", "yaml"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) { parts(t, cmdtest.YAMLObject(t, out)) }},
		{Name: "-o name", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "lone", "-o", "name"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if out != "nonceticket.federate.dev/lone\n" {
					t.Errorf("stdout %q", out)
				}
			}},
		{Name: "a consumer with no nonce", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "edgy"),
			Code: 1, Err: `no nonce for consumer "edgy"`, Stderr: []string{"kubectl federate create nonce --remote-cluster-id edgy"}},
		// A typo of a consumer with a nonce is said as one, and no nonce is advised for the typo.
		{Name: "a typo of a consumer with a nonce", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "lome"),
			Code: 1, Err: `--remote-cluster-id: nonce for consumer "lome" not found on this cluster (never created, or used already); did you mean "lone"?`},
		// The nonce edge paired with was used: it is no longer there to print.
		{Name: "a nonce already used", World: cmdtest.WorldPaired, Args: append(farm, "--remote-cluster-id", "edge"),
			Code: 1, Err: `no nonce for consumer "edge": it was already used`},
		{Name: "no consumer named", World: cmdtest.WorldNonce, Args: farm,
			Code: 1, Usage: true, Err: `required flag(s) "remote-cluster-id" not set`},
		{Name: "an ID that is no DNS label", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "Lone"),
			Code: 1, Usage: true, Err: `--remote-cluster-id "Lone": must be a DNS label`},
		{Name: "an unknown output format", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "lone", "-o", "wide"),
			Code: 1, Usage: true, Err: `invalid argument "wide" for "-o, --output" flag`},
	})
}

// get authenticator prints the entries of the provider's federated pairings, and nothing else: a pairing
// with a certificate has none.
func TestCommandTableGetAuthenticator(t *testing.T) {
	farm := []string{"get", "authenticator", "--kubeconfig", "farm"}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "no federated pairing", World: cmdtest.WorldPaired, Args: farm,
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				cfg := cmdtest.YAMLObject(t, out)
				cmdtest.WantFields(t, cfg, map[string]string{"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AuthenticationConfiguration"})
				if jwt, _ := cmdtest.FieldAt(cfg, "jwt").([]any); len(jwt) != 0 {
					t.Errorf("entries for a pairing that is not federated: %v", jwt)
				}
			}},
		{Name: "a federated pairing", World: cmdtest.WorldFederated, Args: append(farm, "--remote-cluster-id", "edge"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				cfg := cmdtest.YAMLObject(t, out)
				cmdtest.WantFields(t, cfg, map[string]string{"kind": "AuthenticationConfiguration",
					"jwt.0.issuer.url": "https://edge.example:6443", "jwt.0.issuer.audiences.0": "kubectl-federate:farm:edge:0123456789abcdef",
					"jwt.0.claimMappings.username.claim": "sub", "jwt.0.claimMappings.username.prefix": "kubectl-federate:edge:0123456789abcdef:",
					"jwt.0.claimValidationRules.0.expression": "claims.sub == 'system:serviceaccount:ci:deployer'"})
				if jwt, _ := cmdtest.FieldAt(cfg, "jwt").([]any); len(jwt) != 1 {
					t.Errorf("%d entries, want edge's alone", len(jwt))
				}
			}},
		{Name: "every federated pairing", World: cmdtest.WorldFederated, Args: farm,
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if jwt, _ := cmdtest.FieldAt(cmdtest.YAMLObject(t, out), "jwt").([]any); len(jwt) != 1 {
					t.Errorf("%d entries, want edge's", len(jwt))
				}
			}},
		{Name: "a consumer whose pairing is not federated", World: cmdtest.WorldPaired, Args: append(farm, "--remote-cluster-id", "edge"),
			Code: 1, Err: `federated consumer "edge" not found`},
		{Name: "a consumer ID that is no DNS label", World: cmdtest.WorldPaired, Args: append(farm, "--remote-cluster-id", "Edge"),
			Code: 1, Usage: true, Err: `--remote-cluster-id "Edge": must be a DNS label`},
	})
}

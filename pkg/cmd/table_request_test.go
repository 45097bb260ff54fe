package cmd_test

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// request namespace leaves a NamespaceRequest on the provider through the pairing (or, holding both
// kubeconfigs, requests and grants at once), or lists the requests and answers; request exchange leaves
// the ExchangeRequest a user's rule gives and prints its name. Asking again changes nothing.
func TestCommandTableRequest(t *testing.T) {
	ns := func(more ...string) []string {
		return append([]string{"request", "namespace", "--kubeconfig", "edge"}, more...)
	}
	ex := func(more ...string) []string {
		return append([]string{"request", "exchange", "--kubeconfig", "edge", "--remote-cluster-id", "farm"}, more...)
	}
	requested := newWorld(func(t *testing.T) *tableEnv {
		e := tablePaired(t)
		e.must(t, ns("team-a", "--remote-cluster-id", "farm", "--reason", "CI runners")...)
		return e
	})
	granted := newWorld(func(t *testing.T) *tableEnv {
		e := tablePaired(t)
		e.must(t, ns("team-a", "--remote-kubeconfig", "farm")...)
		return e
	})
	// namespaces reads the listing's JSON: namespace -> its status.
	namespaces := func(t *testing.T, e *tableEnv) map[string]map[string]any {
		t.Helper()
		list := jsonObject(t, e.must(t, ns("--remote-cluster-id", "farm", "-o", "json")...).Stdout)
		out := map[string]map[string]any{}
		for i, n := range listNames(t, list) {
			out[n], _ = fieldAt(list, "items."+strconv.Itoa(i)+".status").(map[string]any)
		}
		return out
	}
	requestName := regexp.MustCompile(`^mapping-[0-9a-f]{32}$`)
	submission := func(phase string) func(t *testing.T, obj map[string]any) {
		return func(t *testing.T, obj map[string]any) {
			t.Helper()
			name, _ := fieldAt(obj, "metadata.name").(string)
			if !requestName.MatchString(name) {
				t.Errorf("metadata.name %q, want the request's name", name)
			}
			wantFields(t, obj, map[string]string{"kind": "ExchangeSubmission", "status.request": name, "status.providerID": "farm", "status.rule": "mapping",
				"status.target.user": "bob", "status.phase": phase, "status.scope.namespaces": `["federate-tenant-edge"]`, "status.scope.verbs": `["get","list","watch"]`,
				`metadata.labels.federate\.dev/role`: "consumer"})
			if res, _ := fieldAt(obj, "status.scope.resources").([]any); len(res) == 0 || slices.Contains(res, any("secrets")) {
				t.Errorf("scope.resources %v: want the common workload kinds, never secrets", res)
			}
		}
	}
	runTable(t, []tableRow{
		// namespace
		{name: "a namespace", world: worldPaired, args: ns("team-a", "--remote-cluster-id", "farm", "--reason", "CI runners"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				wantStdout("namespacerequest/team-a created\n")(t, e, out)
				got := namespaces(t, e)["team-a"]
				if got["phase"] != "Pending" || got["requestReason"] != "CI runners" {
					t.Errorf("the request as listed: %v", got)
				}
			},
			stderr: []string{"NamespaceRequest team-a left in federate-tenant-edge on the provider"}, writes: map[string][]string{"farm": {"create namespacerequests"}}},
		// The provider refuses the second create as already there: the first request, its reason, stays.
		{name: "a namespace asked again", world: requested, args: ns("team-a", "--remote-cluster-id", "farm", "--reason", "another reason"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				wantStdout("namespacerequest/team-a created\n")(t, e, out)
				if got := namespaces(t, e)["team-a"]; got["requestReason"] != "CI runners" {
					t.Errorf("asking again changed the request: %v", got)
				}
			},
			writes: map[string][]string{"farm": {"create namespacerequests"}}},
		{name: "a namespace at once, holding both kubeconfigs", world: worldPaired, args: ns("team-a", "--remote-kubeconfig", "farm"),
			stdout: wantStdout("namespace/team-a granted\n"), stderr: []string{"(remote) ClusterRole federate-tenant bound in team-a to the pairing's identity"},
			wrote: map[string][]string{"farm": {"create namespaces", "patch rolebindings", "create namespacerequests", "patch namespacerequests"}}},
		{name: "the requests and answers", world: requested, args: ns("--remote-cluster-id", "farm"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				rows := tableOf(t, out, "CONSUMER", "NAMESPACE", "PHASE", "REQUESTED", "REQUEST REASON", "ANSWER")
				if len(rows) != 1 {
					t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
				}
				wantRow(t, rows[0], map[string]string{"CONSUMER": "edge", "NAMESPACE": "team-a", "PHASE": "Pending", "REQUESTED": "yes", "ANSWER": "-",
					"REQUEST REASON": `"CI runners"`}) // quoted: the tenant's text, shown as such
			}},
		{name: "the requests and answers, -o json", world: requested, args: ns("--remote-cluster-id", "farm", "-o", "json"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				list := jsonObject(t, out)
				if names := listNames(t, list); !slices.Equal(names, []string{"team-a"}) {
					t.Fatalf("items %v", names)
				}
				wantFields(t, list, map[string]string{"items.0.kind": "ExtraNamespace", "items.0.status.consumerID": "edge", "items.0.status.phase": "Pending",
					"items.0.status.requested": "true", "items.0.status.requestReason": "CI runners"})
			}},
		{name: "the requests and answers, -o yaml once granted", world: granted, args: ns("--remote-cluster-id", "farm", "-o", "yaml"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				list := yamlObject(t, out)
				if names := listNames(t, list); !slices.Equal(names, []string{"team-a"}) {
					t.Fatalf("items %v", names)
				}
				wantFields(t, list, map[string]string{"items.0.status.phase": "Granted"})
			}},
		{name: "no request yet", world: worldPaired, args: ns("--remote-cluster-id", "farm"),
			stdout: wantStdout("No namespace requests or extra namespaces found.\n")},
		{name: "a namespace of a provider this cluster holds nothing of", world: worldPaired, args: ns("team-a", "--remote-cluster-id", "lone"),
			code: 1, err: `no kubeconfig for provider "lone" (Secret federate-system/kubeconfig-controlplane-lone not found)`},
		{name: "at once, with another provider than the one reached", world: worldPaired, args: ns("team-a", "--remote-kubeconfig", "farm", "--remote-cluster-id", "lone"),
			code: 1, err: `--remote-cluster-id "lone": the provider is initialized with cluster ID "farm"`},
		{name: "at once, without a name", world: worldPaired, args: ns("--remote-kubeconfig", "farm"),
			code: 1, usage: true, err: "NAME: is required with --remote-kubeconfig or --remote-context"},
		{name: "a name that is no DNS label", world: worldPaired, args: ns("Not_OK", "--remote-cluster-id", "farm"),
			code: 1, usage: true, err: `NAME "Not_OK": must be a DNS label`},
		{name: "a reserved name", world: worldPaired, args: ns("kube-extra", "--remote-cluster-id", "farm"),
			code: 1, usage: true, err: `NAME "kube-extra": names starting with "kube-" are reserved`},
		{name: "no provider named", world: worldPaired, args: ns("team-a"),
			code: 1, usage: true, err: "--remote-cluster-id: must not be empty"},
		{name: "a reason too long to keep", world: worldPaired, args: ns("team-a", "--remote-cluster-id", "farm", "--reason", strings.Repeat("x", 1025)),
			code: 1, usage: true, err: "--reason: is 1025 characters, at most 1024 are kept"},
		// exchange
		{name: "an exchange", world: worldRules, args: ex("--for-user", "alice"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				if !requestName.MatchString(strings.TrimSuffix(out, "\n")) || !strings.HasSuffix(out, "\n") {
					t.Errorf("stdout %q, want the request's name on a line", out)
				}
			},
			stderr: []string{"is waiting for the provider's consent", "kubectl federate allow exchange mapping-"},
			writes: map[string][]string{"edge": {"create secrets"}, "farm": {"create exchangerequests"}}},
		{name: "an exchange, -o json", world: worldRules, args: ex("--for-user", "alice", "-o", "json"),
			stdout: func(t *testing.T, _ *tableEnv, out string) { submission("Pending")(t, jsonObject(t, out)) },
			writes: map[string][]string{"edge": {"create secrets"}, "farm": {"create exchangerequests"}}},
		{name: "an exchange asked again, -o yaml", world: worldRequest, args: ex("--for-user", "alice", "-o", "yaml"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				obj := yamlObject(t, out)
				submission("Pending")(t, obj)
				wantFields(t, obj, map[string]string{"metadata.name": e.vars["request"]})
			}},
		{name: "an exchange once issued", world: worldIssued, args: ex("--for-user", "alice", "-o", "json"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				obj := jsonObject(t, out)
				submission("Issued")(t, obj)
				wantFields(t, obj, map[string]string{"metadata.name": e.vars["request"]})
			},
			stderr: []string{"ExchangeRequest {request} is already issued: kubectl federate get kubeconfig --remote-cluster-id farm --for-user alice prints its kubeconfig"}},
		{name: "an exchange once refused", world: worldDenied, args: ex("--for-user", "alice"),
			code: 1, err: `was denied by provider "farm": refused by the provider: not for prod`},
		{name: "an exchange of a privileged rule", world: worldRules, args: ex("--for-user", "root"),
			code: 1, err: `--for-user "root": rule "admin" is a privileged rule, which hands out the pairing's own kubeconfig and needs no request: kubectl federate get kubeconfig --remote-cluster-id farm prints it`},
		{name: "an exchange no rule gives", world: worldRules, args: ex("--for-user", "eve"),
			code: 1, err: `--for-user "eve": no identity-exchange rule matches user "eve"`},
		{name: "an exchange with no rules stored", world: worldPaired, args: ex("--for-user", "alice"),
			code: 1, err: "no identity-exchange rules are stored on this cluster"},
		{name: "an exchange of a provider this cluster holds nothing of", world: worldRules, args: []string{"request", "exchange", "--kubeconfig", "edge", "--remote-cluster-id", "lone", "--for-user", "alice"},
			code: 1, err: `no kubeconfig for provider "lone"`},
		{name: "an exchange without a user", world: worldRules, args: ex(),
			code: 1, usage: true, err: "--for-user: must not be empty"},
		// Every other command's extra argument is a usage error, pointing at the help.
		{name: "an exchange with a positional argument", world: worldRules, args: ex("alice"),
			code: 1, usage: true, err: `unknown command "alice"`},
	})
}

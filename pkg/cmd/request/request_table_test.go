package request_test

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
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
	requested := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		e.Must(t, ns("team-a", "--remote-cluster-id", "farm", "--reason", "CI runners")...)
		return e
	})
	granted := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		e.Must(t, ns("team-a", "--remote-kubeconfig", "farm")...)
		return e
	})
	// namespaces reads the listing's JSON: namespace -> its status.
	namespaces := func(t *testing.T, e *cmdtest.Env) map[string]map[string]any {
		t.Helper()
		list := cmdtest.JSONObject(t, e.Must(t, ns("--remote-cluster-id", "farm", "-o", "json")...).Stdout)
		out := map[string]map[string]any{}
		for i, n := range cmdtest.ListNames(t, list) {
			out[n], _ = cmdtest.FieldAt(list, "items."+strconv.Itoa(i)+".status").(map[string]any)
		}
		return out
	}
	requestName := regexp.MustCompile(`^mapping-[0-9a-f]{32}$`)
	submission := func(phase string) func(t *testing.T, obj map[string]any) {
		return func(t *testing.T, obj map[string]any) {
			t.Helper()
			name, _ := cmdtest.FieldAt(obj, "metadata.name").(string)
			if !requestName.MatchString(name) {
				t.Errorf("metadata.name %q, want the request's name", name)
			}
			cmdtest.WantFields(t, obj, map[string]string{"kind": "ExchangeSubmission", "status.request": name, "status.providerID": "farm", "status.rule": "mapping",
				"status.target.user": "bob", "status.phase": phase, "status.scope.namespaces": `["federate-tenant-edge"]`, "status.scope.verbs": `["get","list","watch"]`,
				`metadata.labels.federate\.dev/role`: "consumer"})
			if res, _ := cmdtest.FieldAt(obj, "status.scope.resources").([]any); len(res) == 0 || slices.Contains(res, any("secrets")) {
				t.Errorf("scope.resources %v: want the common workload kinds, never secrets", res)
			}
		}
	}
	cmdtest.RunTable(t, []cmdtest.Row{
		// namespace
		{Name: "a namespace", World: cmdtest.WorldPaired, Args: ns("team-a", "--remote-cluster-id", "farm", "--reason", "CI runners"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				cmdtest.WantStdout("namespacerequest/team-a created\n")(t, e, out)
				got := namespaces(t, e)["team-a"]
				if got["phase"] != "Pending" || got["requestReason"] != "CI runners" {
					t.Errorf("the request as listed: %v", got)
				}
			},
			Stderr: []string{"NamespaceRequest team-a left in federate-tenant-edge on the provider"}, Writes: map[string][]string{"farm": {"create namespacerequests"}}},
		// The provider refuses the second create as already there: the first request, its reason, stays.
		{Name: "a namespace asked again", World: requested, Args: ns("team-a", "--remote-cluster-id", "farm", "--reason", "another reason"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				cmdtest.WantStdout("namespacerequest/team-a created\n")(t, e, out)
				if got := namespaces(t, e)["team-a"]; got["requestReason"] != "CI runners" {
					t.Errorf("asking again changed the request: %v", got)
				}
			},
			Writes: map[string][]string{"farm": {"create namespacerequests"}}},
		{Name: "a namespace at once, holding both kubeconfigs", World: cmdtest.WorldPaired, Args: ns("team-a", "--remote-kubeconfig", "farm"),
			Stdout: cmdtest.WantStdout("namespace/team-a granted\n"), Stderr: []string{"(remote) ClusterRole federate-tenant bound in team-a to the pairing's identity"},
			Wrote: map[string][]string{"farm": {"create namespaces", "patch rolebindings", "create namespacerequests", "patch namespacerequests"}}},
		{Name: "the requests and answers", World: requested, Args: ns("--remote-cluster-id", "farm"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				rows := cmdtest.TableOf(t, out, "CONSUMER", "NAMESPACE", "PHASE", "REQUESTED", "REQUEST REASON", "ANSWER")
				if len(rows) != 1 {
					t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
				}
				cmdtest.WantRow(t, rows[0], map[string]string{"CONSUMER": "edge", "NAMESPACE": "team-a", "PHASE": "Pending", "REQUESTED": "yes", "ANSWER": "-",
					"REQUEST REASON": `"CI runners"`}) // quoted: the tenant's text, shown as such
			}},
		{Name: "the requests and answers, -o json", World: requested, Args: ns("--remote-cluster-id", "farm", "-o", "json"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				list := cmdtest.JSONObject(t, out)
				if names := cmdtest.ListNames(t, list); !slices.Equal(names, []string{"team-a"}) {
					t.Fatalf("items %v", names)
				}
				cmdtest.WantFields(t, list, map[string]string{"items.0.kind": "ExtraNamespace", "items.0.status.consumerID": "edge", "items.0.status.phase": "Pending",
					"items.0.status.requested": "true", "items.0.status.requestReason": "CI runners"})
			}},
		{Name: "the requests and answers, -o yaml once granted", World: granted, Args: ns("--remote-cluster-id", "farm", "-o", "yaml"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				list := cmdtest.YAMLObject(t, out)
				if names := cmdtest.ListNames(t, list); !slices.Equal(names, []string{"team-a"}) {
					t.Fatalf("items %v", names)
				}
				cmdtest.WantFields(t, list, map[string]string{"items.0.status.phase": "Granted"})
			}},
		{Name: "no request yet", World: cmdtest.WorldPaired, Args: ns("--remote-cluster-id", "farm"),
			Stdout: cmdtest.WantStdout("No namespace requests or extra namespaces found.\n")},
		{Name: "a namespace of a provider this cluster holds nothing of", World: cmdtest.WorldPaired, Args: ns("team-a", "--remote-cluster-id", "lone"),
			Code: 1, Err: `provider "lone" not found among the providers this cluster holds an identity of`},
		{Name: "at once, with another provider than the one reached", World: cmdtest.WorldPaired, Args: ns("team-a", "--remote-kubeconfig", "farm", "--remote-cluster-id", "lone"),
			Code: 1, Err: `--remote-cluster-id "lone": the provider is initialized with cluster ID "farm"`},
		{Name: "at once, without a name", World: cmdtest.WorldPaired, Args: ns("--remote-kubeconfig", "farm"),
			Code: 1, Usage: true, Err: "NAME: is required with --remote-kubeconfig or --remote-context"},
		{Name: "a name that is no DNS label", World: cmdtest.WorldPaired, Args: ns("Not_OK", "--remote-cluster-id", "farm"),
			Code: 1, Usage: true, Err: `NAME "Not_OK": must be a DNS label`},
		{Name: "a reserved name", World: cmdtest.WorldPaired, Args: ns("kube-extra", "--remote-cluster-id", "farm"),
			Code: 1, Usage: true, Err: `NAME "kube-extra": names starting with "kube-" are reserved`},
		{Name: "no provider named", World: cmdtest.WorldPaired, Args: ns("team-a"),
			Code: 1, Usage: true, Err: "--remote-cluster-id: must not be empty"},
		{Name: "a reason too long to keep", World: cmdtest.WorldPaired, Args: ns("team-a", "--remote-cluster-id", "farm", "--reason", strings.Repeat("x", 1025)),
			Code: 1, Usage: true, Err: "--reason: is 1025 characters, at most 1024 are kept"},
		// exchange
		{Name: "an exchange", World: cmdtest.WorldRules, Args: ex("--for-user", "alice"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if !requestName.MatchString(strings.TrimSuffix(out, "\n")) || !strings.HasSuffix(out, "\n") {
					t.Errorf("stdout %q, want the request's name on a line", out)
				}
			},
			Stderr: []string{"is waiting for the provider's consent", "kubectl federate allow exchange mapping-"},
			Writes: map[string][]string{"edge": {"create secrets"}, "farm": {"create exchangerequests"}}},
		{Name: "an exchange, -o json", World: cmdtest.WorldRules, Args: ex("--for-user", "alice", "-o", "json"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) { submission("Pending")(t, cmdtest.JSONObject(t, out)) },
			Writes: map[string][]string{"edge": {"create secrets"}, "farm": {"create exchangerequests"}}},
		{Name: "an exchange asked again, -o yaml", World: cmdtest.WorldRequest, Args: ex("--for-user", "alice", "-o", "yaml"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				obj := cmdtest.YAMLObject(t, out)
				submission("Pending")(t, obj)
				cmdtest.WantFields(t, obj, map[string]string{"metadata.name": e.Vars["request"]})
			}},
		{Name: "an exchange once issued", World: cmdtest.WorldIssued, Args: ex("--for-user", "alice", "-o", "json"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				obj := cmdtest.JSONObject(t, out)
				submission("Issued")(t, obj)
				cmdtest.WantFields(t, obj, map[string]string{"metadata.name": e.Vars["request"]})
			},
			Stderr: []string{"ExchangeRequest {request} is already issued: kubectl federate get kubeconfig --remote-cluster-id farm --for-user alice prints its kubeconfig"}},
		{Name: "an exchange once refused", World: cmdtest.WorldDenied, Args: ex("--for-user", "alice"),
			Code: 1, Err: `was denied by provider "farm": refused by the provider: not for prod`},
		{Name: "an exchange of a privileged rule", World: cmdtest.WorldRules, Args: ex("--for-user", "root"),
			Code: 1, Err: `--for-user "root": rule "admin" is a privileged rule, which hands out the pairing's own kubeconfig and needs no request: kubectl federate get kubeconfig --remote-cluster-id farm prints it`},
		{Name: "an exchange no rule gives", World: cmdtest.WorldRules, Args: ex("--for-user", "eve"),
			Code: 1, Err: `--for-user "eve": no identity-exchange rule matches user "eve"`},
		{Name: "an exchange with no rules stored", World: cmdtest.WorldPaired, Args: ex("--for-user", "alice"),
			Code: 1, Err: "no identity-exchange rules are stored on this cluster"},
		{Name: "an exchange of a provider this cluster holds nothing of", World: cmdtest.WorldRules, Args: []string{"request", "exchange", "--kubeconfig", "edge", "--remote-cluster-id", "lone", "--for-user", "alice"},
			Code: 1, Err: `provider "lone" not found among the providers this cluster holds an identity of`},
		{Name: "an exchange without a user", World: cmdtest.WorldRules, Args: ex(),
			Code: 1, Usage: true, Err: "--for-user: must not be empty"},
		// Every other command's extra argument is a usage error, pointing at the help.
		{Name: "an exchange with a positional argument", World: cmdtest.WorldRules, Args: ex("alice"),
			Code: 1, Usage: true, Err: `unknown command "alice"`},
	})
}

package revoke_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// revoke takes a consumer's rights away on the provider alone (its RoleBindings first, then what runs,
// then the Tenant marked Revoked); again it is "already revoked"; a consumer with no Tenant is NotFound,
// naming the known ones (--ignore-not-found: exit 0).
func TestCommandTableRevoke(t *testing.T) {
	farm := []string{"revoke", "--kubeconfig", "farm"}
	revoked := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		e.Must(t, append(farm, "--remote-cluster-id", "edge")...)
		return e
	})
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "a consumer", World: cmdtest.WorldPaired, Args: append(farm, "--remote-cluster-id", "edge"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				if !cmdtest.RegexpMatch(`^tenant\.federate\.dev/edge revoked in \d+(\.\d+)?[µm]?s\n$`, out) {
					t.Errorf("stdout %q", out)
				}
				list := cmdtest.JSONObject(t, e.Must(t, "status", "--kubeconfig", "farm", "-o", "json").Stdout)
				cmdtest.WantFields(t, list, map[string]string{"items.0.status.remoteClusterID": "edge", "items.0.status.phase": "Revoked"})
			},
			Stderr: []string{"No RoleBinding left for edge", "Tenant federate-tenant-edge/edge marked Revoked"},
			// The binding goes first; the Tenant is kept, marked; nothing on the consumer.
			Sent: map[string]func(*testing.T, []string){"farm": func(t *testing.T, got []string) {
				if i := slices.Index(got, "delete rolebindings"); i < 0 || i > slices.Index(got, "delete-collection pods") || !slices.Contains(got, "patch tenants") || slices.Contains(got, "delete tenants") || slices.Contains(got, "delete namespaces") {
					t.Errorf("farm was sent %v: want the binding deleted first, the pods after, the Tenant marked and kept", got)
				}
			}}},
		{Name: "revoked before", World: revoked, Args: append(farm, "--remote-cluster-id", "edge"),
			Stdout: cmdtest.WantStdout("tenant.federate.dev/edge already revoked\n")},
		// kubectl's -o name: the Tenant, nothing else on stdout.
		{Name: "-o name", World: cmdtest.WorldPaired, Args: append(farm, "--remote-cluster-id", "edge", "-o", "name"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				cmdtest.WantStdout("tenant.federate.dev/edge\n")(t, e, out)
				list := cmdtest.JSONObject(t, e.Must(t, "status", "--kubeconfig", "farm", "-o", "json").Stdout)
				cmdtest.WantFields(t, list, map[string]string{"items.0.status.phase": "Revoked"})
			},
			Wrote: map[string][]string{"farm": {"delete rolebindings", "patch tenants"}}},
		{Name: "-o name, revoked before", World: revoked, Args: append(farm, "--remote-cluster-id", "edge", "-o", "name"),
			Stdout: cmdtest.WantStdout("tenant.federate.dev/edge\n")},
		// A federated pairing: unbound the same way; the authenticator entry, which no request can remove,
		// may stay, and the run says so (not under a dry run, which unbinds nothing).
		{Name: "a federated consumer", World: cmdtest.WorldFederated, Args: append(farm, "--remote-cluster-id", "edge"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if !cmdtest.RegexpMatch(`^tenant\.federate\.dev/edge revoked in `, out) {
					t.Errorf("stdout %q", out)
				}
			},
			Stderr: []string{"No RoleBinding left for edge", "The authenticator entry of issuer https://edge.example:6443 may stay in this cluster's authentication configuration: the user it maps the consumer's tokens to is bound to nothing now"},
			Wrote:  map[string][]string{"farm": {"delete rolebindings", "patch tenants"}}},

		{Name: "a consumer this cluster has no record of", World: cmdtest.WorldPaired, Args: append(farm, "--remote-cluster-id", "edgx"),
			Code: 1, Err: `--remote-cluster-id: consumer "edgx" not found on this cluster (no Tenant federate-tenant-edgx/edgx); did you mean "edge"? (known: edge) (--ignore-not-found to accept that)`},
		{Name: "--ignore-not-found", World: cmdtest.WorldPaired, Args: append(farm, "--remote-cluster-id", "edgx", "--ignore-not-found"),
			Stdout: cmdtest.WantStdout("")},
		{Name: "a cluster never initialized", World: cmdtest.WorldPaired, Args: []string{"revoke", "--kubeconfig", "lone", "--remote-cluster-id", "edge"},
			Code: 1, Err: "this cluster is not initialized for kubectl federate (no ConfigMap federate-system/federate-cluster); run kubectl federate init"},
		{Name: "an ID that is no DNS label", World: cmdtest.WorldPaired, Args: append(farm, "--remote-cluster-id", "Bad"),
			Code: 1, Usage: true, Err: `--remote-cluster-id "Bad": must be a DNS label`},
		{Name: "no consumer named", World: cmdtest.WorldPaired, Args: farm,
			Code: 1, Usage: true, Err: `required flag(s) "remote-cluster-id" not set`},
	})
}

// revoke namespace takes an extra namespace away (its binding first, the namespace last); one gone is
// "already revoked"; one never granted to that consumer is NotFound (--ignore-not-found: exit 0).
func TestCommandTableRevokeNamespace(t *testing.T) {
	rev := func(more ...string) []string {
		return append([]string{"revoke", "namespace", "--kubeconfig", "farm"}, more...)
	}
	granted := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		e.Must(t, "grant", "namespace", "team-x", "--kubeconfig", "farm", "--remote-cluster-id", "edge")
		return e
	})
	gone := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := granted.Build(t)
		e.Must(t, rev("team-x", "--remote-cluster-id", "edge")...)
		return e
	})
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "an extra namespace", World: granted, Args: rev("team-x", "--remote-cluster-id", "edge"),
			Stdout: cmdtest.WantStdout("namespace/team-x revoked from edge\n"), Stderr: []string{"Namespace team-x of edge revoked and removed"},
			Wrote: map[string][]string{"farm": {"delete rolebindings", "delete-collection pods", "delete namespaces"}}},
		{Name: "-o name", World: granted, Args: rev("team-x", "--remote-cluster-id", "edge", "-o", "name"),
			Stdout: cmdtest.WantStdout("namespace/team-x\n"), Wrote: map[string][]string{"farm": {"delete rolebindings"}}},
		{Name: "revoked before", World: gone, Args: rev("team-x", "--remote-cluster-id", "edge"),
			Stdout: cmdtest.WantStdout("namespace/team-x already revoked from edge\n")},
		{Name: "a namespace this cluster has no record of", World: granted, Args: rev("nope", "--remote-cluster-id", "edge"),
			Code: 1, Err: `NAME: extra namespace "nope" not found of consumer edge on this cluster; known: team-x (--ignore-not-found to accept that)`},
		{Name: "a namespace of another consumer", World: granted, Args: rev("team-x", "--remote-cluster-id", "lone"),
			Code: 1, Err: `NAME: extra namespace "team-x" not found of consumer lone`},
		{Name: "--ignore-not-found", World: granted, Args: rev("nope", "--remote-cluster-id", "edge", "--ignore-not-found"),
			Stdout: cmdtest.WantStdout("")},
		// The tenant namespace is no extra namespace: revoke (the consumer) or unauthenticate takes it.
		{Name: "the tenant namespace", World: granted, Args: rev("federate-tenant-edge", "--remote-cluster-id", "edge"),
			Code: 1, Usage: true, Err: `NAME "federate-tenant-edge": names starting with "federate-" are reserved`},
		{Name: "a name that is no DNS label", World: granted, Args: rev("Bad", "--remote-cluster-id", "edge"),
			Code: 1, Usage: true, Err: `NAME "Bad": must be a DNS label of at most 63 characters`},
		{Name: "no name", World: granted, Args: rev("--remote-cluster-id", "edge"),
			Code: 1, Usage: true, Err: "NAME: exactly 1 argument(s) required, got 0"},
	})
}

// A dry run of a federated consumer's revocation unbinds nothing, so it says nothing of what a token the
// entry still authenticates may do.
func TestRevokeFederatedDryRun(t *testing.T) {
	e := cmdtest.Federated(t)
	r := e.Must(t, "revoke", "--kubeconfig", "farm", "--remote-cluster-id", "edge", "--dry-run=client")
	if strings.Contains(r.Stderr, "authenticator entry") {
		t.Errorf("a dry run speaks of the entry:\n%s", r.Stderr)
	}
}

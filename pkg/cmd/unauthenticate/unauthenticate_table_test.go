package unauthenticate_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// unauthenticate removes a pairing on both sides (the provider's RoleBinding first, the Tenant and its
// sandbox last); a pairing removed before is "already removed"; a pairing neither side has a record of
// is NotFound (--ignore-not-found: exit 0); names in each other's place are refused, nothing removed.
func TestCommandTableUnauthenticate(t *testing.T) {
	unauth := func(consumer, provider string, more ...string) []string {
		return append([]string{"unauthenticate", "--kubeconfig", consumer, "--remote-kubeconfig", provider}, more...)
	}
	removed := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		e.Must(t, unauth("edge", "farm")...)
		return e
	})
	// loneInit is cmdtest.Paired with lone initialized: a consumer the provider has no record of.
	loneInit := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		e.Must(t, "init", "--kubeconfig", "lone", "--cluster-id", "lone")
		return e
	})
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "a pairing", World: cmdtest.WorldPaired, Args: unauth("edge", "farm"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				if out != "" {
					t.Errorf("stdout %q, want nothing", out)
				}
				// Neither side lists the pairing any more.
				if got := e.Must(t, "status", "--kubeconfig", "farm").Stdout; strings.Contains(got, "edge") {
					t.Errorf("farm's status still lists edge:\n%s", got)
				}
			},
			Stderr: []string{"(remote) Tenant federate-tenant-edge/edge marked Revoked", "(local) Identities for farm removed", "namespace federate-tenant-edge)"},
			Wrote: map[string][]string{
				"edge": {"delete-collection secrets", "delete-collection identities"},
				"farm": {"delete rolebindings", "delete namespaces", "delete tenants"},
			}},
		{Name: "--keep-namespaces", World: cmdtest.WorldPaired, Args: unauth("edge", "farm", "--keep-namespaces"),
			Stderr: []string{"namespace federate-tenant-edge kept"},
			Wrote:  map[string][]string{"edge": {"delete-collection identities"}},
			Sent: map[string]func(*testing.T, []string){"farm": func(t *testing.T, got []string) {
				if !cmdtest.IsSubsequence(got, []string{"delete rolebindings", "delete tenants"}) || slices.Contains(got, "delete namespaces") {
					t.Errorf("farm was sent %v: want the binding and the Tenant gone, the namespace kept", got)
				}
			}}},
		// A federated pairing: removed the same way, and the one part no request can remove, the provider's
		// authenticator entry, is printed on stdout for its administrator to take out.
		{Name: "a federated pairing", World: cmdtest.WorldFederated, Args: unauth("edge", "farm"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				cfg := cmdtest.YAMLObject(t, out)
				cmdtest.WantFields(t, cfg, map[string]string{"kind": "AuthenticationConfiguration", "jwt.0.issuer.url": "https://edge.example:6443",
					"jwt.0.issuer.audiences.0": "kubectl-federate:farm:edge:0123456789abcdef"})
			},
			Stderr: []string{"(remote) Tenant federate-tenant-edge/edge marked Revoked",
				"remove the jwt entry printed on stdout (issuer https://edge.example:6443) from the AuthenticationConfiguration file the provider's API server reads"},
			Wrote: map[string][]string{"edge": {"delete-collection identities"}, "farm": {"delete rolebindings", "delete tenants"}}},
		{Name: "removed before", World: removed, Args: unauth("edge", "farm"),
			Stdout: cmdtest.WantStdout(""), Stderr: []string{"The pairing was already removed: nothing to do"}},
		{Name: "a consumer the provider has no record of", World: loneInit, Args: unauth("lone", "farm"),
			Code: 1, Err: `consumer "lone" not found on the provider farm (no Tenant, and the consumer holds no identity for it); known: edge (--ignore-not-found to accept that)`},
		{Name: "--ignore-not-found", World: loneInit, Args: unauth("lone", "farm", "--ignore-not-found"),
			Stdout: cmdtest.WantStdout("")},
		// A consumer never initialized takes part in no pairing: NotFound, exit 1, as for an initialized lone.
		{Name: "a consumer never initialized", World: cmdtest.WorldPaired, Args: unauth("lone", "farm"),
			Code: 1, Err: `consumer "(no cluster ID)" not found on the provider farm (the consumer cluster was never initialized: it takes part in no pairing)`,
			Stderr: []string{"--ignore-not-found"}},
		{Name: "a consumer never initialized, --ignore-not-found", World: cmdtest.WorldPaired, Args: unauth("lone", "farm", "--ignore-not-found"),
			Stdout: cmdtest.WantStdout("")},
		{Name: "a provider never initialized", World: cmdtest.WorldPaired, Args: unauth("edge", "lone"),
			Code: 1, Err: `provider "(no cluster ID)" not found for the consumer edge (the provider cluster was never initialized: it takes part in no pairing)`},
		{Name: "the two clusters in each other's place", World: cmdtest.WorldPaired, Args: unauth("farm", "edge"),
			Code: 1, Err: `the two clusters were named in each other's place; nothing was removed; run: kubectl federate unauthenticate --kubeconfig edge --remote-kubeconfig farm`},
		// The dry run prints the deletions it would make; the Secret without its data.
		{Name: "--dry-run", World: cmdtest.WorldPaired, Args: unauth("edge", "farm", "--dry-run"), DryRun: true,
			Stderr: []string{"(remote) (dry run) Removing tenant edge: would be done"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				refs := cmdtest.Documents(t, out)
				for _, want := range []string{"Identity/controlplane-farm", "Secret/kubeconfig-controlplane-farm", "Tenant/edge"} {
					if !slices.Contains(refs, want) {
						t.Errorf("the dry run's cmdtest.Documents %v lack %s", refs, want)
					}
				}
				if strings.Contains(out, "client-key-data") {
					t.Errorf("a dry run printed the kubeconfig's key")
				}
			}},
		{Name: "no provider named", World: cmdtest.WorldPaired, Args: []string{"unauthenticate", "--kubeconfig", "edge"},
			Code: 1, Usage: true, Err: "--remote-kubeconfig or --remote-context: one is required to name the provider cluster"},
		{Name: "a timeout under the minimum", World: cmdtest.WorldPaired, Args: unauth("edge", "farm", "--timeout", "0s"),
			Code: 1, Usage: true, Err: `invalid argument "0s" for "--timeout" flag: 0s is out of range: must be from 1s to 1d`},
	})
}

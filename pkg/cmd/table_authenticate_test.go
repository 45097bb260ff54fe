package cmd_test

import (
	"slices"
	"strings"
	"testing"
)

// authenticate pairs a consumer with a provider in one process: both initialized if needed, the nonce,
// the signed Tenant, the certificate, the sandbox, the kubeconfig stored on the consumer; running it
// again renews (a new user); stdout stays empty, the steps go to stderr.
func TestCommandTableAuthenticate(t *testing.T) {
	auth := func(more ...string) []string {
		return append([]string{"authenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "farm"}, more...)
	}
	// renewal is tablePaired with the pairing's user before the row ({olduser}).
	renewal := newWorld(func(t *testing.T) *tableEnv {
		e := tablePaired(t)
		e.vars["olduser"] = heldUser(t, e)
		return e
	})
	runTable(t, []tableRow{
		// The consumer holds the provider's kubeconfig afterwards, as the pairing's user.
		{name: "two clusters never initialized", world: worldBare, args: auth("--cluster-id", "edge", "--remote-cluster-id", "farm"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				if out != "" {
					t.Errorf("stdout %q, want nothing", out)
				}
				kubeconfigOf(t, e.must(t, "get", "kubeconfig", "--kubeconfig", "edge", "--remote-cluster-id", "farm").Stdout, "https://farm.fake:6443", "federate-tenant-edge")
			},
			stderr: []string{"(local) Cluster initialized", "(remote) Cluster initialized", "(remote) Nonce consumed", "Authenticated as kubectl-federate:edge:"},
			wrote: map[string][]string{
				"edge": {"create namespaces", "create configmaps", "create secrets", "patch identities"},
				"farm": {"create namespaces", "create configmaps", "create certificatesigningrequests", "update certificatesigningrequests", "patch rolebindings", "patch tenants"},
			}},
		// A renewal: a new certificate for a new user, bound instead of the old one; nothing initialized.
		{name: "again: a renewal", world: renewal, args: auth(),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				if now := heldUser(t, e); out != "" || now == e.vars["olduser"] {
					t.Errorf("stdout %q, user %s (before %s): want nothing printed, and a new user", out, now, e.vars["olduser"])
				}
			},
			stderr: []string{`(local) Cluster "edge" already initialized`, "Authenticated as kubectl-federate:edge:"},
			wrote: map[string][]string{
				"edge": {"update secrets", "patch identities"},
				// The nonce's consumption (update secrets) runs alongside the CSR's creation: no order between them.
				"farm": {"create certificatesigningrequests", "patch rolebindings"},
			}},
		// A dry run stops where a real signer is needed (no CSR is created), successfully, and stores nothing.
		{name: "--dry-run", world: worldPaired, args: auth("--dry-run"), dryRun: true,
			stderr: []string{"(remote) (dry run) Consuming the nonce: would be done", "Stopped at the approval of CertificateSigningRequest federate-edge-*"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				if refs := documents(t, out); !slices.Contains(refs, "Lease/authenticate-edge") {
					t.Errorf("the dry run's documents %v lack the handshake's lease", refs)
				}
				if !strings.Contains(out, "# farm: would create certificatesigningrequest/federate-edge-* (dry run)") {
					t.Errorf("the dry run does not show the CSR it would create:\n%.800s", out)
				}
			}},
		// --credential token: a fake's TokenRequest returns no token, so the run stops after the
		// sandbox and the credential's ServiceAccount; this checks it fails there, naming why, and that
		// nothing is stored on the consumer.
		{name: "--credential token on a fake", world: worldPaired, args: auth("--credential", "token"),
			code: 1, err: "the API server returned no token", stderr: []string{"(remote) Nonce consumed"},
			wrote: map[string][]string{"farm": {"create serviceaccounts"}}},
		{name: "a provider initialized under another ID", world: worldPaired, args: auth("--remote-cluster-id", "lone"),
			code: 1, err: `--remote-cluster-id: provider: cluster ID "lone": the provider is initialized with cluster ID "farm"`},
		{name: "no provider named", world: worldPaired, args: []string{"authenticate", "--kubeconfig", "edge"}, code: 1, usage: true,
			err: "--remote-kubeconfig or --remote-context: one is required to name the provider cluster"},
		{name: "an unreachable provider", world: worldPaired, args: []string{"authenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "nowhere"},
			code: 1, err: `provider: cannot connect: no cluster "nowhere"`},
		{name: "one cluster as both", world: worldPaired, args: []string{"authenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "edge"},
			code: 1, usage: true, err: "both point at https://edge.fake:6443: name two different clusters"},
		{name: "an expiration under the minimum", world: worldPaired, args: auth("--expiration", "1m"),
			code: 1, usage: true, err: `invalid argument "1m" for "--expiration" flag: 1m is out of range: must be from 10m to 3650d`},
		{name: "a quota that is no quantity", world: worldPaired, args: auth("--quota", "pods=x"),
			code: 1, usage: true, err: `--quota: pods="x" is not a quantity`},
		{name: "an unknown Pod Security level", world: worldPaired, args: auth("--pod-security", "none"),
			code: 1, usage: true, err: `invalid argument "none" for "--pod-security" flag: must be one of restricted, baseline, privileged`},
	})
}

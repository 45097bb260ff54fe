package authenticate_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// authenticate pairs a consumer with a provider in one process: both initialized if needed, the nonce,
// the signed Tenant, the certificate, the sandbox, the kubeconfig stored on the consumer; running it
// again renews (a new user); stdout stays empty, the steps go to stderr.
func TestCommandTableAuthenticate(t *testing.T) {
	auth := func(more ...string) []string {
		return append([]string{"authenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "farm"}, more...)
	}
	// renewal is cmdtest.Paired with the pairing's user before the row ({olduser}).
	renewal := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		e.Vars["olduser"] = cmdtest.HeldUser(t, e)
		return e
	})
	cmdtest.RunTable(t, []cmdtest.Row{
		// The consumer holds the provider's kubeconfig afterwards, as the pairing's user.
		{Name: "two clusters never initialized", World: cmdtest.WorldBare, Args: auth("--cluster-id", "edge", "--remote-cluster-id", "farm"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				if out != "" {
					t.Errorf("stdout %q, want nothing", out)
				}
				cmdtest.KubeconfigOf(t, e.Must(t, "get", "kubeconfig", "--kubeconfig", "edge", "--remote-cluster-id", "farm").Stdout, "https://farm.fake:6443", "federate-tenant-edge")
			},
			Stderr: []string{"(local) Cluster initialized", "(remote) Cluster initialized", "(remote) Nonce consumed", "Authenticated as kubectl-federate:edge:"},
			Wrote: map[string][]string{
				"edge": {"create namespaces", "create configmaps", "create secrets", "patch identities"},
				"farm": {"create namespaces", "create configmaps", "create certificatesigningrequests", "update certificatesigningrequests", "patch rolebindings", "patch tenants"},
			}},
		// A renewal: a new certificate for a new user, bound instead of the old one; nothing initialized.
		{Name: "again: a renewal", World: renewal, Args: auth(),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				if now := cmdtest.HeldUser(t, e); out != "" || now == e.Vars["olduser"] {
					t.Errorf("stdout %q, user %s (before %s): want nothing printed, and a new user", out, now, e.Vars["olduser"])
				}
			},
			Stderr:    []string{"Authenticated as kubectl-federate:edge:"},
			NotStderr: []string{"already initialized"}, // said by init alone
			Wrote: map[string][]string{
				"edge": {"update secrets", "patch identities"},
				// The nonce's consumption (update secrets) runs alongside the CSR's creation: no order between them.
				"farm": {"create certificatesigningrequests", "patch rolebindings"},
			}},
		// A dry run stops where a real signer is needed (no CSR is created), successfully, and stores nothing.
		{Name: "--dry-run", World: cmdtest.WorldPaired, Args: auth("--dry-run"), DryRun: true,
			Stderr: []string{"(remote) (dry run) Consuming the nonce: would be done", "Stopped at the approval of CertificateSigningRequest federate-edge-*"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if refs := cmdtest.Documents(t, out); !slices.Contains(refs, "Lease/authenticate-edge") {
					t.Errorf("the dry run's cmdtest.Documents %v lack the handshake's lease", refs)
				}
				if !strings.Contains(out, "# farm: would create certificatesigningrequest/federate-edge-* (dry run)") {
					t.Errorf("the dry run does not show the CSR it would create:\n%.800s", out)
				}
			}},
		// --credential token: a fake's TokenRequest returns no token, so the run stops after the
		// sandbox and the credential's ServiceAccount; this checks it fails there, naming why, and that
		// nothing is stored on the consumer.
		{Name: "--credential token on a fake", World: cmdtest.WorldPaired, Args: auth("--credential", "token"),
			Code: 1, Err: "the API server returned no token", Stderr: []string{"(remote) Nonce consumed"},
			Wrote: map[string][]string{"farm": {"create serviceaccounts"}}},
		{Name: "a provider initialized under another ID", World: cmdtest.WorldPaired, Args: auth("--remote-cluster-id", "lone"),
			Code: 1, Err: `--remote-cluster-id: provider: cluster ID "lone": the provider is initialized with cluster ID "farm"`},
		{Name: "no provider named", World: cmdtest.WorldPaired, Args: []string{"authenticate", "--kubeconfig", "edge"}, Code: 1, Usage: true,
			Err: "--remote-kubeconfig or --remote-context: one is required to name the provider cluster"},
		{Name: "an unreachable provider", World: cmdtest.WorldPaired, Args: []string{"authenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "nowhere"},
			Code: 1, Err: `provider: cannot connect: no cluster "nowhere"`},
		{Name: "one cluster as both", World: cmdtest.WorldPaired, Args: []string{"authenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "edge"},
			Code: 1, Usage: true, Err: "both point at https://edge.fake:6443: name two different clusters"},
		{Name: "an expiration under the minimum", World: cmdtest.WorldPaired, Args: auth("--expiration", "1m"),
			Code: 1, Usage: true, Err: `invalid argument "1m" for "--expiration" flag: 1m is out of range: must be from 10m to 3650d`},
		{Name: "a quota that is no quantity", World: cmdtest.WorldPaired, Args: auth("--quota", "pods=x"),
			Code: 1, Usage: true, Err: `--quota: pods="x" is not a quantity`},
		{Name: "an unknown Pod Security level", World: cmdtest.WorldPaired, Args: auth("--pod-security", "none"),
			Code: 1, Usage: true, Err: `invalid argument "none" for "--pod-security" flag: must be one of restricted, baseline, privileged`},
		// A federated identity needs the consumer's ServiceAccount, and a ServiceAccount means one.
		{Name: "--credential federated without its ServiceAccount", World: cmdtest.WorldPaired, Args: auth("--credential", "federated"),
			Code: 1, Usage: true, Err: "--credential federated: needs --service-account NAMESPACE:NAME"},
		{Name: "a ServiceAccount without its namespace", World: cmdtest.WorldPaired, Args: auth("--service-account", "deployer"),
			Code: 1, Usage: true, Err: `--service-account "deployer": must be NAMESPACE:NAME`},
		{Name: "a ServiceAccount name that is no name", World: cmdtest.WorldPaired, Args: auth("--service-account", "ci:De'ployer"),
			Code: 1, Usage: true, Err: `--service-account.name "De'ployer"`},
		{Name: "a ServiceAccount with a token", World: cmdtest.WorldPaired, Args: auth("--service-account", "ci:deployer", "--credential", "token"),
			Code: 1, Usage: true, Err: "--service-account: names a federated identity's ServiceAccount, but --credential is token"},
		{Name: "an issuer CA without a ServiceAccount", World: cmdtest.WorldPaired, Args: auth("--issuer-discovery-url", "https://edge.fake:6443/.well-known/openid-configuration"),
			Code: 1, Usage: true, Err: "--issuer-discovery-url: only with --service-account (a federated identity)"},
		{Name: "an http discovery URL", World: cmdtest.WorldPaired, Args: auth("--service-account", "ci:deployer", "--issuer-discovery-url", "http://edge.fake/x"),
			Code: 1, Usage: true, Err: `--issuer-discovery-url "http://edge.fake/x": must be an https URL`},
		// The ServiceAccount must exist on the consumer: refused before anything is signed or issued.
		{Name: "a ServiceAccount the consumer does not have", World: cmdtest.WorldPaired, Args: auth("--service-account", "ci:deployer"),
			Code: 1, Err: "ServiceAccount ci/deployer not found on this cluster (the consumer): it acts on the provider, create it first",
			Wrote: map[string][]string{"farm": {"create leases", "delete leases"}}},
	})
}

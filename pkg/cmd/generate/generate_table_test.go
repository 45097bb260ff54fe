package generate_test

import (
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// The manual flow, step by step, for the consumer lone of the provider farm (cmdtest.Nonce's nonce).

// tenantObject checks lone's Tenant for farm: it names both, and carries a CSR and a signature.
func tenantObject(t *testing.T, obj map[string]any) {
	t.Helper()
	cmdtest.WantFields(t, obj, map[string]string{"apiVersion": "federate.dev/v1alpha1", "kind": "Tenant", "metadata.name": "lone", "metadata.namespace": "federate-tenant-lone",
		"spec.clusterID": "lone", "spec.providerClusterID": "farm"})
	for _, f := range []string{"spec.csr", "spec.signature", "spec.publicKey"} {
		if s, _ := cmdtest.FieldAt(obj, f).(string); s == "" {
			t.Errorf("%s is empty", f)
		}
	}
	if strings.Contains(strings.ToLower(cmdtest.FieldAt(obj, "spec.csr").(string)), "private") {
		t.Errorf("the Tenant carries a key")
	}
}

// generate tenant signs lone's request with a key it keeps (initializing lone as the nonce says); with
// the same nonce again it reuses that key and writes nothing; a nonce for another cluster is refused.
func TestCommandTableGenerateTenant(t *testing.T) {
	gen := func(more ...string) []string {
		return append([]string{"generate", "tenant", "--kubeconfig", "lone", "--nonce-file", "{nonce}"}, more...)
	}
	// lone initialized, its ID and key, then the pending client key.
	keyed := map[string][]string{"lone": {"create namespaces", "create secrets", "create configmaps", "create secrets"}}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "a cluster never initialized", World: cmdtest.WorldNonceFile, Args: gen(),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) { tenantObject(t, cmdtest.YAMLObject(t, out)) },
			Stderr: []string{"(local) Cluster initialized", `This cluster is now "lone", the consumer ID provider "farm" made the nonce for`, "Secret federate-system/controlplane-farm-pending-key"},
			Wrote:  keyed},
		{Name: "-o json", World: cmdtest.WorldNonceFile, Args: gen("-o", "json"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) { tenantObject(t, cmdtest.JSONObject(t, out)) }, Wrote: keyed},
		// The key waits on lone from the first run: reused, nothing written.
		{Name: "again with the same nonce", World: cmdtest.WorldTenantFile, Args: gen(),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) { tenantObject(t, cmdtest.YAMLObject(t, out)) },
			Stderr: []string{"Client key ensured"}},
		{Name: "--dry-run", World: cmdtest.WorldNonceFile, Args: gen("--dry-run"), DryRun: true,
			Stderr: []string{`(dry run) This cluster would be "lone"`},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if !strings.Contains(out, "# kind: Tenant (dry run)") || !strings.Contains(out, "# lone: would create namespace/federate-system (dry run)") {
					t.Errorf("a dry run's stdout:\n%.600s", out)
				}
			}},
		{Name: "a nonce made for another consumer", World: cmdtest.WorldNonceFile, Args: []string{"generate", "tenant", "--kubeconfig", "edge", "--nonce-file", "{nonce}"},
			Code: 1, Err: `was made for consumer "lone", but this cluster is initialized as "edge"`},
		{Name: "a provider the nonce does not name", World: cmdtest.WorldNonceFile, Args: gen("--remote-cluster-id", "edge"),
			Code: 1, Usage: true, Err: `--remote-cluster-id "edge": the nonce in --nonce-file {nonce} was made by provider "farm"`},
		{Name: "a nonce file that is not there", World: cmdtest.WorldNonceFile, Args: []string{"generate", "tenant", "--kubeconfig", "lone", "--nonce-file", "/nonexistent/nonce.txt"},
			Code: 1, Err: "--nonce-file: open /nonexistent/nonce.txt: no such file or directory"},
		{Name: "a nonce that is no nonce", World: cmdtest.WorldNonceFile, Args: []string{"generate", "tenant", "--kubeconfig", "lone", "--nonce", "garbage"},
			Code: 1, Usage: true, Err: "--nonce: not a nonce: want federate-nonce.v1.PROVIDER.CONSUMER.NONCE.MAC, got 7 characters (the one line kubectl federate get nonce prints on the provider)"},
		// A file of another step is named, with the command that reads it; nothing is written.
		{Name: "a Tenant file as the nonce", World: cmdtest.WorldTenantFile, Args: []string{"generate", "tenant", "--kubeconfig", "lone", "--nonce-file", "{tenant}"},
			Code: 1, Usage: true, Err: "--nonce-file {tenant}: is a Tenant file, not a nonce: that file is read by the provider's kubectl federate generate identity -f"},
		{Name: "an Identity file as the nonce", World: cmdtest.WorldIdentityFile, Args: []string{"generate", "tenant", "--kubeconfig", "lone", "--nonce-file", "{identity}"},
			Code: 1, Usage: true, Err: "--nonce-file {identity}: is an Identity file, not a nonce: that file is read by the consumer's kubectl federate import identity -f"},
		{Name: "no nonce", World: cmdtest.WorldNonceFile, Args: []string{"generate", "tenant", "--kubeconfig", "lone"},
			Code: 1, Usage: true, Err: "at least one of the flags in the group [nonce nonce-file] is required"},
		{Name: "--nonce and --nonce-file", World: cmdtest.WorldNonceFile, Args: gen("--nonce", "x"),
			Code: 1, Usage: true, Err: "if any flags in the group [nonce nonce-file] are set none of the others can be"},
		// A federated request names one ServiceAccount of this cluster's; the flags of its issuer only with it.
		{Name: "a ServiceAccount without its namespace", World: cmdtest.WorldNonceFile, Args: gen("--service-account", "deployer"),
			Code: 1, Usage: true, Err: `--service-account "deployer": must be NAMESPACE:NAME`},
		{Name: "an issuer discovery URL without a ServiceAccount", World: cmdtest.WorldNonceFile, Args: gen("--issuer-discovery-url", "https://edge.example/.well-known/openid-configuration"),
			Code: 1, Usage: true, Err: "--issuer-discovery-url: only with --service-account (a federated identity)"},
		{Name: "an http issuer discovery URL", World: cmdtest.WorldNonceFile, Args: gen("--service-account", "ci:deployer", "--issuer-discovery-url", "http://edge.example/x"),
			Code: 1, Usage: true, Err: "--issuer-discovery-url"},
		{Name: "a ServiceAccount this cluster does not have", World: cmdtest.WorldNonceFile, Args: gen("--service-account", "ci:deployer"),
			Code: 1, Err: "ServiceAccount ci/deployer not found on this cluster (the consumer): it acts on the provider, create it first"},
	})
}

// generate identity verifies lone's Tenant and issues its certificate, sandbox and binding on farm; the
// same Tenant again prints the same Identity and writes nothing; a Tenant for someone else is refused.
func TestCommandTableGenerateIdentity(t *testing.T) {
	gen := func(more ...string) []string {
		return append([]string{"generate", "identity", "--kubeconfig", "farm", "-f", "{tenant}"}, more...)
	}
	identityObject := func(t *testing.T, obj map[string]any) {
		t.Helper()
		cmdtest.WantFields(t, obj, map[string]string{"apiVersion": "federate.dev/v1alpha1", "kind": "Identity", "metadata.name": "controlplane-farm", "metadata.namespace": "federate-system",
			"spec.clusterID": "farm", "spec.consumerClusterID": "lone", "spec.apiServer": "https://farm.fake:6443"})
		if c, _ := cmdtest.FieldAt(obj, "spec.certificate").(string); c == "" {
			t.Errorf("the Identity carries no certificate")
		}
	}
	// The nonce consumed, the CSR made and approved, the sandbox, the binding.
	// The nonce's consumption (update secrets) runs alongside the CSR's creation: no order between them.
	issued := map[string][]string{"farm": {"create certificatesigningrequests", "update certificatesigningrequests", "create namespaces", "patch rolebindings", "patch tenants"}}
	// farm made lone a new nonce after issuing: the Tenant of the old one asks with a used nonce.
	renonced := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.IdentityFile(t)
		e.Must(t, "create", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone")
		return e
	})
	cmdtest.RunTable(t, []cmdtest.Row{
		// Said once, by the error line (no progress line repeats it), with the next step.
		{Name: "a Tenant of a used nonce", World: renonced, Args: gen("--remote-cluster-id", "lone"),
			Code: 1, Err: "its integrity key is gone (a new nonce replaced it): have the consumer generate a new Tenant from a new nonce",
			NotStderr: []string{"ERROR", "Verifying the tenant request"}},
		{Name: "a genuine Tenant", World: cmdtest.WorldTenantFile, Args: gen("--remote-cluster-id", "lone"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) { identityObject(t, cmdtest.YAMLObject(t, out)) },
			Stderr: []string{"(local) Tenant request verified (nonce, signature, CSR)", "(local) Nonce consumed", "Sandbox federate-tenant-lone ready"},
			Wrote:  issued},
		{Name: "-o json", World: cmdtest.WorldTenantFile, Args: gen("--remote-cluster-id", "lone", "-o", "json"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) { identityObject(t, cmdtest.JSONObject(t, out)) }, Wrote: issued},
		{Name: "the same Tenant again", World: cmdtest.WorldIdentityFile, Args: gen("--remote-cluster-id", "lone"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				identityObject(t, cmdtest.YAMLObject(t, out))
			},
			Stderr: []string{"An identity was already issued for this request; returning it again"}},
		{Name: "a Tenant of another consumer", World: cmdtest.WorldTenantFile, Args: gen("--remote-cluster-id", "edge"),
			Code: 1, Err: `spec.clusterID "lone": is not the consumer this identity is being issued for "edge"`},
		{Name: "a Tenant for another provider", World: cmdtest.WorldTenantFile, Args: []string{"generate", "identity", "--kubeconfig", "edge", "--remote-cluster-id", "lone", "-f", "{tenant}"},
			Code: 1, Err: `spec.providerClusterID "farm": this request was made for another provider (this cluster is "edge")`},
		{Name: "a file that is no Tenant", World: cmdtest.WorldTenantFile, Args: []string{"generate", "identity", "--kubeconfig", "farm", "--remote-cluster-id", "lone", "-f", "{nonce}"},
			Code: 1, Err: "holds a string, not a Tenant object"},
		{Name: "a file that is not there", World: cmdtest.WorldTenantFile, Args: []string{"generate", "identity", "--kubeconfig", "farm", "--remote-cluster-id", "lone", "-f", "/nonexistent/tenant.yaml"},
			Code: 1, Err: "-f: open /nonexistent/tenant.yaml: no such file or directory"},
		{Name: "no consumer named", World: cmdtest.WorldTenantFile, Args: gen(),
			Code: 1, Usage: true, Err: `required flag(s) "remote-cluster-id" not set`},
	})
}

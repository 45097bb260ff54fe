package cmd_test

import (
	"strings"
	"testing"
)

// The manual flow, step by step, for the consumer lone of the provider farm (tableNonce's nonce).

// tableNonceFile is tableNonce with the ticket farm made for lone written to a file ({nonce}).
func tableNonceFile(t *testing.T) *tableEnv {
	e := tableNonce(t)
	e.vars["nonce"] = tableFile(t, "nonce.txt", e.must(t, "get", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone").Stdout)
	return e
}

// tableTenantFile is tableNonceFile with lone's signed Tenant written to a file ({tenant}).
func tableTenantFile(t *testing.T) *tableEnv {
	e := tableNonceFile(t)
	e.vars["tenant"] = tableFile(t, "tenant.yaml", e.must(t, "generate", "tenant", "--kubeconfig", "lone", "--nonce-file", e.vars["nonce"]).Stdout)
	return e
}

// tableIdentityFile is tableTenantFile with the Identity farm issued for it written to a file ({identity}).
func tableIdentityFile(t *testing.T) *tableEnv {
	e := tableTenantFile(t)
	e.vars["identity"] = tableFile(t, "identity.yaml", e.must(t, "generate", "identity", "--kubeconfig", "farm", "--remote-cluster-id", "lone", "-f", e.vars["tenant"]).Stdout)
	return e
}

var (
	worldNonceFile    = newWorld(tableNonceFile)
	worldTenantFile   = newWorld(tableTenantFile)
	worldIdentityFile = newWorld(tableIdentityFile)
)

// tenantObject checks lone's Tenant for farm: it names both, and carries a CSR and a signature.
func tenantObject(t *testing.T, obj map[string]any) {
	t.Helper()
	wantFields(t, obj, map[string]string{"apiVersion": "federate.dev/v1alpha1", "kind": "Tenant", "metadata.name": "lone", "metadata.namespace": "federate-tenant-lone",
		"spec.clusterID": "lone", "spec.providerClusterID": "farm"})
	for _, f := range []string{"spec.csr", "spec.signature", "spec.publicKey"} {
		if s, _ := fieldAt(obj, f).(string); s == "" {
			t.Errorf("%s is empty", f)
		}
	}
	if strings.Contains(strings.ToLower(fieldAt(obj, "spec.csr").(string)), "private") {
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
	runTable(t, []tableRow{
		{name: "a cluster never initialized", world: worldNonceFile, args: gen(),
			stdout: func(t *testing.T, _ *tableEnv, out string) { tenantObject(t, yamlObject(t, out)) },
			stderr: []string{"(local) Cluster initialized", `This cluster is now "lone", the consumer ID provider "farm" made the nonce for`, "Secret federate-system/controlplane-farm-pending-key"},
			wrote:  keyed},
		{name: "-o json", world: worldNonceFile, args: gen("-o", "json"),
			stdout: func(t *testing.T, _ *tableEnv, out string) { tenantObject(t, jsonObject(t, out)) }, wrote: keyed},
		// The key waits on lone from the first run: reused, nothing written.
		{name: "again with the same nonce", world: worldTenantFile, args: gen(),
			stdout: func(t *testing.T, _ *tableEnv, out string) { tenantObject(t, yamlObject(t, out)) },
			stderr: []string{`(local) Cluster "lone" already initialized`, "Client key ensured"}},
		{name: "--dry-run", world: worldNonceFile, args: gen("--dry-run"), dryRun: true,
			stderr: []string{`(dry run) This cluster would be "lone"`},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				if !strings.Contains(out, "# kind: Tenant (dry run)") || !strings.Contains(out, "# lone: would create namespace/federate-system (dry run)") {
					t.Errorf("a dry run's stdout:\n%.600s", out)
				}
			}},
		{name: "a nonce made for another consumer", world: worldNonceFile, args: []string{"generate", "tenant", "--kubeconfig", "edge", "--nonce-file", "{nonce}"},
			code: 1, err: `was made for consumer "lone", but this cluster is initialized as "edge"`},
		{name: "a provider the nonce does not name", world: worldNonceFile, args: gen("--remote-cluster-id", "edge"),
			code: 1, usage: true, err: `--remote-cluster-id "edge": the nonce in --nonce-file {nonce} was made by provider "farm"`},
		{name: "a nonce file that is not there", world: worldNonceFile, args: []string{"generate", "tenant", "--kubeconfig", "lone", "--nonce-file", "/nonexistent/nonce.txt"},
			code: 1, err: "--nonce-file: open /nonexistent/nonce.txt: no such file or directory"},
		{name: "a nonce that is no nonce", world: worldNonceFile, args: []string{"generate", "tenant", "--kubeconfig", "lone", "--nonce", "garbage"},
			code: 1, usage: true, err: "--nonce: nonce must be 43 characters of base64url, got 7"},
		{name: "no nonce", world: worldNonceFile, args: []string{"generate", "tenant", "--kubeconfig", "lone"},
			code: 1, usage: true, err: "at least one of the flags in the group [nonce nonce-file] is required"},
		{name: "--nonce and --nonce-file", world: worldNonceFile, args: gen("--nonce", "x"),
			code: 1, usage: true, err: "if any flags in the group [nonce nonce-file] are set none of the others can be"},
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
		wantFields(t, obj, map[string]string{"apiVersion": "federate.dev/v1alpha1", "kind": "Identity", "metadata.name": "controlplane-farm", "metadata.namespace": "federate-system",
			"spec.clusterID": "farm", "spec.consumerClusterID": "lone", "spec.apiServer": "https://farm.fake:6443"})
		if c, _ := fieldAt(obj, "spec.certificate").(string); c == "" {
			t.Errorf("the Identity carries no certificate")
		}
	}
	// The nonce consumed, the CSR made and approved, the sandbox, the binding.
	// The nonce's consumption (update secrets) runs alongside the CSR's creation: no order between them.
	issued := map[string][]string{"farm": {"create certificatesigningrequests", "update certificatesigningrequests", "create namespaces", "patch rolebindings", "patch tenants"}}
	runTable(t, []tableRow{
		{name: "a genuine Tenant", world: worldTenantFile, args: gen("--remote-cluster-id", "lone"),
			stdout: func(t *testing.T, _ *tableEnv, out string) { identityObject(t, yamlObject(t, out)) },
			stderr: []string{"(local) Tenant request verified (nonce, signature, CSR)", "(local) Nonce consumed", "Sandbox federate-tenant-lone ready"},
			wrote:  issued},
		{name: "-o json", world: worldTenantFile, args: gen("--remote-cluster-id", "lone", "-o", "json"),
			stdout: func(t *testing.T, _ *tableEnv, out string) { identityObject(t, jsonObject(t, out)) }, wrote: issued},
		{name: "the same Tenant again", world: worldIdentityFile, args: gen("--remote-cluster-id", "lone"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				identityObject(t, yamlObject(t, out))
			},
			stderr: []string{"An identity was already issued for this request; returning it again"}},
		{name: "a Tenant of another consumer", world: worldTenantFile, args: gen("--remote-cluster-id", "edge"),
			code: 1, err: `spec.clusterID "lone": is not the consumer this identity is being issued for "edge"`},
		{name: "a Tenant for another provider", world: worldTenantFile, args: []string{"generate", "identity", "--kubeconfig", "edge", "--remote-cluster-id", "lone", "-f", "{tenant}"},
			code: 1, err: `spec.providerClusterID "farm": this request was made for another provider (this cluster is "edge")`},
		{name: "a file that is no Tenant", world: worldTenantFile, args: []string{"generate", "identity", "--kubeconfig", "farm", "--remote-cluster-id", "lone", "-f", "{nonce}"},
			code: 1, err: "holds a string, not a Tenant object"},
		{name: "a file that is not there", world: worldTenantFile, args: []string{"generate", "identity", "--kubeconfig", "farm", "--remote-cluster-id", "lone", "-f", "/nonexistent/tenant.yaml"},
			code: 1, err: "-f: open /nonexistent/tenant.yaml: no such file or directory"},
		{name: "no consumer named", world: worldTenantFile, args: gen(),
			code: 1, usage: true, err: `required flag(s) "remote-cluster-id" not set`},
	})
}

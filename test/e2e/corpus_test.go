//go:build e2e

package e2e

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
)

// Bad input, for every command that reads a file, a flag or a cluster object: each case exits 1 with a
// message naming the field or flag and the problem, and creates or changes nothing on either cluster.
func TestBadInputCorpus(t *testing.T) {
	tenant, n, _ := pairingStart(t)
	genuine, err := yaml.Marshal(tenant)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	edit := func(name string, f func(m map[string]any)) string {
		var m map[string]any
		if err := yaml.Unmarshal(genuine, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		out, err := yaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return file(name, string(out))
	}
	spec := func(m map[string]any) map[string]any { return m["spec"].(map[string]any) }
	dead := file("dead.kubeconfig", "apiVersion: v1\nkind: Config\nclusters: [{name: d, cluster: {server: \"https://127.0.0.1:1\"}}]\n"+
		"contexts: [{name: d, context: {cluster: d, user: d}}]\ncurrent-context: d\nusers: [{name: d, user: {token: x}}]\n")
	identityDoc := func(mut func(s map[string]any)) string {
		s := map[string]any{"clusterID": "provider", "consumerClusterID": "consumer", "namespace": "federate-tenant-consumer",
			"apiServer": provider.Server, "certificate": base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))}
		mut(s)
		out, _ := yaml.Marshal(map[string]any{"apiVersion": v1alpha1.APIVersion, "kind": "Identity", "metadata": map[string]any{"name": "controlplane-provider"}, "spec": s})
		return string(out)
	}
	P, C := provider.Kubeconfig, consumer.Kubeconfig
	gi := func(f string, extra ...string) []string {
		return append([]string{"generate", "identity", "--kubeconfig", P, "--remote-cluster-id", "consumer", "-f", f}, extra...)
	}
	ii := func(f string) []string { return []string{"import", "identity", "--kubeconfig", C, "-f", f} }
	cases := []struct {
		class, name string
		args        []string
		stdin       string
		want        string
	}{
		// tenant documents
		{"document", "invalid YAML", gi(file("t1", "spec: [unclosed\n")), "", "not valid YAML"},
		{"document", "invalid JSON", gi(file("t2", "{\"kind\": \"Tenant\",")), "", "not valid YAML"},
		{"document", "empty file", gi(file("t3", "")), "", "is empty"},
		{"document", "only comments", gi(file("t4", "# nothing\n---\n")), "", "exactly one"},
		{"document", "two documents", gi(file("t5", string(genuine)+"---\n"+string(genuine))), "", "exactly one"},
		{"document", "tenant.yaml with a cluster-admin ClusterRoleBinding appended", gi(file("t5b", string(genuine)+"---\n"+
			"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: tenants-are-admins}\n"+
			"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n"+
			"subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: kubectl-federate:tenants}]\n")), "", "exactly one"},
		{"document", "wrong kind", gi(edit("t6", func(m map[string]any) { m["kind"] = "Secret" })), "", "is a Secret, not a Tenant"},
		{"document", "wrong apiVersion", gi(edit("t7", func(m map[string]any) { m["apiVersion"] = "federate.dev/v2" })), "", "apiVersion"},
		{"document", "extra field", gi(edit("t8", func(m map[string]any) { spec(m)["admin"] = true })), "", "unknown field"},
		{"document", "missing csr", gi(edit("t9", func(m map[string]any) { delete(spec(m), "csr") })), "", "spec.csr: is missing"},
		{"document", "missing signature", gi(edit("t10", func(m map[string]any) { delete(spec(m), "signature") })), "", "spec.signature: is missing"},
		{"document", "over 1 MiB", gi(file("t11", string(genuine)+"#"+strings.Repeat("x", 1<<20))), "", "larger than"},
		{"document", "base64 garbage", gi(edit("t12", func(m map[string]any) { spec(m)["csr"] = "%%%not-base64" })), "", "spec.csr is not valid base64"},
		{"document", "PEM garbage", gi(edit("t13", func(m map[string]any) { spec(m)["csr"] = base64.StdEncoding.EncodeToString([]byte("hello")) })), "", "spec.csr: is not PEM"},
		{"document", "wrong PEM type", gi(edit("t14", func(m map[string]any) {
			spec(m)["csr"] = base64.StdEncoding.EncodeToString([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))
		})), "", "want \"CERTIFICATE REQUEST\""},
		{"document", "truncated signature", gi(edit("t15", func(m map[string]any) { spec(m)["signature"] = base64.StdEncoding.EncodeToString(make([]byte, 10)) })), "", "spec.signature: must be 64 bytes"},
		{"document", "oversized key", gi(edit("t16", func(m map[string]any) { spec(m)["publicKey"] = base64.StdEncoding.EncodeToString(make([]byte, 300)) })), "", "spec.publicKey"},
		{"document", "bad proxy URL", gi(edit("t17", func(m map[string]any) { spec(m)["proxyURL"] = "ftp://x" })), "", "spec.proxyURL"},
		{"document", "tenant from stdin, garbage", gi("-"), "\x00\x01\x02", "not valid YAML"},
		{"document", "missing file", gi(filepath.Join(dir, "nope.yaml")), "", "no such file"},
		// identity documents
		{"document", "identity for another consumer", ii(file("i1", identityDoc(func(s map[string]any) { s["consumerClusterID"] = "victim" }))), "", "spec.consumerClusterID"},
		{"document", "identity with http server", ii(file("i2", identityDoc(func(s map[string]any) { s["apiServer"] = "http://evil" }))), "", "spec.apiServer"},
		{"document", "identity with garbage certificate", ii(file("i3", identityDoc(func(map[string]any) {}))), "", "spec.certificate"},
		{"document", "identity with wrong namespace", ii(file("i4", identityDoc(func(s map[string]any) { s["namespace"] = "kube-system" }))), "", "spec.namespace"},
		{"document", "identity with CA garbage", ii(file("i5", identityDoc(func(s map[string]any) { s["ca"] = base64.StdEncoding.EncodeToString([]byte("nope")) }))), "", "spec.ca"},
		// cluster IDs
		{"cluster ID", "path traversal", []string{"create", "nonce", "--kubeconfig", P, "--remote-cluster-id", "../x"}, "", "--remote-cluster-id \"../x\": must be a DNS label"},
		{"cluster ID", "upper case", []string{"create", "nonce", "--kubeconfig", P, "--remote-cluster-id", "Consumer"}, "", "must be a DNS label"},
		{"cluster ID", "64 characters", []string{"get", "nonce", "--kubeconfig", P, "--remote-cluster-id", strings.Repeat("a", 64)}, "", "at most 47"},
		{"cluster ID", "unicode look-alike", []string{"generate", "tenant", "--kubeconfig", C, "--remote-cluster-id", "prоvider", "--nonce", n}, "", "must be a DNS label"},
		{"cluster ID", "init with bad ID", []string{"init", "--kubeconfig", C, "--cluster-id", "a_b"}, "", "--cluster-id"},
		{"cluster ID", "re-init with another ID", []string{"init", "--kubeconfig", C, "--cluster-id", "other"}, "", "--cluster-id: cluster ID \"other\": this cluster is initialized with cluster ID \"consumer\""},
		{"cluster ID", "own ID as remote", []string{"create", "nonce", "--kubeconfig", P, "--remote-cluster-id", "provider"}, "", "this cluster's own ID"},
		// nonces
		{"nonce", "malformed nonce", []string{"generate", "tenant", "--kubeconfig", C, "--remote-cluster-id", "provider", "--nonce", "abc"}, "", "--nonce: not a nonce: want federate-nonce.v1.PROVIDER.CONSUMER.NONCE.MAC, got 3 characters"},
		{"nonce", "nonce with bad alphabet", []string{"generate", "tenant", "--kubeconfig", C, "--remote-cluster-id", "provider", "--nonce", strings.Repeat("*", 43)}, "", "--nonce: nonce is not valid base64url"},
		{"nonce", "no nonce for that consumer", []string{"get", "nonce", "--kubeconfig", P, "--remote-cluster-id", "stranger"}, "", "no nonce for consumer \"stranger\""},
		// flags
		{"flags", "unknown flag", []string{"authenticate", "--kubeconfig", C, "--remote-kubeconfig", P, "--bogus"}, "", "unknown flag: --bogus"},
		{"flags", "missing required flag", []string{"create", "nonce", "--kubeconfig", P}, "", "required flag(s) \"remote-cluster-id\""},
		{"flags", "same cluster twice", []string{"authenticate", "--kubeconfig", C, "--remote-kubeconfig", C}, "", "both point at"},
		{"flags", "same IDs", []string{"authenticate", "--kubeconfig", C, "--remote-kubeconfig", P, "--cluster-id", "x", "--remote-cluster-id", "x"}, "", "must differ"},
		{"flags", "bad ttl", []string{"create", "nonce", "--kubeconfig", P, "--remote-cluster-id", "consumer", "--ttl", "1s"}, "", `invalid argument "1s" for "--ttl" flag: 1s is out of range: must be from 1m`},
		{"flags", "expiration too short", gi(file("t20", string(genuine)), "--expiration", "1m"), "", `invalid argument "1m" for "--expiration" flag: 1m is out of range: must be from 10m`},
		{"flags", "http api server", gi(file("t21", string(genuine)), "--api-server", "http://x"), "", "--api-server"},
		{"flags", "bad output format", []string{"info", "--kubeconfig", P, "-o", "xml"}, "", "must be one of json, yaml"},
		{"flags", "bad color", []string{"version", "--color", "sometimes"}, "", "must be one of auto|always|never"},
		{"flags", "bad key algorithm", []string{"generate", "tenant", "--kubeconfig", C, "--remote-cluster-id", "provider", "--nonce", n, "--key-algorithm", "dsa"}, "", "--key-algorithm"},
		{"flags", "group without subcommand", []string{"generate", "--kubeconfig", C}, "", "needs a resource"},
		{"flags", "missing CA file", gi(file("t22", string(genuine)), "--ca-file", filepath.Join(dir, "none.pem")), "", "--ca-file"},
		// connections
		{"connection", "dead port", []string{"authenticate", "--kubeconfig", dead, "--remote-kubeconfig", P}, "", "connection refused"},
		{"connection", "missing kubeconfig", []string{"info", "--kubeconfig", filepath.Join(dir, "none")}, "", "--kubeconfig/--context"},
		{"connection", "missing remote kubeconfig", []string{"unauthenticate", "--kubeconfig", C, "--remote-kubeconfig", filepath.Join(dir, "none")}, "", "--remote-kubeconfig"},
	}
	tally := map[string][2]int{}
	for _, tc := range cases {
		t.Run(tc.class+"/"+tc.name, func(t *testing.T) {
			before := takeSnapshot(t)
			r := cli(t, tc.stdin, tc.args...)
			after := takeSnapshot(t)
			refused := r.code == 1 && strings.Contains(r.stderr, tc.want) && strings.HasPrefix(r.stderr[strings.LastIndex(strings.TrimRight(r.stderr, "\n"), "error:"):], "error:")
			if !refused {
				t.Errorf("want exit 1 and %q: %s", tc.want, r)
			}
			if strings.Count(r.stderr, "error: ") != 1 {
				t.Errorf("the error must be printed exactly once: %s", r)
			}
			d := before.diff(after)
			if len(d) > 0 {
				t.Errorf("changed the clusters:\n%s", strings.Join(d, "\n"))
			}
			c := tally[tc.class]
			c[0]++
			if refused && len(d) == 0 {
				c[1]++
			}
			tally[tc.class] = c
		})
	}
	for class, c := range tally {
		t.Logf("corpus %-10s cases %2d, refused cleanly %2d", class, c[0], c[1])
	}
}

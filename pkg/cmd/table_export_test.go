package cmd_test

import (
	"encoding/base64"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// export writes the pairing's credential on the consumer as a tool's objects, in a namespace that must
// exist (-n argocd here: a fake has no default namespace); -o prints them instead and writes nothing;
// a provider or slice this cluster holds no credential for is refused with nothing written.
func TestCommandTableExport(t *testing.T) {
	// tools is tablePaired with the namespace argocd on edge, as a tool's installation would leave it.
	tools := newWorld(func(t *testing.T) *tableEnv {
		e := tablePaired(t)
		if _, err := e.w.Cluster("edge").Clientset.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return e
	})
	exported := newWorld(func(t *testing.T) *tableEnv {
		e := tools.build(t)
		e.must(t, "export", "argocd", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "argocd")
		return e
	})
	export := func(format string, more ...string) []string {
		return append([]string{"export", format, "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "argocd"}, more...)
	}
	decoded := func(t *testing.T, obj map[string]any, key string) string {
		t.Helper()
		s, _ := fieldAt(obj, "data."+key).(string)
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Errorf("data.%s is not base64: %v", key, err)
		}
		return string(b)
	}
	runTable(t, []tableRow{
		{name: "argocd", world: tools, args: export("argocd"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				wantStdout("secret/farm created (namespace argocd)\n")(t, e, out)
				// What was written is labelled as the pairing's export.
				s, err := e.w.Cluster("edge").Clientset.CoreV1().Secrets("argocd").Get(t.Context(), "farm", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if s.Labels["argocd.argoproj.io/secret-type"] != "cluster" || s.Labels["federate.dev/remote-cluster-id"] != "farm" || s.Labels["federate.dev/export-format"] != "argocd" {
					t.Errorf("the Secret's labels: %v", s.Labels)
				}
			},
			// The export is recorded in federate-system around the Secret's write (handshake/exportrecord.go),
			// so that renew and unauthenticate find it.
			writes: map[string][]string{"edge": {"create secrets", "create secrets", "update secrets"}}},
		{name: "exported before", world: exported, args: export("argocd"),
			stdout: wantStdout("secret/farm unchanged (namespace argocd)\n")},
		{name: "argocd -o json", world: tools, args: export("argocd", "-o", "json"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				obj := jsonObject(t, out)
				wantFields(t, obj, map[string]string{"kind": "Secret", "metadata.name": "farm", "metadata.namespace": "argocd",
					`metadata.labels.argocd\.argoproj\.io/secret-type`: "cluster", `metadata.labels.federate\.dev/role`: "consumer", `metadata.labels.federate\.dev/export-format`: "argocd"})
				if got := decoded(t, obj, "server"); got != "https://farm.fake:6443" {
					t.Errorf("server %q", got)
				}
				if got := decoded(t, obj, "namespaces"); got != "federate-tenant-edge" {
					t.Errorf("namespaces %q, want the identity's namespace", got)
				}
			}},
		{name: "cluster-gateway -o yaml", world: tools, args: export("cluster-gateway", "-o", "yaml"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				obj := yamlObject(t, out)
				wantFields(t, obj, map[string]string{"kind": "Secret", "metadata.name": "farm",
					`metadata.labels.cluster\.core\.oam\.dev/cluster-credential-type`: "X509Certificate"})
				if got := decoded(t, obj, "endpoint"); got != "https://farm.fake:6443" {
					t.Errorf("endpoint %q", got)
				}
				if decoded(t, obj, `tls\.key`) == "" {
					t.Errorf("no client key")
				}
			}},
		{name: "a namespace that is not there", world: tools, args: []string{"export", "argocd", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "nope"},
			code: 1, err: `-n nope: namespace "nope" not found on this cluster (an export never creates a tool's namespace); nothing was written`},
		{name: "a provider this cluster holds nothing of", world: tools, args: []string{"export", "argocd", "--kubeconfig", "edge", "--remote-cluster-id", "lone", "-n", "argocd"},
			code: 1, err: `no kubeconfig for provider "lone" (Secret federate-system/kubeconfig-controlplane-lone not found): import its identity first`},
		{name: "a slice this cluster never imported", world: tools, args: export("argocd", "--resource-slice", "nope"),
			code: 1, err: `no kubeconfig for resource slice "nope" of provider "farm" (Secret federate-system/kubeconfig-resource-farm.nope not found): import the slice first`},
		{name: "an unknown format", world: tools, args: export("bogus"),
			code: 1, usage: true, err: `FORMAT: format "bogus": must be one of kubeconfig, argocd, cluster-gateway, admiralty`},
		{name: "no format", world: tools, args: []string{"export", "--kubeconfig", "edge", "--remote-cluster-id", "farm"},
			code: 1, usage: true, err: "FORMAT: exactly 1 argument(s) required, got 0"},
		{name: "no provider named", world: tools, args: []string{"export", "argocd", "--kubeconfig", "edge"},
			code: 1, usage: true, err: `required flag(s) "remote-cluster-id" not set`},
	})
}

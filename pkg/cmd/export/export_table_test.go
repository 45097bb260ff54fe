package export_test

import (
	"encoding/base64"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// export writes the pairing's credential on the consumer as a tool's objects, in a namespace that must
// exist (-n argocd here: a fake has no default namespace); -o prints them instead and writes nothing;
// a provider or slice this cluster holds no credential for is refused with nothing written.
func TestCommandTableExport(t *testing.T) {
	// tools is cmdtest.Paired with the namespace argocd on edge, as a tool's installation would leave it.
	tools := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		if _, err := e.World.Cluster("edge").Clientset.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return e
	})
	exported := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := tools.Build(t)
		e.Must(t, "export", "argocd", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "argocd")
		return e
	})
	export := func(format string, more ...string) []string {
		return append([]string{"export", format, "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "argocd"}, more...)
	}
	decoded := func(t *testing.T, obj map[string]any, key string) string {
		t.Helper()
		s, _ := cmdtest.FieldAt(obj, "data."+key).(string)
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Errorf("data.%s is not base64: %v", key, err)
		}
		return string(b)
	}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "argocd", World: tools, Args: export("argocd"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				cmdtest.WantStdout("secret/farm created (namespace argocd)\n")(t, e, out)
				// What was written is labelled as the pairing's export.
				s, err := e.World.Cluster("edge").Clientset.CoreV1().Secrets("argocd").Get(t.Context(), "farm", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if s.Labels["argocd.argoproj.io/secret-type"] != "cluster" || s.Labels["federate.dev/remote-cluster-id"] != "farm" || s.Labels["federate.dev/export-format"] != "argocd" {
					t.Errorf("the Secret's labels: %v", s.Labels)
				}
			},
			// The export is recorded in federate-system around the Secret's write (handshake/exportrecord.go),
			// so that renew and unauthenticate find it.
			Writes: map[string][]string{"edge": {"create secrets", "create secrets", "update secrets"}}},
		{Name: "exported before", World: exported, Args: export("argocd"),
			Stdout: cmdtest.WantStdout("secret/farm unchanged (namespace argocd)\n")},
		{Name: "argocd -o json", World: tools, Args: export("argocd", "-o", "json"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				obj := cmdtest.JSONObject(t, out)
				cmdtest.WantFields(t, obj, map[string]string{"kind": "Secret", "metadata.name": "farm", "metadata.namespace": "argocd",
					`metadata.labels.argocd\.argoproj\.io/secret-type`: "cluster", `metadata.labels.federate\.dev/role`: "consumer", `metadata.labels.federate\.dev/export-format`: "argocd"})
				if got := decoded(t, obj, "server"); got != "https://farm.fake:6443" {
					t.Errorf("server %q", got)
				}
				if got := decoded(t, obj, "namespaces"); got != "federate-tenant-edge" {
					t.Errorf("namespaces %q, want the identity's namespace", got)
				}
			}},
		{Name: "cluster-gateway -o yaml", World: tools, Args: export("cluster-gateway", "-o", "yaml"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				obj := cmdtest.YAMLObject(t, out)
				cmdtest.WantFields(t, obj, map[string]string{"kind": "Secret", "metadata.name": "farm",
					`metadata.labels.cluster\.core\.oam\.dev/cluster-credential-type`: "X509Certificate"})
				if got := decoded(t, obj, "endpoint"); got != "https://farm.fake:6443" {
					t.Errorf("endpoint %q", got)
				}
				if decoded(t, obj, `tls\.key`) == "" {
					t.Errorf("no client key")
				}
			}},
		{Name: "a namespace that is not there", World: tools, Args: []string{"export", "argocd", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "nope"},
			Code: 1, Err: `-n nope: namespace "nope" not found on this cluster (an export never creates a tool's namespace); nothing was written`},
		{Name: "a provider this cluster holds nothing of", World: tools, Args: []string{"export", "argocd", "--kubeconfig", "edge", "--remote-cluster-id", "lone", "-n", "argocd"},
			Code: 1, Err: `provider "lone" not found among the providers this cluster holds an identity of (import its identity first); known: farm`},
		{Name: "a slice this cluster never imported", World: tools, Args: export("argocd", "--resource-slice", "nope"),
			Code: 1, Err: `no kubeconfig for resource slice "nope" of provider "farm" (Secret federate-system/kubeconfig-resource-farm.nope not found): import the slice first`},
		{Name: "an unknown format", World: tools, Args: export("bogus"),
			Code: 1, Usage: true, Err: `FORMAT: format "bogus": must be one of kubeconfig, argocd, cluster-gateway, admiralty, clusterprofile`},
		{Name: "no format", World: tools, Args: []string{"export", "--kubeconfig", "edge", "--remote-cluster-id", "farm"},
			Code: 1, Usage: true, Err: "FORMAT: exactly 1 argument(s) required, got 0"},
		{Name: "no provider named", World: tools, Args: []string{"export", "argocd", "--kubeconfig", "edge"},
			Code: 1, Usage: true, Err: `required flag(s) "remote-cluster-id" not set`},
	})
}

// A federated pairing holds no credential: only a client that runs the plugin exports it, and the plugin
// it runs names the provider, to mint a token on the consumer each time; any other format is refused with
// nothing written.
func TestCommandTableExportFederated(t *testing.T) {
	// Federated with the namespace argocd on edge.
	federated := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Federated(t)
		if _, err := e.World.Cluster("edge").Clientset.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return e
	})
	export := func(format string, more ...string) []string {
		return append([]string{"export", format, "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "argocd"}, more...)
	}
	rows := []cmdtest.Row{
		{Name: "kubeconfig --exec", World: federated, Args: export("kubeconfig", "--exec", "-o", "json"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				obj := cmdtest.JSONObject(t, out)
				if data, _ := cmdtest.FieldAt(obj, "data").(map[string]any); len(data) != 1 || data["kubeconfig"] == nil {
					t.Errorf("the Secret holds more than the client's kubeconfig: %v", data)
				}
				raw, err := base64.StdEncoding.DecodeString(cmdtest.FieldAt(obj, "data.kubeconfig").(string))
				if err != nil {
					t.Fatal(err)
				}
				kc := cmdtest.YAMLObject(t, string(raw))
				users, _ := cmdtest.FieldAt(kc, "users").([]any)
				if len(users) != 1 {
					t.Fatalf("users: %v", users)
				}
				user := users[0].(map[string]any)["user"].(map[string]any)
				exec, _ := user["exec"].(map[string]any)
				if len(user) != 1 || exec == nil || fmt.Sprint(exec["args"]) != "[credential --remote-cluster-id farm]" || exec["provideClusterInfo"] == true {
					t.Errorf("the client's user: %v, want only the plugin minting for farm", user)
				}
			}},
		{Name: "argocd --exec", World: federated, Args: export("argocd", "--exec", "-o", "yaml"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				obj := cmdtest.YAMLObject(t, out)
				if data, _ := cmdtest.FieldAt(obj, "data").(map[string]any); data["credential"] != nil {
					t.Errorf("an argocd export of a federated pairing stores a credential: %v", data)
				}
			}},
	}
	for _, f := range []string{"kubeconfig", "argocd", "cluster-gateway", "admiralty", "clusterprofile"} {
		rows = append(rows, cmdtest.Row{Name: f + " without --exec", World: federated, Args: export(f),
			Code: 1, Err: "the pairing is federated: its credential is a token minted on demand, never stored, and this format would store one"})
	}
	cmdtest.RunTable(t, rows)
}

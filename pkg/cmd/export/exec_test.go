package export_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
)

func pairedWithTools(t *testing.T) *cmdtest.World {
	t.Helper()
	w := cmdtest.NewWorld(t, "edge", "farm")
	if r := w.Run("authenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "farm", "--cluster-id", "edge", "--remote-cluster-id", "farm"); r.Code != 0 {
		t.Fatalf("authenticate: %s", r)
	}
	for _, ns := range []string{"flux-system", "argocd"} {
		if _, err := w.Cluster("edge").Clientset.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func secret(t *testing.T, w *cmdtest.World, ns, name string) *corev1.Secret {
	t.Helper()
	s, err := w.Cluster("edge").Clientset.CoreV1().Secrets(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// An exec kubeconfig export holds no credential in its kubeconfig: its user runs the plugin, handed the
// export's own Secret as the cluster's configuration, where the credential is kept; the plugin run as
// the client would run it prints that credential; renew rewrites the credential and leaves the client as
// it was, so a client built once follows it.
func TestExportKubeconfigExec(t *testing.T) {
	w := pairedWithTools(t)
	if r := w.Run("export", "kubeconfig", "--exec", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "flux-system", "--key", "value"); r.Code != 0 ||
		r.Stdout != "secret/farm-kubeconfig created (namespace flux-system)\n" {
		t.Fatalf("export kubeconfig --exec: %s", r)
	}
	s := secret(t, w, "flux-system", "farm-kubeconfig")
	if string(s.Data["value"]) != string(s.Data["kubeconfig"]) {
		t.Error("--key value does not hold the kubeconfig")
	}
	cfg, err := clientcmd.Load(s.Data["kubeconfig"])
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	user, cluster := cfg.AuthInfos[ctx.AuthInfo], cfg.Clusters[ctx.Cluster]
	if user.Exec == nil || len(user.ClientKeyData) != 0 || user.Token != "" {
		t.Fatalf("the exec kubeconfig's user: %+v", user)
	}
	if user.Exec.Command != "kubectl-federate" || !slices.Equal(user.Exec.Args, []string{"credential"}) || !user.Exec.ProvideClusterInfo ||
		user.Exec.APIVersion != kubeconfig.ExecAPIVersion || user.Exec.InteractiveMode != "Never" {
		t.Errorf("the plugin: %+v", user.Exec)
	}
	ext, ok := cluster.Extensions[kubeconfig.ExecExtension].(*runtime.Unknown)
	if !ok {
		t.Fatalf("no %s extension: %v", kubeconfig.ExecExtension, cluster.Extensions)
	}
	ref, err := kubeconfig.ParseSecretRef(ext.Raw)
	if err != nil || ref != (kubeconfig.SecretRef{Name: "farm-kubeconfig", Key: "credential", Namespace: "flux-system"}) {
		t.Errorf("the plugin's configuration: %+v %v", ref, err)
	}
	held := w.Run("get", "kubeconfig", "--kubeconfig", "edge", "--remote-cluster-id", "farm").Stdout
	if string(s.Data["credential"]) != held {
		t.Error("the Secret does not keep the credential the plugin reads")
	}
	// The plugin, run as client-go runs it (cluster information provided).
	plugin := func() string {
		t.Helper()
		t.Setenv(kubeconfig.ExecInfoEnv, `{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false,"cluster":{"server":"`+
			cluster.Server+`","config":`+string(ext.Raw)+`}}}`)
		r := w.Run(append(user.Exec.Args, "--kubeconfig", "edge")...)
		if r.Code != 0 {
			t.Fatalf("the plugin: %s", r)
		}
		var ec struct {
			Status struct{ ClientCertificateData string } `json:"status"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &ec); err != nil {
			t.Fatal(err)
		}
		return ec.Status.ClientCertificateData
	}
	before := plugin()
	p, _ := kubeconfig.Parse([]byte(held))
	if before != string(p.CertPEM) {
		t.Error("the plugin printed another credential than the one held")
	}

	if r := w.Run("renew", "--kubeconfig", "edge", "--remote-kubeconfig", "farm", "--remote-cluster-id", "farm", "--overlap", "0"); r.Code != 0 {
		t.Fatalf("renew: %s", r)
	}
	after := secret(t, w, "flux-system", "farm-kubeconfig")
	if string(after.Data["kubeconfig"]) != string(s.Data["kubeconfig"]) {
		t.Error("renew changed the exec kubeconfig: a client built from it would have to be built again")
	}
	if string(after.Data["credential"]) == string(s.Data["credential"]) {
		t.Error("renew left the old credential where the plugin reads it")
	}
	if now := plugin(); now == before || !strings.Contains(string(after.Data["credential"]), "client-certificate-data") {
		t.Error("the plugin still prints the old credential after renew")
	}
}

// Argo CD's exec variant: the config holds execProviderConfig and no key material; the plugin's arguments
// name the Secret, or, with --provide-cluster-info, its config does.
func TestExportArgoCDExec(t *testing.T) {
	w := pairedWithTools(t)
	type argo struct {
		BearerToken     string `json:"bearerToken"`
		TLSClientConfig struct {
			CAData, CertData, KeyData []byte
		} `json:"tlsClientConfig"`
		ExecProviderConfig *struct {
			Command            string            `json:"command"`
			Args               []string          `json:"args"`
			Env                map[string]string `json:"env"`
			APIVersion         string            `json:"apiVersion"`
			ProvideClusterInfo bool              `json:"provideClusterInfo"`
			Config             json.RawMessage   `json:"config"`
		} `json:"execProviderConfig"`
	}
	read := func(name string) argo {
		t.Helper()
		var c argo
		if err := json.Unmarshal(secret(t, w, "argocd", name).Data["config"], &c); err != nil {
			t.Fatal(err)
		}
		if c.TLSClientConfig.CertData != nil || c.TLSClientConfig.KeyData != nil || c.BearerToken != "" || c.ExecProviderConfig == nil {
			t.Fatalf("an exec config holds key material, or no plugin: %+v", c)
		}
		return c
	}
	if r := w.Run("export", "argocd", "--exec", "--exec-command", "/custom-tools/kubectl-federate", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "argocd"); r.Code != 0 {
		t.Fatalf("export argocd --exec: %s", r)
	}
	c := read("farm").ExecProviderConfig
	if c.Command != "/custom-tools/kubectl-federate" || c.APIVersion != kubeconfig.ExecAPIVersion || c.ProvideClusterInfo || c.Config != nil ||
		!slices.Equal(c.Args, []string{"credential", "--secret", "farm", "--key", "credential", "--namespace", "argocd"}) {
		t.Errorf("execProviderConfig: %+v", c)
	}
	if r := w.Run("export", "argocd", "--exec", "--provide-cluster-info", "--name", "farm-35", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "argocd"); r.Code != 0 {
		t.Fatalf("export argocd --exec --provide-cluster-info: %s", r)
	}
	c = read("farm-35").ExecProviderConfig
	if ref, err := kubeconfig.ParseSecretRef(c.Config); !c.ProvideClusterInfo || !slices.Equal(c.Args, []string{"credential"}) || err != nil ||
		ref != (kubeconfig.SecretRef{Name: "farm-35", Key: "credential", Namespace: "argocd"}) {
		t.Errorf("execProviderConfig with cluster info: %+v (%+v %v)", c, ref, err)
	}
	for _, bad := range [][]string{
		{"export", "cluster-gateway", "--exec"},
		{"export", "kubeconfig", "--provide-cluster-info", "--exec"},
		{"export", "argocd", "--provide-cluster-info"},
	} {
		r := w.Run(append(bad, "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "argocd")...)
		if r.Code != 1 || !strings.Contains(r.Stderr, "--") {
			t.Errorf("%v: %s", bad, r)
		}
	}
}

package export

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
)

var (
	ca   = []byte("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n")
	cert = []byte("-----BEGIN CERTIFICATE-----\nCERT\n-----END CERTIFICATE-----\n")
	key  = []byte("-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n")
)

func kc(t *testing.T, token string) []byte {
	t.Helper()
	p := kubeconfig.Params{Name: "gpu-farm", Server: "https://gpu-farm.example:6443", CA: ca, Namespace: "federate-tenant-edge-1"}
	if token != "" {
		p.Token = token
	} else {
		p.CertPEM, p.KeyPEM = cert, key
	}
	data, err := kubeconfig.Build(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

var ours = map[string]string{"federate.dev/remote-cluster-id": "gpu-farm"}

func build(t *testing.T, format, key string, data []byte) *Objects {
	t.Helper()
	objs, err := Build(Spec{Format: format, Name: "gpu-farm", Namespace: "tools", Key: key, Labels: ours, Kubeconfig: data})
	if err != nil {
		t.Fatalf("Build %s: %v", format, err)
	}
	if objs.Secret.Namespace != "tools" || objs.Secret.Labels[LabelFormat] != format || objs.Secret.Labels["federate.dev/remote-cluster-id"] != "gpu-farm" ||
		objs.Secret.Annotations[AnnotationName] != "gpu-farm" {
		t.Errorf("%s: the Secret's namespace, labels or name annotation: %+v", format, objs.Secret.ObjectMeta)
	}
	return objs
}

func TestKubeconfigFormat(t *testing.T) {
	data := kc(t, "")
	objs := build(t, FormatKubeconfig, "value", data)
	if objs.Secret.Name != "gpu-farm-kubeconfig" || string(objs.Secret.Data["kubeconfig"]) != string(data) || string(objs.Secret.Data["value"]) != string(data) || objs.Target != nil {
		t.Errorf("kubeconfig export: %s %v", objs.Secret.Name, objs.Secret.Data)
	}
	if objs.Secret.Annotations[AnnotationKey] != "value" {
		t.Errorf("the extra key is not recorded for a rewrite: %v", objs.Secret.Annotations)
	}
	if _, err := Build(Spec{Format: FormatArgoCD, Name: "x", Key: "value", Kubeconfig: data}); err == nil {
		t.Error("an extra key was accepted for argocd")
	}
}

// Argo CD reads config as its ClusterConfig JSON: []byte fields are base64, as encoding/json writes them.
func TestArgoCDFormat(t *testing.T) {
	type tlsConfig struct {
		Insecure bool   `json:"insecure"`
		CertData []byte `json:"certData"`
		KeyData  []byte `json:"keyData"`
		CAData   []byte `json:"caData"`
	}
	type clusterConfig struct {
		BearerToken     string    `json:"bearerToken"`
		TLSClientConfig tlsConfig `json:"tlsClientConfig"`
	}
	for _, token := range []string{"", "tok.en"} {
		objs := build(t, FormatArgoCD, "", kc(t, token))
		s := objs.Secret
		if s.Name != "gpu-farm" || s.Labels[ArgoCDSecretTypeLabel] != "cluster" || string(s.Data["name"]) != "gpu-farm" ||
			string(s.Data["server"]) != "https://gpu-farm.example:6443" || string(s.Data["namespaces"]) != "federate-tenant-edge-1" {
			t.Errorf("argocd (token %q): %s %v %v", token, s.Name, s.Labels, s.Data)
		}
		var cfg clusterConfig
		if err := json.Unmarshal(s.Data["config"], &cfg); err != nil {
			t.Fatal(err)
		}
		if string(cfg.TLSClientConfig.CAData) != string(ca) || cfg.TLSClientConfig.Insecure {
			t.Errorf("argocd config's CA: %s", s.Data["config"])
		}
		if token == "" && (string(cfg.TLSClientConfig.CertData) != string(cert) || string(cfg.TLSClientConfig.KeyData) != string(key) || cfg.BearerToken != "") {
			t.Errorf("argocd config for a certificate: %s", s.Data["config"])
		}
		if token != "" && (cfg.BearerToken != token || cfg.TLSClientConfig.CertData != nil) {
			t.Errorf("argocd config for a token: %s", s.Data["config"])
		}
	}
}

func TestClusterGatewayFormat(t *testing.T) {
	s := build(t, FormatClusterGateway, "", kc(t, "")).Secret
	if s.Name != "gpu-farm" || s.Labels[ClusterGatewayCredentialTypeLabel] != "X509Certificate" || string(s.Data["endpoint"]) != "https://gpu-farm.example:6443" ||
		string(s.Data["ca.crt"]) != string(ca) || string(s.Data["tls.crt"]) != string(cert) || string(s.Data["tls.key"]) != string(key) || s.Data["token"] != nil {
		t.Errorf("cluster-gateway, certificate: %v %v", s.Labels, s.Data)
	}
	s = build(t, FormatClusterGateway, "", kc(t, "tok.en")).Secret
	if s.Labels[ClusterGatewayCredentialTypeLabel] != "ServiceAccountToken" || string(s.Data["token"]) != "tok.en" || string(s.Data["ca.crt"]) != string(ca) || s.Data["tls.key"] != nil {
		t.Errorf("cluster-gateway, token: %v %v", s.Labels, s.Data)
	}
}

func TestAdmiraltyFormat(t *testing.T) {
	data := kc(t, "")
	objs := build(t, FormatAdmiralty, "", data)
	if objs.Secret.Name != "gpu-farm-kubeconfig" || string(objs.Secret.Data["config"]) != string(data) {
		t.Errorf("admiralty Secret: %s %v", objs.Secret.Name, objs.Secret.Data)
	}
	tg := objs.Target
	if tg == nil || tg.GetKind() != "Target" || tg.GetAPIVersion() != "multicluster.admiralty.io/v1alpha1" || tg.GetName() != "gpu-farm" || tg.GetNamespace() != "tools" ||
		tg.GetLabels()[LabelFormat] != FormatAdmiralty {
		t.Fatalf("admiralty Target: %v", tg)
	}
	spec := tg.Object["spec"].(map[string]any)
	if ks := spec["kubeconfigSecret"].(map[string]any); ks["name"] != "gpu-farm-kubeconfig" || ks["key"] != "config" || spec["self"] != nil {
		t.Errorf("admiralty Target spec: %v", spec)
	}
	// Admiralty reads the Secret's key with clientcmd.Load: it must be a kubeconfig that yields the server.
	cfg, err := clientcmd.RESTConfigFromKubeConfig(objs.Secret.Data["config"])
	if err != nil || cfg.Host != "https://gpu-farm.example:6443" {
		t.Errorf("Admiralty's kubeconfig: %v %v", cfg, err)
	}
}

// A rewrite keeps an export's name, format and key, and carries the new credential.
func TestRebuild(t *testing.T) {
	before := build(t, FormatKubeconfig, "value", kc(t, "")).Secret
	after, err := Rebuild(before, kc(t, "new.token"), "gpu-farm")
	if err != nil {
		t.Fatal(err)
	}
	if after.Secret.Name != before.Name || !strings.Contains(string(after.Secret.Data["value"]), "new.token") || after.Secret.Labels["federate.dev/remote-cluster-id"] != "gpu-farm" {
		t.Errorf("rebuilt: %s %v", after.Secret.Name, after.Secret.Labels)
	}
	gw := build(t, FormatClusterGateway, "", kc(t, "")).Secret
	rebuilt, err := Rebuild(gw, kc(t, "new.token"), "gpu-farm")
	if err != nil || rebuilt.Secret.Labels[ClusterGatewayCredentialTypeLabel] != ClusterGatewayServiceAccountToken {
		t.Errorf("a cluster-gateway export rebuilt for a token: %v %v", rebuilt, err)
	}
}

func TestValidate(t *testing.T) {
	for _, bad := range []string{"", "Upper", "a.b", strings.Repeat("a", 53)} {
		if ValidateName(bad) == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	if ValidateKey("kubeconfig") == nil || ValidateKey("a/b") == nil || ValidateKey("value") != nil {
		t.Error("key validation")
	}
	if ValidateFormat("helm") == nil || ValidateFormat("argocd") != nil {
		t.Error("format validation")
	}
	if _, err := Build(Spec{Format: FormatArgoCD, Name: "x", Kubeconfig: []byte("not a kubeconfig: [")}); err == nil {
		t.Error("a broken kubeconfig was exported")
	}
}

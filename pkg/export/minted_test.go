package export

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
)

// where is a federated pairing's kubeconfig as an export gets it: the provider's place, no credential.
func where(t *testing.T) []byte {
	t.Helper()
	data, err := kubeconfig.Build(kubeconfig.Params{Name: "gpu-farm", Server: "https://gpu-farm.example:6443", CA: ca, Namespace: "federate-tenant-edge-1"})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

var mint = &Exec{Command: "kubectl-federate", Args: []string{"credential", "--remote-cluster-id", "gpu-farm"}}

// A minted credential is exported only as a client running the plugin, which names the provider and reads
// no Secret; the Secret holds no credential at all.
func TestMintedKubeconfig(t *testing.T) {
	objs, err := Build(Spec{Format: FormatKubeconfig, Name: "gpu-farm", Namespace: "tools", Labels: ours, Kubeconfig: where(t), Exec: mint, Minted: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := objs.Secret.Data[CredentialKey]; ok || len(objs.Secret.Data) != 1 {
		t.Errorf("a minted export's Secret holds more than the client's kubeconfig: %v", objs.Secret.Data)
	}
	cfg, err := clientcmd.Load(objs.Secret.Data[KubeconfigKey])
	if err != nil {
		t.Fatal(err)
	}
	user := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
	if user.Token != "" || user.ClientKeyData != nil || user.Exec == nil || !slices.Equal(user.Exec.Args, mint.Args) || user.Exec.ProvideClusterInfo {
		t.Errorf("the client: %+v exec %+v, want the plugin naming the provider, no cluster info, no credential", user, user.Exec)
	}
	if cl := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster]; cl.Server != "https://gpu-farm.example:6443" || len(cl.Extensions) != 0 {
		t.Errorf("the cluster: %+v", cl)
	}
}

func TestMintedArgoCD(t *testing.T) {
	objs, err := Build(Spec{Format: FormatArgoCD, Name: "gpu-farm", Namespace: "argocd", Labels: ours, Kubeconfig: where(t), Exec: mint, Minted: true})
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		BearerToken        string          `json:"bearerToken"`
		ExecProviderConfig json.RawMessage `json:"execProviderConfig"`
	}
	if err := json.Unmarshal(objs.Secret.Data["config"], &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.BearerToken != "" || !strings.Contains(string(cfg.ExecProviderConfig), `"args":["credential","--remote-cluster-id","gpu-farm"]`) ||
		strings.Contains(string(cfg.ExecProviderConfig), "provideClusterInfo") {
		t.Errorf("argocd config of a minted credential: %s", objs.Secret.Data["config"])
	}
	if _, ok := objs.Secret.Data[CredentialKey]; ok {
		t.Errorf("a minted export stores a credential: %v", objs.Secret.Data)
	}
}

// Every format that would hold the credential itself is refused for a minted one.
func TestMintedNeedsExec(t *testing.T) {
	for _, f := range Formats {
		_, err := Build(Spec{Format: f, Name: "gpu-farm", Namespace: "tools", Labels: ours, Kubeconfig: where(t), MemberID: "gpu-farm", Minted: true})
		if !errors.Is(err, ErrMintedNeedsExec) {
			t.Errorf("format %s without a plugin: %v, want ErrMintedNeedsExec", f, err)
		}
	}
	// Not minted, a kubeconfig without a credential is refused as ever.
	if _, err := Build(Spec{Format: FormatKubeconfig, Name: "gpu-farm", Namespace: "tools", Kubeconfig: where(t), Exec: mint}); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("a stored kubeconfig without a credential: %v", err)
	}
}

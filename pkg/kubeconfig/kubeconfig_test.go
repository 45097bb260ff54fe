package kubeconfig

import (
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestCurrentTokenAndImpersonated: the token and the impersonated user are the current context's user's;
// a kubeconfig that does not parse, or whose current context or user is missing, has neither.
func TestCurrentTokenAndImpersonated(t *testing.T) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
	cfg.AuthInfos["me"] = &clientcmdapi.AuthInfo{Token: "tok-me", Impersonate: "system:serviceaccount:ns:sa"}
	cfg.AuthInfos["other"] = &clientcmdapi.AuthInfo{Token: "tok-other", Impersonate: "someone"}
	cfg.Contexts["mine"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "me"}
	cfg.Contexts["nouser"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "gone"}
	write := func(current string) []byte {
		cfg.CurrentContext = current
		data, err := clientcmd.Write(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	cases := []struct {
		name, token, as string
		data            []byte
	}{
		{"current user", "tok-me", "system:serviceaccount:ns:sa", write("mine")},
		{"user missing", "", "", write("nouser")},
		{"context missing", "", "", write("absent")},
		{"not a kubeconfig", "", "", []byte("{not yaml: [")},
	}
	for _, c := range cases {
		if got := CurrentToken(c.data); got != c.token {
			t.Errorf("%s: CurrentToken %q, want %q", c.name, got, c.token)
		}
		if got := Impersonated(c.data); got != c.as {
			t.Errorf("%s: Impersonated %q, want %q", c.name, got, c.as)
		}
	}
}

// TestBuiltTokenKubeconfig: a kubeconfig built with a token carries it as its current user's, and is
// held to hold that token and no other.
func TestBuiltTokenKubeconfig(t *testing.T) {
	data, err := Build(Params{Name: "p", Server: "https://10.0.0.1:6443", Token: "secret", Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	if got := CurrentToken(data); got != "secret" {
		t.Fatalf("CurrentToken %q", got)
	}
	if got := Impersonated(data); got != "" {
		t.Fatalf("Impersonated %q, want none", got)
	}
	if !HoldsCredential(data, nil, "secret") || HoldsCredential(data, nil, "other") {
		t.Fatal("HoldsCredential does not tell the built token from another")
	}
	if _, err := Build(Params{Name: "p", Server: "not a url", Token: "x"}); err == nil {
		t.Fatal("Build accepted a server that is not a URL")
	}
}

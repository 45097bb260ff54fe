package cmdutil

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Every request carries the kubectl-federate user agent and is counted.
func TestFactoryUserAgentAndCount(t *testing.T) {
	var agents []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agents = append(agents, r.UserAgent())
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"x"}}`))
	}))
	defer srv.Close()
	f, c := factoryFor(t, srv.URL)
	for range 3 {
		if _, err := c.Kube.CoreV1().Namespaces().Get(t.Context(), "x", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if f.Requests.Load() != 3 || len(agents) != 3 {
		t.Fatalf("counted %d requests, server saw %d", f.Requests.Load(), len(agents))
	}
	for _, a := range agents {
		if !strings.HasPrefix(a, "kubectl-federate/") {
			t.Errorf("user agent %q", a)
		}
	}
}

// Expiries are judged on the API server's clock: the factory measures it from the Date header, so a
// machine whose clock is hours off still sees the server's time.
func TestFactoryServerNowFollowsTheDateHeader(t *testing.T) {
	ahead := 3 * time.Hour
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Date", time.Now().Add(ahead).UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"x"}}`))
	}))
	defer srv.Close()
	f, c := factoryFor(t, srv.URL)
	if d := time.Until(f.ServerNow()); d.Abs() > time.Second {
		t.Fatalf("before any response ServerNow is %s off the local clock", d)
	}
	if _, err := c.Kube.CoreV1().Namespaces().Get(t.Context(), "x", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := f.ServerNow().Sub(time.Now().Add(ahead)); d.Abs() > 2*time.Second {
		t.Fatalf("ServerNow is %s off the server's clock", d)
	}
}

// factoryFor returns a factory, and its clients, for a kubeconfig pointing at server.
func factoryFor(t *testing.T, server string) (*Factory, *Clients) {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kc")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "+server+"}}]\n"+
		"contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := NewFactory(genericiooptions.NewTestIOStreamsDiscard())
	f.Flags.KubeConfig = &kc
	c, err := f.Clients()
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

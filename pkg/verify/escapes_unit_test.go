package verify

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// TestImpersonate: a client for a user sends the impersonation headers of that user and groups; the
// caller's own client ("") sends none; the cluster's config is left as it was; no config, no client.
func TestImpersonate(t *testing.T) {
	var mu sync.Mutex
	var users, groups []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		users = append(users, r.Header.Get("Impersonate-User"))
		groups = append(groups, strings.Join(r.Header.Values("Impersonate-Group"), ","))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"x"}}`))
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	as := impersonate(&member.Cluster{Config: cfg})
	for _, user := range []string{"system:serviceaccount:ns:sa", ""} {
		cs, err := as(user, []string{"g1", "g2"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "x", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(users) != 2 || users[0] != "system:serviceaccount:ns:sa" || groups[0] != "g1,g2" || users[1] != "" || groups[1] != "" {
		t.Fatalf("impersonation headers: users %q groups %q", users, groups)
	}
	if cfg.Impersonate.UserName != "" || cfg.QPS != 0 {
		t.Fatalf("the cluster's config was changed: %+v", cfg)
	}
	if _, err := impersonate(&member.Cluster{})("u", nil); err == nil {
		t.Fatal("a cluster with no config gave a client")
	}
}

// TestGuardOf: each attack is named by the guard meant to refuse it.
func TestGuardOf(t *testing.T) {
	cases := []struct {
		a    Attack
		want string
	}{
		{Attack{Guards: []string{ByQuota, ByPodSecurity}}, "the label " + sandbox.PsaPrefix + "enforce of Namespace ns"},
		{Attack{Guards: []string{ByQuota}}, "ResourceQuota ns/" + sandbox.SandboxName},
		{Attack{Guards: []string{"x"}, Access: authzv1.ResourceAttributes{Verb: "patch", Resource: "persistentvolumeclaims"}},
			"ValidatingAdmissionPolicy " + sandbox.SandboxName + "-volumeclaims (and its binding)"},
		{Attack{Guards: []string{"x"}, Access: authzv1.ResourceAttributes{Verb: "create", Resource: "pods"}},
			"ValidatingAdmissionPolicy " + sandbox.SandboxName + "-pods (and its binding)"},
		{Attack{Guards: []string{"x"}, Access: authzv1.ResourceAttributes{Verb: "create", Resource: "configmaps"}},
			"a sandbox admission policy"},
	}
	for _, c := range cases {
		if got := guardOf(c.a, "ns"); got != c.want {
			t.Errorf("guardOf(%v, %v) = %q, want %q", c.a.Guards, c.a.Access.Resource, got, c.want)
		}
	}
}

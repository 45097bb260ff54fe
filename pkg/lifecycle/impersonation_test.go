package lifecycle

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	authv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// The probe decides from the API server's answer to one impersonated read, made with the probe's own token:
// read means the cluster honours the new verbs, Forbidden that it does not. Either way it leaves nothing
// behind, holds no legacy impersonate verb, and is made once per process.
func TestConstrainedImpersonationProbe(t *testing.T) {
	for _, honours := range []bool{true, false} {
		f := newFakeCluster(t)
		f.Impersonation = nil
		// The authorizer agrees at once with the RBAC the probe writes (the real one is proven end to end).
		f.SARAllow = func(authzv1.SubjectAccessReviewSpec) bool { return true }
		const token = "probe-token"
		f.kube.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() != "token" {
				return false, nil, nil
			}
			return true, &authv1.TokenRequest{Status: authv1.TokenRequestStatus{Token: token}}, nil
		})
		var reads []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			who := r.Header.Get("Impersonate-User")
			reads = append(reads, r.Method+" "+r.URL.Path+" as "+who)
			w.Header().Set("Content-Type", "application/json")
			if r.Header.Get("Authorization") != "Bearer "+token || !strings.HasPrefix(who, member.UserPrefix+sandbox.ProbeName) {
				w.WriteHeader(http.StatusUnauthorized)
				_ = json.NewEncoder(w).Encode(metav1.Status{Status: metav1.StatusFailure, Code: 401, Reason: metav1.StatusReasonUnauthorized})
				return
			}
			if !honours {
				w.WriteHeader(http.StatusForbidden)
				_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
					Message: "users \"" + who + "\" is forbidden: User cannot impersonate"})
				return
			}
			_ = json.NewEncoder(w).Encode(corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
				ObjectMeta: metav1.ObjectMeta{Name: member.ClusterConfigMap, Namespace: member.SystemNamespace}})
		}))
		f.Config = &rest.Config{Host: srv.URL}

		got, err := sandbox.ConstrainedImpersonation(t.Context(), f.Cluster)
		srv.Close()
		if err != nil {
			t.Fatalf("honours=%v: %v", honours, err)
		}
		if got.Constrained != honours || got.Reason == "" {
			t.Errorf("honours=%v: the probe found %+v", honours, got)
		}
		want := "GET /api/v1/namespaces/" + member.SystemNamespace + "/configmaps/" + member.ClusterConfigMap + " as " + member.UserPrefix + sandbox.ProbeName
		if len(reads) != 1 || !strings.HasPrefix(reads[0], want) {
			t.Errorf("honours=%v: the probe read %v, want one %q...", honours, reads, want)
		}
		// What it made, it removed.
		roles, _ := f.kube.RbacV1().ClusterRoles().List(t.Context(), metav1.ListOptions{})
		bindings, _ := f.kube.RbacV1().ClusterRoleBindings().List(t.Context(), metav1.ListOptions{})
		sas, _ := f.kube.CoreV1().ServiceAccounts(member.SystemNamespace).List(t.Context(), metav1.ListOptions{})
		for _, n := range append(append(names(roles.Items), names(bindings.Items)...), names(sas.Items)...) {
			if strings.HasPrefix(n, sandbox.ProbeName) {
				t.Errorf("honours=%v: the probe left %s", honours, n)
			}
		}
		if f.count("create", "clusterroles") != 1 {
			t.Errorf("honours=%v: %d ClusterRoles created, want the probe's one", honours, f.count("create", "clusterroles"))
		}
		// Asked again, the process's answer is reused: nothing is created a second time.
		before := len(f.Actions())
		if again, err := sandbox.ConstrainedImpersonation(t.Context(), f.Cluster); err != nil || again != got || len(f.Actions()) != before {
			t.Errorf("honours=%v: a second probe: %+v %v, %d new requests", honours, again, err, len(f.Actions())-before)
		}
	}
}

// names lists the names of objects.
func names[T any, PT interface {
	*T
	GetName() string
}](items []T) []string {
	out := make([]string, 0, len(items))
	for i := range items {
		out = append(out, PT(&items[i]).GetName())
	}
	return out
}

// The RBAC of a constrained credential names exactly its target and its scope, spells "*" out (RBAC reads
// impersonate-on:user-info:* as a verb of its own), groups resources by API group, and holds no legacy
// impersonate verb; the legacy grant (a provider without constrained impersonation) is impersonate on
// exactly the target.
func TestExchangeRBACRules(t *testing.T) {
	target := exchange.Target{User: "alice", Groups: []string{"kubeadm:cluster-admins"}, UID: "42"}
	constrained := exchange.TargetRules(target, true)
	legacy := exchange.TargetRules(target, false)
	for _, r := range constrained {
		if r.APIGroups[0] != "authentication.k8s.io" || !slices.Equal(r.Verbs, []string{"impersonate:user-info"}) {
			t.Errorf("constrained target rule %+v", r)
		}
	}
	if len(constrained) != 3 || !slices.Equal(constrained[0].ResourceNames, []string{"alice"}) ||
		!slices.Equal(constrained[1].ResourceNames, []string{"kubeadm:cluster-admins"}) || !slices.Equal(constrained[2].ResourceNames, []string{"42"}) {
		t.Errorf("constrained target rules %+v: want alice, her group and her uid by name", constrained)
	}
	if len(legacy) != 3 || !slices.Equal(legacy[0].Verbs, []string{"impersonate"}) || legacy[0].APIGroups[0] != "" {
		t.Errorf("legacy target rules %+v", legacy)
	}

	scope := exchange.Scope{Verbs: []string{"list", "get", "get"}, Resources: []string{"pods", "pods/log", "deployments.apps"}, Namespaces: []string{"team-a"}}
	rules := exchange.ScopeRules(scope)
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}, Verbs: []string{"impersonate-on:user-info:get", "impersonate-on:user-info:list"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"impersonate-on:user-info:get", "impersonate-on:user-info:list"}},
	}
	if len(rules) != len(want) {
		t.Fatalf("scope rules %+v, want %+v", rules, want)
	}
	for i := range want {
		if !slices.Equal(rules[i].APIGroups, want[i].APIGroups) || !slices.Equal(rules[i].Resources, want[i].Resources) || !slices.Equal(rules[i].Verbs, want[i].Verbs) {
			t.Errorf("scope rule %d: %+v, want %+v", i, rules[i], want[i])
		}
	}
	every := exchange.ScopeRules(exchange.Scope{Verbs: []string{"*"}, Resources: []string{"configmaps"}})
	if len(every) != 1 || len(every[0].Verbs) != len(sandbox.EveryVerb) || slices.Contains(every[0].Verbs, "impersonate-on:user-info:*") {
		t.Errorf(`"*" became %+v, want every verb spelled out`, every)
	}
	for _, r := range append(append(rules, every...), sandbox.AlwaysOn()...) {
		for _, v := range r.Verbs {
			if v == "impersonate" || v == "*" || !strings.HasPrefix(v, "impersonate-on:user-info:") {
				t.Errorf("rule %+v holds %q: a constrained credential's scope holds only impersonate-on verbs", r, v)
			}
		}
	}
}

package handshake

import (
	"errors"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
)

const fakeRules = `apiVersion: federate.dev/v1alpha1
kind: ClusterGatewayConfiguration
spec:
  clientIdentityExchanger:
    rules:
    - {name: super-user, type: PrivilegedIdentityExchanger, priority: 10, source: {group: sudoer}}
    - {name: mapping, type: StaticMappingIdentityExchanger, priority: 100, source: {user: user-12345, cluster: provider}, target: {user: user-34567, groups: [team-a], uid: "42"}}
`

var (
	clusterRolesRes        = rbacv1.SchemeGroupVersion.WithResource("clusterroles")
	clusterRoleBindingsRes = rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")
)

func (f *fakeCluster) exchangeRBAC(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, gvr := range []struct {
		res  string
		list func() (*unstructured.UnstructuredList, error)
	}{
		{"clusterroles", func() (*unstructured.UnstructuredList, error) {
			return f.dyn.Resource(clusterRolesRes).List(t.Context(), metav1.ListOptions{LabelSelector: LabelExchange})
		}},
		{"clusterrolebindings", func() (*unstructured.UnstructuredList, error) {
			return f.dyn.Resource(clusterRoleBindingsRes).List(t.Context(), metav1.ListOptions{LabelSelector: LabelExchange})
		}},
	} {
		l, err := gvr.list()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range l.Items {
			out = append(out, gvr.res+"/"+o.GetName())
		}
	}
	return out
}

// The exchange flow on fakes: rules stored, resolved, asked for through the pairing, allowed by the
// provider, imported; asking again reuses the credential; revoke and RemoveIdentity take it away.
func TestExchangeFlowOnFakes(t *testing.T) {
	consumer, provider := pairedFakes(t)
	if changed, err := consumer.ApplyExchangeRules(t.Context(), []byte(fakeRules)); err != nil || !changed {
		t.Fatalf("ApplyExchangeRules: %v %v", changed, err)
	}
	if changed, err := consumer.ApplyExchangeRules(t.Context(), []byte(fakeRules)); err != nil || changed {
		t.Fatalf("ApplyExchangeRules again: %v %v", changed, err)
	}
	res, err := consumer.ResolveExchange(t.Context(), exchange.Request{User: "user-12345", Groups: []string{"sudoer"}, Cluster: "provider"}, exchange.Client{})
	if err != nil || res.Rule.Name != "mapping" || res.Target == nil || res.Target.User != "user-34567" {
		t.Fatalf("ResolveExchange: %+v %v", res, err)
	}
	if res, err := consumer.ResolveExchange(t.Context(), exchange.Request{User: "bob", Groups: []string{"sudoer"}, Cluster: "provider"}, exchange.Client{}); err != nil || res.Target != nil {
		t.Fatalf("privileged: %+v %v", res, err)
	}
	if _, err := consumer.ResolveExchange(t.Context(), exchange.Request{User: "nobody", Cluster: "provider"}, exchange.Client{}); !errors.Is(err, ErrNoExchangeRule) {
		t.Fatalf("nobody: %v", err)
	}
	via, err := consumer.ViaPairing(t.Context(), "provider")
	if err != nil {
		t.Fatal(err)
	}
	o := ExchangeOptions{ProviderID: "provider", Rule: "mapping", Target: *res.Target}
	_, err = consumer.RequestExchange(t.Context(), via, o)
	var pending *ExchangePendingError
	if !errors.As(err, &pending) || !strings.Contains(err.Error(), "kubectl federate allow exchange mapping-") {
		t.Fatalf("first RequestExchange: %v", err)
	}
	if _, err := consumer.RequestExchange(t.Context(), via, o); !errors.Is(err, ErrExchangePending) {
		t.Fatalf("second RequestExchange: %v", err)
	}
	list, err := provider.ExchangeRequests(t.Context(), "consumer")
	if err != nil || len(list) != 1 || list[0].Phase != ExchangePending || list[0].User != "user-34567" {
		t.Fatalf("ExchangeRequests: %+v %v", list, err)
	}
	if got := provider.exchangeRBAC(t); len(got) > 0 {
		t.Fatalf("RBAC before consent: %v", got)
	}
	key := ExchangeKey("mapping", *res.Target)
	answered, err := provider.AllowExchange(t.Context(), AllowExchangeOptions{ConsumerID: "consumer", Name: key})
	if err != nil || len(answered) != 1 || answered[0].Phase != ExchangeIssued {
		t.Fatalf("AllowExchange: %+v %v", answered, err)
	}
	name := ExchangeRBACName("consumer", key)
	u, err := provider.dyn.Resource(clusterRolesRes).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := fromUnstructured(u, &role); err != nil {
		t.Fatal(err)
	}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"user-34567"}},
		{APIGroups: []string{""}, Resources: []string{"groups"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"team-a"}},
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"uids"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"42"}},
	}
	if fmtAny(role.Rules) != fmtAny(want) {
		t.Errorf("ClusterRole rules %v, want %v", role.Rules, want)
	}
	u, err = provider.dyn.Resource(clusterRoleBindingsRes).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var crb rbacv1.ClusterRoleBinding
	if err := fromUnstructured(u, &crb); err != nil {
		t.Fatal(err)
	}
	if len(crb.Subjects) != 1 || crb.Subjects[0].Name != ExchangeUser("consumer", key) || crb.RoleRef.Name != name {
		t.Errorf("ClusterRoleBinding %+v", crb)
	}
	csrs := provider.count("create", "certificatesigningrequests")
	if _, err := provider.AllowExchange(t.Context(), AllowExchangeOptions{ConsumerID: "consumer", Rule: "mapping"}); err != nil {
		t.Fatal(err)
	}
	if n := provider.count("create", "certificatesigningrequests"); n != csrs {
		t.Errorf("allowing again issued again (%d CSRs, was %d)", n, csrs)
	}
	got, err := consumer.RequestExchange(t.Context(), via, o)
	if err != nil {
		t.Fatalf("RequestExchange after consent: %v", err)
	}
	cfg, err := clientcmd.Load(got.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ai := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
	if ai.Impersonate != "user-34567" || !slices.Equal(ai.ImpersonateGroups, []string{"team-a"}) || ai.ImpersonateUID != "42" || len(ai.ClientKeyData) == 0 {
		t.Errorf("kubeconfig user %+v", ai)
	}
	if got.User != ExchangeUser("consumer", key) {
		t.Errorf("user %q", got.User)
	}
	again, err := consumer.RequestExchange(t.Context(), via, o)
	if err != nil || !again.Reused || string(again.Kubeconfig) != string(got.Kubeconfig) {
		t.Errorf("RequestExchange again: %+v %v", again, err)
	}
	if _, err := consumer.Kube.CoreV1().Secrets(SystemNamespace).Get(t.Context(), exchangePendingKeySecretName("provider", key), metav1.GetOptions{}); err == nil {
		t.Error("the pending key outlived the import")
	}
	if err := provider.Revoke(t.Context(), "consumer"); err != nil {
		t.Fatal(err)
	}
	if left := provider.exchangeRBAC(t); len(left) > 0 {
		t.Errorf("revoke left %v", left)
	}
	// The stored kubeconfig is dead now: it is not handed out, a new credential is asked for instead, and a
	// revoked consumer gets none.
	if _, err := consumer.RequestExchange(t.Context(), via, o); !errors.Is(err, ErrExchangePending) {
		t.Errorf("RequestExchange after revoke: %v", err)
	}
	if _, ok := consumer.StoredExchange(t.Context(), "provider", key); ok {
		t.Error("the dead kubeconfig is still stored")
	}
	if _, err := provider.AllowExchange(t.Context(), AllowExchangeOptions{ConsumerID: "consumer", Name: key}); !errors.Is(err, ErrNotActive) {
		t.Errorf("AllowExchange for a revoked consumer: %v", err)
	}
	if err := consumer.RemoveIdentity(t.Context(), "provider"); err != nil {
		t.Fatal(err)
	}
	if _, err := consumer.Kube.CoreV1().Secrets(SystemNamespace).Get(t.Context(), exchangePendingKeySecretName("provider", key), metav1.GetOptions{}); err == nil {
		t.Error("RemoveIdentity left the exchange key")
	}
}

// The provider refuses a request for a system: target, for a CSR of another user, or under another name,
// naming the field, and creates nothing.
func TestAllowExchangeRefuses(t *testing.T) {
	_, provider := pairedFakes(t)
	key, err := NewClientKey("")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rule, name, cn string
		target         v1alpha1.ExchangeTarget
		want           string
	}{
		{rule: "evil", target: v1alpha1.ExchangeTarget{User: "system:masters"}, want: `spec.target.user "system:masters"`},
		{rule: "evil2", target: v1alpha1.ExchangeTarget{User: "eve", Groups: []string{"system:masters"}}, want: `spec.target.groups[0] "system:masters"`},
		{rule: "pairing", target: v1alpha1.ExchangeTarget{User: "kubectl-federate:other:x"}, want: `spec.target.user "kubectl-federate:other:x"`},
		{rule: "wrongcn", target: v1alpha1.ExchangeTarget{User: "eve"}, cn: "kubectl-federate:consumer:exchange-x", want: `spec.csr: subject CN "kubectl-federate:consumer:exchange-x"`},
		{rule: "renamed", name: "renamed-00000000", target: v1alpha1.ExchangeTarget{User: "eve"}, want: `metadata.name "renamed-00000000": must be`},
	} {
		name := c.name
		if name == "" {
			name = c.rule + "-" + exchange.Hash(fromExchangeTarget(c.target))
		}
		cn := c.cn
		if cn == "" {
			cn = ExchangeUser("consumer", name)
		}
		csr, err := NewCSR(cn, key)
		if err != nil {
			t.Fatal(err)
		}
		u, err := toUnstructured(&v1alpha1.ExchangeRequest{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.ExchangeRequestKind},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: TenantNamespace("consumer")},
			Spec:       v1alpha1.ExchangeRequestSpec{Rule: c.rule, Target: c.target, CSR: csr}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := provider.dyn.Resource(v1alpha1.ExchangeRequestGVR).Namespace(TenantNamespace("consumer")).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		csrs := provider.count("create", "certificatesigningrequests")
		answered, err := provider.AllowExchange(t.Context(), AllowExchangeOptions{ConsumerID: "consumer", Rule: c.rule})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.rule, err, c.want)
		}
		if len(answered) != 1 || answered[0].Phase != ExchangeRefused {
			t.Errorf("%s: answered %+v", c.rule, answered)
		}
		if n := provider.count("create", "certificatesigningrequests"); n != csrs {
			t.Errorf("%s: a CSR was created", c.rule)
		}
		if got := provider.exchangeRBAC(t); len(got) > 0 {
			t.Errorf("%s: created %v", c.rule, got)
		}
	}
	if _, err := provider.AllowExchange(t.Context(), AllowExchangeOptions{ConsumerID: "consumer", Rule: "absent"}); err == nil || !strings.Contains(err.Error(), "has left no ExchangeRequest") {
		t.Errorf("absent rule: %v", err)
	}
}

func TestApplyBadExchangeRulesChangesNothing(t *testing.T) {
	consumer, _ := fakePair(t)
	if _, err := consumer.ApplyExchangeRules(t.Context(), []byte(fakeRules)); err != nil {
		t.Fatal(err)
	}
	before := len(consumer.kube.Actions())
	if _, err := consumer.ApplyExchangeRules(t.Context(), []byte(strings.Replace(fakeRules, "priority: 10,", "priority: 10, target: {user: x},", 1))); err == nil ||
		!strings.Contains(err.Error(), "rules[0].target") {
		t.Fatalf("bad file: %v", err)
	}
	if after := len(consumer.kube.Actions()); after != before {
		t.Errorf("a bad file sent %d requests", after-before)
	}
	_, data, err := consumer.ExchangeRules(t.Context())
	if err != nil || string(data) != fakeRules {
		t.Errorf("stored rules %q %v", data, err)
	}
}

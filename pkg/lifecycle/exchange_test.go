package lifecycle

import (
	"crypto/x509"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
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
			return f.dyn.Resource(clusterRolesRes).List(t.Context(), metav1.ListOptions{LabelSelector: member.LabelExchange})
		}},
		{"clusterrolebindings", func() (*unstructured.UnstructuredList, error) {
			return f.dyn.Resource(clusterRoleBindingsRes).List(t.Context(), metav1.ListOptions{LabelSelector: member.LabelExchange})
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

// The exchange flow on fakes: rules stored, resolved, asked for through the pairing, allowed by name by the
// provider, imported; asking again reuses the credential; revoke takes it away for good.
func TestExchangeFlowOnFakes(t *testing.T) {
	consumer, provider := pairedFakes(t)
	if what, err := exchange.ApplyExchangeRules(t.Context(), consumer.Cluster, []byte(fakeRules)); err != nil || what != "created" {
		t.Fatalf("ApplyExchangeRules: %v %v", what, err)
	}
	if what, err := exchange.ApplyExchangeRules(t.Context(), consumer.Cluster, []byte(fakeRules)); err != nil || what != "unchanged" {
		t.Fatalf("ApplyExchangeRules again: %v %v", what, err)
	}
	res, err := exchange.ResolveExchange(t.Context(), consumer.Cluster, exchange.Request{User: "user-12345", Groups: []string{"sudoer"}, Cluster: "provider"}, exchange.Client{})
	if err != nil || res.Rule.Name != "mapping" || res.Target == nil || res.Target.User != "user-34567" {
		t.Fatalf("ResolveExchange: %+v %v", res, err)
	}
	if res, err := exchange.ResolveExchange(t.Context(), consumer.Cluster, exchange.Request{User: "bob", Groups: []string{"sudoer"}, Cluster: "provider"}, exchange.Client{}); err != nil || res.Target != nil {
		t.Fatalf("privileged: %+v %v", res, err)
	}
	if _, err := exchange.ResolveExchange(t.Context(), consumer.Cluster, exchange.Request{User: "nobody", Cluster: "provider"}, exchange.Client{}); !errors.Is(err, exchange.ErrNoExchangeRule) {
		t.Fatalf("nobody: %v", err)
	}
	via, err := handshake.ViaPairing(t.Context(), consumer.Cluster, "provider")
	if err != nil {
		t.Fatal(err)
	}
	scope := exchange.Scope{Verbs: []string{"get", "list"}, Resources: []string{"pods", "deployments.apps"}, Namespaces: []string{"team-a"}}
	o := exchange.Options{ProviderID: "provider", Rule: "mapping", Target: *res.Target, Scope: scope}
	_, err = exchange.RequestExchange(t.Context(), consumer.Cluster, via, o)
	var pending *exchange.PendingError
	if !errors.As(err, &pending) || !strings.HasPrefix(pending.Request, "mapping-") || len(pending.Request) != len("mapping-")+32 {
		t.Fatalf("first RequestExchange: %v", err)
	}
	name := pending.Request
	if _, err := exchange.RequestExchange(t.Context(), consumer.Cluster, via, o); !errors.As(err, &pending) || pending.Request != name {
		t.Fatalf("second RequestExchange: %v (want the same request %s)", err, name)
	}
	list, err := exchange.Requests(t.Context(), provider.Cluster, "consumer")
	if err != nil || len(list) != 1 || list[0].Phase != exchange.ExchangePending || list[0].User != "user-34567" || list[0].Scope.String() != "get,list on deployments.apps,pods in team-a" ||
		list[0].ClusterWide || len(list[0].Reach) > 0 || list[0].TargetAccess == nil || list[0].TargetAccess.Total != 4 {
		t.Fatalf("ExchangeRequests: %+v %v", list, err)
	}
	if got := provider.exchangeRBAC(t); len(got) > 0 {
		t.Fatalf("RBAC before consent: %v", got)
	}
	// The tenant cannot change what was listed: the request is refused by name for another content (the
	// API server refuses updates to spec; here the provider's own check is shown).
	if _, err := provider.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	answered, err := exchange.AllowExchange(t.Context(), provider.Cluster, exchange.AllowExchangeOptions{ConsumerID: "consumer", Names: []string{name}})
	if err != nil || len(answered) != 1 || answered[0].Phase != exchange.ExchangeIssued || answered[0].Mode != sandbox.ModeConstrained {
		t.Fatalf("AllowExchange: %+v %v", answered, err)
	}
	hash := strings.TrimPrefix(name, "mapping-")
	rbac := exchange.RBACName("consumer", name)
	role := getClusterRole(t, provider, rbac)
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"users"}, Verbs: []string{"impersonate:user-info"}, ResourceNames: []string{"user-34567"}},
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"groups"}, Verbs: []string{"impersonate:user-info"}, ResourceNames: []string{"team-a"}},
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"uids"}, Verbs: []string{"impersonate:user-info"}, ResourceNames: []string{"42"}},
	}
	want = append(want, sandbox.AlwaysOn()...)
	if fmtAny(role.Rules) != fmtAny(want) {
		t.Errorf("ClusterRole rules %v, want %v", role.Rules, want)
	}
	for _, r := range role.Rules {
		if slices.Contains(r.Verbs, "impersonate") || slices.Contains(r.Verbs, "*") {
			t.Errorf("a constrained grant holds the legacy verb: %+v", r)
		}
	}
	on := getClusterRole(t, provider, rbac+"-on")
	wantOn := []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"impersonate-on:user-info:get", "impersonate-on:user-info:list"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"impersonate-on:user-info:get", "impersonate-on:user-info:list"}},
	}
	if fmtAny(on.Rules) != fmtAny(wantOn) {
		t.Errorf("ClusterRole -on rules %v, want %v", on.Rules, wantOn)
	}
	rb, err := provider.kube.RbacV1().RoleBindings("team-a").Get(t.Context(), rbac, metav1.GetOptions{})
	if err != nil {
		// applied through the dynamic client
		u, derr := provider.dyn.Resource(exchange.RoleBindingGVR).Namespace("team-a").Get(t.Context(), rbac, metav1.GetOptions{})
		if derr != nil {
			t.Fatalf("RoleBinding in team-a: %v / %v", err, derr)
		}
		rb = &rbacv1.RoleBinding{}
		if err := objects.FromUnstructured(u, rb); err != nil {
			t.Fatal(err)
		}
	}
	if len(rb.Subjects) != 1 || rb.Subjects[0].Name != exchange.User("consumer", hash) || rb.RoleRef.Name != rbac+"-on" {
		t.Errorf("RoleBinding %+v", rb)
	}
	csrs := provider.count("create", "certificatesigningrequests")
	if _, err := exchange.AllowExchange(t.Context(), provider.Cluster, exchange.AllowExchangeOptions{ConsumerID: "consumer", Names: []string{name}}); err != nil {
		t.Fatal(err)
	}
	if n := provider.count("create", "certificatesigningrequests"); n != csrs {
		t.Errorf("allowing again issued again (%d CSRs, was %d)", n, csrs)
	}
	ticking(consumer)
	got, err := exchange.RequestExchange(t.Context(), consumer.Cluster, via, o)
	if err != nil {
		t.Fatalf("RequestExchange after consent: %v", err)
	}
	recorded(t, consumer, handshake.EventImported, "exchange credential "+name+" (rule mapping, acting as user-34567) on provider provider stored", 1)
	cfg, err := clientcmd.Load(got.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ai := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
	if ai.Impersonate != "user-34567" || !slices.Equal(ai.ImpersonateGroups, []string{"team-a"}) || ai.ImpersonateUID != "42" || len(ai.ClientKeyData) == 0 {
		t.Errorf("kubeconfig user %+v", ai)
	}
	if ns := cfg.Contexts[cfg.CurrentContext].Namespace; ns != "team-a" {
		t.Errorf("kubeconfig namespace %q, want the scope's team-a", ns)
	}
	if got.User != exchange.User("consumer", hash) || got.Request != name {
		t.Errorf("user %q request %q", got.User, got.Request)
	}
	again, err := exchange.RequestExchange(t.Context(), consumer.Cluster, via, o)
	if err != nil || !again.Reused || string(again.Kubeconfig) != string(got.Kubeconfig) {
		t.Errorf("RequestExchange again: %+v %v", again, err)
	}
	grant := exchange.GrantHash("mapping", *res.Target, scope)
	if _, err := consumer.Kube.CoreV1().Secrets(member.SystemNamespace).Get(t.Context(), exchange.PendingKeySecretName("provider", "mapping", grant), metav1.GetOptions{}); err == nil {
		t.Error("the pending key outlived the import")
	}
	if _, err := Revoke(t.Context(), provider.Cluster, "consumer"); err != nil {
		t.Fatal(err)
	}
	if left := provider.exchangeRBAC(t); len(left) > 0 {
		t.Errorf("revoke left %v", left)
	}
	revoked, err := revokedUsers(t, provider.Cluster, "consumer")
	if err != nil || !slices.Contains(revoked, exchange.User("consumer", hash)) {
		t.Errorf("revoked users %v %v: want the exchange credential's user", revoked, err)
	}
	// A revoked request is never answered again, even by name.
	if _, err := exchange.AllowExchange(t.Context(), provider.Cluster, exchange.AllowExchangeOptions{ConsumerID: "consumer", Names: []string{name}}); err == nil {
		t.Error("AllowExchange of a revoked consumer's request succeeded")
	}
	// The stored kubeconfig is dead now: it is not handed out, and a new key is asked for instead.
	_, err = exchange.RequestExchange(t.Context(), consumer.Cluster, via, o)
	if !errors.As(err, &pending) || pending.Request == name {
		t.Errorf("RequestExchange after revoke: %v (want a new request, not %s)", err, name)
	}
	if _, ok := exchange.StoredExchange(t.Context(), consumer.Cluster, "provider", "mapping", grant); ok {
		t.Error("the dead kubeconfig is still stored")
	}
	if err := RemoveIdentity(t.Context(), consumer.Cluster, "provider"); err != nil {
		t.Fatal(err)
	}
	if _, err := consumer.Kube.CoreV1().Secrets(member.SystemNamespace).Get(t.Context(), exchange.PendingKeySecretName("provider", "mapping", grant), metav1.GetOptions{}); err == nil {
		t.Error("RemoveIdentity left the exchange key")
	}
}

func getClusterRole(t *testing.T, f *fakeCluster, name string) rbacv1.ClusterRole {
	t.Helper()
	u, err := f.dyn.Resource(clusterRolesRes).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ClusterRole %s: %v", name, err)
	}
	var role rbacv1.ClusterRole
	if err := objects.FromUnstructured(u, &role); err != nil {
		t.Fatal(err)
	}
	return role
}

// exchangeRequestFor builds a consumer's request as the tenant could write it.
func exchangeRequestFor(t *testing.T, name, rule, cn string, target v1alpha1.ExchangeTarget, scope exchange.Scope) (*unstructured.Unstructured, string) {
	t.Helper()
	key, err := credential.NewClientKey("")
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	hash := exchange.RequestHash(rule, exchange.FromExchangeTarget(target), scope, der)
	if name == "" {
		name = exchange.RequestName(rule, hash)
	}
	if cn == "" {
		cn = exchange.User("consumer", hash)
	}
	csr, err := credential.NewCSR(cn, key)
	if err != nil {
		t.Fatal(err)
	}
	u, err := objects.ToUnstructured(&v1alpha1.ExchangeRequest{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.ExchangeRequestKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: member.TenantNamespace("consumer")},
		Spec:       v1alpha1.ExchangeRequestSpec{Rule: rule, Target: target, Scope: exchange.ToExchangeScope(scope), CSR: csr}})
	if err != nil {
		t.Fatal(err)
	}
	return u, name
}

// The provider refuses a request for a system: target, for a CSR of another user, or under another name,
// naming the field, and creates nothing; a reach is answered only when accepted, an unconstrained grant only
// when allowed; a name that does not exist is NotFound, listing those that do.
func TestAllowExchangeRefuses(t *testing.T) {
	_, provider := pairedFakes(t)
	pods := exchange.Scope{Verbs: []string{"get"}, Resources: []string{"pods"}}
	for _, c := range []struct {
		rule, name, cn string
		target         v1alpha1.ExchangeTarget
		want           string
	}{
		{rule: "evil", target: v1alpha1.ExchangeTarget{User: "system:masters"}, want: `spec.target.user "system:masters"`},
		{rule: "evil2", target: v1alpha1.ExchangeTarget{User: "eve", Groups: []string{"system:masters"}}, want: `spec.target.groups[0] "system:masters"`},
		{rule: "pairing", target: v1alpha1.ExchangeTarget{User: "kubectl-federate:other:x"}, want: `spec.target.user "kubectl-federate:other:x"`},
		{rule: "wrongcn", target: v1alpha1.ExchangeTarget{User: "eve"}, cn: "kubectl-federate:consumer:exchange-x", want: `spec.csr: subject CN "kubectl-federate:consumer:exchange-x"`},
		{rule: "renamed", name: "renamed-00000000000000000000000000000000", target: v1alpha1.ExchangeTarget{User: "eve"}, want: `metadata.name "renamed-00000000000000000000000000000000": must be`},
	} {
		u, name := exchangeRequestFor(t, c.name, c.rule, c.cn, c.target, pods)
		if _, err := provider.dyn.Resource(v1alpha1.ExchangeRequestGVR).Namespace(member.TenantNamespace("consumer")).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		csrs := provider.count("create", "certificatesigningrequests")
		answered, err := exchange.AllowExchange(t.Context(), provider.Cluster, exchange.AllowExchangeOptions{ConsumerID: "consumer", Names: []string{name}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.rule, err, c.want)
		}
		if len(answered) != 1 || answered[0].Phase != exchange.ExchangeRefused {
			t.Errorf("%s: answered %+v", c.rule, answered)
		}
		if n := provider.count("create", "certificatesigningrequests"); n != csrs {
			t.Errorf("%s: a CSR was created", c.rule)
		}
		if got := provider.exchangeRBAC(t); len(got) > 0 {
			t.Errorf("%s: created %v", c.rule, got)
		}
	}
	var nf *exchange.NotFoundError
	if _, err := exchange.AllowExchange(t.Context(), provider.Cluster, exchange.AllowExchangeOptions{ConsumerID: "consumer", Names: []string{"absent-0"}}); !errors.As(err, &nf) ||
		!slices.Contains(nf.Missing, "absent-0") || len(nf.Existing) != 5 {
		t.Errorf("absent name: %v", err)
	}

	// A scope that reaches Secrets is refused unless accepted for that request, and nothing is created.
	secrets := exchange.Scope{Verbs: []string{"get"}, Resources: []string{"secrets"}, Namespaces: []string{"default"}}
	u, name := exchangeRequestFor(t, "", "reader", "", v1alpha1.ExchangeTarget{User: "alice"}, secrets)
	if _, err := provider.dyn.Resource(v1alpha1.ExchangeRequestGVR).Namespace(member.TenantNamespace("consumer")).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := provider.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	csrs := provider.count("create", "certificatesigningrequests")
	var reach *exchange.ReachError
	if _, err := exchange.AllowExchange(t.Context(), provider.Cluster, exchange.AllowExchangeOptions{ConsumerID: "consumer", Names: []string{name}}); !errors.As(err, &reach) || !slices.Contains(reach.Reach, exchange.ReachSecrets) {
		t.Errorf("a Secrets scope without the override: %v", err)
	}
	if provider.count("create", "certificatesigningrequests") != csrs || len(provider.exchangeRBAC(t)) > 0 {
		t.Error("a refused reach created something")
	}
	// Without constrained impersonation nothing is issued unless the fallback is accepted.
	provider.Impersonation = &member.ImpersonationSupport{Reason: "a fake without it"}
	var unconstrained *exchange.UnconstrainedError
	if _, err := exchange.AllowExchange(t.Context(), provider.Cluster, exchange.AllowExchangeOptions{ConsumerID: "consumer", Names: []string{name}, AllowReach: []string{name}}); !errors.As(err, &unconstrained) {
		t.Errorf("no constrained impersonation, no fallback: %v", err)
	}
	if provider.count("create", "certificatesigningrequests") != csrs || len(provider.exchangeRBAC(t)) > 0 {
		t.Error("a refused unconstrained grant created something")
	}
	answered, err := exchange.AllowExchange(t.Context(), provider.Cluster, exchange.AllowExchangeOptions{ConsumerID: "consumer", Names: []string{name}, AllowUnconstrained: true})
	if err != nil || len(answered) != 1 || answered[0].Mode != sandbox.ModeUnconstrained {
		t.Fatalf("the accepted fallback: %+v %v", answered, err)
	}
	role := getClusterRole(t, provider, exchange.RBACName("consumer", name))
	if fmtAny(role.Rules) != fmtAny(exchange.TargetRules(exchange.Target{User: "alice"}, false)) {
		t.Errorf("unconstrained rules %v", role.Rules)
	}
}
func TestApplyBadExchangeRulesChangesNothing(t *testing.T) {
	consumer, _ := fakePair(t)
	if _, err := exchange.ApplyExchangeRules(t.Context(), consumer.Cluster, []byte(fakeRules)); err != nil {
		t.Fatal(err)
	}
	before := len(consumer.kube.Actions())
	if _, err := exchange.ApplyExchangeRules(t.Context(), consumer.Cluster, []byte(strings.Replace(fakeRules, "priority: 10,", "priority: 10, target: {user: x},", 1))); err == nil ||
		!strings.Contains(err.Error(), "rules[0].target") {
		t.Fatalf("bad file: %v", err)
	}
	if after := len(consumer.kube.Actions()); after != before {
		t.Errorf("a bad file sent %d requests", after-before)
	}
	_, data, err := exchange.Rules(t.Context(), consumer.Cluster)
	if err != nil || string(data) != fakeRules {
		t.Errorf("stored rules %q %v", data, err)
	}
}

// The RBAC of an exchange credential is named by a hash of the consumer and the request, joined by a byte
// neither may hold: consumer "a-b" with request "x" and consumer "a" with request "b-x" (which once
// shared a name, so one consumer's revocation removed the other's grant) name different objects.
func TestExchangeRBACNamesDoNotCollide(t *testing.T) {
	pairs := [][2]string{{"a-b", "x"}, {"a", "b-x"}, {"a", "b\nx"}, {"a-b-x", ""}}
	seen := map[string][2]string{}
	for _, p := range pairs {
		n := exchange.RBACName(p[0], p[1])
		if prev, ok := seen[n]; ok {
			t.Errorf("consumer %q request %q and consumer %q request %q share %s", p[0], p[1], prev[0], prev[1], n)
		}
		seen[n] = p
		if len(n) > 63 || len(n) != len("federate-exchange-")+32 {
			t.Errorf("%s: want federate-exchange- and 32 hex digits, a valid label value", n)
		}
	}
}

// A request of a grant issued before is answered with the lifetime that grant was issued with, unless the
// administrator names another, which is said (a longer one as a warning); the pairing's maximum caps it.
func TestExchangeLifetimeIsKept(t *testing.T) {
	scope := exchange.Scope{Verbs: []string{"get"}, Resources: []string{"pods"}, Namespaces: []string{"team-a"}}
	decided := func(name string, lifetime time.Duration, notAfter time.Time) *exchange.Decision {
		na := notAfter
		return &exchange.Decision{ConsumerID: "consumer", Request: name, Rule: "r", Target: exchange.Target{User: "alice"}, Scope: scope.Canonical(),
			Phase: exchange.ExchangeIssued, Lifetime: metav1.Duration{Duration: lifetime}, NotAfter: &na}
	}
	now := fakeNow
	older, newer := decided("r-1", 48*time.Hour, now.Add(time.Hour)), decided("r-2", 72*time.Hour, now.Add(2*time.Hour))
	other := decided("r-3", 5*time.Hour, now.Add(3*time.Hour))
	other.Scope.Namespaces = []string{"team-b"} // another grant: its lifetime is not this one's
	pending := v1alpha1.ExchangeRequest{ObjectMeta: metav1.ObjectMeta{Name: "r-4"}, Spec: v1alpha1.ExchangeRequestSpec{Rule: "r",
		Target: v1alpha1.ExchangeTarget{User: "alice"}, Scope: exchange.ToExchangeScope(scope)}}
	// What the tenant writes into a request's status counts for nothing: only the provider's records do.
	pending.Status = v1alpha1.ExchangeRequestStatus{Phase: exchange.ExchangeIssued, Lifetime: &metav1.Duration{Duration: 9999 * time.Hour}}
	all := []*exchange.Decision{older, newer, other}
	tenant := &v1alpha1.Tenant{}
	var warned, said []string
	r := &recorder{warn: func(s string) { warned = append(warned, s) }, info: func(s string) { said = append(said, s) }}

	if got := exchange.Lifetime(r, 0, &pending, all, tenant); got != 72*time.Hour {
		t.Errorf("kept lifetime %s, want the latest issue's 72h", got)
	}
	if got := exchange.Lifetime(r, 0, &pending, nil, tenant); got != exchange.ExchangeExpiration {
		t.Errorf("a grant never issued: %s, want the default %s", got, exchange.ExchangeExpiration)
	}
	if len(warned)+len(said) != 0 {
		t.Errorf("keeping said %v %v", warned, said)
	}
	if got := exchange.Lifetime(r, 100*time.Hour, &pending, all, tenant); got != 100*time.Hour || len(warned) != 1 || !strings.Contains(warned[0], "lifetime: 3d -> 100h") {
		t.Errorf("a longer lifetime given: %s, warned %v", got, warned)
	}
	if got := exchange.Lifetime(r, 24*time.Hour, &pending, all, tenant); got != 24*time.Hour || len(said) != 1 || !strings.Contains(said[0], "lifetime: 3d -> 1d") {
		t.Errorf("a shorter lifetime given: %s, said %v", got, said)
	}
	tenant.Status.MaxLifetime = &metav1.Duration{Duration: 36 * time.Hour}
	if got := exchange.Lifetime(r, 0, &pending, all, tenant); got != 36*time.Hour {
		t.Errorf("over the pairing's maximum: %s, want it capped at 36h", got)
	}
}

// recorder is a Reporter that hands warnings and facts to functions.
type recorder struct{ warn, info func(string) }

func (r *recorder) Begin(string, string) func(error) { return func(error) {} }
func (r *recorder) Warn(msg string)                  { r.warn(msg) }
func (r *recorder) Info(msg string)                  { r.info(msg) }

package lifecycle

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// Issue 41 on fakes: the provider's decisions are its own records, so what the tenant does to its
// requests (delete them, make them again without their answers, rewrite their status) neither hides a
// grant, nor widens one, nor undoes a refusal.
func TestConsentHoldsAgainstTheTenantOnFakes(t *testing.T) {
	_, provider := pairedFakes(t)
	ctx := t.Context()
	if _, err := provider.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	reqs := provider.dyn.Resource(v1alpha1.ExchangeRequestGVR).Namespace(member.TenantNamespace("consumer"))
	scope := exchange.Scope{Verbs: []string{"get", "list"}, Resources: []string{"pods"}, Namespaces: []string{"team-a"}}
	leave := func(rule, user string) (*unstructured.Unstructured, string) {
		u, name := exchangeRequestFor(t, "", rule, "", v1alpha1.ExchangeTarget{User: user}, scope)
		if _, err := reqs.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return u, name
	}
	listed := func() map[string]exchange.Info {
		l, err := exchange.Requests(ctx, provider.Cluster, "consumer")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]exchange.Info{}
		for _, i := range l {
			out[i.Name] = i
		}
		return out
	}
	allow := func(name string) error {
		_, err := exchange.AllowExchange(ctx, provider.Cluster, exchange.AllowExchangeOptions{ConsumerID: "consumer", Names: []string{name}})
		return err
	}

	// Issued, then the tenant deletes the request and makes it again without its answer.
	saved, issued := leave("reader", "eve")
	if err := allow(issued); err != nil {
		t.Fatal(err)
	}
	if err := reqs.Delete(ctx, issued, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if i := listed()[issued]; i.Phase != exchange.ExchangeIssued || !i.RequestGone {
		t.Errorf("a grant whose request was deleted is listed %+v", i)
	}
	again := saved.DeepCopy()
	if _, err := reqs.Create(ctx, again, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if i := listed()[issued]; i.Phase != exchange.ExchangeIssued || i.RequestGone || i.Credential == "" {
		t.Errorf("a grant whose request was made again is listed %+v", i)
	}
	// The tenant rewrites the status: mode and reach widened. Allowing again keeps what was recorded.
	u, err := reqs.Get(ctx, issued, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, map[string]any{"phase": "Issued", "mode": sandbox.ModeUnconstrained, "reach": []any{"everything"}}, "status")
	if _, err := reqs.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	csrs := provider.count("create", "certificatesigningrequests")
	if err := allow(issued); err != nil {
		t.Fatalf("allowing again: %v", err)
	}
	if provider.count("create", "certificatesigningrequests") != csrs {
		t.Error("allowing again issued a new certificate")
	}
	role := getClusterRole(t, provider, exchange.RBACName("consumer", issued))
	for _, r := range role.Rules {
		if slices.Contains(r.Verbs, "impersonate") {
			t.Errorf("the rewritten status widened the grant: %+v", r)
		}
	}
	if i := listed()[issued]; i.Mode != sandbox.ModeConstrained || len(i.Reach) > 0 {
		t.Errorf("the listing follows the rewritten status: %+v", i)
	}

	// deny takes it back whatever became of the request; the user stays revoked until the bound.
	if err := reqs.Delete(ctx, issued, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, err := exchange.DenyExchange(ctx, provider.Cluster, "consumer", issued, "hidden"); err != nil || out != handshake.Done {
		t.Fatalf("deny of a grant whose request is gone: %v %v", out, err)
	}
	if left := provider.exchangeRBAC(t); len(left) > 0 {
		t.Errorf("deny left %v", left)
	}
	until, err := handshake.RevokedUntil(ctx, provider.Cluster, "consumer")
	if err != nil {
		t.Fatal(err)
	}
	if got := until[exchange.User("consumer", strings.TrimPrefix(issued, "reader-"))]; got.Before(fakeNow.Add(exchange.ExchangeExpiration)) {
		t.Errorf("revoked until %s, before the certificate's possible end", got)
	}
	if out, err := exchange.DenyExchange(ctx, provider.Cluster, "consumer", issued, "again"); err != nil || out != handshake.Already {
		t.Errorf("deny again: %v %v", out, err)
	}

	// A denial of a pending request holds when the tenant makes it again.
	saved, pending := leave("other", "frank")
	if out, err := exchange.DenyExchange(ctx, provider.Cluster, "consumer", pending, "no"); err != nil || out != handshake.Done {
		t.Fatalf("deny: %v %v", out, err)
	}
	if err := reqs.Delete(ctx, pending, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := reqs.Create(ctx, saved, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if i := listed()[pending]; i.Phase != exchange.ExchangeRefused {
		t.Errorf("a denied request made again is listed %+v", i)
	}
	if err := allow(pending); err == nil || !strings.Contains(err.Error(), "was refused") {
		t.Errorf("allow of a denied request made again: %v", err)
	}
	if left := provider.exchangeRBAC(t); len(left) > 0 {
		t.Errorf("the refusal created %v", left)
	}
}

// A certificate being issued is bounded before its CSR exists: a run cut short after the signer answered
// still leaves the bound that a revocation keeps its record until.
func TestDecisionBoundPrecedesTheCertificate(t *testing.T) {
	_, provider := pairedFakes(t)
	ctx := t.Context()
	if _, err := provider.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	u, name := exchangeRequestFor(t, "", "reader", "", v1alpha1.ExchangeTarget{User: "eve"}, exchange.Scope{Verbs: []string{"get"}, Resources: []string{"pods"}, Namespaces: []string{"team-a"}})
	if _, err := provider.dyn.Resource(v1alpha1.ExchangeRequestGVR).Namespace(member.TenantNamespace("consumer")).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var order []string
	start := len(provider.Actions())
	if _, err := exchange.AllowExchange(ctx, provider.Cluster, exchange.AllowExchangeOptions{ConsumerID: "consumer", Names: []string{name}, Expiration: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	for _, a := range provider.Actions()[start:] {
		if a == "create configmaps" || a == "create certificatesigningrequests" {
			order = append(order, a)
		}
	}
	// The decision (Issuing, with its bound), the CSR, the decision (Issued): the first write is the record.
	if !slices.Equal(order, []string{"create configmaps", "create certificatesigningrequests"}) {
		t.Errorf("writes %v: the decision (a ConfigMap of federate-system) must come before the CSR", order)
	}
	cm, err := provider.kube.CoreV1().ConfigMaps(member.SystemNamespace).Get(ctx, exchange.DecisionName("consumer", name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels[exchange.LabelDecisionOf] != "consumer" || !strings.Contains(cm.Data["decision.json"], `"phase":"Issued"`) || !strings.Contains(cm.Data["decision.json"], `"bound"`) {
		t.Errorf("decision record %v", cm.Data)
	}
}

//go:build e2e

package e2e

// Finding 6 of issue 8: revocation left things running. `kubectl federate revoke` (provider side, one
// cluster) must remove the binding first, then everything the tenant runs and the tokens it could hold,
// and leave the certificate with no more rights than any authenticated user; unauthenticate does the same.

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

var (
	podsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	replicaSetsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	tenantsGVR     = schema.GroupVersionResource{Group: "federate.dev", Version: "v1alpha1", Resource: "tenants"}
)

// startTenantWorkloads creates, as the tenant, a Deployment and a bare pod in its namespace, and waits
// (as admin, by watch) until the Deployment's ReplicaSet and pod exist too.
func startTenantWorkloads(t *testing.T, tenant kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	one := int32(1)
	labels := map[string]string{"app": "e2e-revoke"}
	if _, err := tenant.AppsV1().Deployments(tenantNS).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-revoke"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: restrictedPodSpec()}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the tenant creating a Deployment: %v", err)
	}
	if _, err := tenant.CoreV1().Pods(tenantNS).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-revoke-bare"}, Spec: restrictedPodSpec(),
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the tenant creating a pod: %v", err)
	}
	d := dyn(t, provider)
	if n := waitCount(t, d, podsGVR, tenantNS, func(n int) bool { return n >= 2 }, 30*time.Second); n < 2 {
		t.Fatalf("%d pods in %s, want the bare pod and the Deployment's", n, tenantNS)
	}
	if n := waitCount(t, d, replicaSetsGVR, tenantNS, func(n int) bool { return n >= 1 }, 30*time.Second); n < 1 {
		t.Fatalf("the Deployment has no ReplicaSet")
	}
}

// waitCount lists a resource in ns and follows it by watch until done(count) or the timeout; it returns
// the last count.
func waitCount(t *testing.T, d dynamic.Interface, gvr schema.GroupVersionResource, ns string, done func(int) bool, timeout time.Duration) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	list, err := d.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, o := range list.Items {
		names[o.GetName()] = true
	}
	if done(len(names)) {
		return len(names)
	}
	w, err := d.Resource(gvr).Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		o, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		switch ev.Type {
		case watch.Added, watch.Modified:
			names[o.GetName()] = true
		case watch.Deleted:
			delete(names, o.GetName())
		}
		if done(len(names)) {
			return len(names)
		}
	}
	return len(names)
}

// ruleTuple is one expanded rule: verb, API group, resource, resource name ("" for all); or "nonresource",
// verb, URL.
type ruleTuple [4]string

func expandRules(st authzv1.SubjectRulesReviewStatus) []ruleTuple {
	var out []ruleTuple
	for _, r := range st.ResourceRules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, v := range r.Verbs {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, n := range names {
						out = append(out, ruleTuple{v, g, res, n})
					}
				}
			}
		}
	}
	for _, r := range st.NonResourceRules {
		for _, v := range r.Verbs {
			for _, u := range r.NonResourceURLs {
				out = append(out, ruleTuple{"nonresource", v, u, ""})
			}
		}
	}
	return out
}

func ruleCovers(base, x ruleTuple) bool {
	match := func(b, v string) bool {
		return b == v || b == "*" || (strings.HasSuffix(b, "*") && strings.HasPrefix(v, strings.TrimSuffix(b, "*")))
	}
	if base[0] == "nonresource" || x[0] == "nonresource" {
		return base[0] == x[0] && match(base[1], x[1]) && match(base[2], x[2])
	}
	return match(base[0], x[0]) && match(base[1], x[1]) && match(base[2], x[2]) && (base[3] == "" || base[3] == x[3])
}

// notCovered returns the tuples of rules that no tuple of base covers.
func notCovered(rules, base []ruleTuple) []ruleTuple {
	var out []ruleTuple
	for _, x := range rules {
		if !slices.ContainsFunc(base, func(b ruleTuple) bool { return ruleCovers(b, x) }) {
			out = append(out, x)
		}
	}
	return out
}

func rulesIn(t *testing.T, cs kubernetes.Interface, ns string) authzv1.SubjectRulesReviewStatus {
	t.Helper()
	r, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(t.Context(), &authzv1.SelfSubjectRulesReview{
		Spec: authzv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status
}

// authenticatedOnlyRules are the rules of a user whose only group is system:authenticated.
func authenticatedOnlyRules(t *testing.T, ns string) []ruleTuple {
	t.Helper()
	cfg := rest.CopyConfig(provider.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "nobody-" + rand.String(8), Groups: []string{"system:authenticated"}}
	return expandRules(rulesIn(t, kubernetes.NewForConfigOrDie(cfg), ns))
}

// startFederate starts kubectl-federate with the same environment as cli, without waiting.
func startFederate(t *testing.T, args ...string) (wait func() result) {
	t.Helper()
	c := newCommand(context.Background(), t.TempDir(), nil, federateBin, args...)
	if err := c.begin(); err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() { done <- c.end() }()
	return func() result {
		select {
		case r := <-done:
			return r
		case <-time.After(3 * time.Minute):
			_ = c.cmd.Process.Kill()
			return <-done
		}
	}
}

// measureRefusal starts a command and sends `list pods` in the tenant namespace with the tenant's
// certificate in a tight loop, bounded to 10 s, until it is Forbidden. It returns the time from the
// command's start to the first refusal (0 if none) and the command's result.
func measureRefusal(t *testing.T, tenantCfg *rest.Config, args ...string) (time.Duration, result) {
	t.Helper()
	cfg := rest.CopyConfig(tenantCfg)
	cfg.QPS, cfg.Burst = 10000, 10000 // no client-side throttling in the measurement
	as := kubernetes.NewForConfigOrDie(cfg)
	if _, err := as.CoreV1().Pods(tenantNS).List(t.Context(), metav1.ListOptions{Limit: 1}); err != nil {
		t.Fatalf("the tenant cannot list its pods before revocation: %v", err)
	}
	start := time.Now()
	wait := startFederate(t, args...)
	var refused time.Duration
	var requests int
	var lastErr error
	for time.Since(start) < 10*time.Second {
		_, err := as.CoreV1().Pods(tenantNS).List(t.Context(), metav1.ListOptions{Limit: 1})
		requests++
		if apierrors.IsForbidden(err) {
			refused = time.Since(start)
			break
		}
		lastErr = err
	}
	r := wait()
	t.Logf("%d list requests; last error before refusal: %v", requests, lastErr)
	return refused, r
}

// checkStopped waits (by watch, at most 30 s) until no pod, ReplicaSet or Deployment is left in the
// tenant namespace; what was still there when the command returned is logged.
func checkStopped(t *testing.T) {
	t.Helper()
	d := dyn(t, provider)
	for _, gvr := range []schema.GroupVersionResource{deploymentsGVR, replicaSetsGVR, podsGVR} {
		list, err := d.Resource(gvr).Namespace(tenantNS).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) > 0 {
			t.Logf("%d %s still in %s when the command returned", len(list.Items), gvr.Resource, tenantNS)
		}
		if n := waitCount(t, d, gvr, tenantNS, func(n int) bool { return n == 0 }, 30*time.Second); n != 0 {
			t.Errorf("%d %s left in %s 30s after the command", n, gvr.Resource, tenantNS)
		}
	}
}

func TestRevoke(t *testing.T) {
	unauthenticate(t)
	authenticate(t)
	_, tenantCfg := issuedConfig(t)
	tenant := kubernetes.NewForConfigOrDie(tenantCfg)
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	ctx := t.Context()
	startTenantWorkloads(t, tenant)
	sa, err := admin.CoreV1().ServiceAccounts(tenantNS).Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Tokens of the namespace's default ServiceAccount, as any pod running under it holds one. The API
	// server caches a successful token authentication for 10 s, so the one used before revoke is not the
	// one checked after.
	saToken := func() kubernetes.Interface {
		exp := int64(3600)
		tr, err := admin.CoreV1().ServiceAccounts(tenantNS).CreateToken(ctx, "default", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cfg := rest.AnonymousClientConfig(provider.Config)
		cfg.BearerToken = tr.Status.Token
		return kubernetes.NewForConfigOrDie(cfg)
	}
	usedToken, unusedToken := saToken(), saToken()
	if _, err := usedToken.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the default ServiceAccount's token before revoke: %v", err)
	}

	baseline := authenticatedOnlyRules(t, tenantNS)
	beforeStatus := rulesIn(t, tenant, tenantNS)
	before := expandRules(beforeStatus)
	t.Logf("rules before revoke: %d tuples (incomplete %v); system:authenticated alone: %d tuples", len(before), beforeStatus.Incomplete, len(baseline))
	if !slices.ContainsFunc(before, func(x ruleTuple) bool { return ruleCovers(x, ruleTuple{"create", "", "pods", ""}) }) {
		t.Fatalf("before revoke the tenant may not create pods: %v", before)
	}
	if len(notCovered(before, baseline)) == 0 {
		t.Fatalf("before revoke the tenant already has no more rights than system:authenticated: the comparison proves nothing")
	}

	revokeStart := time.Now()
	refused, r := measureRefusal(t, tenantCfg, "revoke", "--remote-cluster-id", "consumer", "--kubeconfig", provider.Kubeconfig)
	if r.code != 0 {
		t.Fatalf("revoke: %s", r)
	}
	t.Logf("revoke: wall %s", r.wall.Round(time.Millisecond))
	if refused == 0 {
		t.Errorf("the certificate was not refused on list pods within 10s of starting revoke")
	} else {
		t.Logf("revoke-to-refused: %s", refused.Round(100*time.Microsecond))
	}

	if _, err := admin.RbacV1().RoleBindings(tenantNS).Get(ctx, "federate-tenant", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("RoleBinding federate-tenant after revoke: err = %v, want NotFound", err)
	}
	checkStopped(t)
	u, err := dyn(t, provider).Resource(tenantsGVR).Namespace(tenantNS).Get(ctx, "consumer", metav1.GetOptions{})
	if err != nil {
		t.Errorf("Tenant after revoke: %v", err)
	} else {
		if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase != "Revoked" {
			t.Errorf("Tenant status.phase = %q, want Revoked", phase)
		}
		// Only the phase changes: the pinned handshake key, the expiry and the sandbox stay on record.
		for _, field := range []string{"pinnedPublicKey", "notAfter", "user", "certificate"} {
			if v, _, _ := unstructured.NestedString(u.Object, "status", field); v == "" {
				t.Errorf("Tenant status.%s is gone after revoke: %v", field, u.Object["status"])
			}
		}
		if sb, _, _ := unstructured.NestedMap(u.Object, "status", "sandbox"); len(sb) == 0 {
			t.Errorf("Tenant status.sandbox is gone after revoke: %v", u.Object["status"])
		}
	}
	ns, err := admin.CoreV1().Namespaces().Get(ctx, tenantNS, metav1.GetOptions{})
	if err != nil || ns.DeletionTimestamp != nil {
		t.Errorf("namespace %s after revoke: err %v, deleting %v; want it kept", tenantNS, err, ns != nil && ns.DeletionTimestamp != nil)
	}
	newSA, err := admin.CoreV1().ServiceAccounts(tenantNS).Get(ctx, "default", metav1.GetOptions{})
	switch {
	case err != nil:
		t.Errorf("ServiceAccount default after revoke: %v", err)
	case newSA.UID == sa.UID:
		t.Errorf("ServiceAccount default was not recreated (UID %s): tokens bound to it still work", sa.UID)
	case newSA.AutomountServiceAccountToken == nil || *newSA.AutomountServiceAccountToken:
		t.Errorf("the recreated ServiceAccount default automounts its token")
	}

	// A token of the old ServiceAccount stops working (measured, bounded to 15 s after revoke started:
	// a success cached by the API server would last 10 s).
	var tokenErr error
	for time.Since(revokeStart) < 15*time.Second {
		_, tokenErr = unusedToken.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if apierrors.IsUnauthorized(tokenErr) {
			t.Logf("revoke-to-token-refused: %s", time.Since(revokeStart).Round(time.Millisecond))
			break
		}
		time.Sleep(20 * time.Millisecond) // measurement polling
	}
	if !apierrors.IsUnauthorized(tokenErr) {
		t.Errorf("a token of the old default ServiceAccount 15s after revoke started: err = %v, want Unauthorized", tokenErr)
	}

	// The certificate still authenticates (it cannot be revoked before it expires) but grants no more
	// than system:authenticated does.
	if _, err := tenant.CoreV1().Pods(tenantNS).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list pods after revoke: err = %v, want Forbidden", err)
	}
	review, err := tenant.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after revoke the certificate authenticates as %s %v", review.Status.UserInfo.Username, review.Status.UserInfo.Groups)
	afterStatus := rulesIn(t, tenant, tenantNS)
	after := expandRules(afterStatus)
	t.Logf("rules after revoke: %d tuples (incomplete %v)", len(after), afterStatus.Incomplete)
	if extra := notCovered(after, baseline); len(extra) > 0 {
		t.Errorf("after revoke the certificate may do more than system:authenticated alone: %v", extra)
	}
	for _, other := range []string{"default", handshakeSystemNS} {
		if extra := notCovered(expandRules(rulesIn(t, tenant, other)), authenticatedOnlyRules(t, other)); len(extra) > 0 {
			t.Errorf("after revoke the certificate may do more than system:authenticated in %s: %v", other, extra)
		}
	}

	again := cli(t, "", "revoke", "--remote-cluster-id", "consumer", "--kubeconfig", provider.Kubeconfig)
	if again.code != 0 {
		t.Errorf("revoke again: %s", again)
	}

	unauthenticate(t)
	if left := pairingObjects(t, provider, "consumer"); len(left) > 0 {
		t.Errorf("left on the provider after unauthenticate: %v", left)
	}
	if left := pairingObjects(t, consumer, "provider"); len(left) > 0 {
		t.Errorf("left on the consumer after unauthenticate: %v", left)
	}
	if _, err := admin.CoreV1().Namespaces().Get(ctx, tenantNS, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after unauthenticate: err = %v, want NotFound", tenantNS, err)
	}
}

const handshakeSystemNS = "federate-system"

// unauthenticate --keep-namespaces keeps the namespace but still stops everything the tenant runs.
func TestRevokeUnauthenticateKeepNamespacesStopsPods(t *testing.T) {
	unauthenticate(t)
	authenticate(t)
	_, tenantCfg := issuedConfig(t)
	startTenantWorkloads(t, kubernetes.NewForConfigOrDie(tenantCfg))
	refused, r := measureRefusal(t, tenantCfg, "unauthenticate", "--keep-namespaces", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
	if r.code != 0 {
		t.Fatalf("unauthenticate --keep-namespaces: %s", r)
	}
	if refused == 0 {
		t.Errorf("the certificate was not refused within 10s of starting unauthenticate --keep-namespaces")
	} else {
		t.Logf("unauthenticate-to-refused: %s", refused.Round(100*time.Microsecond))
	}
	checkStopped(t)
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	if ns, err := admin.CoreV1().Namespaces().Get(t.Context(), tenantNS, metav1.GetOptions{}); err != nil || ns.DeletionTimestamp != nil {
		t.Errorf("namespace %s after unauthenticate --keep-namespaces: %v, want it kept", tenantNS, err)
	}
	// A plain unauthenticate then removes the kept namespace, leaving the pair clean.
	unauthenticate(t)
	if _, err := admin.CoreV1().Namespaces().Get(t.Context(), tenantNS, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after a plain unauthenticate: err = %v, want NotFound", tenantNS, err)
	}
}

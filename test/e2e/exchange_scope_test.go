//go:build e2e

package e2e

// Issue 19 and 28 on real clusters: an exchange credential acts as its target only for the scope its
// provider's administrator saw (constrained impersonation, enforced by the API server), consent is pinned to
// the request the administrator saw, and nothing revoked ever works again. Every attack is made as the party
// that would make it (the tenant through its pairing identity, the holder of a kept kubeconfig) and proven
// refused with nothing created.

import (
	"crypto/x509"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
	"github.com/federate-dev/kubectl-federate/pkg/status"
	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// clusterAdminsGroup is bound to cluster-admin by every kubeadm-built cluster.
const clusterAdminsGroup = "kubeadm:cluster-admins"

// kubeadmLike gives a cluster what kubeadm gives it (the group kubeadm:cluster-admins bound to
// cluster-admin) and the namespaces team-a (with a Secret and a Pod) and team-b, all removed at the end.
func kubeadmLike(t *testing.T, c *kubeenv.Cluster) kubernetes.Interface {
	t.Helper()
	admin := kubernetes.NewForConfigOrDie(c.Config)
	ctx := t.Context()
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: clusterAdminsGroup},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: clusterAdminsGroup}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, ns := range []string{"team-a", "team-b"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	if _, err := admin.CoreV1().Secrets("team-a").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-a-secret"},
		StringData: map[string]string{"password": "hunter2"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Pods("team-a").Create(ctx, restrictedPod("existing"), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := t.Context()
		_ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, clusterAdminsGroup, metav1.DeleteOptions{})
		for _, ns := range []string{"team-a", "team-b"} {
			_ = admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		}
	})
	return admin
}

// applyRules stores an identity-exchange rule file on the consumer.
func applyRules(t *testing.T, rules string) {
	t.Helper()
	mustOn(t, consumer, "exchange", "apply", "-f", writeFile(t, "rules.yaml", "apiVersion: federate.dev/v1alpha1\nkind: ClusterGatewayConfiguration\nspec:\n  clientIdentityExchanger:\n    rules:\n"+rules))
}

// action is one request made with an exchange kubeconfig, and whether the API server must allow it.
type action struct {
	what  string
	args  []string
	allow bool
}

// runActions makes each action with kubeconfig and checks the answer; it logs the table the closing
// note gives.
func runActions(t *testing.T, kubeconfig string, actions []action) {
	t.Helper()
	for _, a := range actions {
		r := kubectlAs(t, kubeconfig, a.args...)
		got := r.code == 0
		verdict := "refused"
		if got {
			verdict = "allowed"
		}
		t.Logf("| %s | %s | %s |", a.what, verdict, map[bool]string{true: "allowed", false: "refused"}[a.allow])
		switch {
		case got != a.allow:
			t.Errorf("%s (kubectl %s): want allowed=%v, got %s", a.what, strings.Join(a.args, " "), a.allow, r)
		case !got && !strings.Contains(strings.ToLower(r.stderr), "forbidden"):
			t.Errorf("%s: refused, but not by authorization: %s", a.what, r)
		}
	}
}

// Done (issue 28): a target holding cluster-admin through a group, consented for get,list on pods in
// team-a, lists pods in team-a as the target and can do nothing else through impersonation.
func TestExchangeScopeBoundsAClusterAdminTarget(t *testing.T) {
	freshPairing(t)
	admin := kubeadmLike(t, provider)
	applyRules(t, `    - name: admin-reader
      type: StaticMappingIdentityExchanger
      source: {user: alice, cluster: provider}
      target: {user: alice, groups: ["`+clusterAdminsGroup+`"]}
      scope: {verbs: [get, list], resources: [pods], namespaces: [team-a]}
`)
	// The listing shows the target, the scope and what the target itself may do in it.
	name := strings.TrimSpace(mustOn(t, consumer, "request", "exchange", "--remote-cluster-id", "provider", "--for-user", "alice").stdout)
	// kubectl's formats on both sides: the request again (it converges) and the provider's listing.
	if r := mustOn(t, consumer, "request", "exchange", "--remote-cluster-id", "provider", "--for-user", "alice", "-o", "jsonpath={.metadata.name} {.status.phase}"); r.stdout != name+" Pending" {
		t.Errorf("request exchange -o jsonpath: %q, want %q", r.stdout, name+" Pending")
	}
	if r := mustOn(t, provider, "allow", "exchange", "--remote-cluster-id", "consumer", "-o", "name"); r.stdout != "exchangerequestinfo.federate.dev/"+name+"\n" {
		t.Errorf("allow exchange -o name: %q", r.stdout)
	}
	list := mustOn(t, provider, "allow", "exchange", "--remote-cluster-id", "consumer")
	for _, want := range []string{name, "alice (groups " + clusterAdminsGroup + ")", "get,list on pods in team-a", "2/2", "Pending"} {
		if !strings.Contains(list.stdout, want) {
			t.Errorf("the listing lacks %q:\n%s", want, list.stdout)
		}
	}
	r := mustOn(t, provider, "allow", "exchange", name, "--remote-cluster-id", "consumer")
	if !strings.Contains(r.stdout, "Constrained") {
		t.Errorf("allow exchange: %s", r)
	}
	kc := writeFile(t, "alice.kubeconfig", mustOn(t, consumer, "get", "kubeconfig", "--remote-cluster-id", "provider", "--for-user", "alice").stdout)
	info, wr := whoamiFile(t, kc)
	if wr.code != 0 || info.Username != "alice" || !slices.Contains(info.Groups, clusterAdminsGroup) {
		t.Fatalf("whoami: %+v %s", info, wr)
	}
	t.Log("| action through the exchange kubeconfig | result | expected |")
	t.Log("|---|---|---|")
	runActions(t, kc, []action{
		{"list pods in team-a", []string{"get", "pods", "-n", "team-a"}, true},
		{"get pod existing in team-a", []string{"get", "pod", "existing", "-n", "team-a"}, true},
		{"create a pod in team-a", []string{"run", "evil", "--image=" + pauseImage, "-n", "team-a"}, false},
		{"delete pod existing in team-a", []string{"delete", "pod", "existing", "-n", "team-a", "--wait=false"}, false},
		{"label pod existing in team-a", []string{"label", "pod", "existing", "-n", "team-a", "x=y"}, false},
		{"exec into pod existing in team-a", []string{"exec", "existing", "-n", "team-a", "--", "true"}, false},
		{"list Secrets in team-a", []string{"get", "secrets", "-n", "team-a"}, false},
		{"get Secret team-a-secret", []string{"get", "secret", "team-a-secret", "-n", "team-a"}, false},
		{"list ConfigMaps in team-a", []string{"get", "configmaps", "-n", "team-a"}, false},
		{"list pods in team-b", []string{"get", "pods", "-n", "team-b"}, false},
		{"list pods in every namespace", []string{"get", "pods", "-A"}, false},
		{"list nodes", []string{"get", "nodes"}, false},
		{"list namespaces", []string{"get", "namespaces"}, false},
		{"create a namespace", []string{"create", "namespace", "evil"}, false},
		{"list ClusterRoleBindings", []string{"get", "clusterrolebindings"}, false},
		{"bind cluster-admin to a user", []string{"create", "clusterrolebinding", "evil", "--clusterrole=cluster-admin", "--user=mallory"}, false},
		{"approve a CSR", []string{"certificate", "approve", "anything"}, false},
		{"impersonate another user", []string{"get", "pods", "-n", "team-a", "--as", "bob"}, false},
		{"add system:masters", []string{"get", "pods", "-n", "team-a", "--as", "alice", "--as-group", "system:masters"}, false},
		{"add another group", []string{"get", "pods", "-n", "team-a", "--as", "alice", "--as-group", clusterAdminsGroup, "--as-group", "extra"}, false},
		{"impersonate a ServiceAccount", []string{"get", "pods", "-n", "team-a", "--as", "system:serviceaccount:kube-system:default"}, false},
	})
	// Nothing any refused action would have made exists.
	if _, err := admin.RbacV1().ClusterRoleBindings().Get(t.Context(), "evil", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRoleBinding evil: %v", err)
	}
	if _, err := admin.CoreV1().Namespaces().Get(t.Context(), "evil", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace evil: %v", err)
	}
	if pods, err := admin.CoreV1().Pods("team-a").List(t.Context(), metav1.ListOptions{}); err != nil || len(pods.Items) != 1 || len(pods.Items[0].Labels) > 0 {
		t.Errorf("pods in team-a: %v %v", pods, err)
	}
	// The credential's own user, without impersonation, can do nothing.
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.Impersonate, ai.ImpersonateGroups = "", nil
	}
	bare := writeFile(t, "bare.kubeconfig", string(must(clientcmd.Write(*cfg))))
	runActions(t, bare, []action{{"list pods in team-a as the credential itself", []string{"get", "pods", "-n", "team-a"}, false}})
	// status names the kind of credential on both sides.
	for _, c := range []*kubeenv.Cluster{consumer, provider} {
		found := false
		for _, s := range statusOf(t, mustOn(t, c, "status", "-o", "json")).Credentials {
			if s.Kind == status.KindExchange && s.Target == "alice" {
				found = true
				if s.Mode != sandbox.ModeConstrained {
					t.Errorf("%s status: mode %q", c.Name, s.Mode)
				}
			}
		}
		if !found {
			t.Errorf("%s status lists no exchange credential for alice", c.Name)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// tenantDynamic is the dynamic client of the consumer's pairing identity on the provider: what the tenant
// itself can do.
func tenantDynamic(t *testing.T) dynamic.Interface {
	t.Helper()
	_, cfg := issuedConfig(t)
	return dynamic.NewForConfigOrDie(cfg)
}

// forgeExchangeRequest is a request the tenant makes by hand, well formed (its name is its content's hash
// and its CSR asks for the matching user), for any target and scope.
func forgeExchangeRequest(t *testing.T, rule string, target exchange.Target, scope exchange.Scope) *unstructured.Unstructured {
	t.Helper()
	key, err := credential.NewClientKey("")
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	scope = scope.Canonical()
	hash := exchange.RequestHash(rule, target, scope, der)
	csr, err := credential.NewCSR(exchange.User("consumer", hash), key)
	if err != nil {
		t.Fatal(err)
	}
	obj := &v1alpha1.ExchangeRequest{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.ExchangeRequestKind},
		ObjectMeta: metav1.ObjectMeta{Name: exchange.RequestName(rule, hash), Namespace: tenantNS},
		Spec: v1alpha1.ExchangeRequestSpec{Rule: rule, Target: v1alpha1.ExchangeTarget{User: target.User, Groups: target.Groups, UID: target.UID},
			Scope: v1alpha1.ExchangeScope{Verbs: scope.Verbs, Resources: scope.Resources, Namespaces: scope.Namespaces}, CSR: csr}}
	data, _ := json.Marshal(obj)
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &u.Object); err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(u.Object, "status")
	return u
}

// exchangeRBACOf lists the provider's RBAC objects made for a request's hash.
func exchangeRBACOf(t *testing.T, name string) []string {
	t.Helper()
	hash := name[strings.LastIndex(name, "-")+1:]
	var mine []string
	for _, gvr := range []struct{ res, ns string }{{"clusterroles", ""}, {"clusterrolebindings", ""}, {"rolebindings", ""}} {
		l, err := dyn(t, provider).Resource(rbacv1.SchemeGroupVersion.WithResource(gvr.res)).List(t.Context(), metav1.ListOptions{LabelSelector: member.LabelExchange + "=" + hash})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range l.Items {
			mine = append(mine, gvr.res+" "+it.GetNamespace()+"/"+it.GetName())
		}
	}
	return mine
}

// Done (issue 19, finding 1): the provider answers the request its administrator saw, never one the
// tenant changed or added after the listing, and a request reaching beyond a namespaced share needs an
// explicit override.
func TestExchangeConsentIsPinned(t *testing.T) {
	freshPairing(t)
	kubeadmLike(t, provider)
	applyRules(t, `    - name: harmless
      type: StaticMappingIdentityExchanger
      source: {user: bob, cluster: provider}
      target: {user: bob}
      scope: {verbs: [get], resources: [pods], namespaces: [team-a]}
    - name: carols
      type: StaticMappingIdentityExchanger
      source: {user: carol, cluster: provider}
      target: {user: carol}
      scope: {verbs: [get], resources: [pods], namespaces: [team-a]}
`)
	seen := strings.TrimSpace(mustOn(t, consumer, "request", "exchange", "--remote-cluster-id", "provider", "--for-user", "bob").stdout)
	if !regexp.MustCompile(`^harmless-[0-9a-f]{32}$`).MatchString(seen) {
		t.Fatalf("request name %q", seen)
	}
	if list := mustOn(t, provider, "allow", "exchange", "--remote-cluster-id", "consumer"); !strings.Contains(list.stdout, seen) {
		t.Fatalf("listing: %s", list)
	}
	tenant := tenantDynamic(t).Resource(v1alpha1.ExchangeRequestGVR).Namespace(tenantNS)
	adminReqs := dyn(t, provider).Resource(v1alpha1.ExchangeRequestGVR).Namespace(tenantNS)

	// 1. The tenant changes the listed request's target after the listing: the API server refuses.
	u, err := tenant.Get(t.Context(), seen, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := u.GetResourceVersion()
	if err := unstructured.SetNestedStringSlice(u.Object, []string{clusterAdminsGroup}, "spec", "target", "groups"); err != nil {
		t.Fatal(err)
	}
	if _, err := tenant.Update(t.Context(), u, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "spec is immutable") {
		t.Errorf("the tenant changed a listed request's target: %v", err)
	}
	if now, err := adminReqs.Get(t.Context(), seen, metav1.GetOptions{}); err != nil || now.GetResourceVersion() != rv {
		t.Errorf("the listed request changed: %v", err)
	}

	// 2. The tenant adds, under the same rule, a request for a cluster-admin target with every right.
	wide := forgeExchangeRequest(t, "harmless", exchange.Target{User: "bob", Groups: []string{clusterAdminsGroup}}, exchange.Scope{Verbs: []string{"*"}, Resources: []string{"*"}})
	if _, err := tenant.Create(t.Context(), wide, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the tenant may leave requests: %v", err)
	}
	// The administrator answers what was seen, by its name: only that is issued.
	r := mustOn(t, provider, "allow", "exchange", seen, "--remote-cluster-id", "consumer")
	if !strings.Contains(r.stdout, seen) || strings.Contains(r.stdout, wide.GetName()) {
		t.Errorf("allow exchange %s answered: %s", seen, r)
	}
	if got := exchangeRBACOf(t, wide.GetName()); len(got) > 0 {
		t.Errorf("the request added after the listing got %v", got)
	}
	if now, _ := adminReqs.Get(t.Context(), wide.GetName(), metav1.GetOptions{}); now != nil {
		if phase, _, _ := unstructured.NestedString(now.Object, "status", "phase"); phase != "" {
			t.Errorf("the request added after the listing was answered %q", phase)
		}
	}
	// Answering by rule is gone.
	before := exchangeObjects(t)
	if r := on(t, provider, "allow", "exchange", "--remote-cluster-id", "consumer", "--rule", "harmless"); r.code == 0 {
		t.Errorf("allow exchange --rule: %s", r)
	}
	// 3. Even named, the wide request is refused for its reach unless accepted, with nothing created.
	r = on(t, provider, "allow", "exchange", wide.GetName(), "--remote-cluster-id", "consumer")
	// (Every verb on every resource could write the provider's own records: refused whatever is accepted.)
	if r.code == 0 || !strings.Contains(r.stderr, "could write in federate-system") {
		t.Errorf("allow exchange of the wide request: %s", r)
	}
	if r := on(t, provider, "allow", "exchange", wide.GetName(), "--remote-cluster-id", "consumer", "--allow-reach", wide.GetName()); r.code == 0 || !strings.Contains(r.stderr, "could write in federate-system") {
		t.Errorf("allow exchange --allow-reach of the wide request: %s", r)
	}
	if after := exchangeObjects(t); !slices.Equal(before, after) {
		t.Errorf("refusals changed objects: %v -> %v", before, after)
	}

	// 4. The tenant deletes a listed request and recreates its name with another content: its name is no
	// longer its content's, and the provider refuses it with nothing issued.
	carols := strings.TrimSpace(mustOn(t, consumer, "request", "exchange", "--remote-cluster-id", "provider", "--for-user", "carol").stdout)
	if err := tenant.Delete(t.Context(), carols, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	swap := forgeExchangeRequest(t, "carols", exchange.Target{User: "carol", Groups: []string{clusterAdminsGroup}}, exchange.Scope{Verbs: []string{"get"}, Resources: []string{"pods"}, Namespaces: []string{"team-a"}})
	swap.SetName(carols)
	if _, err := tenant.Create(t.Context(), swap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = on(t, provider, "allow", "exchange", carols, "--remote-cluster-id", "consumer")
	if r.code == 0 || !strings.Contains(r.stderr, `metadata.name "`+carols+`": must be`) {
		t.Errorf("allow exchange of a swapped request: %s", r)
	}
	if got := exchangeRBACOf(t, carols); len(got) > 0 {
		t.Errorf("the swapped request got %v", got)
	}
	// The one credential issued acts as bob only, within its scope.
	kc := writeFile(t, "bob.kubeconfig", mustOn(t, consumer, "get", "kubeconfig", "--remote-cluster-id", "provider", "--for-user", "bob").stdout)
	runActions(t, kc, []action{
		{"bob: list pods in team-b", []string{"get", "pods", "-n", "team-b"}, false},
		{"bob: add the cluster-admins group", []string{"get", "pods", "-n", "team-a", "--as", "bob", "--as-group", clusterAdminsGroup}, false},
	})
}

// Done (issue 19, finding 2): a kept exchange kubeconfig or resource-slice kubeconfig stays powerless after
// revoke, after unauthenticate and a new pairing, and after the same rule, target and slice are granted
// again; a replay of the old requests is refused with nothing created.
func TestRevocationLasts(t *testing.T) {
	freshPairing(t)
	kubeadmLike(t, provider)
	applyRules(t, `    - name: keeper
      type: StaticMappingIdentityExchanger
      source: {user: dave, cluster: provider}
      target: {user: dave, groups: ["`+clusterAdminsGroup+`"]}
      scope: {verbs: [get, list], resources: [pods], namespaces: [team-a]}
`)
	oneShot := []string{"--remote-kubeconfig", provider.Kubeconfig}
	kept := writeFile(t, "dave.kubeconfig", mustOn(t, consumer, append([]string{"get", "kubeconfig", "--remote-cluster-id", "provider", "--for-user", "dave"}, oneShot...)...).stdout)
	mustOn(t, consumer, append([]string{"create", "resourceslice", "keep", "--remote-cluster-id", "provider", "--cpu", "100m", "--memory", "64Mi"}, oneShot...)...)
	sliceKept := writeFile(t, "keep.kubeconfig", mustOn(t, consumer, "get", "kubeconfig", "--remote-cluster-id", "provider", "--resource-slice", "keep").stdout)
	sliceNS := member.SliceNamespace("consumer", "keep")
	works := func(when string) {
		t.Helper()
		runActions(t, kept, []action{{when + ": the exchange kubeconfig lists pods in team-a", []string{"get", "pods", "-n", "team-a"}, true}})
		runActions(t, sliceKept, []action{{when + ": the slice kubeconfig lists pods in its namespace", []string{"get", "pods", "-n", sliceNS}, true}})
	}
	dead := func(when string) {
		t.Helper()
		runActions(t, kept, []action{{when + ": the kept exchange kubeconfig", []string{"get", "pods", "-n", "team-a"}, false}})
		runActions(t, sliceKept, []action{{when + ": the kept slice kubeconfig", []string{"get", "pods", "-n", sliceNS}, false}})
	}
	works("before revoke")
	// What a tenant could replay later: its requests as they stand.
	adminDyn := dyn(t, provider)
	saved := map[string]*unstructured.Unstructured{}
	for _, gvr := range []struct {
		key string
		res schema.GroupVersionResource
	}{{"exchange", v1alpha1.ExchangeRequestGVR}, {"slice", v1alpha1.ResourceSliceGVR}} {
		l, err := adminDyn.Resource(gvr.res).Namespace(tenantNS).List(t.Context(), metav1.ListOptions{})
		if err != nil || len(l.Items) != 1 {
			t.Fatalf("%s requests: %v %v", gvr.key, l, err)
		}
		saved[gvr.key] = clean(&l.Items[0])
	}

	mustOn(t, provider, "revoke", "--remote-cluster-id", "consumer")
	dead("after revoke")
	// The pairing renewed, the very same slice request answered again: refused, the key was revoked.
	authenticate(t)
	if r := on(t, provider, "accept", "resourceslice", "keep", "--remote-cluster-id", "consumer"); r.code == 0 || !strings.Contains(r.stderr, "revoked") {
		t.Errorf("accept of the revoked slice's request: %s", r)
	}
	dead("after renewal and a re-run of accept")

	unauthenticate(t)
	authenticate(t)
	requestsCounted(t, provider, tenantNS, sandboxObject)
	dead("after unauthenticate and a new pairing")
	// The old requests replayed into the new tenant namespace, answered by name: refused, nothing made.
	before := takeSnapshot(t)
	for key, u := range saved {
		gvr := v1alpha1.ExchangeRequestGVR
		if key == "slice" {
			gvr = v1alpha1.ResourceSliceGVR
		}
		if _, err := tenantDynamic(t).Resource(gvr).Namespace(tenantNS).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("replaying the %s request: %v", key, err)
		}
	}
	replayed := takeSnapshot(t)
	if r := on(t, provider, "allow", "exchange", saved["exchange"].GetName(), "--remote-cluster-id", "consumer"); r.code == 0 || !strings.Contains(r.stderr, "revoked") {
		t.Errorf("allow exchange of the replayed request: %s", r)
	}
	if r := on(t, provider, "accept", "resourceslice", "keep", "--remote-cluster-id", "consumer"); r.code == 0 || !strings.Contains(r.stderr, "revoked") {
		t.Errorf("accept of the replayed slice request: %s", r)
	}
	var made []string
	for _, d := range replayed.diff(takeSnapshot(t)) {
		if !strings.Contains(d, "events") && !strings.Contains(d, "exchangerequests") && !strings.Contains(d, "resourceslices") {
			made = append(made, d)
		}
	}
	if len(made) > 0 {
		t.Errorf("refusing the replays changed %v (before the replay: %d objects)", made, len(before))
	}
	dead("after the replays")
	// The same rule and target granted anew: a new credential works, the kept one stays dead.
	for _, gvr := range []schema.GroupVersionResource{v1alpha1.ExchangeRequestGVR, v1alpha1.ResourceSliceGVR} {
		_ = tenantDynamic(t).Resource(gvr).Namespace(tenantNS).DeleteCollection(t.Context(), metav1.DeleteOptions{}, metav1.ListOptions{})
	}
	fresh := writeFile(t, "dave2.kubeconfig", mustOn(t, consumer, append([]string{"get", "kubeconfig", "--remote-cluster-id", "provider", "--for-user", "dave"}, oneShot...)...).stdout)
	runActions(t, fresh, []action{{"a new grant of the same rule and target", []string{"get", "pods", "-n", "team-a"}, true}})
	dead("after a new grant of the same rule and target")
}

// clean strips what the API server set on an object, so it can be created again as it was asked.
func clean(u *unstructured.Unstructured) *unstructured.Unstructured {
	c := u.DeepCopy()
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(c.Object, "status")
	return c
}

// Done (issue 28): on a provider without constrained impersonation, nothing is issued unless the
// administrator accepts the legacy grant, which is still refused for a target that reaches beyond a
// namespaced share unless accepted too, and is warned about.
func TestExchangeWithoutConstrainedImpersonation(t *testing.T) {
	clusters, err := kubeenv.Start(t.Context(), kubeenv.Options{Dir: t.TempDir(), Names: []string{"legacy"},
		APIServerArgs: []string{"--feature-gates=ConstrainedImpersonation=false"}})
	if err != nil {
		t.Fatal(err)
	}
	legacy := clusters[0]
	t.Cleanup(legacy.Stop)
	admin := kubeadmLike(t, legacy)
	if _, err := admin.RbacV1().RoleBindings("team-a").Create(t.Context(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "carol-view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "carol"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "", "authenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", legacy.Kubeconfig, "--remote-cluster-id", "legacy")
	atCleanup(t, "unauthenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", legacy.Kubeconfig)
	requestsCounted(t, legacy, tenantNS, sandboxObject)
	applyRules(t, `    - name: legacy-admin
      type: StaticMappingIdentityExchanger
      source: {user: alice, cluster: legacy}
      target: {user: alice, groups: ["`+clusterAdminsGroup+`"]}
      scope: {verbs: [get, list], resources: [pods], namespaces: [team-a]}
    - name: legacy-viewer
      type: StaticMappingIdentityExchanger
      source: {user: carol, cluster: legacy}
      target: {user: carol}
      scope: {verbs: [get, list], resources: [pods], namespaces: [team-a]}
`)
	onLegacy := func(args ...string) result {
		return cli(t, "", append(args, "--kubeconfig", legacy.Kubeconfig)...)
	}
	exchangeRBAC := func() []string {
		var out []string
		for _, res := range []string{"clusterroles", "clusterrolebindings", "rolebindings"} {
			l, err := dyn(t, legacy).Resource(rbacv1.SchemeGroupVersion.WithResource(res)).List(t.Context(), metav1.ListOptions{LabelSelector: member.LabelExchange})
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range l.Items {
				out = append(out, res+" "+it.GetName())
			}
		}
		csrs, err := kubernetes.NewForConfigOrDie(legacy.Config).CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range csrs.Items {
			out = append(out, "csr "+c.Name)
		}
		return out
	}
	// One shot, without the fallback: refused, naming why and the flag, nothing created.
	r := on(t, consumer, "get", "kubeconfig", "--remote-cluster-id", "legacy", "--for-user", "alice", "--remote-kubeconfig", legacy.Kubeconfig)
	if r.code == 0 || r.stdout != "" || !strings.Contains(r.stderr, "does not honour constrained impersonation") || !strings.Contains(r.stderr, "--allow-unconstrained") {
		t.Errorf("one shot on a provider without constrained impersonation: %s", r)
	}
	if got := exchangeRBAC(); len(got) > 0 {
		t.Errorf("the refusal created %v", got)
	}
	alice := strings.TrimSpace(mustOn(t, consumer, "request", "exchange", "--remote-cluster-id", "legacy", "--for-user", "alice").stdout)
	// With the fallback, the cluster-admin target's reach is refused unless accepted.
	r = onLegacy("allow", "exchange", alice, "--remote-cluster-id", "consumer", "--allow-unconstrained")
	// A cluster-admin target could write the provider's own records: refused whatever is accepted.
	if r.code == 0 || !strings.Contains(r.stderr, "could write in federate-system") {
		t.Errorf("the legacy grant of a cluster-admin target: %s", r)
	}
	if got := exchangeRBAC(); len(got) > 0 {
		t.Errorf("the refusal created %v", got)
	}
	// A target with a namespaced share: issued, bounded by the target's rights, and warned.
	carol := strings.TrimSpace(mustOn(t, consumer, "request", "exchange", "--remote-cluster-id", "legacy", "--for-user", "carol").stdout)
	r = onLegacy("allow", "exchange", carol, "--remote-cluster-id", "consumer", "--allow-unconstrained")
	if r.code != 0 || !strings.Contains(r.stdout, sandbox.ModeUnconstrained) || !strings.Contains(r.stderr, "WARNING") || !strings.Contains(r.stderr, "may do everything carol") {
		t.Errorf("the legacy grant of carol: %s", r)
	}
	kc := writeFile(t, "carol.kubeconfig", mustOn(t, consumer, "get", "kubeconfig", "--remote-cluster-id", "legacy", "--for-user", "carol").stdout)
	runActions(t, kc, []action{
		{"unconstrained carol: list pods in team-a", []string{"get", "pods", "-n", "team-a"}, true},
		{"unconstrained carol: create a pod in team-a", []string{"run", "x", "--image=" + pauseImage, "-n", "team-a"}, false},
		{"unconstrained carol: list pods in team-b", []string{"get", "pods", "-n", "team-b"}, false},
		{"unconstrained carol: impersonate bob", []string{"get", "pods", "-n", "team-a", "--as", "bob"}, false},
	})
	var modes []string
	for _, s := range statusOf(t, on(t, legacy, "status", "-o", "json")).Credentials {
		if s.Kind == status.KindExchange {
			modes = append(modes, s.Mode)
		}
	}
	if !slices.Equal(modes, []string{sandbox.ModeUnconstrained}) {
		t.Errorf("legacy status modes %v", modes)
	}
	// Both overrides: still refused, nothing created.
	before := exchangeRBAC()
	r = onLegacy("allow", "exchange", alice, "--remote-cluster-id", "consumer", "--allow-unconstrained", "--allow-reach", alice)
	if r.code == 0 || !strings.Contains(r.stderr, "could write in federate-system") {
		t.Errorf("the accepted legacy grant of a cluster-admin target: %s", r)
	}
	if after := exchangeRBAC(); !slices.Equal(before, after) {
		t.Errorf("the refusal changed %v -> %v", before, after)
	}
}

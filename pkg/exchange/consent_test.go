package exchange

import (
	"slices"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/federate-dev/kubectl-federate/internal/fakeapi"
	"github.com/federate-dev/kubectl-federate/pkg/kube/kubetest"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// What an administrator reads is what is granted: a target holding anything but letters, marks, digits,
// punctuation and symbols is refused, naming the field and the character.
func TestTargetNamesArePrintable(t *testing.T) {
	for _, ok := range []string{"alice", "alice@corp.example", "josé", "jose\u0301", "o'brien", "dev:team/1", "名前", "a+b=c", "अजय"} {
		if err := ValidateTarget("target", Target{User: ok, Groups: []string{ok}, UID: ok}); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, c := range []struct{ name, value, rune string }{
		{"a tab", "dev)\tget on pods", "U+0009"},
		{"an escape sequence", "x\x1b[2J", "U+001B"},
		{"a space", "alice admin", "U+0020"},
		{"a no-break space", "alice\u00a0admin", "U+00A0"},
		{"a right-to-left override", "alice\u202enimda", "U+202E"},
		{"a zero-width space", "ali\u200bce", "U+200B"},
		{"a line separator", "a\u2028b", "U+2028"},
		{"private use", "a\ue000", "U+E000"},
		{"DEL", "a\x7f", "U+007F"},
		{"a Hangul filler", "\u3164", "U+3164"},
		{"Hangul fillers", "\u115f\u1160", "U+115F"},
		{"a blank Braille pattern", "alice\u2800", "U+2800"},
		{"a variation selector", "alice\ufe0f", "U+FE0F"},
		{"three combining marks", "alice\u0301\u0301\u0301", "U+0301"},
		{"a combining mark first", "\u0301alice", "U+0301"},
	} {
		err := ValidateTarget("spec.target", Target{User: "alice", Groups: []string{"ok", c.value}})
		if err == nil || !strings.Contains(err.Error(), "spec.target.groups[1]") || !strings.Contains(err.Error(), c.rune) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if err := ValidateTarget("t", Target{User: "bad\xff"}); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("invalid UTF-8: %v", err)
	}
}

// A grant is printed as it is applied: every role's rules, every binding's role and user.
func TestDescribeRBAC(t *testing.T) {
	s := Scope{Verbs: []string{"get", "list"}, Resources: []string{"pods", "deployments.apps/scale"}, Namespaces: []string{"team-a", "team-b"}}.Canonical()
	roles, bindings := grantRBAC("edge", "r-0123", "kubectl-federate:edge:exchange-0123", Target{User: "alice", Groups: []string{"dev"}}, s, sandbox.ModeConstrained)
	lines := describeRBAC("r-0123", roles, bindings)
	name := RBACName("edge", "r-0123")
	text := strings.Join(lines, "\n")
	for _, want := range []string{
		"ClusterRole " + name + "-on: impersonate-on:user-info:get,impersonate-on:user-info:list on deployments.apps/scale; impersonate-on:user-info:get,impersonate-on:user-info:list on pods",
		"ClusterRole " + name + ": impersonate:user-info on users.authentication.k8s.io named alice; impersonate:user-info on groups.authentication.k8s.io named dev; impersonate-on:user-info:get on /api",
		"RoleBinding " + name + " in team-a: ClusterRole " + name + "-on to user kubectl-federate:edge:exchange-0123",
		"RoleBinding " + name + " in team-b: ClusterRole " + name + "-on to user kubectl-federate:edge:exchange-0123",
		"ClusterRoleBinding " + name + ": ClusterRole " + name + " to user kubectl-federate:edge:exchange-0123",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
	if len(lines) != 1+len(roles)+len(bindings) {
		t.Errorf("%d lines for %d roles and %d bindings", len(lines), len(roles), len(bindings))
	}
	_, legacy := grantRBAC("edge", "r-0123", "u", Target{User: "alice"}, s, sandbox.ModeUnconstrained)
	if len(legacy) != 1 || legacy[0].crb == nil {
		t.Errorf("an unconstrained grant is one ClusterRoleBinding: %+v", legacy)
	}
}

// providerWith is a fake provider holding objs.
func providerWith(t *testing.T, objs ...runtime.Object) (*member.Cluster, *fakeapi.Server) {
	t.Helper()
	srv := fakeapi.New(t, objs...)
	return &member.Cluster{Kube: kubetest.Wrap(srv.Clientset), Dynamic: srv.DynamicClient, Report: member.Discard, Now: func() time.Time { return fakeapi.Now }}, srv
}

func ns(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// restricted is a namespace's labels that enforce Pod Security restricted.
var restricted = map[string]string{sandbox.PsaPrefix + "enforce": "restricted"}

// Reach sees namespaces: writes in the provider's own namespaces and the sandboxes, running code where
// identities are (Secrets, a ServiceAccount a binding names), and making pods where no Pod Security level
// is enforced are each a reach; a namespace with none of these reaches nothing.
func TestScopeReachSeesNamespaces(t *testing.T) {
	c, _ := providerWith(t,
		ns("plain", restricted), ns("open", nil), ns("secrets", restricted), ns("bound", restricted), ns("grouped", restricted),
		ns("federate-tenant-other", map[string]string{sandbox.LabelSandbox: "true", sandbox.PsaPrefix + "enforce": "restricted"}),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "secrets"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "bound"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "builder", Namespace: "bound"}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "g"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:serviceaccounts:grouped"}}},
		// Every cluster binds all ServiceAccounts to the issuer's discovery: no namespace holds more for it.
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "system:service-account-issuer-discovery"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:serviceaccounts"}}},
	)
	r := NewReader(c)
	for _, tc := range []struct {
		scope Scope
		want  []string
	}{
		{Scope{Verbs: []string{"create"}, Resources: []string{"pods"}, Namespaces: []string{"plain"}}, nil},
		{Scope{Verbs: []string{"get", "list"}, Resources: []string{"pods", "configmaps"}, Namespaces: []string{"kube-system", "open"}}, nil},
		{Scope{Verbs: []string{"create"}, Resources: []string{"pods"}, Namespaces: []string{"open"}}, []string{"nodes (create pods in open, where no Pod Security level is enforced)"}},
		{Scope{Verbs: []string{"patch"}, Resources: []string{"pods"}, Namespaces: []string{"open", "secrets"}}, []string{"identities of namespace secrets (patch pods)"}},
		{Scope{Verbs: []string{"create", "get"}, Resources: []string{"pods", "pods/exec"}, Namespaces: []string{"kube-system"}}, []string{
			"identities of namespace kube-system (create pods)",
			"nodes (create pods in kube-system, where no Pod Security level is enforced)",
			"writes in namespace kube-system (create pods)"}},
		{Scope{Verbs: []string{"create", "update"}, Resources: []string{"configmaps"}, Namespaces: []string{"federate-system"}}, []string{"writes in namespace federate-system (create configmaps)"}},
		{Scope{Verbs: []string{"get"}, Resources: []string{"pods/portforward"}, Namespaces: []string{"secrets"}}, []string{"identities of namespace secrets (portforward into pods)"}},
		{Scope{Verbs: []string{"patch"}, Resources: []string{"deployments.apps"}, Namespaces: []string{"bound", "plain"}}, []string{"identities of namespace bound (patch deployments.apps)"}},
		{Scope{Verbs: []string{"*"}, Resources: []string{"cronjobs.batch"}, Namespaces: []string{"grouped", "federate-tenant-other"}},
			[]string{"every verb (*)", "identities of namespace federate-tenant-other (create cronjobs.batch)", "identities of namespace grouped (create cronjobs.batch)",
				"writes in namespace federate-tenant-other (* cronjobs.batch)"}},
		// Cluster-wide, a write is a cluster-wide write already: one class, not one per namespace.
		{Scope{Verbs: []string{"create"}, Resources: []string{"pods"}}, []string{ReachClusterWrite}},
	} {
		got, err := ScopeReach(t.Context(), r, tc.scope)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: reach %q, want %q", tc.scope, got, tc.want)
		}
	}
}

// An unconstrained grant may do all its target may: a target admin of kube-system through a RoleBinding
// only reaches kube-system's identities, writes there and its nodes; the same rights in a namespace that
// holds nothing and enforces restricted reach nothing.
func TestTargetReachSeesNamespaces(t *testing.T) {
	c, srv := providerWith(t, ns("empty", restricted),
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dora-admin", Namespace: "kube-system"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "dora"}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dora-admin", Namespace: "empty"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "dora"}}},
	)
	srv.SARAllow = func(s authzv1.SubjectAccessReviewSpec) bool {
		a := s.ResourceAttributes
		return s.User == "dora" && a != nil && (a.Namespace == "kube-system" || a.Namespace == "empty")
	}
	got, err := TargetReach(t.Context(), NewReader(c), Target{User: "dora"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"identities of namespace kube-system (create pods)", "nodes (create pods in kube-system, where no Pod Security level is enforced)",
		"writes in namespace kube-system (create configmaps)"}
	if !slices.Equal(got, want) {
		t.Errorf("reach %q, want %q", got, want)
	}
	// Everywhere: every namespace.
	srv.SARAllow = func(s authzv1.SubjectAccessReviewSpec) bool {
		a := s.ResourceAttributes
		return a != nil && a.Verb == "get" && a.Resource == "secrets"
	}
	got, err = TargetReach(t.Context(), NewReader(c), Target{User: "erin"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Secrets in every namespace", "identities of every namespace (read Secrets)"}; !slices.Equal(got, want) {
		t.Errorf("reach %q, want %q", got, want)
	}
}

func TestRuleText(t *testing.T) {
	for _, tc := range []struct {
		rule rbacv1.PolicyRule
		want string
	}{
		{rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/api", "/apis"}}, "get on /api,/apis"},
		{rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{"", "apps"}, Resources: []string{"pods/log"}}, "get,list on pods/log,pods.apps/log"},
		{rbacv1.PolicyRule{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"users"}, ResourceNames: []string{"alice"}}, "impersonate on users named alice"},
	} {
		if got := RuleText(tc.rule); got != tc.want {
			t.Errorf("RuleText = %q, want %q", got, tc.want)
		}
	}
}

// A grant that could write where the provider keeps its records is refused whatever is accepted: in
// federate-system, or cluster-wide, on ConfigMaps, Secrets or every resource.
func TestWritesDecisions(t *testing.T) {
	for _, tc := range []struct {
		scope Scope
		want  bool
	}{
		{Scope{Verbs: []string{"create"}, Resources: []string{"configmaps"}, Namespaces: []string{"federate-system"}}, true},
		{Scope{Verbs: []string{"delete"}, Resources: []string{"secrets"}, Namespaces: []string{"team-a", "federate-system"}}, true},
		{Scope{Verbs: []string{"patch"}, Resources: []string{"configmaps"}}, true},
		{Scope{Verbs: []string{"*"}, Resources: []string{"*"}}, true},
		{Scope{Verbs: []string{"get", "list", "watch"}, Resources: []string{"configmaps"}, Namespaces: []string{"federate-system"}}, false},
		{Scope{Verbs: []string{"create"}, Resources: []string{"configmaps"}, Namespaces: []string{"team-a"}}, false},
		{Scope{Verbs: []string{"create"}, Resources: []string{"pods"}}, false},
	} {
		if got := tc.scope.WritesDecisions(); got != tc.want {
			t.Errorf("%s: WritesDecisions = %v", tc.scope, got)
		}
	}
	c, srv := providerWith(t)
	srv.SARAllow = func(s authzv1.SubjectAccessReviewSpec) bool {
		return s.User == "root" && s.ResourceAttributes != nil && s.ResourceAttributes.Namespace == "federate-system"
	}
	if w, err := targetWritesDecisions(t.Context(), c, Target{User: "root"}); err != nil || !w {
		t.Errorf("a target that writes federate-system: %v %v", w, err)
	}
	if w, err := targetWritesDecisions(t.Context(), c, Target{User: "reader"}); err != nil || w {
		t.Errorf("a target that does not: %v %v", w, err)
	}
}

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
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// What an administrator reads is what is granted: a target holding anything but letters, marks, digits,
// punctuation and symbols is refused, naming the field and the character.
func TestTargetNamesArePrintable(t *testing.T) {
	for _, ok := range []string{"alice", "alice@corp.example", "josé", "o'brien", "dev:team/1", "名前", "a+b=c"} {
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
	return &member.Cluster{Kube: srv.Clientset, Dynamic: srv.DynamicClient, Report: member.Discard, Now: func() time.Time { return fakeapi.Now }}, srv
}

func ns(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// Reach sees namespaces: running code where identities are (kube-system, a sandbox, Secrets, a
// ServiceAccount a binding names) is a reach; where there are none it is not.
func TestScopeReachSeesNamespaces(t *testing.T) {
	c, _ := providerWith(t,
		ns("plain", nil), ns("secrets", nil), ns("bound", nil), ns("grouped", nil),
		ns("federate-tenant-other", map[string]string{sandbox.LabelSandbox: "true"}),
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
		{Scope{Verbs: []string{"get", "list"}, Resources: []string{"pods"}, Namespaces: []string{"kube-system"}}, nil},
		{Scope{Verbs: []string{"create", "get"}, Resources: []string{"pods", "pods/exec"}, Namespaces: []string{"kube-system"}}, []string{"identities of namespace kube-system (create pods)"}},
		{Scope{Verbs: []string{"get"}, Resources: []string{"pods/exec"}, Namespaces: []string{"secrets"}}, []string{"identities of namespace secrets (exec into pods)"}},
		{Scope{Verbs: []string{"patch"}, Resources: []string{"deployments.apps"}, Namespaces: []string{"bound", "plain"}}, []string{"identities of namespace bound (patch deployments.apps)"}},
		{Scope{Verbs: []string{"*"}, Resources: []string{"cronjobs.batch"}, Namespaces: []string{"grouped", "federate-tenant-other"}},
			[]string{"every verb (*)", "identities of namespace federate-tenant-other (create cronjobs.batch)", "identities of namespace grouped (create cronjobs.batch)"}},
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
// only reaches kube-system's identities; the same rights in a namespace holding none reach nothing.
func TestTargetReachSeesNamespaces(t *testing.T) {
	c, srv := providerWith(t, ns("empty", nil),
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
	if want := []string{"identities of namespace kube-system (create pods)"}; !slices.Equal(got, want) {
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

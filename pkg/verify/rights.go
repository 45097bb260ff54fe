package verify

import (
	"fmt"
	"slices"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// What the sandbox grants an identity is exactly its RoleBindings: the one named federate-tenant, with the
// recorded role, in each namespace where the sandbox binds it. Any other binding that names the identity
// (its user, or a group it has: the tenants group every certificate carries, a ServiceAccount's groups,
// system:authenticated, which every user has) grants it more, unless its role grants only what every
// user may (discovery, its own access reviews), as Kubernetes' default bindings of system:authenticated
// do. Each such binding is named; so is what grants an attack the corpus saw admitted.

// binding is a RoleBinding or ClusterRoleBinding, as a finding names it.
type binding struct {
	kind, namespace, name string
	subjects              []rbacv1.Subject
	roleRef               rbacv1.RoleRef
}

func (b binding) String() string {
	if b.namespace != "" {
		return b.kind + " " + b.namespace + "/" + b.name
	}
	return b.kind + " " + b.name
}

func (b binding) role() string { return b.roleRef.Kind + " " + b.roleRef.Name }

// roleKey is the key of the bound role in world.roles.
func (b binding) roleKey() string {
	if b.roleRef.Kind == "Role" {
		return "Role/" + b.namespace + "/" + b.roleRef.Name
	}
	return "ClusterRole/" + b.roleRef.Name
}

func allBindings(w *world) []binding {
	out := make([]binding, 0, len(w.rbs)+len(w.crbs))
	for _, b := range w.crbs {
		out = append(out, binding{kind: "ClusterRoleBinding", name: b.Name, subjects: b.Subjects, roleRef: b.RoleRef})
	}
	for _, b := range w.rbs {
		out = append(out, binding{kind: "RoleBinding", namespace: b.Namespace, name: b.Name, subjects: b.Subjects, roleRef: b.RoleRef})
	}
	return out
}

// names says which subject of a binding is the identity: its user, or a group it has ("" when none).
func (id *identity) names(subjects []rbacv1.Subject) string {
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind, rbacv1.ServiceAccountKind:
			if credential.SubjectUser(s) == id.user {
				return "user " + id.user
			}
		case rbacv1.GroupKind:
			if slices.Contains(id.groups, s.Name) {
				return "group " + s.Name
			}
		}
	}
	return ""
}

// expected says whether a binding is one the sandbox makes for the identity.
func (id *identity) expected(b binding) bool {
	return b.kind == "RoleBinding" && b.name == member.RoleBindingName && slices.Contains(id.bound, b.namespace) &&
		b.roleRef.Kind == "ClusterRole" && b.roleRef.Name == id.role
}

// harmless are what every authenticated user may do by Kubernetes' own defaults: ask about itself, and
// read discovery, health and version.
func harmless(r rbacv1.PolicyRule) bool {
	if len(r.NonResourceURLs) > 0 && len(r.Resources) == 0 {
		return !slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "get" && v != "head" })
	}
	self := []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews", "selfsubjectreviews"}
	return len(r.Resources) > 0 && len(r.ResourceNames) == 0 && slices.Equal(r.Verbs, []string{"create"}) &&
		!slices.ContainsFunc(r.Resources, func(res string) bool { return !slices.Contains(self, res) })
}

// rightsFindings are the bindings that grant an identity more than its sandbox binds.
func rightsFindings(w *world, id *identity) []Finding {
	var out []Finding
	for _, b := range allBindings(w) {
		who := id.names(b.subjects)
		if who == "" || id.expected(b) {
			continue
		}
		rules, ok := w.roles[b.roleKey()]
		if !ok || !slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return !harmless(r) }) {
			continue // a role that does not exist, or grants what every user may, grants nothing more
		}
		where := "in namespace " + b.namespace
		if b.kind == "ClusterRoleBinding" {
			where = "in every namespace and cluster-wide"
		}
		out = append(out, Finding{State: StateBroken, Object: b.String(),
			Message: fmt.Sprintf("%s binds %s to %s (%s): rights %s beyond the sandbox", b, b.role(), who, shared(who), where)})
	}
	return out
}

// shared says who else a subject is: a group every tenant, or every user, has.
func shared(who string) string {
	switch who {
	case "group " + member.TenantGroup:
		return "every tenant's certificate carries it"
	case "group system:authenticated":
		return "every user has it"
	case "group system:serviceaccounts":
		return "every ServiceAccount has it"
	}
	if strings.HasPrefix(who, "group ") {
		return "this identity has it"
	}
	return "this identity"
}

// grantedBy names the bindings that give an identity an access (a rule of their role covers it, where
// the binding holds), for an attack it got through.
func grantedBy(w *world, id *identity, a authzv1.ResourceAttributes) []string {
	var out []string
	for _, b := range allBindings(w) {
		if id.names(b.subjects) == "" || (b.kind == "RoleBinding" && b.namespace != a.Namespace) {
			continue
		}
		if slices.ContainsFunc(w.roles[b.roleKey()], func(r rbacv1.PolicyRule) bool { return covers(r, a) }) {
			out = append(out, b.String()+" ("+b.role()+")")
		}
	}
	return out
}

// covers says whether an RBAC rule grants an access (as the authorizer reads rules: a wildcard matches
// anything, a subresource is resource/sub, resourceNames narrow a rule to those names).
func covers(r rbacv1.PolicyRule, a authzv1.ResourceAttributes) bool {
	in := func(list []string, v string) bool { return slices.Contains(list, "*") || slices.Contains(list, v) }
	if !in(r.Verbs, a.Verb) || !in(r.APIGroups, a.Group) {
		return false
	}
	if len(r.ResourceNames) > 0 && !slices.Contains(r.ResourceNames, a.Name) {
		return false
	}
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
		return slices.Contains(r.Resources, "*") || slices.Contains(r.Resources, res) || slices.Contains(r.Resources, "*/"+a.Subresource)
	}
	return in(r.Resources, res)
}

package exchange

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// TargetRules let a user impersonate exactly the target: its user, groups and uid, with verb
// (impersonate:user-info for constrained impersonation, impersonate for the legacy grant, whose user and
// group resources are in the core group).
func TargetRules(t Target, constrained bool) []rbacv1.PolicyRule {
	verb, group := []string{"impersonate:user-info"}, "authentication.k8s.io"
	if !constrained {
		verb, group = []string{"impersonate"}, ""
	}
	rules := []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: []string{"users"}, Verbs: verb, ResourceNames: []string{t.User}}}
	if len(t.Groups) > 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{"groups"}, Verbs: verb, ResourceNames: slices.Clone(t.Groups)})
	}
	if t.UID != "" {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"uids"}, Verbs: verb, ResourceNames: []string{t.UID}})
	}
	return rules
}

// ScopeRules are the impersonate-on rules of a scope: for each verb, the scope's resources by group.
func ScopeRules(s Scope) []rbacv1.PolicyRule {
	byGroup := map[string][]string{}
	var groups []string
	for _, r := range s.ParsedResources() {
		if _, seen := byGroup[r.Group]; !seen {
			groups = append(groups, r.Group)
		}
		byGroup[r.Group] = append(byGroup[r.Group], r.RBACResource())
	}
	var verbs []string
	for _, v := range s.Verbs {
		if v == "*" {
			// RBAC reads impersonate-on:user-info:* as a verb of its own, not a wildcard: spell every
			// verb out.
			for _, w := range sandbox.EveryVerb {
				verbs = append(verbs, sandbox.ImpersonateOn(w))
			}
			continue
		}
		verbs = append(verbs, sandbox.ImpersonateOn(v))
	}
	verbs = slices.Compact(slices.Sorted(slices.Values(verbs)))
	rules := make([]rbacv1.PolicyRule, 0, len(groups))
	for _, g := range groups {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: byGroup[g], Verbs: verbs})
	}
	return rules
}

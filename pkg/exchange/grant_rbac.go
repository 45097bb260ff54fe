package exchange

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// A grant is RBAC, built once, printed before anything is issued, then applied as printed: what the
// administrator reads is what the API server is given.

// grantBinding is one binding of a grant: a ClusterRoleBinding (namespace "") or a RoleBinding.
type grantBinding struct {
	crb *rbacv1.ClusterRoleBinding
	rb  *rbacv1.RoleBinding
}

// grantRBAC is a credential's grant, roles before bindings. Constrained: a ClusterRole with
// impersonate:user-info on the target and the always-allowed reads (and, for a cluster-wide scope, the
// scope's impersonate-on rules), bound cluster-wide; for a namespaced scope a ClusterRole <name>-on with
// the scope's impersonate-on rules, bound by a RoleBinding in each scope namespace. Unconstrained: a
// ClusterRole with the legacy impersonate verb on the target, bound cluster-wide.
func grantRBAC(consumerID, request, user string, t Target, s Scope, mode string) ([]*rbacv1.ClusterRole, []grantBinding) {
	name := RBACName(consumerID, request)
	labels := exchangeProviderLabels(consumerID, hashOf(request))
	meta := func(n, ns string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: n, Namespace: ns, Labels: labels} }
	// Bindings say whom they let their user act as, so that revoke can prove that over.
	bmeta := func(n, ns string) metav1.ObjectMeta {
		m := meta(n, ns)
		m.Annotations = map[string]string{annotationExchangeTarget: t.User}
		return m
	}
	roleRef := func(n string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: n}
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	tm := func(kind string) metav1.TypeMeta {
		return metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: kind}
	}

	rules := TargetRules(t, mode == sandbox.ModeConstrained)
	var roles []*rbacv1.ClusterRole
	var bindings []grantBinding
	if mode == sandbox.ModeConstrained {
		rules = append(rules, sandbox.AlwaysOn()...)
		if s.ClusterWide() {
			rules = append(rules, ScopeRules(s)...)
		} else {
			on := name + "-on"
			roles = append(roles, &rbacv1.ClusterRole{TypeMeta: tm("ClusterRole"), ObjectMeta: meta(on, ""), Rules: ScopeRules(s)})
			for _, ns := range s.Namespaces {
				bindings = append(bindings, grantBinding{rb: &rbacv1.RoleBinding{TypeMeta: tm("RoleBinding"), ObjectMeta: bmeta(name, ns), Subjects: subjects, RoleRef: roleRef(on)}})
			}
		}
	}
	roles = append(roles, &rbacv1.ClusterRole{TypeMeta: tm("ClusterRole"), ObjectMeta: meta(name, ""), Rules: rules})
	bindings = append(bindings, grantBinding{crb: &rbacv1.ClusterRoleBinding{TypeMeta: tm("ClusterRoleBinding"), ObjectMeta: bmeta(name, ""), Subjects: subjects, RoleRef: roleRef(name)}})
	return roles, bindings
}

// describeRBAC is the grant as the administrator reads it before anything is issued: every role with its
// rules, every binding with its role and user.
func describeRBAC(request string, roles []*rbacv1.ClusterRole, bindings []grantBinding) []string {
	out := []string{"ExchangeRequest " + request + " is granted exactly this RBAC:"}
	for _, r := range roles {
		rules := make([]string, len(r.Rules))
		for i, rule := range r.Rules {
			rules[i] = RuleText(rule)
		}
		out = append(out, "  ClusterRole "+r.Name+": "+strings.Join(rules, "; "))
	}
	for _, b := range bindings {
		if b.crb != nil {
			out = append(out, fmt.Sprintf("  ClusterRoleBinding %s: ClusterRole %s to user %s", b.crb.Name, b.crb.RoleRef.Name, b.crb.Subjects[0].Name))
		} else {
			out = append(out, fmt.Sprintf("  RoleBinding %s in %s: ClusterRole %s to user %s", b.rb.Name, b.rb.Namespace, b.rb.RoleRef.Name, b.rb.Subjects[0].Name))
		}
	}
	return out
}

// RuleText reads an RBAC rule as kubectl writes resources: "impersonate-on:user-info:get on
// pods,deployments.apps/scale", "impersonate:user-info on users.authentication.k8s.io named alice".
func RuleText(r rbacv1.PolicyRule) string {
	verbs := strings.Join(r.Verbs, ",")
	if len(r.NonResourceURLs) > 0 {
		return verbs + " on " + strings.Join(r.NonResourceURLs, ",")
	}
	var res []string
	for _, g := range r.APIGroups {
		for _, x := range r.Resources {
			name, sub, hasSub := strings.Cut(x, "/")
			if g != "" {
				name += "." + g
			}
			if hasSub {
				name += "/" + sub
			}
			res = append(res, name)
		}
	}
	out := verbs + " on " + strings.Join(res, ",")
	if len(r.ResourceNames) > 0 {
		out += " named " + strings.Join(r.ResourceNames, ",")
	}
	return out
}

var (
	crGVR  = rbacv1.SchemeGroupVersion.WithResource("clusterroles")
	crbGVR = rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")
	// RoleBindingGVR is the resource of an exchange grant's RoleBindings, one per namespace of its scope.
	RoleBindingGVR = rbacv1.SchemeGroupVersion.WithResource("rolebindings")
)

// applyRBAC applies a grant as built: its roles, then its bindings.
func applyRBAC(ctx context.Context, c *member.Cluster, roles []*rbacv1.ClusterRole, bindings []grantBinding) error {
	roleJobs := make([]func() error, len(roles))
	for i, role := range roles {
		roleJobs[i] = func() error {
			if err := c.ApplyTyped(ctx, crGVR, "", role); err != nil {
				return fmt.Errorf("applying ClusterRole %s: %w", role.Name, err)
			}
			return nil
		}
	}
	if err := parallel.All(roleJobs...); err != nil {
		return err
	}
	jobs := make([]func() error, len(bindings))
	for i, b := range bindings {
		jobs[i] = func() error {
			if b.crb != nil {
				return wrapApply("ClusterRoleBinding "+b.crb.Name, c.ApplyTyped(ctx, crbGVR, "", b.crb))
			}
			return sandbox.WrapApply("RoleBinding "+b.rb.Name, b.rb.Namespace, c.ApplyTyped(ctx, RoleBindingGVR, b.rb.Namespace, b.rb))
		}
	}
	return parallel.All(jobs...)
}

func wrapApply(what string, err error) error {
	if err != nil {
		return fmt.Errorf("applying %s: %w", what, err)
	}
	return nil
}

// pruneStaleRBAC deletes what a grant's RBAC held before and no longer does (a grant applied again in
// another mode: the constrained -on role and RoleBindings, or the other way round), found by the grant's
// label and kept only if it is one of the objects just applied.
func pruneStaleRBAC(ctx context.Context, c *member.Cluster, consumerID, hash string, roles []*rbacv1.ClusterRole, bindings []grantBinding) error {
	keep := map[string]bool{}
	for _, r := range roles {
		keep["clusterroles//"+r.Name] = true
	}
	for _, b := range bindings {
		if b.crb != nil {
			keep["clusterrolebindings//"+b.crb.Name] = true
		} else {
			keep["rolebindings/"+b.rb.Namespace+"/"+b.rb.Name] = true
		}
	}
	sel := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(exchangeProviderLabels(consumerID, hash)).String()}
	var jobs []func() error
	for _, gvr := range []schema.GroupVersionResource{crGVR, crbGVR, RoleBindingGVR} {
		l, err := c.Dynamic.Resource(gvr).List(ctx, sel)
		if err != nil {
			return fmt.Errorf("listing the exchange %s of %s: %w", gvr.Resource, hash, err)
		}
		for _, it := range l.Items {
			if keep[gvr.Resource+"/"+it.GetNamespace()+"/"+it.GetName()] {
				continue
			}
			jobs = append(jobs, func() error {
				return objects.IgnoreNotFound(c.Dynamic.Resource(gvr).Namespace(it.GetNamespace()).Delete(ctx, it.GetName(), metav1.DeleteOptions{}))
			})
		}
	}
	return parallel.All(jobs...)
}

package exchange

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Before a provider lets a credential act as a target, its administrator must see what that hands out.
// With constrained impersonation the scope says it (Scope.Reach). Without it, the credential may
// do whatever the target may, so the target's own rights are asked of the API server, with access
// reviews for what reaches beyond a namespaced share of the cluster.

// reachCheck is one access review and the reach class it proves.
type reachCheck struct {
	class string
	attrs authzv1.ResourceAttributes
}

// fixedReachChecks are the reviews that need no discovery.
var fixedReachChecks = []reachCheck{
	{"every verb on every resource (cluster-admin)", authzv1.ResourceAttributes{Verb: "*", Group: "*", Resource: "*"}},
	{ReachSecrets + " in every namespace", authzv1.ResourceAttributes{Verb: "get", Resource: "secrets"}},
	{ReachSecrets + " in every namespace", authzv1.ResourceAttributes{Verb: "list", Resource: "secrets"}},
	{ReachRBAC + " (escalate)", authzv1.ResourceAttributes{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}},
	{ReachRBAC + " (escalate)", authzv1.ResourceAttributes{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "roles"}},
	{ReachRBAC + " (bind)", authzv1.ResourceAttributes{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}},
	{ReachRBAC + " (bind)", authzv1.ResourceAttributes{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "roles"}},
	{ReachImpersonation, authzv1.ResourceAttributes{Verb: "impersonate", Resource: "users"}},
	{ReachImpersonation, authzv1.ResourceAttributes{Verb: "impersonate", Resource: "groups"}},
	{ReachImpersonation, authzv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts"}},
	{ReachImpersonation, authzv1.ResourceAttributes{Verb: "impersonate:user-info", Group: "authentication.k8s.io", Resource: "users"}},
	{ReachImpersonation, authzv1.ResourceAttributes{Verb: "impersonate:serviceaccount", Group: "authentication.k8s.io", Resource: "serviceaccounts"}},
	{ReachTokens + " in every namespace", authzv1.ResourceAttributes{Verb: "create", Resource: "serviceaccounts", Subresource: "token"}},
	{ReachCSRApproval, authzv1.ResourceAttributes{Verb: "update", Group: "certificates.k8s.io", Resource: "certificatesigningrequests", Subresource: "approval"}},
	{ReachNodeProxy, authzv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "proxy"}},
	{ReachNodeProxy, authzv1.ResourceAttributes{Verb: "create", Resource: "nodes", Subresource: "proxy"}},
}

// writeVerbs are the verbs that change a cluster-scoped object.
var writeVerbs = []string{"create", "update", "patch", "delete"}

// reviewParallelism bounds the access reviews in flight.
const reviewParallelism = 16

// TargetReach (provider) asks the API server what a target may do beyond a namespaced share: every write
// to a cluster-scoped resource, Secrets in every namespace, RBAC escalate and bind, impersonation, minting
// tokens, approving CSRs, nodes/proxy, and the identities of every namespace it may run code, read Secrets,
// mint tokens or write RBAC in (identityReach). It returns the classes found, sorted, with the first
// example of each in a fixed order ("cluster-wide write (create namespaces)"), so that the same rights
// always read the same.
func TargetReach(ctx context.Context, r *Reader, t Target) ([]string, error) {
	c := r.c
	checks := slices.Clone(fixedReachChecks)
	clusterScoped, err := clusterScopedResources(c)
	if err != nil {
		return nil, fmt.Errorf("listing the cluster-scoped resources this API server serves: %w", err)
	}
	for _, r := range clusterScoped {
		for _, v := range writeVerbs {
			checks = append(checks, reachCheck{ReachClusterWrite + " (" + v + " " + r.String() + ")",
				authzv1.ResourceAttributes{Verb: v, Group: r.Group, Resource: r.Resource}})
		}
	}
	var allowed []bool
	var identities []string
	err = parallel.All(
		func() (err error) {
			allowed, err = reviewAll(ctx, c, t, checks)
			return err
		},
		func() (err error) {
			identities, err = identityReach(ctx, r, t)
			return err
		},
	)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for i, ok := range allowed {
		if !ok {
			continue
		}
		// One line per class: the first example found stands for the rest.
		class, _, _ := strings.Cut(checks[i].class, " (")
		if !seen[class] {
			seen[class] = true
			out = append(out, checks[i].class)
		}
	}
	out = append(out, identities...)
	slices.Sort(out)
	return out, nil
}

// clusterScopedResources lists the cluster-scoped resources that can be written: not the reviews, which
// everyone may create and which store nothing.
func clusterScopedResources(c *member.Cluster) ([]Resource, error) {
	lists, err := c.Kube.Discovery().ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, err
	}
	var out []Resource
	for _, l := range lists {
		group, _, _ := strings.Cut(l.GroupVersion, "/")
		if !strings.Contains(l.GroupVersion, "/") {
			group = ""
		}
		for _, r := range l.APIResources {
			if r.Namespaced || strings.Contains(r.Name, "/") {
				continue
			}
			if !slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "create" }) {
				continue // create-only: a review, which stores nothing
			}
			out = append(out, Resource{Group: group, Resource: r.Name})
		}
	}
	// Discovery's order is the server's; sorted, the first example of a class is the same on every run.
	slices.SortFunc(out, func(a, b Resource) int { return strings.Compare(a.String(), b.String()) })
	return slices.CompactFunc(out, func(a, b Resource) bool { return a == b }), nil
}

// reviewAll sends one SubjectAccessReview per check for the target, reviewParallelism at a time, and
// returns which were allowed.
func reviewAll(ctx context.Context, c *member.Cluster, t Target, checks []reachCheck) ([]bool, error) {
	allowed := make([]bool, len(checks))
	errs := make([]error, len(checks))
	sem := make(chan struct{}, reviewParallelism)
	var wg sync.WaitGroup
	for i, ch := range checks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			allowed[i], errs[i] = targetReview(ctx, c, t, ch.attrs)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("asking the API server what the target may do (SubjectAccessReview): %w", err)
		}
	}
	return allowed, nil
}

// targetReview asks whether the target (user, groups, uid) may do a.
func targetReview(ctx context.Context, c *member.Cluster, t Target, a authzv1.ResourceAttributes) (bool, error) {
	groups := append(slices.Clone(t.Groups), "system:authenticated")
	r, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{
		Spec: authzv1.SubjectAccessReviewSpec{User: t.User, Groups: groups, UID: t.UID, ResourceAttributes: &a},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return r.Status.Allowed, nil
}

// maxScopeReviews bounds the reviews of one scope's listing.
const maxScopeReviews = 256

// ScopeAccess is what a target itself may do within a scope: Allowed of Total (verb, resource, namespace)
// combinations, and the ones refused. Total is 0 when the scope has more combinations than are asked.
type ScopeAccess struct {
	Allowed int      `json:"allowed"`
	Total   int      `json:"total"`
	Refused []string `json:"refused,omitempty"`
}

// String reads "4/6".
func (a *ScopeAccess) String() string {
	if a == nil || a.Total == 0 {
		return "?"
	}
	return fmt.Sprintf("%d/%d", a.Allowed, a.Total)
}

// TargetAccess (provider) asks what the target itself may do within the scope: one access review per
// verb, resource and namespace.
func TargetAccess(ctx context.Context, c *member.Cluster, t Target, s Scope) (*ScopeAccess, error) {
	s = s.Canonical()
	namespaces := s.Namespaces
	if s.ClusterWide() {
		namespaces = []string{""}
	}
	var checks []reachCheck
	for _, ns := range namespaces {
		for _, r := range s.ParsedResources() {
			for _, v := range s.Verbs {
				what := v + " " + r.String()
				if ns != "" {
					what += " in " + ns
				}
				checks = append(checks, reachCheck{what, authzv1.ResourceAttributes{Namespace: ns, Verb: v, Group: r.Group, Resource: r.Resource, Subresource: r.Subresource}})
			}
		}
	}
	if len(checks) > maxScopeReviews {
		return &ScopeAccess{}, nil
	}
	allowed, err := reviewAll(ctx, c, t, checks)
	if err != nil {
		return nil, err
	}
	out := &ScopeAccess{Total: len(checks)}
	for i, ok := range allowed {
		if ok {
			out.Allowed++
		} else {
			out.Refused = append(out.Refused, checks[i].class)
		}
	}
	return out, nil
}

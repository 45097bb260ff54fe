package exchange

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// Reach is not only cluster-wide. Whoever may create a pod (or a workload, which makes pods), exec or
// attach into one, mint a ServiceAccount's token, read Secrets or write RBAC in a namespace may act as
// any identity that namespace holds: a pod runs as any of its ServiceAccounts and mounts any of its
// Secrets. A namespaced scope of create on pods in kube-system is cluster-admin in two steps. So a grant
// that can do any of these in a namespace holding identities reaches those identities: the namespace
// names the reach class ("identities of namespace kube-system (create pods)"), one per namespace.
//
// A namespace holds identities when it is the control plane's (kube-system) or kubectl federate's
// (federate-system), a tenant's sandbox (federate.dev/sandbox), or when it holds a Secret, or a
// ServiceAccount that a RoleBinding or ClusterRoleBinding names (directly, or through the namespace's
// group system:serviceaccounts:<ns>). A namespace with none of these (a default ServiceAccount bound to
// nothing, no Secret) holds no identity beyond what the scope already grants.

// identityAction is one right that reaches a namespace's identities.
type identityAction struct {
	what string
	verb string
	res  Resource
}

// workloads make pods, whose ServiceAccount and volumes their template names.
var workloads = []Resource{
	{Group: "apps", Resource: "deployments"}, {Group: "apps", Resource: "replicasets"}, {Group: "apps", Resource: "statefulsets"},
	{Group: "apps", Resource: "daemonsets"}, {Group: "batch", Resource: "jobs"}, {Group: "batch", Resource: "cronjobs"},
	{Resource: "replicationcontrollers"},
}

// runActions are the rights that run code in a namespace: checked against a constrained scope (the
// scope's own Reach names Secrets, tokens and RBAC wherever they are).
var runActions = func() []identityAction {
	a := []identityAction{
		{"create pods", "create", Resource{Resource: "pods"}},
		{"exec into pods", "create", Resource{Resource: "pods", Subresource: "exec"}},
		{"exec into pods", "get", Resource{Resource: "pods", Subresource: "exec"}},
		{"attach to pods", "create", Resource{Resource: "pods", Subresource: "attach"}},
		{"attach to pods", "get", Resource{Resource: "pods", Subresource: "attach"}},
		{"add ephemeral containers", "update", Resource{Resource: "pods", Subresource: "ephemeralcontainers"}},
		{"add ephemeral containers", "patch", Resource{Resource: "pods", Subresource: "ephemeralcontainers"}},
	}
	for _, w := range workloads {
		for _, v := range []string{"create", "update", "patch"} {
			a = append(a, identityAction{v + " " + w.String(), v, w})
		}
	}
	return a
}()

// identityActions are every right that reaches a namespace's identities: checked against a target's own
// rights, for an unconstrained grant.
var identityActions = append(slices.Clone(runActions),
	identityAction{"read Secrets", "get", Resource{Resource: "secrets"}},
	identityAction{"read Secrets", "list", Resource{Resource: "secrets"}},
	identityAction{"mint ServiceAccount tokens", "create", Resource{Resource: "serviceaccounts", Subresource: "token"}},
	identityAction{"write RBAC", "create", Resource{Group: rbacGroup, Resource: "rolebindings"}},
	identityAction{"write RBAC", "update", Resource{Group: rbacGroup, Resource: "rolebindings"}},
	identityAction{"write RBAC", "create", Resource{Group: rbacGroup, Resource: "roles"}},
	identityAction{"write RBAC", "bind", Resource{Group: rbacGroup, Resource: "clusterroles"}},
	identityAction{"write RBAC", "escalate", Resource{Group: rbacGroup, Resource: "roles"}},
)

func (a identityAction) attrs(ns string) authzv1.ResourceAttributes {
	return authzv1.ResourceAttributes{Namespace: ns, Verb: a.verb, Group: a.res.Group, Resource: a.res.Resource, Subresource: a.res.Subresource}
}

// ReachIdentities is the class of a grant that reaches the identities of one namespace (or of every
// namespace, when the right is cluster-wide).
func ReachIdentities(ns, what string) string {
	if ns == "" {
		return "identities of every namespace (" + what + ")"
	}
	return "identities of namespace " + ns + " (" + what + ")"
}

// covers says whether the scope grants verb on r.
func (s Scope) covers(verb string, r Resource) bool {
	if !slices.Contains(s.Verbs, "*") && !slices.Contains(s.Verbs, verb) {
		return false
	}
	return slices.ContainsFunc(s.ParsedResources(), func(p Resource) bool {
		return p.Resource == "*" || p == r
	})
}

// firstRunAction is the first right of runActions the scope grants, "" when none.
func (s Scope) firstRunAction() string {
	for _, a := range runActions {
		if s.covers(a.verb, a.res) {
			return a.what
		}
	}
	return ""
}

// Reader reads, once per run, what reach checks need of a provider: which namespaces hold identities,
// and the bindings that say so. Safe for concurrent use.
type Reader struct {
	c    *member.Cluster
	once sync.Once
	crbs []rbacv1.ClusterRoleBinding
	rbs  []rbacv1.RoleBinding // every namespace's
	err  error
	mu   sync.Mutex
	held map[string]bool
}

// NewReader starts a Reader on c.
func NewReader(c *member.Cluster) *Reader { return &Reader{c: c, held: map[string]bool{}} }

// bindings reads the cluster's RoleBindings and ClusterRoleBindings, once.
func (r *Reader) bindings(ctx context.Context) error {
	r.once.Do(func() {
		r.err = parallel.All(
			func() error {
				l, err := r.c.Kube.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
				if err == nil {
					r.crbs = l.Items
				}
				return err
			},
			func() error {
				l, err := r.c.Kube.RbacV1().RoleBindings("").List(ctx, metav1.ListOptions{})
				if err == nil {
					r.rbs = l.Items
				}
				return err
			},
		)
		if r.err != nil {
			r.err = fmt.Errorf("reading the bindings that say which identities a namespace holds: %w", r.err)
		}
	})
	return r.err
}

// HoldsIdentities says whether namespace ns holds identities a grant there would reach.
func (r *Reader) HoldsIdentities(ctx context.Context, ns string) (bool, error) {
	r.mu.Lock()
	held, ok := r.held[ns]
	r.mu.Unlock()
	if ok {
		return held, nil
	}
	held, err := r.holdsIdentities(ctx, ns)
	if err != nil {
		return false, err
	}
	r.mu.Lock()
	r.held[ns] = held
	r.mu.Unlock()
	return held, nil
}

func (r *Reader) holdsIdentities(ctx context.Context, ns string) (bool, error) {
	if ns == "kube-system" || ns == member.SystemNamespace {
		return true, nil
	}
	var sandboxed, secrets bool
	err := parallel.All(
		func() error {
			n, err := r.c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			sandboxed = err == nil && n.Labels[sandbox.LabelSandbox] == "true"
			return err
		},
		func() error {
			l, err := r.c.Kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{Limit: 1})
			secrets = err == nil && len(l.Items) > 0
			return err
		},
		func() error { return r.bindings(ctx) },
	)
	if err != nil {
		return false, fmt.Errorf("reading what namespace %s holds: %w", ns, err)
	}
	if sandboxed || secrets {
		return true, nil
	}
	bound := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			// Not the group of every ServiceAccount (system:serviceaccounts): what it is given, a pod in any
			// namespace has, so it makes no namespace hold more than another (every cluster binds it to
			// the issuer's discovery documents, and nothing else by default).
			return (s.Kind == rbacv1.ServiceAccountKind && s.Namespace == ns) || (s.Kind == rbacv1.GroupKind && s.Name == "system:serviceaccounts:"+ns)
		})
	}
	for _, b := range r.crbs {
		if bound(b.Subjects) {
			return true, nil
		}
	}
	for _, b := range r.rbs {
		if bound(b.Subjects) {
			return true, nil
		}
	}
	return false, nil
}

// ScopeReach is what a constrained grant of s reaches: the scope's own classes (Scope.Reach), and the
// identities of each scope namespace where it may run code. Sorted.
func ScopeReach(ctx context.Context, r *Reader, s Scope) ([]string, error) {
	s = s.Canonical()
	out := s.Reach()
	what := s.firstRunAction()
	if what == "" || s.ClusterWide() { // cluster-wide, a write is already a cluster-wide write
		return out, nil
	}
	held := make([]bool, len(s.Namespaces))
	jobs := make([]func() error, len(s.Namespaces))
	for i, ns := range s.Namespaces {
		jobs[i] = func() (err error) {
			held[i], err = r.HoldsIdentities(ctx, ns)
			return err
		}
	}
	if err := parallel.All(jobs...); err != nil {
		return nil, err
	}
	for i, ns := range s.Namespaces {
		if held[i] {
			out = append(out, ReachIdentities(ns, what))
		}
	}
	slices.Sort(out)
	return out, nil
}

// namesTarget says whether a binding's subjects include the target (its user, a group of it, or
// system:authenticated, which every user has).
func namesTarget(subjects []rbacv1.Subject, t Target) bool {
	return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
		switch s.Kind {
		case rbacv1.UserKind:
			return s.Name == t.User
		case rbacv1.GroupKind:
			return s.Name == "system:authenticated" || slices.Contains(t.Groups, s.Name)
		}
		return false
	})
}

// identityReach is what a target itself may do to the identities of namespaces (for an unconstrained
// grant, which may do all the target may): the rights of identityActions everywhere (a namespace of ""
// in an access review), and in each namespace where a RoleBinding names the target and that holds
// identities. Sorted, one example per namespace.
func identityReach(ctx context.Context, r *Reader, t Target) ([]string, error) {
	if err := r.bindings(ctx); err != nil {
		return nil, err
	}
	namespaces := []string{""}
	for _, b := range r.rbs {
		if namesTarget(b.Subjects, t) && !slices.Contains(namespaces, b.Namespace) {
			namespaces = append(namespaces, b.Namespace)
		}
	}
	slices.Sort(namespaces)
	var checks []reachCheck
	for _, ns := range namespaces {
		if ns != "" {
			held, err := r.HoldsIdentities(ctx, ns)
			if err != nil {
				return nil, err
			}
			if !held {
				continue
			}
		}
		for _, a := range identityActions {
			checks = append(checks, reachCheck{ReachIdentities(ns, a.what), a.attrs(ns)})
		}
	}
	allowed, err := reviewAll(ctx, r.c, t, checks)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for i, ok := range allowed {
		class, _, _ := strings.Cut(checks[i].class, " (")
		if ok && !seen[class] {
			seen[class] = true
			out = append(out, checks[i].class)
		}
	}
	slices.Sort(out)
	return out, nil
}

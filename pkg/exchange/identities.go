package exchange

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// Reach is not only cluster-wide. A namespaced grant reaches beyond its namespace in three ways, each
// a reach class named by the namespace, one per namespace and kind:
//
//   - The provider's own namespaces (kube-system, kube-public, kube-node-lease, federate-system, where its
//     decisions, revocation record and keys are) and every tenant's sandbox: any write there
//     ("writes in namespace federate-system (create configmaps)").
//   - A namespace's identities: whoever may create, update or patch pods or workloads, exec, attach,
//     port-forward or proxy into pods, or add ephemeral containers, may run as any of its ServiceAccounts
//     and mount any of its Secrets; so may whoever reads its Secrets, mints its tokens or writes its RBAC
//     (the scope's own Reach names those wherever they are). A namespace holds identities when it is one of
//     the provider's own or a sandbox, holds a Secret, or a ServiceAccount that a RoleBinding or
//     ClusterRoleBinding names (directly, or through the namespace's group system:serviceaccounts:<ns>)
//     ("identities of namespace kube-system (create pods)").
//   - The nodes: where no Pod Security level of baseline or restricted is enforced (the namespace's
//     pod-security.kubernetes.io/enforce label), a pod may run as root with the node's filesystem, PID
//     and network namespaces, or privileged, and owns its node; so whoever may make pods there reaches
//     the nodes ("nodes (create pods in team-b, where no Pod Security level is enforced)").
//
// A namespace with none of these (a default ServiceAccount bound to nothing, no Secret, baseline or
// restricted enforced) holds nothing beyond what the scope already grants.

// identityAction is one right that reaches a namespace's identities.
type identityAction struct {
	what string
	verb string
	res  Resource
	// pods says the right makes a pod run (a new pod, or a container added to one): where no Pod Security
	// level is enforced, it reaches the node.
	pods bool
}

// workloads make pods, whose ServiceAccount and volumes their template names.
var workloads = []Resource{
	{Group: "apps", Resource: "deployments"}, {Group: "apps", Resource: "replicasets"}, {Group: "apps", Resource: "statefulsets"},
	{Group: "apps", Resource: "daemonsets"}, {Group: "batch", Resource: "jobs"}, {Group: "batch", Resource: "cronjobs"},
	{Resource: "replicationcontrollers"},
}

// runActions are the rights that run code in a namespace, or reach what runs there: checked against a
// constrained scope (the scope's own Reach names Secrets, tokens and RBAC wherever they are).
var runActions = func() []identityAction {
	pod := func(sub string) Resource { return Resource{Resource: "pods", Subresource: sub} }
	a := []identityAction{
		{"create pods", "create", pod(""), true},
		// A pod's image may change: whoever may update a pod runs its own code as that pod's ServiceAccount.
		{"update pods", "update", pod(""), false},
		{"patch pods", "patch", pod(""), false},
		{"add ephemeral containers", "update", pod("ephemeralcontainers"), true},
		{"add ephemeral containers", "patch", pod("ephemeralcontainers"), true},
	}
	for _, sub := range []string{"exec", "attach", "portforward", "proxy"} {
		for _, v := range []string{"create", "get"} {
			a = append(a, identityAction{sub + " into pods", v, pod(sub), false})
		}
	}
	for _, v := range []string{"create", "get"} {
		a = append(a, identityAction{"proxy to services", v, Resource{Resource: "services", Subresource: "proxy"}, false})
	}
	for _, w := range workloads {
		for _, v := range []string{"create", "update", "patch"} {
			a = append(a, identityAction{v + " " + w.String(), v, w, true})
		}
	}
	return a
}()

// identityActions are every right that reaches a namespace's identities: checked against a target's own
// rights, for an unconstrained grant.
var identityActions = append(slices.Clone(runActions),
	identityAction{"read Secrets", "get", Resource{Resource: "secrets"}, false},
	identityAction{"read Secrets", "list", Resource{Resource: "secrets"}, false},
	identityAction{"mint ServiceAccount tokens", "create", Resource{Resource: "serviceaccounts", Subresource: "token"}, false},
	identityAction{"write RBAC", "create", Resource{Group: rbacGroup, Resource: "rolebindings"}, false},
	identityAction{"write RBAC", "update", Resource{Group: rbacGroup, Resource: "rolebindings"}, false},
	identityAction{"write RBAC", "create", Resource{Group: rbacGroup, Resource: "roles"}, false},
	identityAction{"write RBAC", "bind", Resource{Group: rbacGroup, Resource: "clusterroles"}, false},
	identityAction{"write RBAC", "escalate", Resource{Group: rbacGroup, Resource: "roles"}, false},
)

// ownWrites are the writes asked of a target in the provider's own namespaces, for an unconstrained grant
// (a constrained scope is read: any write verb there is the reach).
var ownWrites = func() []identityAction {
	var a []identityAction
	for _, r := range []Resource{{Resource: "configmaps"}, {Resource: "services"}, {Resource: "endpoints"},
		{Group: "discovery.k8s.io", Resource: "endpointslices"}, {Group: "coordination.k8s.io", Resource: "leases"}} {
		for _, v := range []string{"create", "update", "patch", "delete"} {
			a = append(a, identityAction{v + " " + r.String(), v, r, false})
		}
	}
	return a
}()

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

// ReachOwnWrites is the class of a grant that writes in one of the provider's own namespaces or a
// tenant's sandbox.
func ReachOwnWrites(ns, what string) string { return "writes in namespace " + ns + " (" + what + ")" }

// ReachNodes is the class of a grant that makes pods where no Pod Security level is enforced.
func ReachNodes(ns, what string) string {
	return "nodes (" + what + " in " + ns + ", where no Pod Security level is enforced)"
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

// firstRunAction is the first right of runActions the scope grants ("" when none), and the first that
// makes pods.
func (s Scope) firstRunAction() (run, pods string) {
	for _, a := range runActions {
		if s.covers(a.verb, a.res) {
			if run == "" {
				run = a.what
			}
			if a.pods && pods == "" {
				pods = a.what
			}
		}
	}
	return run, pods
}

// firstWrite is the scope's first write ("create configmaps"), "" when it only reads.
func (s Scope) firstWrite() string {
	for _, v := range s.Verbs {
		if !slices.Contains(readVerbs, v) && len(s.Resources) > 0 {
			return v + " " + s.Resources[0]
		}
	}
	return ""
}

// ownNamespaces are the provider's own: the control plane's and kubectl federate's.
var ownNamespaces = []string{"kube-system", "kube-public", "kube-node-lease", member.SystemNamespace}

// Facts are what a namespace holds that a grant there may reach.
type Facts struct {
	// Own is true for the provider's own namespaces and every tenant's sandbox.
	Own bool
	// Identities is true where a pod may run as a ServiceAccount that holds rights, or mount a Secret.
	Identities bool
	// Unenforced is true where no Pod Security level of baseline or restricted is enforced.
	Unenforced bool
}

// Reader reads, once per run, what reach checks need of a provider: what each namespace holds, and the
// bindings that say so. Safe for concurrent use.
type Reader struct {
	c     *member.Cluster
	once  sync.Once
	crbs  []rbacv1.ClusterRoleBinding
	rbs   []rbacv1.RoleBinding // every namespace's
	err   error
	mu    sync.Mutex
	facts map[string]Facts
}

// NewReader starts a Reader on c.
func NewReader(c *member.Cluster) *Reader { return &Reader{c: c, facts: map[string]Facts{}} }

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

// Namespace is what namespace ns holds that a grant there may reach.
func (r *Reader) Namespace(ctx context.Context, ns string) (Facts, error) {
	r.mu.Lock()
	f, ok := r.facts[ns]
	r.mu.Unlock()
	if ok {
		return f, nil
	}
	f, err := r.namespace(ctx, ns)
	if err != nil {
		return Facts{}, err
	}
	r.mu.Lock()
	r.facts[ns] = f
	r.mu.Unlock()
	return f, nil
}

func (r *Reader) namespace(ctx context.Context, ns string) (Facts, error) {
	var f Facts
	var labels map[string]string
	var secrets bool
	err := parallel.All(
		func() error {
			n, err := r.c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err == nil {
				labels = n.Labels
			}
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
		return f, fmt.Errorf("reading what namespace %s holds: %w", ns, err)
	}
	f.Own = slices.Contains(ownNamespaces, ns) || labels[sandbox.LabelSandbox] == "true"
	level := labels[sandbox.PsaPrefix+"enforce"]
	f.Unenforced = level != "baseline" && level != "restricted"
	bound := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			// Not the group of every ServiceAccount (system:serviceaccounts): what it is given, a pod in any
			// namespace has, so it makes no namespace hold more than another (every cluster binds it to
			// the issuer's discovery documents, and nothing else by default).
			return (s.Kind == rbacv1.ServiceAccountKind && s.Namespace == ns) || (s.Kind == rbacv1.GroupKind && s.Name == "system:serviceaccounts:"+ns)
		})
	}
	f.Identities = f.Own || secrets ||
		slices.ContainsFunc(r.crbs, func(b rbacv1.ClusterRoleBinding) bool { return bound(b.Subjects) }) ||
		slices.ContainsFunc(r.rbs, func(b rbacv1.RoleBinding) bool { return bound(b.Subjects) })
	return f, nil
}

// ScopeReach is what a constrained grant of s reaches: the scope's own classes (Scope.Reach), and, in each
// scope namespace, writes where the namespace is the provider's own or a sandbox, its identities where it
// may run code there, and the nodes where it may make pods and no Pod Security level is enforced. Sorted.
func ScopeReach(ctx context.Context, r *Reader, s Scope) ([]string, error) {
	s = s.Canonical()
	out := s.Reach()
	if s.ClusterWide() { // a write is a cluster-wide write already; one into the provider's records is said
		if s.WritesDecisions() {
			out = append(out, ReachOwnWrites(member.SystemNamespace, "cluster-wide "+s.firstWrite()))
			slices.Sort(out)
		}
		return out, nil
	}
	run, pods := s.firstRunAction()
	write := s.firstWrite()
	if run == "" && write == "" {
		return out, nil
	}
	facts := make([]Facts, len(s.Namespaces))
	jobs := make([]func() error, len(s.Namespaces))
	for i, ns := range s.Namespaces {
		jobs[i] = func() (err error) {
			facts[i], err = r.Namespace(ctx, ns)
			return err
		}
	}
	if err := parallel.All(jobs...); err != nil {
		return nil, err
	}
	for i, ns := range s.Namespaces {
		f := facts[i]
		if f.Own && write != "" {
			out = append(out, ReachOwnWrites(ns, write))
		}
		if f.Identities && run != "" {
			out = append(out, ReachIdentities(ns, run))
		}
		if f.Unenforced && pods != "" {
			out = append(out, ReachNodes(ns, pods))
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

// identityReach is what a target itself may do to the namespaces (for an unconstrained grant, which may do
// all the target may): the rights of identityActions everywhere (a namespace of "" in an access review),
// and, in each namespace where a RoleBinding names the target, those rights where it holds identities,
// writes where it is the provider's own, and pod-making where no Pod Security level is enforced. Sorted,
// one example per namespace and class.
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
	var keys []string // one example per namespace and class
	add := func(key, class string, a identityAction, ns string) {
		checks, keys = append(checks, reachCheck{class, a.attrs(ns)}), append(keys, key+"|"+ns)
	}
	for _, ns := range namespaces {
		if ns == "" {
			for _, a := range identityActions {
				add("identities", ReachIdentities("", a.what), a, "")
			}
			continue
		}
		f, err := r.Namespace(ctx, ns)
		if err != nil {
			return nil, err
		}
		for _, a := range identityActions {
			if f.Identities {
				add("identities", ReachIdentities(ns, a.what), a, ns)
			}
			if f.Unenforced && a.pods {
				add("nodes", ReachNodes(ns, a.what), a, ns)
			}
		}
		if f.Own {
			for _, a := range ownWrites {
				add("writes", ReachOwnWrites(ns, a.what), a, ns)
			}
		}
	}
	allowed, err := reviewAll(ctx, r.c, t, checks)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for i, ok := range allowed {
		if ok && !seen[keys[i]] {
			seen[keys[i]] = true
			out = append(out, checks[i].class)
		}
	}
	slices.Sort(out)
	return out, nil
}

// The provider's decisions, revocation record, nonces and handshake key are in federate-system: a grant
// that could write there could forge or delete the records of the provider's consent (undo a refusal,
// widen a grant, take a user out of the revocation record). No override accepts that, as no target in
// system: is accepted.

// ErrWritesDecisions is the refusal of a grant that could write in federate-system.
var ErrWritesDecisions = errors.New("could write in " + member.SystemNamespace + ", where this provider keeps its decisions, revocation record, nonces and key; no grant that can is issued, whatever is accepted")

// recordResources are what the provider keeps its records and keys as, in federate-system.
var recordResources = []Resource{{Resource: "configmaps"}, {Resource: "secrets"}}

// WritesDecisions says whether a constrained grant of s could write the provider's records: a write verb
// on ConfigMaps, Secrets or every resource, in federate-system or cluster-wide.
func (s Scope) WritesDecisions() bool {
	s = s.Canonical()
	if !s.ClusterWide() && !slices.Contains(s.Namespaces, member.SystemNamespace) {
		return false
	}
	for _, v := range []string{"create", "update", "patch", "delete", "deletecollection"} {
		for _, r := range recordResources {
			if s.covers(v, r) {
				return true
			}
		}
	}
	return false
}

// targetWritesDecisions asks whether a target itself may write the provider's records (for an
// unconstrained grant, which may do all the target may).
func targetWritesDecisions(ctx context.Context, c *member.Cluster, t Target) (bool, error) {
	var checks []reachCheck
	for _, v := range []string{"create", "update", "patch", "delete"} {
		for _, r := range recordResources {
			checks = append(checks, reachCheck{v + " " + r.String(), authzv1.ResourceAttributes{Namespace: member.SystemNamespace, Verb: v, Resource: r.Resource}})
		}
	}
	allowed, err := reviewAll(ctx, c, t, checks)
	return slices.Contains(allowed, true), err
}

package handshake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/federate-dev/kubectl-federate/pkg/sandbox"

	corev1 "k8s.io/api/core/v1"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// workloadGVRs are what can (re)create pods in a sandbox: they go before the pods, so nothing respawns.
var workloadGVRs = []schema.GroupVersionResource{
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "apps", Version: "v1", Resource: "daemonsets"},
	{Group: "apps", Version: "v1", Resource: "replicasets"},
	{Group: "batch", Version: "v1", Resource: "cronjobs"},
	{Group: "batch", Version: "v1", Resource: "jobs"},
	{Version: "v1", Resource: "replicationcontrollers"},
}

// Revoke (provider) takes a consumer's rights away at once, on this cluster alone, in every namespace it
// was granted (its tenant namespace, its slices' and its extra namespaces): the RoleBindings and the
// exchange credentials' bindings go first, and every user they named is recorded as revoked (revoked.go),
// so no later answer binds it again. Then it confirms, with an access review per user, that the API server
// refuses them: RBAC reaches the authorizer through a cache, and until it does a tenant could still create.
// Everything it runs is stopped (workloads, then pods, which ends its open exec, attach and port-forward
// streams), the service-account tokens it could hold are invalidated (token Secrets deleted, the default
// ServiceAccount replaced, so tokens bound to the old one fail, and the credential ServiceAccount of a
// Token identity deleted, so its token no longer authenticates), once while the refusal is confirmed and
// once after, so that nothing created in between survives; and the Tenant is marked Revoked. The namespaces
// and their data stay for inspection. A consumer already revoked (or removed) is Already; one this cluster
// has no record of is a *NotFoundError, and nothing is changed.
func Revoke(ctx context.Context, c *member.Cluster, consumerID string) (Outcome, error) {
	ns := member.TenantNamespace(consumerID)
	r := c.Reporter()
	var tenant *v1alpha1.Tenant
	var tenantErr, nsErr error
	var granted []corev1.Namespace
	var own *corev1.Namespace
	if err := member.Parallel(
		func() error { tenant, tenantErr = readTenant(ctx, c, consumerID); return nil },
		func() error { var err error; granted, err = grantedNamespaces(ctx, c, consumerID); return err },
		func() error { own, nsErr = c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); return nil },
	); err != nil {
		return Done, err
	}
	switch {
	case tenantErr != nil && !apierrors.IsNotFound(tenantErr):
		return Done, tenantErr
	case nsErr != nil && !apierrors.IsNotFound(nsErr):
		return Done, nsErr
	case tenant != nil && tenant.Status.Phase == PhaseRevoked:
		return Already, nil
	case tenant == nil && (own == nil || nsErr != nil || !sandbox.TenantOwner(consumerID).Owns(own.Labels)) && len(granted) == 0:
		// Nothing here for this consumer: removed earlier, or never known.
		return consumerGone(ctx, c, consumerID)
	}
	names := []string{ns}
	for _, g := range granted {
		names = append(names, g.Name)
	}
	what := ns
	if len(granted) > 0 {
		what = fmt.Sprintf("%s and %d more namespace%s", ns, len(granted), map[bool]string{true: "s"}[len(granted) > 1])
	}
	var cut []boundUser
	var unboundAt time.Time
	if err := member.Step(r, "Removing the RoleBindings of "+consumerID, "No RoleBinding left for "+consumerID+": its certificates grant nothing in "+what, func() error {
		// A slice's key user is recorded too: a token slice binds another user, but its request's key must
		// not be granted again either.
		var keyUsers []RevokedUser
		for _, g := range granted {
			if u := g.Annotations[annotationKeyUser]; u != "" {
				keyUsers = append(keyUsers, RevokedUser{User: u})
			}
		}
		var err error
		cut, err = unbindConsumer(ctx, c, consumerID, names, keyUsers)
		unboundAt = time.Now()
		return err
	}); err != nil {
		return Done, err
	}
	stop := func() error {
		jobs := []func() error{func() error { return stopIn(ctx, c, ns, sandbox.TenantOwner(consumerID)) }}
		for _, g := range granted {
			jobs = append(jobs, func() error { return stopIn(ctx, c, g.Name, sandbox.OwnerOf(g.Labels)) })
		}
		return member.Parallel(jobs...)
	}
	if err := member.Step(r, "Stopping the tenant's workloads and tokens", "Workloads, pods and tokens of "+consumerID+" removed", func() error {
		// The first sweep runs while the refusal is confirmed; the second, once it is, takes whatever the
		// tenant created before its requests were refused.
		if err := member.Parallel(stop, func() error { return confirmRefused(ctx, c, cut) }); err != nil {
			return err
		}
		return stop()
	}); err != nil {
		return Done, err
	}
	if slices.ContainsFunc(cut, func(b boundUser) bool { return b.Target != "" }) {
		if err := member.Step(r, "Waiting out the API server's impersonation cache for the exchange credentials of "+consumerID,
			"Exchange credentials of "+consumerID+" refused", func() error {
				if c.DryRun {
					return nil // nothing was unbound
				}
				return waitUntil(ctx, unboundAt.Add(impersonationCacheTTL))
			}); err != nil {
			return Done, err
		}
	}
	return Done, member.Step(r, "Marking the Tenant revoked", "Tenant "+ns+"/"+consumerID+" marked "+PhaseRevoked, func() error {
		// A merge patch of the phase alone: the pinned key, the expiry and the sandbox stay on record.
		_, err := c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(ns).Patch(ctx, consumerID, types.MergePatchType,
			[]byte(`{"status":{"phase":"`+PhaseRevoked+`"}}`), metav1.PatchOptions{FieldManager: member.FieldManager}, "status")
		if apierrors.IsNotFound(err) {
			return nil // nothing was ever issued, or it was removed
		}
		if err == nil {
			audit(ctx, c, tenantObject(consumerID), EventRevoked, "every credential of consumer "+consumerID+" revoked in "+what, nil)
		}
		return err
	})
}

// impersonationCacheTTL is how long the API server keeps a successful constrained impersonation for the
// same request (k8s.io/apiserver's impersonation cache, 10 s, like its token cache), with a margin: an
// exchange credential that made a request in the 10 s before its bindings went can repeat that request
// until then. There is nothing to watch for its end, so revoke waits it out before saying the credentials
// are refused.
var impersonationCacheTTL = 10*time.Second + 500*time.Millisecond

// waitUntil returns at t, or when ctx ends.
func waitUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// consumerGone answers a removal of a consumer this cluster holds nothing live for: Already if it was
// removed or revoked here before (a tombstone, a revocation record), else a *NotFoundError naming the
// consumers it has.
func consumerGone(ctx context.Context, c *member.Cluster, consumerID string) (Outcome, error) {
	removed, _, err := removed(ctx, c, RemovedConsumer, consumerID, consumerID)
	if err != nil {
		return Done, err
	}
	if !removed {
		revoked, err := revokedUsers(ctx, c, consumerID)
		if err != nil {
			return Done, err
		}
		removed = len(revoked) > 0
	}
	if removed {
		return Already, nil
	}
	known, err := consumerIDs(ctx, c)
	if err != nil {
		return Done, err
	}
	return Done, notFound("consumer", consumerID, "on this cluster (no Tenant "+member.TenantNamespace(consumerID)+"/"+consumerID+")", known)
}

// consumerIDs lists the consumers this cluster has a Tenant for.
func consumerIDs(ctx context.Context, c *member.Cluster) ([]string, error) {
	l, err := c.Dynamic.Resource(v1alpha1.TenantGVR).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, it := range l.Items {
		if strings.TrimPrefix(it.GetNamespace(), member.TenantNamespacePrefix) == it.GetName() {
			out = append(out, it.GetName())
		}
	}
	return out, nil
}

// readTenant reads a consumer's Tenant; nil and the NotFound error if it has none.
func readTenant(ctx context.Context, c *member.Cluster, consumerID string) (*v1alpha1.Tenant, error) {
	u, err := c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(member.TenantNamespace(consumerID)).Get(ctx, consumerID, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var t v1alpha1.Tenant
	if err := member.FromUnstructured(u, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// boundUser is a user a binding named, and what the access review that proves it refused asks.
type boundUser struct {
	User   string
	Groups []string
	// Namespace, for a RoleBinding's user: it must no longer create pods there. Empty for an exchange
	// credential, which must no longer impersonate Target.
	Namespace string
	Target    string
}

// unbindConsumer deletes the consumer's RoleBindings in names and its exchange bindings, after recording
// every user they name as revoked (one write, before anything is deleted, so that a failure leaves no
// unrecorded user behind), and returns those users.
func unbindConsumer(ctx context.Context, c *member.Cluster, consumerID string, names []string, also []RevokedUser) ([]boundUser, error) {
	rbs := make([]*rbacv1.RoleBinding, len(names))
	var exchanges []exchangeBinding
	jobs := make([]func() error, 0, len(names)+1)
	for i, name := range names {
		jobs = append(jobs, func() error {
			var err error
			rbs[i], err = ourRoleBinding(ctx, c, name, consumerID)
			return err
		})
	}
	jobs = append(jobs, func() error {
		var err error
		exchanges, err = exchangeBindings(ctx, c, consumerID, func(string) bool { return true })
		return member.IgnoreNotFound(err)
	})
	readErr := member.Parallel(jobs...)
	cut := exchangeCut(exchanges)
	for i, rb := range rbs {
		if rb != nil && len(rb.Subjects) > 0 {
			cut = append(cut, boundUser{User: credential.SubjectUser(rb.Subjects[0]), Groups: groupsOf(rb.Subjects[0]), Namespace: names[i]})
		}
	}
	users := slices.Clone(also)
	for _, b := range cut {
		users = append(users, RevokedUser{User: b.User})
	}
	// Recorded even when a read failed: whatever was found is never bound again.
	if err := recordRevoked(ctx, c, consumerID, users); err != nil {
		return cut, errors.Join(readErr, err)
	}
	dels := make([]func() error, 0, len(names)+1)
	for i, rb := range rbs {
		if rb != nil {
			dels = append(dels, func() error {
				return member.IgnoreNotFound(c.Kube.RbacV1().RoleBindings(names[i]).Delete(ctx, member.RoleBindingName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &rb.UID}}))
			})
		}
	}
	dels = append(dels, func() error { return removeExchanges(ctx, c, consumerID, exchanges) })
	return cut, errors.Join(readErr, member.Parallel(dels...))
}

// groupsOf is the groups a binding's subject authenticates with: a certificate's TenantGroup, a
// ServiceAccount's own groups.
func groupsOf(s rbacv1.Subject) []string {
	if s.Kind == rbacv1.ServiceAccountKind {
		return []string{"system:serviceaccounts", "system:serviceaccounts:" + s.Namespace, "system:authenticated"}
	}
	return []string{member.TenantGroup, "system:authenticated"}
}

// confirmRefused asks the API server, with an access review per user, until each is refused what its
// binding gave: creating pods in its namespace, or impersonating its target. The authorizer sees RBAC
// through an informer, so a deleted binding may still allow for a moment; there is nothing to watch, so
// each review repeats with a growing pause, bounded by policyTimeout.
func confirmRefused(ctx context.Context, c *member.Cluster, cut []boundUser) error {
	if c.DryRun {
		return nil // no binding was deleted: the users are still allowed, as they should be
	}
	jobs := make([]func() error, len(cut))
	for i, b := range cut {
		jobs[i] = func() error {
			attrs := []authzv1.ResourceAttributes{{Namespace: b.Namespace, Verb: "create", Resource: "pods"}}
			if b.Target != "" {
				attrs = []authzv1.ResourceAttributes{
					{Verb: "impersonate", Resource: "users", Name: b.Target},
					{Verb: "impersonate:user-info", Group: "authentication.k8s.io", Resource: "users", Name: b.Target},
				}
			}
			for _, a := range attrs {
				if err := waitDenied(ctx, c, b.User, b.Groups, a); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return member.Parallel(jobs...)
}

// waitDenied repeats a SubjectAccessReview until it is denied.
func waitDenied(ctx context.Context, c *member.Cluster, user string, groups []string, a authzv1.ResourceAttributes) error {
	deadline := time.Now().Add(sandbox.PolicyTimeout)
	pause := 50 * time.Millisecond
	for {
		allowed, err := sandbox.AccessReview(ctx, c, user, groups, a)
		if err != nil {
			return fmt.Errorf("confirming that %s may no longer %s %s: %w", user, a.Verb, a.Resource, err)
		}
		if !allowed {
			return nil
		}
		if time.Now().After(deadline) {
			return &member.StillAllowedError{User: user, What: fmt.Sprintf("%s %s%s %s", a.Verb, a.Resource, nsNoteOf(a.Namespace), a.Name), After: sandbox.PolicyTimeout}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 500*time.Millisecond)
	}
}

func nsNoteOf(ns string) string {
	if ns == "" {
		return ""
	}
	return " in " + ns
}

// ourRoleBinding reads the tenant RoleBinding of a namespace: nil if there is none; an error if one of
// that name was not made by kubectl federate for consumerID.
func ourRoleBinding(ctx context.Context, c *member.Cluster, ns, consumerID string) (*rbacv1.RoleBinding, error) {
	rb, err := c.Kube.RbacV1().RoleBindings(ns).Get(ctx, member.RoleBindingName, metav1.GetOptions{})
	if err != nil {
		return nil, member.IgnoreNotFound(err)
	}
	if rb.Labels[member.LabelManagedBy] != member.ManagedBy || rb.Labels[member.LabelRemoteClusterID] != consumerID {
		return nil, fmt.Errorf("RoleBinding %s/%s %w for consumer %q: left in place", ns, member.RoleBindingName, member.ErrNotOurs, consumerID)
	}
	return rb, nil
}

// deleteRoleBinding deletes the tenant RoleBinding of a namespace if kubectl federate made it for
// consumerID; another one of that name is left in place, with an error.
func deleteRoleBinding(ctx context.Context, c *member.Cluster, ns, consumerID string) error {
	rb, err := ourRoleBinding(ctx, c, ns, consumerID)
	if rb == nil || err != nil {
		return err
	}
	return member.IgnoreNotFound(c.Kube.RbacV1().RoleBindings(ns).Delete(ctx, member.RoleBindingName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &rb.UID}}))
}

// stopIn stops what runs in a namespace created for owner; a namespace of another owner is not touched.
func stopIn(ctx context.Context, c *member.Cluster, ns string, owner sandbox.NsOwner) error {
	live, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if live.DeletionTimestamp != nil {
		return nil // the namespace controller is already removing everything in it
	}
	if !owner.Owns(live.Labels) {
		return fmt.Errorf("namespace %s %w for %s: nothing in it was touched", ns, member.ErrNotOurs, owner)
	}
	return stopTenant(ctx, c, ns)
}

// revokeNamespace takes one granted namespace's rights away and stops what runs there.
func revokeNamespace(ctx context.Context, c *member.Cluster, ns string, owner sandbox.NsOwner) error {
	live, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !owner.Owns(live.Labels) {
		return fmt.Errorf("namespace %s %w for %s: left in place", ns, member.ErrNotOurs, owner)
	}
	if err := deleteRoleBinding(ctx, c, ns, owner.ConsumerID); err != nil {
		return err
	}
	if live.DeletionTimestamp != nil {
		return nil
	}
	return stopTenant(ctx, c, ns)
}

// stopTenant deletes what runs in the sandbox and the tokens it could use: workloads and token Secrets at
// once, then the pods, then the default ServiceAccount, which is recreated without token automount.
func stopTenant(ctx context.Context, c *member.Cluster, ns string) error {
	tokens := make(chan error, 1)
	go func() {
		tokens <- member.IgnoreNotFound(c.Kube.CoreV1().Secrets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("type", "kubernetes.io/service-account-token").String(),
		}))
	}()
	errs := []error{deleteRunners(ctx, c, ns), <-tokens}
	// A Token credential dies with its ServiceAccount: from now on it does not even authenticate.
	errs = append(errs, credential.DeleteCredentialAccounts(ctx, c, ns, ""))
	sas := c.Kube.CoreV1().ServiceAccounts(ns)
	if err := member.IgnoreNotFound(sas.Delete(ctx, "default", metav1.DeleteOptions{})); err != nil {
		errs = append(errs, err)
	} else if err := c.ApplyTyped(ctx, sandbox.ServiceAccountGVR, ns, sandbox.ServiceAccount(ns)); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("recreating ServiceAccount %s/default: %w", ns, err))
	}
	return errors.Join(errs...)
}

// deleteRunners deletes every workload of a namespace at once, then its pods with no grace period: their
// containers are killed and every stream into them ends, and nothing respawns them.
func deleteRunners(ctx context.Context, c *member.Cluster, ns string) error {
	background := metav1.DeletePropagationBackground
	all := metav1.ListOptions{}
	jobs := make([]func() error, len(workloadGVRs))
	for i, gvr := range workloadGVRs {
		jobs[i] = func() error {
			return member.IgnoreNotFound(c.Dynamic.Resource(gvr).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, all))
		}
	}
	err := member.Parallel(jobs...)
	zero := int64(0)
	return errors.Join(err, member.IgnoreNotFound(c.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, all)))
}

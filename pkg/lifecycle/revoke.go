package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	rbacv1 "k8s.io/api/rbac/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

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
//
// Revocation is final against a grant made at the same moment (handshake.Recheck): the revocation is
// counted in the record before any binding goes, and once the Tenant is marked every namespace labelled
// for the consumer is looked at again, so a binding a concurrent grant made after the first look goes
// too. A consumer already revoked is looked at the same way: Already only when no binding is left.
func Revoke(ctx context.Context, c *member.Cluster, consumerID string) (handshake.Outcome, error) {
	rv, outcome, err := readRevocation(ctx, c, consumerID)
	if rv == nil {
		return outcome, err
	}
	if rv.again {
		return rv.sweepAgain(ctx, rv.granted)
	}
	cut, unboundAt, err := rv.unbind(ctx)
	if err != nil {
		return handshake.Done, err
	}
	if err := rv.stop(ctx, cut); err != nil {
		return handshake.Done, err
	}
	if err := rv.waitOutImpersonation(ctx, cut, unboundAt); err != nil {
		return handshake.Done, err
	}
	if err := rv.markRevoked(ctx); err != nil {
		return handshake.Done, err
	}
	if c.DryRun {
		return handshake.Done, nil // nothing was unbound: the first look is all there is
	}
	// As they are now, the Tenant marked. A renewal that began after the revocation was counted is a
	// re-admission (a new nonce, the provider's own act) and may have made the Tenant Active again: its
	// user's binding stays.
	var granted []corev1.Namespace
	var tenant *v1alpha1.Tenant
	if err := parallel.All(
		func() error { var err error; granted, err = grants.GrantedNamespaces(ctx, c, consumerID); return err },
		func() error { tenant, _ = readTenant(ctx, c, consumerID); return nil },
	); err != nil {
		return handshake.Done, err
	}
	if tenant != nil && tenant.Status.Phase == handshake.PhaseActive {
		rv.readmitted = tenant.Status.User
	}
	_, err = rv.sweepAgain(ctx, granted)
	return handshake.Done, err
}

// revocation is one run of Revoke: the consumer, its tenant namespace and the namespaces it was granted.
type revocation struct {
	c          *member.Cluster
	r          member.Reporter
	consumerID string
	ns         string
	granted    []corev1.Namespace
	names      []string // the tenant namespace and every granted one
	what       string   // those, as a person reads them
	again      bool     // the Tenant says Revoked already: only what is left is swept
	readmitted string   // the user of a renewal that came after the revocation, whose binding the last look keeps
}

// readRevocation reads what the consumer holds here, all at once. A nil revocation ends the run with the
// outcome: already revoked, or nothing here for this consumer.
func readRevocation(ctx context.Context, c *member.Cluster, consumerID string) (*revocation, handshake.Outcome, error) {
	ns := member.TenantNamespace(consumerID)
	var tenant *v1alpha1.Tenant
	var tenantErr, nsErr error
	var granted []corev1.Namespace
	var own *corev1.Namespace
	if err := parallel.All(
		func() error { tenant, tenantErr = readTenant(ctx, c, consumerID); return nil },
		func() error { var err error; granted, err = grants.GrantedNamespaces(ctx, c, consumerID); return err },
		func() error { own, nsErr = c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); return nil },
	); err != nil {
		return nil, handshake.Done, err
	}
	switch {
	case tenantErr != nil && !apierrors.IsNotFound(tenantErr):
		return nil, handshake.Done, tenantErr
	case nsErr != nil && !apierrors.IsNotFound(nsErr):
		return nil, handshake.Done, nsErr
	case tenant == nil && (own == nil || nsErr != nil || !sandbox.TenantOwner(consumerID).Owns(own.Labels)) && len(granted) == 0:
		// Nothing here for this consumer: removed earlier, or never known.
		outcome, err := consumerGone(ctx, c, consumerID)
		return nil, outcome, err
	}
	rv := &revocation{c: c, r: c.Reporter(), consumerID: consumerID, ns: ns, granted: granted, names: []string{ns}, what: ns,
		again: tenant != nil && tenant.Status.Phase == handshake.PhaseRevoked}
	for _, g := range granted {
		rv.names = append(rv.names, g.Name)
	}
	if len(granted) > 0 {
		rv.what = fmt.Sprintf("%s and %d more namespace%s", ns, len(granted), map[bool]string{true: "s"}[len(granted) > 1])
	}
	return rv, handshake.Done, nil
}

// unbind removes the consumer's RoleBindings everywhere and records its users revoked; it returns the
// users cut and when.
func (rv *revocation) unbind(ctx context.Context) ([]handshake.BoundUser, time.Time, error) {
	var cut []handshake.BoundUser
	var unboundAt time.Time
	err := member.Step(rv.r, "Removing the RoleBindings of "+rv.consumerID, "No RoleBinding left for "+rv.consumerID+": its certificates grant nothing in "+rv.what, func() error {
		// A slice's key user is recorded too: a token slice binds another user, but its request's key must
		// not be granted again either.
		var keyUsers []handshake.RevokedUser
		for _, g := range rv.granted {
			if u := g.Annotations[grants.AnnotationKeyUser]; u != "" {
				keyUsers = append(keyUsers, handshake.RevokedUser{User: u})
			}
		}
		var err error
		cut, err = unbindConsumer(ctx, rv.c, rv.consumerID, rv.names, keyUsers, true, "")
		unboundAt = time.Now()
		return err
	})
	return cut, unboundAt, err
}

// sweepAgain looks at the consumer's namespaces once more (the tenant namespace and granted): a binding
// a grant made while the revocation ran, or one made by hand since, is recorded and deleted like the
// others, and what runs there is stopped once the API server refuses its users. Already when nothing was
// left.
func (rv *revocation) sweepAgain(ctx context.Context, granted []corev1.Namespace) (handshake.Outcome, error) {
	names := []string{rv.ns}
	var keyUsers []handshake.RevokedUser
	for _, g := range granted {
		names = append(names, g.Name)
		if u := g.Annotations[grants.AnnotationKeyUser]; u != "" {
			keyUsers = append(keyUsers, handshake.RevokedUser{User: u})
		}
	}
	cut, err := unbindConsumer(ctx, rv.c, rv.consumerID, names, keyUsers, false, rv.readmitted)
	if err != nil || len(cut) == 0 {
		return handshake.Already, err
	}
	rv.granted, rv.names = granted, names
	rv.r.Warn(fmt.Sprintf("%d binding(s) of %s left after its revocation (a grant made meanwhile, or one made by hand): removed", len(cut), rv.consumerID))
	// A renewal may have recorded its user Active after this looked at the Tenant, and finished before it
	// saw that user recorded revoked: the user is unbound now, so the Tenant says Revoked again. (One that
	// looks after the record takes itself back.)
	if t, err := readTenant(ctx, rv.c, rv.consumerID); err == nil && t.Status.Phase == handshake.PhaseActive &&
		slices.ContainsFunc(cut, func(b handshake.BoundUser) bool { return b.User == t.Status.User }) {
		if err := patchRevoked(ctx, rv.c, rv.consumerID); err != nil {
			return handshake.Done, err
		}
	}
	if err := rv.stop(ctx, cut); err != nil {
		return handshake.Done, err
	}
	return handshake.Done, rv.waitOutImpersonation(ctx, cut, time.Now())
}

// stop removes the tenant's workloads, pods and tokens in every namespace: the first sweep runs while the
// refusal of the cut users is confirmed; the second, once it is, takes whatever the tenant created before
// its requests were refused.
func (rv *revocation) stop(ctx context.Context, cut []handshake.BoundUser) error {
	c := rv.c
	sweep := func() error {
		jobs := []func() error{func() error { return stopIn(ctx, c, rv.ns, sandbox.TenantOwner(rv.consumerID)) }}
		for _, g := range rv.granted {
			jobs = append(jobs, func() error { return stopIn(ctx, c, g.Name, sandbox.OwnerOf(g.Labels)) })
		}
		return parallel.All(jobs...)
	}
	return member.Step(rv.r, "Stopping the tenant's workloads and tokens", "Workloads, pods and tokens of "+rv.consumerID+" removed", func() error {
		if c.DryRun {
			// Nothing was unbound, so there is no refusal to wait for and no second sweep to make: a dry run
			// lists each deletion once.
			return sweep()
		}
		if err := parallel.All(sweep, func() error { return handshake.ConfirmRefused(ctx, c, cut) }); err != nil {
			return err
		}
		return sweep()
	})
}

// waitOutImpersonation waits, when an exchange credential was cut, until the API server's impersonation
// cache has forgotten what it allowed.
func (rv *revocation) waitOutImpersonation(ctx context.Context, cut []handshake.BoundUser, unboundAt time.Time) error {
	if !slices.ContainsFunc(cut, func(b handshake.BoundUser) bool { return b.Target != "" }) {
		return nil
	}
	return member.Step(rv.r, "Waiting out the API server's impersonation cache for the exchange credentials of "+rv.consumerID,
		"Exchange credentials of "+rv.consumerID+" refused", func() error {
			if rv.c.DryRun {
				return nil // nothing was unbound
			}
			return handshake.WaitUntil(ctx, unboundAt.Add(handshake.ImpersonationCacheTTL))
		})
}

// markRevoked marks the Tenant revoked with a merge patch of the phase alone: the pinned key, the expiry
// and the sandbox stay on record.
func (rv *revocation) markRevoked(ctx context.Context) error {
	c, ns, consumerID := rv.c, rv.ns, rv.consumerID
	return member.Step(rv.r, "Marking the Tenant revoked", "Tenant "+ns+"/"+consumerID+" marked "+handshake.PhaseRevoked, func() error {
		err := patchRevoked(ctx, c, consumerID)
		if apierrors.IsNotFound(err) {
			return nil // nothing was ever issued, or it was removed
		}
		if err == nil {
			handshake.Audit(ctx, c, handshake.TenantObject(consumerID), handshake.EventRevoked, "every credential of consumer "+consumerID+" revoked in "+rv.what, nil)
		}
		return err
	})
}

// patchRevoked sets the Tenant's phase to Revoked with a merge patch of the phase alone.
func patchRevoked(ctx context.Context, c *member.Cluster, consumerID string) error {
	_, err := c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(member.TenantNamespace(consumerID)).Patch(ctx, consumerID, types.MergePatchType,
		[]byte(`{"status":{"phase":"`+handshake.PhaseRevoked+`"}}`), metav1.PatchOptions{FieldManager: member.FieldManager}, "status")
	return err
}

// consumerGone answers a removal of a consumer this cluster holds nothing live for: Already if it was
// removed or revoked here before (a tombstone, a revocation record), else a *NotFoundError naming the
// consumers it has.
func consumerGone(ctx context.Context, c *member.Cluster, consumerID string) (handshake.Outcome, error) {
	removed, _, err := handshake.Removed(ctx, c, handshake.RemovedConsumer, consumerID, consumerID)
	if err != nil {
		return handshake.Done, err
	}
	if !removed {
		revoked, err := handshake.RevokedUntil(ctx, c, consumerID)
		if err != nil {
			return handshake.Done, err
		}
		removed = len(revoked) > 0
	}
	if removed {
		return handshake.Already, nil
	}
	known, err := consumerIDs(ctx, c)
	if err != nil {
		return handshake.Done, err
	}
	return handshake.Done, handshake.NotFound("consumer", consumerID, "on this cluster (no Tenant "+member.TenantNamespace(consumerID)+"/"+consumerID+")", known)
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
	if err := objects.FromUnstructured(u, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// unbindConsumer deletes the consumer's RoleBindings in names and its exchange bindings, after recording
// every user they name as revoked (one write, before anything is deleted, so that a failure leaves no
// unrecorded user behind), and returns those users. A RoleBinding of the user keep stays (a re-admission);
// revocation counts the revocation in the same write.
func unbindConsumer(ctx context.Context, c *member.Cluster, consumerID string, names []string, also []handshake.RevokedUser, revocation bool, keep string) ([]handshake.BoundUser, error) {
	rbs := make([]*rbacv1.RoleBinding, len(names))
	var exchanges []exchange.Binding
	jobs := make([]func() error, 0, len(names)+1)
	for i, name := range names {
		jobs = append(jobs, func() error {
			var err error
			rbs[i], err = grants.OurRoleBinding(ctx, c, name, consumerID)
			return err
		})
	}
	jobs = append(jobs, func() error {
		var err error
		exchanges, err = exchange.Bindings(ctx, c, consumerID, func(string) bool { return true })
		return objects.IgnoreNotFound(err)
	})
	readErr := parallel.All(jobs...)
	for i, rb := range rbs {
		if rb != nil && keep != "" && len(rb.Subjects) > 0 && credential.SubjectUser(rb.Subjects[0]) == keep {
			rbs[i] = nil // a re-admission's binding (see Revoke)
		}
	}
	cut := exchange.Cut(exchanges)
	for i, rb := range rbs {
		if rb == nil {
			continue
		}
		// Every subject: a renewal's overlap keeps the renewed-away user beside its successor.
		for _, sub := range rb.Subjects {
			cut = append(cut, handshake.BoundUser{User: credential.SubjectUser(sub), Groups: groupsOf(sub), Namespace: names[i]})
		}
	}
	users := slices.Clone(also)
	for _, b := range cut {
		users = append(users, handshake.RevokedUser{User: b.User})
	}
	// Recorded even when a read failed: whatever was found is never bound again. A revocation is counted
	// in the same write, before any binding goes (handshake.Recheck).
	record := handshake.RecordRevoked
	if revocation {
		record = handshake.RecordRevocation
	}
	if err := record(ctx, c, consumerID, users); err != nil {
		return cut, errors.Join(readErr, err)
	}
	dels := make([]func() error, 0, len(names)+1)
	for i, rb := range rbs {
		if rb != nil {
			dels = append(dels, func() error {
				return objects.IgnoreNotFound(c.Kube.RbacV1().RoleBindings(names[i]).Delete(ctx, member.RoleBindingName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &rb.UID}}))
			})
		}
	}
	if revocation || len(exchanges) > 0 { // a look again that finds no exchange binding changes nothing
		dels = append(dels, func() error { return exchange.RemoveExchanges(ctx, c, consumerID, exchanges) })
	}
	return cut, errors.Join(readErr, parallel.All(dels...))
}

// groupsOf is the groups a binding's subject authenticates with: a certificate's TenantGroup, a
// ServiceAccount's own groups.
func groupsOf(s rbacv1.Subject) []string {
	if s.Kind == rbacv1.ServiceAccountKind {
		return []string{"system:serviceaccounts", "system:serviceaccounts:" + s.Namespace, "system:authenticated"}
	}
	return []string{member.TenantGroup, "system:authenticated"}
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
	return sandbox.StopTenant(ctx, c, ns)
}

package grants

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// A provider may give a consumer more namespaces than its tenant namespace (SLATE's cluster namespaces):
// each is a sandbox like the tenant namespace, labelled as the consumer's, where the pairing's current
// identity is bound with the same role. Renewal moves every binding to the new user; revocation removes
// them all; unauthenticate deletes the namespaces. A consumer asks for one by leaving a NamespaceRequest in
// its tenant namespace, through its own identity. A name already in use is refused, never adopted.

// Namespace request phases. Pending is the empty phase.
const (
	NamespacePending = "Pending"
	NamespaceGranted = "Granted"
	NamespaceRefused = "Refused"
)

// reservedNamespacePrefixes are never granted: the cluster's own (kube-), kubectl federate's (federate-
// holds federate-system and every tenant namespace, fs- every slice's).
var reservedNamespacePrefixes = []string{"kube-", "federate-", "fs-"}

// ValidateExtraNamespace checks the name of a namespace a consumer may be granted.
func ValidateExtraNamespace(what, name string) error {
	if name == "" {
		return fmt.Errorf("%s: must not be empty", what)
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("%s %q: must be a DNS label of at most 63 characters (lowercase letters, digits and '-')", what, member.Truncate(name))
	}
	if name == "default" {
		return fmt.Errorf("%s %q: is the cluster's default namespace", what, name)
	}
	for _, p := range reservedNamespacePrefixes {
		if strings.HasPrefix(name, p) {
			return fmt.Errorf("%s %q: names starting with %q are reserved", what, name, p)
		}
	}
	return nil
}

// GrantedNamespaces lists a consumer's namespaces other than its tenant namespace: its slices' and its
// extra ones.
func GrantedNamespaces(ctx context.Context, c *member.Cluster, consumerID string) ([]corev1.Namespace, error) {
	return handshake.NamespacesOf(ctx, c, consumerID, member.KindSlice, member.KindExtra)
}

// GrantNamespaceOptions are the provider's choices for an extra namespace.
type GrantNamespaceOptions struct {
	ConsumerID string
	Name       string
	// Sandbox, if set, replaces the guardrails of the consumer's tenant namespace (Pod Security level,
	// container defaults, priority classes), which are the default; its Quota is not read.
	Sandbox *sandbox.Options
	// Quota is the namespace's quota over DefaultGrantQuota, carved out of the consumer's total.
	Quota corev1.ResourceList
}

// GrantNamespace (provider) creates Name as a sandbox of the consumer and binds the pairing's current
// identity there with its role. Its quota is carved out of the consumer's total: held in the ledger first
// (refused, with nothing made, when it needs more than remains), given up by the tenant namespace, then
// set on the new namespace. A name already used by anything else is refused, and a pending request for it
// is answered Refused; an extra namespace already granted converges.
func GrantNamespace(ctx context.Context, c *member.Cluster, o GrantNamespaceOptions) error {
	if err := ValidateExtraNamespace("namespace", o.Name); err != nil {
		return err
	}
	tenant, state, err := activeTenantState(ctx, c, o.ConsumerID)
	if err != nil {
		return err
	}
	var sb sandbox.Options
	if o.Sandbox != nil {
		sb = *o.Sandbox
	} else if sb, err = sandbox.FromStatus(tenant.Status.Sandbox); err != nil {
		return fmt.Errorf("the sandbox recorded in Tenant %s/%s: %w", tenant.Namespace, tenant.Name, err)
	}
	if sb, err = sb.Validate(); err != nil {
		return err
	}
	sb.Cordoned = tenant.Status.Cordoned // a namespace granted while cordoned starts cordoned
	total, err := sandbox.RecordedTotal(tenant)
	if err != nil {
		return err
	}
	r := c.Reporter()
	owner := sandbox.NsOwner{ConsumerID: o.ConsumerID, Kind: member.KindExtra}
	refuseTaken := func(err error) error {
		if errors.Is(err, member.ErrNameTaken) {
			_ = answerNamespaceRequest(ctx, c, o.ConsumerID, o.Name, NamespaceRefused, "the namespace name is already taken on the provider")
		}
		return err
	}
	// A name that is not ours is refused before any share is held.
	if err := sandbox.CheckOwnNamespace(ctx, c, o.Name, owner); err != nil {
		return refuseTaken(err)
	}
	held, err := sandbox.ReserveGrant(ctx, c, o.ConsumerID, sandbox.NamespaceGrantKey(o.Name), fmt.Sprintf("namespace %q", o.Name), sandbox.Merged(sandbox.DefaultGrantQuota(), o.Quota), total)
	if err != nil {
		return err
	}
	sb.Quota = held.Want
	if err := member.Step(r, "Building the sandbox "+o.Name, "Sandbox "+o.Name+" ready for "+o.ConsumerID+" (Pod Security "+sb.PodSecurity+", quota, limits, network policy)", func() error {
		if err := sandbox.ShrinkTenant(ctx, c, held); err != nil {
			return err
		}
		return sandbox.EnsureSandbox(ctx, c, o.Name, owner, sb)
	}); err != nil {
		sandbox.CancelGrant(ctx, c, held, o.Name, owner)
		return refuseTaken(err)
	}
	if err := sandbox.SettleGrant(ctx, c, held); err != nil {
		return err
	}
	if err := member.Step(r, "Binding ClusterRole "+tenant.Status.ClusterRole, "ClusterRole "+tenant.Status.ClusterRole+" bound in "+o.Name+" to the pairing's identity", func() error {
		return sandbox.BindRole(ctx, c, o.Name, tenant.Status.User, tenant.Status.ClusterRole, o.ConsumerID)
	}); err != nil {
		return err
	}
	if err := afterBind(ctx, c, o.ConsumerID, fmt.Sprintf("namespace %q", o.Name), state, sb.Cordoned, o.Name,
		[]handshake.BoundUser{handshake.BoundIn(tenant.Status.User, o.Name)}); err != nil {
		return err
	}
	if err := answerNamespaceRequest(ctx, c, o.ConsumerID, o.Name, NamespaceGranted, ""); err != nil {
		return err
	}
	handshake.Audit(ctx, c, handshake.TenantObject(o.ConsumerID), handshake.EventGranted, "namespace "+o.Name+" granted to consumer "+o.ConsumerID, nil)
	return nil
}

// activeTenantState reads, at once, the consumer's active Tenant and what a grant compares once it has
// bound (handshake.Recheck).
func activeTenantState(ctx context.Context, c *member.Cluster, consumerID string) (*v1alpha1.Tenant, handshake.GrantState, error) {
	var tenant *v1alpha1.Tenant
	var state handshake.GrantState
	err := parallel.All(func() error {
		var err error
		tenant, err = ActiveTenant(ctx, c, consumerID)
		return err
	}, func() error {
		var err error
		state, err = handshake.ReadGrantState(ctx, c, consumerID)
		return err
	})
	return tenant, state, err
}

// afterBind is a grant's second look at its consumer once its binding in ns holds. Revoked meanwhile
// (revocation is final), what the grant bound is taken back and the grant fails; cordoned or uncordoned
// meanwhile (cordoned says how the namespace was made), the namespace follows the Tenant.
func afterBind(ctx context.Context, c *member.Cluster, consumerID, what string, before handshake.GrantState, cordoned bool, ns string, bound []handshake.BoundUser) error {
	if c.DryRun {
		return nil // nothing was bound
	}
	users := make([]string, len(bound))
	for i, b := range bound {
		users[i] = b.User
	}
	now, err := handshake.Recheck(ctx, c, consumerID, before, users...)
	if err != nil {
		return err
	}
	if now.Revoked {
		taken := &handshake.RevokedMeanwhileError{ConsumerID: consumerID, What: what}
		if err := handshake.TakeBack(ctx, c, consumerID, bound); err != nil {
			return errors.Join(taken, fmt.Errorf("taking it back: %w", err))
		}
		return taken
	}
	if now.Cordoned != cordoned {
		return sandbox.SetCordoned(ctx, c, ns, now.Cordoned)
	}
	return nil
}

// answerNamespaceRequest records the provider's answer on the consumer's request, if it left one.
func answerNamespaceRequest(ctx context.Context, c *member.Cluster, consumerID, name, phase, reason string) error {
	tns := member.TenantNamespace(consumerID)
	obj := &v1alpha1.NamespaceRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.NamespaceRequestKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tns},
		Status:     v1alpha1.NamespaceRequestStatus{Phase: phase, Reason: reason},
	}
	u, err := objects.ToUnstructured(obj)
	if err != nil {
		return err
	}
	unstructured.RemoveNestedField(u.Object, "spec")
	reqs := c.Dynamic.Resource(v1alpha1.NamespaceRequestGVR).Namespace(tns)
	if _, err := reqs.Get(ctx, name, metav1.GetOptions{}); err != nil {
		return objects.IgnoreNotFound(err) // no request: granted on the provider's own initiative
	}
	_, err = reqs.ApplyStatus(ctx, name, u, metav1.ApplyOptions{FieldManager: member.FieldManager, Force: true})
	return objects.IgnoreNotFound(err)
}

// RevokeNamespace (provider) takes an extra namespace away: its RoleBinding first, then what runs there,
// then the namespace (waited until gone) and the consumer's request for it. Only a namespace granted to
// this consumer as an extra namespace is touched.
func RevokeNamespace(ctx context.Context, c *member.Cluster, consumerID, name string) (handshake.Outcome, error) {
	if err := ValidateExtraNamespace("namespace", name); err != nil {
		return handshake.Done, err
	}
	owner := sandbox.NsOwner{ConsumerID: consumerID, Kind: member.KindExtra}
	if outcome, err := extraNamespaceGone(ctx, c, consumerID, name, owner); err != nil || outcome == handshake.Already {
		return outcome, err
	}
	return handshake.Done, member.Step(c.Reporter(), "Revoking namespace "+name+" of "+consumerID, "Namespace "+name+" of "+consumerID+" revoked and removed", func() error {
		if _, err := revokeNamespace(ctx, c, name, owner); err != nil {
			return err
		}
		// Its share of the consumer's total goes back to the tenant namespace once it (and its quota) is gone.
		deleted := DeleteNamespace(ctx, c, name, consumerID)
		if deleted == nil {
			deleted = sandbox.ReleaseGrant(ctx, c, consumerID, sandbox.NamespaceGrantKey(name))
		}
		if err := errors.Join(deleted,
			objects.IgnoreNotFound(c.Dynamic.Resource(v1alpha1.NamespaceRequestGVR).Namespace(member.TenantNamespace(consumerID)).Delete(ctx, name, metav1.DeleteOptions{}))); err != nil {
			return err
		}
		handshake.Audit(ctx, c, handshake.TenantObject(consumerID), handshake.EventRevoked, "namespace "+name+" of consumer "+consumerID+" revoked and removed", nil)
		return handshake.RecordRemoved(ctx, c, handshake.RemovedNamespace, consumerID, name)
	})
}

// extraNamespaceGone answers, before anything is changed, a revocation of an extra namespace this cluster
// has no live grant of: Already if it was revoked before, else a *NotFoundError naming the consumer's extra
// namespaces. Done means the namespace is there to revoke.
func extraNamespaceGone(ctx context.Context, c *member.Cluster, consumerID, name string, owner sandbox.NsOwner) (handshake.Outcome, error) {
	ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err == nil && owner.Owns(ns.Labels) {
		return handshake.Done, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return handshake.Done, err
	}
	removed, _, err := handshake.Removed(ctx, c, handshake.RemovedNamespace, consumerID, name)
	if err != nil || removed {
		return handshake.Already, err
	}
	extra, err := handshake.NamespacesOf(ctx, c, consumerID, member.KindExtra)
	if err != nil {
		return handshake.Done, err
	}
	var known []string
	for _, e := range extra {
		known = append(known, e.Name)
	}
	return handshake.Done, handshake.NotFound("extra namespace", name, "of consumer "+consumerID+" on this cluster", known)
}

// RequestNamespace (consumer) leaves a request for one more namespace in this cluster's tenant namespace
// on the provider, through provider (the pairing's identity). Asking again changes nothing.
func RequestNamespace(ctx context.Context, c *member.Cluster, provider *member.Cluster, name, reason string) error {
	if err := ValidateExtraNamespace("namespace", name); err != nil {
		return err
	}
	self, err := c.Load(ctx)
	if err != nil {
		return err
	}
	tns := member.TenantNamespace(self.ClusterID)
	return member.Step(c.Reporter(), "Requesting namespace "+name, "NamespaceRequest "+name+" left in "+tns+" on the provider", func() error {
		obj := &v1alpha1.NamespaceRequest{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.NamespaceRequestKind},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tns},
			Spec:       v1alpha1.NamespaceRequestSpec{Reason: reason},
		}
		u, err := objects.ToUnstructured(obj)
		if err != nil {
			return err
		}
		unstructured.RemoveNestedField(u.Object, "status")
		_, err = handshake.CreateCounted(ctx, c, provider, v1alpha1.NamespaceRequestGVR, u)
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// NamespaceInfo is a consumer's extra namespace, requested or granted.
type NamespaceInfo struct {
	ConsumerID string `json:"consumerID"`
	Namespace  string `json:"namespace"`
	Phase      string `json:"phase"`
	Reason     string `json:"reason,omitempty"` // the provider's, when it refused
	Requested  bool   `json:"requested"`
	// RequestReason is the consumer's, given with its request: the tenant's text, to be shown as such.
	RequestReason string `json:"requestReason,omitempty"`
}

// ExtraNamespaces lists a consumer's requests and extra namespaces. On the provider, c sees both; through
// the pairing (a consumer asking), only its requests in its tenant namespace.
func ExtraNamespaces(ctx context.Context, c *member.Cluster, consumerID string, asTenant bool) ([]NamespaceInfo, error) {
	byName := map[string]*NamespaceInfo{}
	l, err := c.Dynamic.Resource(v1alpha1.NamespaceRequestGVR).Namespace(member.TenantNamespace(consumerID)).List(ctx, metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if err == nil {
		for i := range l.Items {
			var req v1alpha1.NamespaceRequest
			if objects.FromUnstructured(&l.Items[i], &req) != nil {
				continue
			}
			phase, reason := req.Status.Phase, req.Status.Reason
			if phase == "" {
				phase = NamespacePending
			}
			if err := ValidateExtraNamespace("name", req.Name); err != nil && phase == NamespacePending {
				phase, reason = NamespaceRefused, err.Error() // never grantable: say so rather than leave it pending
			}
			byName[req.Name] = &NamespaceInfo{ConsumerID: consumerID, Namespace: req.Name, Phase: phase, Reason: reason, Requested: true,
				RequestReason: req.Spec.Reason}
		}
	}
	if !asTenant {
		extra, err := handshake.NamespacesOf(ctx, c, consumerID, member.KindExtra)
		if err != nil {
			return nil, err
		}
		for _, ns := range extra {
			info := byName[ns.Name]
			if info == nil {
				info = &NamespaceInfo{ConsumerID: consumerID, Namespace: ns.Name}
				byName[ns.Name] = info
			}
			info.Phase, info.Reason = NamespaceGranted, ""
		}
	}
	out := make([]NamespaceInfo, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, *byName[name])
	}
	return out, nil
}

// DeleteNamespace deletes a sandbox namespace this tool created for consumerID (never another one of the
// same name) and watches until the namespace controller has finished with it.
func DeleteNamespace(ctx context.Context, c *member.Cluster, name, consumerID string) error {
	nss := c.Kube.CoreV1().Namespaces()
	ns, err := nss.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.Labels[member.LabelManagedBy] != member.ManagedBy || ns.Labels[member.LabelRemoteClusterID] != consumerID {
		return fmt.Errorf("namespace %s %w for consumer %q: left in place", name, member.ErrNotOurs, consumerID)
	}
	if ns.DeletionTimestamp == nil {
		if err := nss.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &ns.UID}}); err != nil {
			return objects.IgnoreNotFound(err)
		}
	}
	// The namespace controller usually finishes in seconds. An object whose finalizer no controller will
	// ever remove (a tenant can orphan one: see docs/security.md) would keep the namespace terminating
	// forever; by now nobody but this run acts there, so after a while its finalizers are removed.
	wctx, cancel := context.WithTimeout(ctx, stuckNamespaceAfter)
	err = c.WaitDeleted(wctx, member.Deletable[*corev1.Namespace](nss), name, ns.ResourceVersion)
	cancel()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("waiting for namespace %s to be deleted: %w", name, err)
	}
	c.Reporter().Warn(fmt.Sprintf("Namespace %s is still terminating after %s: removing the finalizers left on its objects", name, stuckNamespaceAfter))
	if err := stripFinalizers(ctx, c, name); err != nil {
		return fmt.Errorf("namespace %s: removing leftover finalizers: %w", name, err)
	}
	left, err := nss.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.WaitDeleted(ctx, member.Deletable[*corev1.Namespace](nss), name, left.ResourceVersion); err != nil {
		return fmt.Errorf("waiting for namespace %s to be deleted: %w", name, err)
	}
	return nil
}

// revokeNamespace takes one granted namespace's rights away and stops what runs there.
func revokeNamespace(ctx context.Context, c *member.Cluster, ns string, owner sandbox.NsOwner) (unbound bool, err error) {
	live, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !owner.Owns(live.Labels) {
		return false, fmt.Errorf("namespace %s %w for %s: left in place", ns, member.ErrNotOurs, owner)
	}
	if unbound, err = deleteRoleBinding(ctx, c, ns, owner.ConsumerID); err != nil {
		return false, err
	}
	if live.DeletionTimestamp != nil {
		return unbound, nil
	}
	return unbound, sandbox.StopTenant(ctx, c, ns)
}

// deleteRoleBinding deletes the tenant RoleBinding of a namespace if kubectl federate made it for
// consumerID, and tells whether it did; another one of that name is left in place, with an error.
func deleteRoleBinding(ctx context.Context, c *member.Cluster, ns, consumerID string) (bool, error) {
	rb, err := OurRoleBinding(ctx, c, ns, consumerID)
	if rb == nil || err != nil {
		return false, err
	}
	err = c.Kube.RbacV1().RoleBindings(ns).Delete(ctx, member.RoleBindingName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &rb.UID}})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// stripFinalizers removes the finalizers of every object left in a terminating namespace, through
// discovery of its namespaced kinds.
func stripFinalizers(ctx context.Context, c *member.Cluster, ns string) error {
	lists, err := c.Kube.Discovery().ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return err
	}
	var errs []error
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "patch") || strings.Contains(r.Name, "/") {
				continue
			}
			client := c.Dynamic.Resource(gv.WithResource(r.Name)).Namespace(ns)
			items, err := client.List(ctx, metav1.ListOptions{})
			if err != nil {
				continue // a kind that cannot be listed holds nothing this run can clear
			}
			for _, it := range items.Items {
				if len(it.GetFinalizers()) == 0 {
					continue
				}
				_, err := client.Patch(ctx, it.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					errs = append(errs, fmt.Errorf("%s %s: %w", r.Name, it.GetName(), err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// stuckNamespaceAfter is how long a namespace may take to be deleted before its objects' finalizers are
// removed; the namespace controller takes about 5 s on an idle cluster.
const stuckNamespaceAfter = 30 * time.Second

// OurRoleBinding reads the tenant RoleBinding of a namespace: nil if there is none; an error if one of
// that name was not made by kubectl federate for consumerID.
func OurRoleBinding(ctx context.Context, c *member.Cluster, ns, consumerID string) (*rbacv1.RoleBinding, error) {
	rb, err := c.Kube.RbacV1().RoleBindings(ns).Get(ctx, member.RoleBindingName, metav1.GetOptions{})
	if err != nil {
		return nil, objects.IgnoreNotFound(err)
	}
	if rb.Labels[member.LabelManagedBy] != member.ManagedBy || rb.Labels[member.LabelRemoteClusterID] != consumerID {
		return nil, fmt.Errorf("RoleBinding %s/%s %w for consumer %q: left in place", ns, member.RoleBindingName, member.ErrNotOurs, consumerID)
	}
	return rb, nil
}

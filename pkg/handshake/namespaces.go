package handshake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
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
		return fmt.Errorf("%s %q: must be a DNS label of at most 63 characters (lowercase letters, digits and '-')", what, truncate(name))
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

// ownerOf reads a provider namespace's owner from its labels.
func ownerOf(l map[string]string) nsOwner {
	kind := l[LabelNamespaceKind]
	if kind == "" {
		kind = KindTenant
	}
	return nsOwner{consumerID: l[LabelRemoteClusterID], kind: kind, slice: l[LabelSlice]}
}

// grantedNamespaces lists a consumer's namespaces other than its tenant namespace: its slices' and its
// extra ones.
func (c *Cluster) grantedNamespaces(ctx context.Context, consumerID string) ([]corev1.Namespace, error) {
	return c.namespacesOf(ctx, consumerID, KindSlice, KindExtra)
}

// namespacesOf lists a consumer's namespaces of the given kinds.
func (c *Cluster) namespacesOf(ctx context.Context, consumerID string, kinds ...string) ([]corev1.Namespace, error) {
	return c.namespacesOfRead(consumerID, kinds...).take(ctx, c)
}

// rebindExtra binds the pairing's new user in every extra namespace of the consumer (renewal).
func (c *Cluster) rebindExtra(ctx context.Context, consumerID, user, clusterRole string) error {
	extra, err := c.namespacesOf(ctx, consumerID, KindExtra)
	if err != nil {
		return err
	}
	jobs := make([]func() error, len(extra))
	for i, ns := range extra {
		jobs[i] = func() error {
			if ns.DeletionTimestamp != nil {
				return nil
			}
			return c.bindRole(ctx, ns.Name, user, clusterRole, consumerID)
		}
	}
	return parallel(jobs...)
}

// GrantNamespaceOptions are the provider's choices for an extra namespace.
type GrantNamespaceOptions struct {
	ConsumerID string
	Name       string
	// Sandbox, if set, replaces the guardrails of the consumer's tenant namespace, which are the default.
	Sandbox *SandboxOptions
}

// GrantNamespace (provider) creates Name as a sandbox of the consumer and binds the pairing's current
// identity there with its role. A name already used by anything else is refused, and a pending request for
// it is answered Refused; an extra namespace already granted converges.
func (c *Cluster) GrantNamespace(ctx context.Context, o GrantNamespaceOptions) error {
	if err := ValidateExtraNamespace("namespace", o.Name); err != nil {
		return err
	}
	tenant, err := c.activeTenant(ctx, o.ConsumerID)
	if err != nil {
		return err
	}
	var sb SandboxOptions
	if o.Sandbox != nil {
		sb = *o.Sandbox
	} else if sb, err = sandboxFromStatus(tenant.Status.Sandbox); err != nil {
		return fmt.Errorf("the sandbox recorded in Tenant %s/%s: %w", tenant.Namespace, tenant.Name, err)
	}
	if sb, err = sb.Validate(); err != nil {
		return err
	}
	r := c.report()
	owner := nsOwner{consumerID: o.ConsumerID, kind: KindExtra}
	if err := step(r, "Building the sandbox "+o.Name, "Sandbox "+o.Name+" ready for "+o.ConsumerID+" (Pod Security "+sb.PodSecurity+", quota, limits, network policy)", func() error {
		return c.ensureSandbox(ctx, o.Name, owner, sb)
	}); err != nil {
		if errors.Is(err, ErrNameTaken) {
			_ = c.answerNamespaceRequest(ctx, o.ConsumerID, o.Name, NamespaceRefused, "the namespace name is already taken on the provider")
		}
		return err
	}
	if err := step(r, "Binding ClusterRole "+tenant.Status.ClusterRole, "ClusterRole "+tenant.Status.ClusterRole+" bound in "+o.Name+" to the pairing's identity", func() error {
		return c.bindRole(ctx, o.Name, tenant.Status.User, tenant.Status.ClusterRole, o.ConsumerID)
	}); err != nil {
		return err
	}
	if err := c.answerNamespaceRequest(ctx, o.ConsumerID, o.Name, NamespaceGranted, ""); err != nil {
		return err
	}
	c.audit(ctx, tenantObject(o.ConsumerID), EventGranted, "namespace "+o.Name+" granted to consumer "+o.ConsumerID, nil)
	return nil
}

// answerNamespaceRequest records the provider's answer on the consumer's request, if it left one.
func (c *Cluster) answerNamespaceRequest(ctx context.Context, consumerID, name, phase, reason string) error {
	tns := TenantNamespace(consumerID)
	obj := &v1alpha1.NamespaceRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.NamespaceRequestKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tns},
		Status:     v1alpha1.NamespaceRequestStatus{Phase: phase, Reason: reason},
	}
	u, err := toUnstructured(obj)
	if err != nil {
		return err
	}
	unstructured.RemoveNestedField(u.Object, "spec")
	reqs := c.Dynamic.Resource(v1alpha1.NamespaceRequestGVR).Namespace(tns)
	if _, err := reqs.Get(ctx, name, metav1.GetOptions{}); err != nil {
		return ignoreNotFound(err) // no request: granted on the provider's own initiative
	}
	_, err = reqs.ApplyStatus(ctx, name, u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return ignoreNotFound(err)
}

// RevokeNamespace (provider) takes an extra namespace away: its RoleBinding first, then what runs there,
// then the namespace (waited until gone) and the consumer's request for it. Only a namespace granted to
// this consumer as an extra namespace is touched.
func (c *Cluster) RevokeNamespace(ctx context.Context, consumerID, name string) error {
	if err := ValidateExtraNamespace("namespace", name); err != nil {
		return err
	}
	owner := nsOwner{consumerID: consumerID, kind: KindExtra}
	return step(c.report(), "Revoking namespace "+name+" of "+consumerID, "Namespace "+name+" of "+consumerID+" revoked and removed", func() error {
		live, err := c.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if err := c.revokeNamespace(ctx, name, owner); err != nil {
			return err
		}
		// Recorded once the binding is gone, from when the consumer can act there no more; a re-run that
		// finds nothing granted records nothing.
		if err == nil && owner.owns(live.Labels) && live.DeletionTimestamp == nil {
			c.audit(ctx, tenantObject(consumerID), EventRevoked, "namespace "+name+" revoked from consumer "+consumerID+" and removed", nil)
		}
		return errors.Join(c.deleteNamespace(ctx, name, consumerID),
			ignoreNotFound(c.Dynamic.Resource(v1alpha1.NamespaceRequestGVR).Namespace(TenantNamespace(consumerID)).Delete(ctx, name, metav1.DeleteOptions{})))
	})
}

// RequestNamespace (consumer) leaves a request for one more namespace in this cluster's tenant namespace
// on the provider, through provider (the pairing's identity). Asking again changes nothing.
func (c *Cluster) RequestNamespace(ctx context.Context, provider *Cluster, name, reason string) error {
	if err := ValidateExtraNamespace("namespace", name); err != nil {
		return err
	}
	self, err := c.Load(ctx)
	if err != nil {
		return err
	}
	tns := TenantNamespace(self.ClusterID)
	return step(c.report(), "Requesting namespace "+name, "NamespaceRequest "+name+" left in "+tns+" on the provider", func() error {
		obj := &v1alpha1.NamespaceRequest{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.NamespaceRequestKind},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tns},
			Spec:       v1alpha1.NamespaceRequestSpec{Reason: reason},
		}
		u, err := toUnstructured(obj)
		if err != nil {
			return err
		}
		unstructured.RemoveNestedField(u.Object, "status")
		_, err = c.createCounted(ctx, provider, v1alpha1.NamespaceRequestGVR, u)
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
func (c *Cluster) ExtraNamespaces(ctx context.Context, consumerID string, asTenant bool) ([]NamespaceInfo, error) {
	byName := map[string]*NamespaceInfo{}
	l, err := c.Dynamic.Resource(v1alpha1.NamespaceRequestGVR).Namespace(TenantNamespace(consumerID)).List(ctx, metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if err == nil {
		for i := range l.Items {
			var req v1alpha1.NamespaceRequest
			if fromUnstructured(&l.Items[i], &req) != nil {
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
		extra, err := c.namespacesOf(ctx, consumerID, KindExtra)
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

// sandboxFromStatus turns a recorded sandbox back into options.
func sandboxFromStatus(st *v1alpha1.SandboxStatus) (SandboxOptions, error) {
	if st == nil {
		return SandboxOptions{}, nil
	}
	o := SandboxOptions{PodSecurity: st.PodSecurity, PriorityClasses: st.PriorityClasses, StorageClasses: st.StorageClasses,
		Tolerations: st.Tolerations, RuntimeClasses: st.RuntimeClasses, Schedulers: st.Schedulers}
	var err error
	if o.Quota, err = ParseResourceList("quota", FormatResourceList(st.Quota)); err != nil {
		return o, err
	}
	if o.DefaultRequests, err = ParseResourceList("defaultRequests", FormatResourceList(st.DefaultRequests)); err != nil {
		return o, err
	}
	o.DefaultLimits, err = ParseResourceList("defaultLimits", FormatResourceList(st.DefaultLimits))
	return o, err
}

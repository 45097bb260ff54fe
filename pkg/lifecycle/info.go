package lifecycle

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// ClusterInfo describes this cluster's federation state, for `kubectl federate info`.
type ClusterInfo struct {
	ClusterID   string         `json:"clusterID"`
	Fingerprint string         `json:"handshakeKeyFingerprint"`
	Tenants     []TenantInfo   `json:"tenants"`
	Identities  []IdentityInfo `json:"identities"`
}

// TenantInfo is a consumer of this (provider) cluster.
type TenantInfo struct {
	ConsumerID  string     `json:"consumerID"`
	Namespace   string     `json:"namespace"`
	Phase       string     `json:"phase,omitempty"`
	User        string     `json:"user,omitempty"`
	Credential  string     `json:"credential"`
	ClusterRole string     `json:"clusterRole,omitempty"`
	NotAfter    *time.Time `json:"notAfter,omitempty"`
	// Sandbox is what the tenant namespace enforces.
	Sandbox *v1alpha1.SandboxStatus `json:"sandbox,omitempty"`
}

// IdentityInfo is this (consumer) cluster's identity on a provider.
type IdentityInfo struct {
	ProviderID       string     `json:"providerID"`
	Type             string     `json:"type"`
	ResourceSlice    string     `json:"resourceSlice,omitempty"`
	Namespace        string     `json:"namespace"`
	APIServer        string     `json:"apiServer"`
	User             string     `json:"user,omitempty"`
	Credential       string     `json:"credential"`
	KubeconfigSecret string     `json:"kubeconfigSecret,omitempty"`
	NotAfter         *time.Time `json:"notAfter,omitempty"`
}

// Pairings reads this cluster's ID, key fingerprint, tenants and identities (named apart from
// Reporter.Info, which prints).
func Pairings(ctx context.Context, c *member.Cluster) (*ClusterInfo, error) {
	self, err := c.Load(ctx)
	if err != nil {
		return nil, err
	}
	out := &ClusterInfo{ClusterID: self.ClusterID, Fingerprint: credential.Fingerprint(self.PublicKey), Tenants: []TenantInfo{}, Identities: []IdentityInfo{}}
	sel := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{member.LabelManagedBy: member.ManagedBy}).String()}
	tl, err := c.Dynamic.Resource(v1alpha1.TenantGVR).List(ctx, sel)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if err == nil {
		for i := range tl.Items {
			var t v1alpha1.Tenant
			if err := objects.FromUnstructured(&tl.Items[i], &t); err != nil {
				return nil, err
			}
			out.Tenants = append(out.Tenants, TenantInfo{ConsumerID: t.Spec.ClusterID, Namespace: t.Namespace,
				Phase: t.Status.Phase, User: t.Status.User, Credential: handshake.OrCertificate(t.Status.Credential), ClusterRole: t.Status.ClusterRole, NotAfter: handshake.TimeOf(t.Status.NotAfter),
				Sandbox: t.Status.Sandbox})
		}
	}
	il, err := c.Dynamic.Resource(v1alpha1.IdentityGVR).List(ctx, sel)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if err == nil {
		for i := range il.Items {
			var id v1alpha1.Identity
			if err := objects.FromUnstructured(&il.Items[i], &id); err != nil {
				return nil, err
			}
			typ := v1alpha1.IdentityType(&id.Spec)
			out.Identities = append(out.Identities, IdentityInfo{ProviderID: id.Spec.ClusterID, Type: typ, ResourceSlice: id.Spec.ResourceSlice, Namespace: id.Namespace,
				APIServer: id.Spec.APIServer, User: id.Status.User, Credential: handshake.OrCertificate(id.Spec.Credential), KubeconfigSecret: id.Status.KubeconfigSecret, NotAfter: handshake.TimeOf(id.Status.NotAfter)})
		}
	}
	return out, nil
}

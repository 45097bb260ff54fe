// Package v1alpha1 holds the federate.dev/v1alpha1 API: Tenant (on a provider, one per consumer) and
// Identity (on a consumer, one per provider), and their CRD manifests.
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group and version of the API.
const (
	Group   = "federate.dev"
	Version = "v1alpha1"
)

// APIVersion is the apiVersion field of Tenant and Identity documents.
var APIVersion = Group + "/" + Version

// Kinds and resources.
var (
	TenantGVR   = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "tenants"}
	IdentityGVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "identities"}
)

// Kind names.
const (
	TenantKind   = "Tenant"
	IdentityKind = "Identity"
)

// Tenant is what a consumer cluster asks of a provider. The consumer generates it (generate tenant); the
// provider applies it in the tenant namespace federate-tenant-<consumer ID> and issues an identity from
// it (generate identity). It carries no secret.
type Tenant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              TenantSpec   `json:"spec"`
	Status            TenantStatus `json:"status,omitempty"`
}

// TenantSpec is the consumer's signed request.
type TenantSpec struct {
	// ClusterID is the consumer's cluster ID; the Tenant's name equals it.
	ClusterID string `json:"clusterID"`
	// ProviderClusterID is the provider this request was made for.
	ProviderClusterID string `json:"providerClusterID"`
	// PublicKey is the consumer's Ed25519 handshake public key (32 bytes).
	PublicKey []byte `json:"publicKey"`
	// CSR is the PEM certificate signing request for the consumer's new client key.
	CSR []byte `json:"csr"`
	// Signature is the Ed25519 signature, by the handshake key, over the handshake message that binds the
	// provider ID, the consumer ID, the nonce and the CSR.
	Signature []byte `json:"signature"`
	// ProxyURL, if set, is the proxy the consumer reaches the provider's API server through.
	ProxyURL string `json:"proxyURL,omitempty"`
}

// TenantStatus is written by the provider's administrator's CLI when it issues an identity.
type TenantStatus struct {
	// Phase is Active once an identity has been issued.
	Phase string `json:"phase,omitempty"`
	// PinnedPublicKey is the handshake key the first identity was issued to; another key for the same
	// consumer ID is refused until the consumer is unauthenticated.
	PinnedPublicKey []byte `json:"pinnedPublicKey,omitempty"`
	// User is the Kubernetes user name of the current identity, unique to its issuance.
	User string `json:"user,omitempty"`
	// CSRHash is the hex SHA-256 of the CSR the current certificate was issued for.
	CSRHash string `json:"csrHash,omitempty"`
	// Certificate is the issued client certificate (PEM, public).
	Certificate []byte `json:"certificate,omitempty"`
	// NotAfter is when the certificate actually expires, as issued by the signer.
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
	// ClusterRole is the ClusterRole bound in the tenant namespace.
	ClusterRole string `json:"clusterRole,omitempty"`
	// Sandbox is what the tenant namespace enforces.
	Sandbox *SandboxStatus `json:"sandbox,omitempty"`
}

// SandboxStatus records the guardrails of a tenant's sandbox namespace.
type SandboxStatus struct {
	// PodSecurity is the Pod Security Admission level enforced (restricted, baseline or privileged).
	PodSecurity string `json:"podSecurity,omitempty"`
	// Quota is the ResourceQuota's hard limits.
	Quota map[string]string `json:"quota,omitempty"`
	// DefaultRequests and DefaultLimits are the LimitRange's container defaults.
	DefaultRequests map[string]string `json:"defaultRequests,omitempty"`
	DefaultLimits   map[string]string `json:"defaultLimits,omitempty"`
	// PriorityClasses are the priority classes pods may name.
	PriorityClasses []string `json:"priorityClasses,omitempty"`
}

// Identity is a consumer's credential on a provider: everything to reach the provider except the private
// key, which stays in the consumer's kubeconfig Secret. The provider generates it (generate identity) and
// the consumer imports it (import identity) into federate-tenant-<provider ID>.
type Identity struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              IdentitySpec   `json:"spec"`
	Status            IdentityStatus `json:"status,omitempty"`
}

// IdentitySpec describes the credential.
type IdentitySpec struct {
	// ClusterID is the provider's cluster ID.
	ClusterID string `json:"clusterID"`
	// ConsumerClusterID is the consumer this identity was issued to.
	ConsumerClusterID string `json:"consumerClusterID"`
	// Namespace is the consumer's tenant namespace on the provider, the kubeconfig's default namespace.
	Namespace string `json:"namespace"`
	// APIServer is the provider API server URL.
	APIServer string `json:"apiServer"`
	// CA is the PEM bundle that verifies the provider API server (empty: the system roots).
	CA []byte `json:"ca,omitempty"`
	// Certificate is the issued PEM client certificate.
	Certificate []byte `json:"certificate"`
	// ProxyURL, if set, is written into the kubeconfig.
	ProxyURL string `json:"proxyURL,omitempty"`
	// Integrity holds, for each field above, an HMAC-SHA256 keyed from the nonce of this issuance, which
	// only the two administrators hold: the consumer refuses a field altered after the provider issued it.
	Integrity map[string][]byte `json:"integrity,omitempty"`
}

// IdentityStatus is written by import identity.
type IdentityStatus struct {
	// User is the Kubernetes user name the certificate authenticates as.
	User string `json:"user,omitempty"`
	// NotAfter is when the certificate expires.
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
	// KubeconfigSecret names the Secret (same namespace, key "kubeconfig") holding the kubeconfig.
	KubeconfigSecret string `json:"kubeconfigSecret,omitempty"`
}

// DeepCopyTenant returns a deep copy of t.
func (t *Tenant) DeepCopyTenant() *Tenant {
	out := *t
	t.DeepCopyInto(&out.ObjectMeta)
	out.Spec.PublicKey = append([]byte(nil), t.Spec.PublicKey...)
	out.Spec.CSR = append([]byte(nil), t.Spec.CSR...)
	out.Spec.Signature = append([]byte(nil), t.Spec.Signature...)
	out.Status.PinnedPublicKey = append([]byte(nil), t.Status.PinnedPublicKey...)
	out.Status.Certificate = append([]byte(nil), t.Status.Certificate...)
	if t.Status.Sandbox != nil {
		sb := *t.Status.Sandbox
		out.Status.Sandbox = &sb
	}
	if t.Status.NotAfter != nil {
		na := *t.Status.NotAfter
		out.Status.NotAfter = &na
	}
	return &out
}

// Package v1alpha1 holds the federate.dev/v1alpha1 API: Tenant (on a provider, one per consumer),
// Identity (on a consumer, one per credential it holds on a provider), ResourceSlice (a consumer's signed
// request for resources with their own identity, and the provider's grant), ResourceSliceClass (a
// provider's policy for slices), NamespaceRequest (a consumer's request for one more namespace), and
// their CRD manifests.
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
	TenantGVR             = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "tenants"}
	IdentityGVR           = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "identities"}
	ResourceSliceGVR      = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "resourceslices"}
	ResourceSliceClassGVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "resourcesliceclasses"}
	NamespaceRequestGVR   = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "namespacerequests"}
)

// Kind names.
const (
	TenantKind             = "Tenant"
	IdentityKind           = "Identity"
	ResourceSliceKind      = "ResourceSlice"
	ResourceSliceClassKind = "ResourceSliceClass"
	NamespaceRequestKind   = "NamespaceRequest"
)

// Credential kinds of an issued identity.
const (
	CredentialCertificate = "Certificate" // a client certificate from the kube-apiserver-client signer
	CredentialToken       = "Token"       // a TokenRequest token of a ServiceAccount in the identity's namespace
	// CredentialFederated is no credential at all: the provider's API server trusts the consumer's own
	// ServiceAccount token issuer (structured authentication), for one ServiceAccount of the consumer, and
	// the consumer mints a short token whenever it needs one.
	CredentialFederated = "Federated"
)

// Identity types.
const (
	IdentityControlPlane = "ControlPlane" // the pairing's own identity, in the tenant namespace
	IdentityResource     = "Resource"     // a ResourceSlice's identity, in the slice's namespace
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
	// CSR is the PEM certificate signing request for the consumer's new client key; none in a federated
	// request.
	CSR []byte `json:"csr,omitempty"`
	// Signature is the Ed25519 signature, by the handshake key, over the handshake message that binds the
	// provider ID, the consumer ID, the nonce and the CSR (or the federated request).
	Signature []byte `json:"signature"`
	// ProxyURL, if set, is the proxy the consumer reaches the provider's API server through.
	ProxyURL string `json:"proxyURL,omitempty"`
	// Federated, set instead of CSR, asks for a federated identity: the provider's API server is to trust
	// the consumer's ServiceAccount tokens for the one ServiceAccount named here. The signature covers it.
	Federated *FederatedRequest `json:"federated,omitempty"`
}

// FederatedRequest is what a consumer asks a provider's API server to trust: its token issuer, how to
// reach its discovery document, and the one ServiceAccount of the consumer that acts on the provider.
type FederatedRequest struct {
	// Issuer is the consumer's ServiceAccount token issuer (its API server's --service-account-issuer),
	// an https URL the provider's API server reaches for the discovery document and keys.
	Issuer string `json:"issuer"`
	// DiscoveryURL, if set, is where the provider's API server reads the discovery document instead of
	// <issuer>/.well-known/openid-configuration.
	DiscoveryURL string `json:"discoveryURL,omitempty"`
	// IssuerCA is the PEM bundle that verifies the issuer's (and discovery URL's) TLS certificate; empty:
	// the provider's system roots.
	IssuerCA []byte `json:"issuerCA,omitempty"`
	// ServiceAccount is the consumer's ServiceAccount that acts on the provider, pinned by its UID.
	ServiceAccount ServiceAccountRef `json:"serviceAccount"`
}

// ServiceAccountRef names a ServiceAccount, and the UID of the one meant.
type ServiceAccountRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
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
	// NotAfter is when the credential actually expires, as issued by the signer or the API server.
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
	// Credential is Certificate (empty means Certificate), Token (then User is the ServiceAccount the
	// token belongs to, and Certificate is empty) or Federated (then User is what the provider's
	// authenticator entry maps the consumer's ServiceAccount to, Audience the audience of its tokens, and
	// nothing expires).
	Credential string `json:"credential,omitempty"`
	// Audience is a Federated identity's token audience, unique to this provider, consumer and issuance.
	Audience string `json:"audience,omitempty"`
	// ClusterRole is the ClusterRole bound in the tenant namespace.
	ClusterRole string `json:"clusterRole,omitempty"`
	// Sandbox is what the tenant namespace enforces.
	Sandbox *SandboxStatus `json:"sandbox,omitempty"`
	// APIServer and CA are what the provider wrote into the consumer's kubeconfig; a renewal keeps them
	// unless asked otherwise.
	APIServer string `json:"apiServer,omitempty"`
	CA        []byte `json:"ca,omitempty"`
	// Lifetime is the lifetime the credential was asked with; a renewal asks for it again. MaxLifetime, if
	// set, caps what any issuance of this pairing asks.
	Lifetime    *metav1.Duration `json:"lifetime,omitempty"`
	MaxLifetime *metav1.Duration `json:"maxLifetime,omitempty"`
	// Cordoned is true while the provider keeps the tenant from starting new workloads (cordon tenant).
	Cordoned bool `json:"cordoned,omitempty"`
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
	// StorageClasses are the storage classes PersistentVolumeClaims may name; none means any named class.
	StorageClasses []string `json:"storageClasses,omitempty"`
	// Tolerations are the taint keys pods may tolerate besides the defaults (not-ready, unreachable).
	Tolerations []string `json:"tolerations,omitempty"`
	// RuntimeClasses are the runtime classes pods may name.
	RuntimeClasses []string `json:"runtimeClasses,omitempty"`
	// Schedulers are the schedulers pods may name besides default-scheduler.
	Schedulers []string `json:"schedulers,omitempty"`
	// CSIDrivers are the CSI drivers whose inline volumes pods may use.
	CSIDrivers []string `json:"csiDrivers,omitempty"`
	// ImageVolumes are the image reference prefixes (or * for any) pods may mount as image volumes.
	ImageVolumes []string `json:"imageVolumes,omitempty"`
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
	// Certificate is the issued PEM client certificate; empty for a Token credential.
	Certificate []byte `json:"certificate,omitempty"`
	// Credential is Certificate (empty means Certificate), Token or Federated.
	Credential string `json:"credential,omitempty"`
	// Token is the ServiceAccount token of a Token credential. It is the credential itself: an Identity
	// that carries one is a secret.
	Token string `json:"token,omitempty"`
	// Federated is a Federated identity: the consumer's ServiceAccount whose tokens, minted with the
	// audience, the provider's API server authenticates as the user. It carries no secret.
	Federated *FederatedIdentity `json:"federated,omitempty"`
	// ProxyURL, if set, is written into the kubeconfig.
	ProxyURL string `json:"proxyURL,omitempty"`
	// Type is ControlPlane (empty means ControlPlane) or Resource. Only import identity reads an Identity
	// from a file, and it accepts ControlPlane only; a Resource identity is recorded by import resourceslice.
	Type string `json:"type,omitempty"`
	// ResourceSlice names the slice of a Resource identity.
	ResourceSlice string `json:"resourceSlice,omitempty"`
	// Integrity holds, for each field above, an HMAC-SHA256 keyed from the nonce of this issuance, which
	// only the two administrators hold: the consumer refuses a field altered after the provider issued it.
	Integrity map[string][]byte `json:"integrity,omitempty"`
}

// IdentityType is s's type: empty means ControlPlane. An identity.yaml is issued without one, while the
// API server fills in the CRD's default when it stores or reads an Identity, so two specs compare equal
// only by this.
func IdentityType(s *IdentitySpec) string {
	if s.Type == "" {
		return IdentityControlPlane
	}
	return s.Type
}

// FederatedIdentity is how a consumer acts on a provider that trusts its ServiceAccount tokens.
type FederatedIdentity struct {
	// ServiceAccount is the consumer's ServiceAccount whose tokens are minted.
	ServiceAccount ServiceAccountRef `json:"serviceAccount"`
	// Audience is the audience the tokens are minted for.
	Audience string `json:"audience"`
	// User is the user the provider's authenticator entry maps them to.
	User string `json:"user"`
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

// ResourceSlice is a consumer's request for an amount of resources on a provider, with an identity of its
// own. The consumer creates it in its tenant namespace on the provider, through the pairing's identity, and
// keeps a copy in its own federate-system; the provider's administrator accepts (or denies) it, which
// writes the grant into its status.
type ResourceSlice struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ResourceSliceSpec   `json:"spec"`
	Status            ResourceSliceStatus `json:"status,omitempty"`
}

// ResourceSliceSpec is the consumer's signed request.
type ResourceSliceSpec struct {
	// ClusterID is the consumer's cluster ID.
	ClusterID string `json:"clusterID"`
	// ProviderClusterID is the provider the request was made for.
	ProviderClusterID string `json:"providerClusterID"`
	// Slice is the slice's name, the same on both sides.
	Slice string `json:"slice"`
	// Class is the ResourceSliceClass asked for ("" means the provider's default).
	Class string `json:"class,omitempty"`
	// Resources asked for: cpu, memory, pods, ephemeral-storage.
	Resources map[string]string `json:"resources"`
	// CSR is the PEM certificate signing request for the slice's own client key.
	CSR []byte `json:"csr"`
	// Signature is the Ed25519 signature, by the consumer's pinned handshake key, over the slice message that
	// binds provider, consumer, slice name, class, resources and CSR.
	Signature []byte `json:"signature"`
}

// ResourceSliceStatus is written by the provider's accept or deny on its copy, and by import on the
// consumer's copy.
type ResourceSliceStatus struct {
	// Phase is Accepted or Denied on the provider (empty while pending); Imported on the consumer once the
	// credential is stored.
	Phase string `json:"phase,omitempty"`
	// Reason says why a slice was denied, or granted less than asked.
	Reason string `json:"reason,omitempty"`
	// Answers is the hex SHA-256 of the signature of the request this status answers: a request replaced
	// since (a new key, other resources) is pending again.
	Answers string `json:"answers,omitempty"`
	// Class is the class the grant was made under.
	Class string `json:"class,omitempty"`
	// Granted is what the slice's namespace quota allows.
	Granted map[string]string `json:"granted,omitempty"`
	// Namespace is the slice's sandbox namespace on the provider.
	Namespace string `json:"namespace,omitempty"`
	// User is the Kubernetes user of the slice's identity.
	User string `json:"user,omitempty"`
	// Certificate is the slice's issued client certificate (PEM, public).
	Certificate []byte `json:"certificate,omitempty"`
	// Credential is Certificate (empty means Certificate) or Token: then User is the slice's credential
	// ServiceAccount, and the token waits for the consumer in a Secret of its tenant namespace.
	Credential string `json:"credential,omitempty"`
	// Token is a Token credential, only in the answer accept prints for the file flow (then that file is a
	// secret); never stored in a cluster's ResourceSlice.
	Token string `json:"token,omitempty"`
	// NotAfter is when the credential expires.
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
	// Lifetime is the lifetime the slice's credential was asked with; its renewal asks for it again.
	Lifetime *metav1.Duration `json:"lifetime,omitempty"`
	// ClusterRole is the ClusterRole bound in the slice's namespace.
	ClusterRole string `json:"clusterRole,omitempty"`
	// PodSecurity is the Pod Security level of the slice's namespace.
	PodSecurity string `json:"podSecurity,omitempty"`
	// KubeconfigSecret (consumer) names the Secret in federate-system holding the slice's kubeconfig.
	KubeconfigSecret string `json:"kubeconfigSecret,omitempty"`
}

// ResourceSliceClass is a provider's policy for the slices asked of it: the most each may get, what its
// identity may do, its Pod Security level, and whether a pending slice of the class is accepted without a
// decision per slice.
type ResourceSliceClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ResourceSliceClassSpec `json:"spec"`
}

// ResourceSliceClassSpec is the class's policy.
type ResourceSliceClassSpec struct {
	// Max bounds each resource of a slice: the ones it asks for (cpu, memory, pods, ephemeral-storage; a
	// missing one is bounded only by what remains of the consumer's total) and every other quota its
	// namespace has (requests.storage, persistentvolumeclaims, secrets, configmaps, count/..., by their
	// quota names; a missing one is bounded by the slice allowance).
	Max map[string]string `json:"max,omitempty"`
	// OverMax is Clamp (grant the maximum) or Deny (refuse the whole request).
	OverMax string `json:"overMax,omitempty"`
	// ClusterRole is bound to the slice's identity in its namespace.
	ClusterRole string `json:"clusterRole,omitempty"`
	// PodSecurity is the level enforced in the slice's namespace.
	PodSecurity string `json:"podSecurity,omitempty"`
	// AutoAccept lets "accept resourceslice --pending" grant the class's slices without naming them.
	AutoAccept bool `json:"autoAccept,omitempty"`
}

// NamespaceRequest is a consumer's request, left in its tenant namespace on the provider, for one more
// namespace where its pairing identity works. Its name is the namespace asked for.
type NamespaceRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              NamespaceRequestSpec   `json:"spec,omitempty"`
	Status            NamespaceRequestStatus `json:"status,omitempty"`
}

// NamespaceRequestSpec is the request.
type NamespaceRequestSpec struct {
	// Reason is the consumer's note to the provider's administrator.
	Reason string `json:"reason,omitempty"`
}

// NamespaceRequestStatus is the provider's answer.
type NamespaceRequestStatus struct {
	// Phase is Granted or Refused (empty while pending).
	Phase string `json:"phase,omitempty"`
	// Reason says why a request was refused.
	Reason string `json:"reason,omitempty"`
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
	if t.Spec.Federated != nil {
		f := *t.Spec.Federated
		f.IssuerCA = append([]byte(nil), f.IssuerCA...)
		out.Spec.Federated = &f
	}
	return &out
}

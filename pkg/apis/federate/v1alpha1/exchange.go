package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ExchangeRequestGVR and ExchangeRequestKind name a consumer's request for an exchange credential.
var ExchangeRequestGVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: "exchangerequests"}

// ExchangeRequestKind is the kind of ExchangeRequestGVR.
const ExchangeRequestKind = "ExchangeRequest"

// ExchangeRequest is a consumer's request, left in its tenant namespace on the provider through the
// pairing's identity, for a credential that may act as one target identity, within one scope, and nothing
// else. Its name is <rule>-<32 hex of the rule, target, scope and the CSR's public key>, and its spec cannot
// change once created (the CRD refuses updates to it): what the provider's administrator saw listed under
// a name is what that name is answered with.
type ExchangeRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ExchangeRequestSpec   `json:"spec,omitempty"`
	Status            ExchangeRequestStatus `json:"status,omitempty"`
}

// ExchangeRequestSpec is the request: the consumer's rule, the target it gives, what the credential may do
// as the target, and a CSR for the credential's own key.
type ExchangeRequestSpec struct {
	Rule   string         `json:"rule"`
	Target ExchangeTarget `json:"target"`
	Scope  ExchangeScope  `json:"scope"`
	CSR    []byte         `json:"csr"`
}

// ExchangeScope is what the credential may do as its target: verbs on resources (resource[.group][/sub],
// as kubectl writes them) in namespaces; no namespaces means cluster-wide.
type ExchangeScope struct {
	Verbs      []string `json:"verbs"`
	Resources  []string `json:"resources"`
	Namespaces []string `json:"namespaces,omitempty"`
}

// ExchangeTarget is the identity the credential may impersonate on the provider.
type ExchangeTarget struct {
	User   string   `json:"user"`
	Groups []string `json:"groups,omitempty"`
	UID    string   `json:"uid,omitempty"`
}

// ExchangeRequestStatus is the provider's answer.
type ExchangeRequestStatus struct {
	// Phase is Issued, Refused or Revoked (empty while pending).
	Phase string `json:"phase,omitempty"`
	// Mode is how the credential's rights are bounded: Constrained (constrained impersonation: the scope,
	// enforced by the API server) or Unconstrained (the legacy impersonate verb: everything the target may
	// do, issued only on the administrator's explicit fallback).
	Mode string `json:"mode,omitempty"`
	// Reach lists what the grant holds beyond a namespaced share (cluster-wide write, Secrets, RBAC, ...),
	// issued only because the administrator overrode it for this request.
	Reach       []string     `json:"reach,omitempty"`
	User        string       `json:"user,omitempty"`
	Certificate []byte       `json:"certificate,omitempty"`
	NotAfter    *metav1.Time `json:"notAfter,omitempty"`
	// Lifetime is the lifetime the provider asked for the certificate: the next request of the same grant
	// (rule, target, scope) is answered with it unless the administrator names another.
	Lifetime *metav1.Duration `json:"lifetime,omitempty"`
	Reason   string           `json:"reason,omitempty"`
}

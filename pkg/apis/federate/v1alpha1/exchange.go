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
// pairing's identity, for a credential that may act as one target identity and nothing else. Its name is
// <rule>-<8 hex of the target>.
type ExchangeRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ExchangeRequestSpec   `json:"spec,omitempty"`
	Status            ExchangeRequestStatus `json:"status,omitempty"`
}

// ExchangeRequestSpec is the request: the consumer's rule, the target it gives, and a CSR for the
// credential's own key.
type ExchangeRequestSpec struct {
	Rule   string         `json:"rule"`
	Target ExchangeTarget `json:"target"`
	CSR    []byte         `json:"csr"`
}

// ExchangeTarget is the identity the credential may impersonate on the provider.
type ExchangeTarget struct {
	User   string   `json:"user"`
	Groups []string `json:"groups,omitempty"`
	UID    string   `json:"uid,omitempty"`
}

// ExchangeRequestStatus is the provider's answer.
type ExchangeRequestStatus struct {
	// Phase is Issued or Refused (empty while pending).
	Phase       string       `json:"phase,omitempty"`
	User        string       `json:"user,omitempty"`
	Certificate []byte       `json:"certificate,omitempty"`
	NotAfter    *metav1.Time `json:"notAfter,omitempty"`
	Reason      string       `json:"reason,omitempty"`
}

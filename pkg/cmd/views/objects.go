package views

import (
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/printers"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/lifecycle"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/status"
)

// Kinds of the objects -o json|yaml|name|jsonpath|go-template prints for what the commands report. None
// is stored on a cluster: each is a command's view (a listing's row, a report), printed in our API group
// (federate.dev/v1alpha1) as a Kubernetes-style object so that kubectl's printers work on it. Its fields
// are under status, named as the view names them; metadata.labels carry the pairing's labels
// (federate.dev/remote-cluster-id, federate.dev/role) where a view belongs to one pairing, and, for
// status's CredentialStatus, the labels of the pairing's record (Tenant or Identity) too, which -l selects.
const (
	// KindCredentialStatus is one credential of `status`: named <role>.<remote cluster ID>.<kind>[.<name>],
	// lowercase, since a two-way pairing has a provider's and a consumer's credential for one remote.
	KindCredentialStatus = "CredentialStatus"
	// KindExport is one export of `status` (a credential written in another tool's format, export),
	// named <namespace>.<Secret name>.
	KindExport = "Export"
	// KindAuditRecord is one audit Event of `status --history`, named <remote>.<reason>.<unix time>.
	KindAuditRecord = "AuditRecord"
	// KindClusterInfo is `info`: this cluster's ID, key fingerprint, tenants and identities, named by the
	// cluster ID.
	KindClusterInfo = "ClusterInfo"
	// KindResourceSliceInfo is a listing's resource slice (get resourceslices, accept --pending), named by
	// the slice: the summary of a ResourceSlice and of its grant, not the ResourceSlice object.
	KindResourceSliceInfo = "ResourceSliceInfo"
	// KindExtraNamespace is a consumer's extra namespace or namespace request (request namespace, grant
	// namespace), named by the namespace.
	KindExtraNamespace = "ExtraNamespace"
	// KindExchangeRequestInfo is the provider's view of an ExchangeRequest (allow exchange), named by the
	// request, with what the target may do.
	KindExchangeRequestInfo = "ExchangeRequestInfo"
	// KindExchangeResolution is what `exchange resolve` found: the deciding rule and the identity it gives,
	// named by the rule.
	KindExchangeResolution = "ExchangeResolution"
	// KindExchangeSubmission is what `request exchange` submitted: the ExchangeRequest's name, rule,
	// target, scope and phase, named by the request.
	KindExchangeSubmission = "ExchangeSubmission"
	// KindNonceTicket is `get nonce`'s line and its parts (both cluster IDs, the nonce, its expiry), named
	// by the consumer ID it was made for.
	KindNonceTicket = "NonceTicket"
	// KindVersion is `version`'s build information, named kubectl-federate.
	KindVersion = "Version"
)

// Object is a view as a Kubernetes-style object of our API group (see the kinds above).
func Object(kind, name string, labels map[string]string, status any) (*unstructured.Unstructured, error) {
	return printers.Object(v1alpha1.APIVersion, kind, name, "", labels, status)
}

// pairing is the labels of a view of one pairing.
func pairing(remote, role string) map[string]string {
	m := map[string]string{}
	if remote != "" {
		m[member.LabelRemoteClusterID] = remote
	}
	if role != "" {
		m[member.LabelRole] = role
	}
	return m
}

func list[T any](items []T, convert func(*T) (*unstructured.Unstructured, error)) (runtime.Object, error) {
	out := make([]*unstructured.Unstructured, 0, len(items))
	for i := range items {
		u, err := convert(&items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return printers.List(out), nil
}

// CredentialList is a status report as a List of CredentialStatus, then its exports, each an Export.
func CredentialList(r *status.Report) (runtime.Object, error) {
	out := make([]*unstructured.Unstructured, 0, len(r.Credentials)+len(r.Exports))
	for i := range r.Credentials {
		u, err := CredentialObject(&r.Credentials[i])
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	for i := range r.Exports {
		u, err := ExportObject(&r.Exports[i])
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return printers.List(out), nil
}

// CredentialObject is one credential of a status report as a CredentialStatus. Its labels are its
// pairing record's (the Tenant's or the Identity's, which its administrator may set), then the pairing's
// own two, which no record's label overrides.
func CredentialObject(s *status.CredentialState) (*unstructured.Unstructured, error) {
	name := s.Role + "." + s.RemoteClusterID + "." + s.Kind
	if s.Name != "" {
		name += "." + s.Name
	}
	labels := map[string]string{}
	maps.Copy(labels, s.Labels)
	maps.Copy(labels, pairing(s.RemoteClusterID, s.Role))
	return Object(KindCredentialStatus, strings.ToLower(name), labels, s)
}

// ExportObject is one export of a status report as an Export.
func ExportObject(e *handshake.ExportState) (*unstructured.Unstructured, error) {
	return Object(KindExport, e.Namespace+"."+e.Secret, pairing(e.RemoteClusterID, member.RoleConsumer), e)
}

// HistoryList is the audit trail as a List of AuditRecord.
func HistoryList(entries []handshake.HistoryEntry) (runtime.Object, error) {
	return list(entries, HistoryObject)
}

// HistoryObject is one audit Event as an AuditRecord.
func HistoryObject(e *handshake.HistoryEntry) (*unstructured.Unstructured, error) {
	return Object(KindAuditRecord, strings.ToLower(fmt.Sprintf("%s.%s.%d", e.RemoteClusterID, e.Reason, e.Time.Unix())), pairing(e.RemoteClusterID, e.Role), e)
}

// ClusterInfoObject is `info` as one ClusterInfo.
func ClusterInfoObject(info *lifecycle.ClusterInfo) (runtime.Object, error) {
	return Object(KindClusterInfo, info.ClusterID, nil, info)
}

// SliceList is resource slices as a List of ResourceSliceInfo; a slice's labels name the other side of
// the pairing as seen from where it is listed (the consumer on a provider, the provider on a consumer).
func SliceList(slices []grants.SliceInfo) (runtime.Object, error) {
	return list(slices, func(s *grants.SliceInfo) (*unstructured.Unstructured, error) {
		labels := pairing(s.ConsumerID, member.RoleProvider)
		if s.ProviderID != "" {
			labels = pairing(s.ProviderID, member.RoleConsumer)
		}
		return Object(KindResourceSliceInfo, s.Name, labels, s)
	})
}

// NamespaceList is extra namespaces as a List of ExtraNamespace.
func NamespaceList(namespaces []grants.NamespaceInfo) (runtime.Object, error) {
	return list(namespaces, ExtraNamespace)
}

// ExtraNamespace is one of a consumer's requests or extra namespaces as the object a listing holds.
func ExtraNamespace(n *grants.NamespaceInfo) (*unstructured.Unstructured, error) {
	return Object(KindExtraNamespace, n.Namespace, pairing(n.ConsumerID, ""), n)
}

// ExchangeList is the provider's exchange requests as a List of ExchangeRequestInfo.
func ExchangeList(requests []exchange.Info) (runtime.Object, error) {
	return list(requests, func(e *exchange.Info) (*unstructured.Unstructured, error) {
		return Object(KindExchangeRequestInfo, e.Name, pairing(e.ConsumerID, member.RoleProvider), e)
	})
}

package member

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Names and labels of what kubectl federate creates.
const (
	SystemNamespace       = "federate-system"
	ClusterConfigMap      = "federate-cluster"
	HandshakeKeySecret    = "federate-handshake-key"
	TenantNamespacePrefix = "federate-tenant-"
	DefaultClusterRole    = "federate-tenant"
	RoleBindingName       = "federate-tenant"
	TenantGroup           = "kubectl-federate:tenants"
	UserPrefix            = "kubectl-federate:"

	LabelManagedBy       = "app.kubernetes.io/managed-by"
	ManagedBy            = "kubectl-federate"
	LabelRemoteClusterID = "federate.dev/remote-cluster-id"
	// LabelRole says which direction of a pairing an object serves: RoleProvider for what a provider keeps
	// for its consumer (the sandbox, the Tenant, nonces, CSRs), RoleConsumer for what a consumer keeps for
	// its provider (the Identity, keys, kubeconfigs). Two-way pairings (A provides for B and B for A) share
	// a remote cluster ID, never a role.
	LabelRole    = "federate.dev/role"
	RoleProvider = "provider"
	RoleConsumer = "consumer"
	FieldManager = "kubectl-federate"

	// LabelNamespaceKind says what a provider's namespace for a consumer is: KindTenant (federate-tenant-C,
	// where the pairing's identity works), KindSlice (a ResourceSlice's own namespace) or KindExtra (a
	// namespace granted on request). Ownership checks compare it, so no kind of grant can take over
	// another's namespace.
	LabelNamespaceKind = "federate.dev/namespace-kind"
	KindTenant         = "tenant"
	KindSlice          = "slice"
	KindExtra          = "extra"
	// LabelSlice names the ResourceSlice a namespace, CSR or consumer object belongs to.
	LabelSlice = "federate.dev/resource-slice"

	// MaxSliceNameLength keeps every name derived from a slice within its limits.
	MaxSliceNameLength = 40

	// MaxClusterIDLength keeps federate-tenant-<ID> within the 63 characters of a namespace name.
	MaxClusterIDLength = 63 - len(TenantNamespacePrefix)
)

// TenantNamespace is the consumer's sandbox on the provider. Only a provider has one: a consumer keeps
// its material for a provider in SystemNamespace, which no tenant identity can read, so a two-way pairing
// never mixes one direction's credentials into the other direction's sandbox.
func TenantNamespace(consumerID string) string { return TenantNamespacePrefix + consumerID }

// IdentityName is the name of the consumer's Identity for a provider.
func IdentityName(providerID string) string { return "controlplane-" + providerID }

// KubeconfigSecretName is the consumer's Secret holding the kubeconfig for a provider.
func KubeconfigSecretName(providerID string) string { return "kubeconfig-controlplane-" + providerID }

// PendingKeySecretName holds the consumer's private key between generate tenant and import identity.
func PendingKeySecretName(providerID string) string {
	return "controlplane-" + providerID + "-pending-key"
}

// TenantLabels are carried by every object a provider creates for a consumer.
func TenantLabels(consumerID string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelRemoteClusterID: consumerID, LabelRole: RoleProvider}
}

// IdentityLabels are carried by every object a consumer creates for a provider.
func IdentityLabels(providerID string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelRemoteClusterID: providerID, LabelRole: RoleConsumer}
}

// SliceNamespace is a ResourceSlice's sandbox namespace on the provider: readable, and unique per
// (consumer, slice) through a hash, since "-" may appear in both IDs and names.
func SliceNamespace(consumerID, slice string) string {
	sum := sha256.Sum256([]byte(consumerID + "\n" + slice))
	readable := consumerID + "-" + slice
	const prefix, room = "fs-", 63 - len("fs-") - 1 - 8
	if len(readable) > room {
		readable = strings.TrimRight(readable[:room], "-")
	}
	return prefix + readable + "-" + hex.EncodeToString(sum[:4])
}

// SliceKey names a consumer's objects for the slice of a provider: provider and slice joined by a dot,
// which neither a cluster ID nor a slice name contains.
func SliceKey(providerID, slice string) string { return providerID + "." + slice }

// SliceIdentityName is the consumer's Identity of a slice in federate-system; its kubeconfig Secret and
// waiting client key are named by SliceKubeconfigSecretName and SlicePendingKeySecretName.
func SliceIdentityName(providerID, slice string) string {
	return "resource-" + SliceKey(providerID, slice)
}

// SliceKubeconfigSecretName is the Secret holding a slice's kubeconfig.
func SliceKubeconfigSecretName(providerID, slice string) string {
	return "kubeconfig-resource-" + SliceKey(providerID, slice)
}

// SliceTokenSecretName (provider, in the tenant namespace) holds a slice's Token credential until the
// consumer imports it through the pairing, which deletes it.
func SliceTokenSecretName(slice string) string { return "resourceslice-" + slice + "-token" }

// SlicePendingKeySecretName holds a slice's client key until its certificate is imported.
func SlicePendingKeySecretName(providerID, slice string) string {
	return "resource-" + SliceKey(providerID, slice) + "-pending-key"
}

// SliceLabels are carried by a consumer's objects for a slice.
func SliceLabels(providerID, slice string) map[string]string {
	l := IdentityLabels(providerID)
	l[LabelSlice] = slice
	return l
}

// ValidateSliceName checks a ResourceSlice name: a DNS label of at most MaxSliceNameLength characters.
func ValidateSliceName(what, name string) error {
	if name == "" {
		return fmt.Errorf("%s: must not be empty", what)
	}
	if len(name) > MaxSliceNameLength {
		return fmt.Errorf("%s %q: must be at most %d characters, got %d", what, Truncate(name), MaxSliceNameLength, len(name))
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("%s %q: must be a DNS label (lowercase letters, digits and '-', starting and ending with a letter or digit)", what, Truncate(name))
	}
	return nil
}

// ValidateClusterID checks a cluster ID: a lowercase DNS label short enough to prefix namespace names.
// what names the flag or field in the message.
func ValidateClusterID(what, id string) error {
	if id == "" {
		return fmt.Errorf("%s: must not be empty", what)
	}
	if len(id) > MaxClusterIDLength {
		return fmt.Errorf("%s %q: must be at most %d characters, got %d", what, Truncate(id), MaxClusterIDLength, len(id))
	}
	if errs := validation.IsDNS1123Label(id); len(errs) > 0 {
		return fmt.Errorf("%s %q: must be a DNS label (lowercase letters, digits and '-', starting and ending with a letter or digit)", what, Truncate(id))
	}
	return nil
}

// Truncate shortens a value quoted in an error, so a hostile input cannot flood the terminal.
func Truncate(s string) string {
	if len(s) > 70 {
		return s[:67] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// LabelExchange carries, on a provider's RBAC and CSR, the hash of the request they serve; on a
// consumer's Secrets, the hash of the grant (rule, target, scope) they hold a credential for.
const LabelExchange = "federate.dev/exchange"

package handshake

import (
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

// ValidateClusterID checks a cluster ID: a lowercase DNS label short enough to prefix namespace names.
// what names the flag or field in the message.
func ValidateClusterID(what, id string) error {
	if id == "" {
		return fmt.Errorf("%s: must not be empty", what)
	}
	if len(id) > MaxClusterIDLength {
		return fmt.Errorf("%s %q: must be at most %d characters, got %d", what, truncate(id), MaxClusterIDLength, len(id))
	}
	if errs := validation.IsDNS1123Label(id); len(errs) > 0 {
		return fmt.Errorf("%s %q: must be a DNS label (lowercase letters, digits and '-', starting and ending with a letter or digit)", what, truncate(id))
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 70 {
		return s[:67] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

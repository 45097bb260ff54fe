package credential

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// identity.yaml travels from the provider's administrator to the consumer's through a channel neither
// controls. Each field the consumer acts on carries an HMAC-SHA256 keyed from the nonce of the issuance:
// only the two administrators ever held that nonce (it went out of band, and the provider consumed it), so
// a field changed in transit fails its own MAC and the import names it.

// integrityKeyContext separates the MAC key from every other use of the nonce.
const integrityKeyContext = "kubectl-federate identity integrity v1"

// IntegrityKey derives the identity MAC key from a nonce.
func IntegrityKey(nonce string) []byte {
	m := hmac.New(sha256.New, []byte(nonce))
	m.Write([]byte(integrityKeyContext))
	return m.Sum(nil)
}

// integrityFields are the fields of an IdentitySpec the consumer acts on, by their JSON names.
type sealedField struct {
	name  string
	value []byte
}

func integrityFields(s *v1alpha1.IdentitySpec) []sealedField {
	fields := []sealedField{
		{"clusterID", []byte(s.ClusterID)},
		{"consumerClusterID", []byte(s.ConsumerClusterID)},
		{"namespace", []byte(s.Namespace)},
		{"apiServer", []byte(s.APIServer)},
		{"ca", s.CA},
		{"proxyURL", []byte(s.ProxyURL)},
		{"certificate", s.Certificate},
	}
	// A token identity seals its credential too; a certificate identity's MACs stay what they always were.
	if s.Credential != "" || s.Token != "" {
		fields = append(fields, sealedField{"credential", []byte(s.Credential)}, sealedField{"token", []byte(s.Token)})
	}
	// A federated identity seals whose tokens the consumer mints, for which audience, and whom the provider
	// takes them for: a changed audience or account would send the consumer's tokens where it never meant to.
	if f := s.Federated; f != nil || s.Credential == v1alpha1.CredentialFederated {
		if f == nil {
			f = &v1alpha1.FederatedIdentity{}
		}
		sa := f.ServiceAccount
		fields = append(fields, sealedField{"federated.serviceAccount", []byte(sa.Namespace + "\n" + sa.Name + "\n" + sa.UID)},
			sealedField{"federated.audience", []byte(f.Audience)}, sealedField{"federated.user", []byte(f.User)})
	}
	return fields
}

func fieldMAC(key []byte, name string, value []byte) []byte {
	m := hmac.New(sha256.New, key)
	// The name is part of the message, so a MAC cannot be moved from one field to another.
	fmt.Fprintf(m, "%s\n%s\n%d\n", integrityKeyContext, name, len(value))
	m.Write(value)
	return m.Sum(nil)
}

// SealIdentity sets the integrity MACs of every field of s.
func SealIdentity(key []byte, s *v1alpha1.IdentitySpec) {
	s.Integrity = map[string][]byte{}
	for _, f := range integrityFields(s) {
		s.Integrity[f.name] = fieldMAC(key, f.name, f.value)
	}
}

// VerifyIdentity checks every field's MAC and names the first field that fails, in a fixed order.
func VerifyIdentity(key []byte, s *v1alpha1.IdentitySpec) error {
	fields := integrityFields(s)
	known := map[string]bool{}
	for _, f := range fields {
		known[f.name] = true
		mac, ok := s.Integrity[f.name]
		if !ok {
			return fmt.Errorf("spec.integrity.%s: is missing (the identity was not issued by a provider that seals its fields, or was altered)", f.name)
		}
		if !hmac.Equal(mac, fieldMAC(key, f.name, f.value)) {
			return fmt.Errorf("spec.%s: does not match its integrity MAC: it was altered after the provider issued it, or the identity answers another request", f.name)
		}
	}
	for name := range s.Integrity {
		if !known[name] {
			return fmt.Errorf("spec.integrity.%s: is not a field of an Identity", member.Truncate(name))
		}
	}
	return nil
}

package handshake

import (
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
)

// Every sealed field is checked on its own: changing any one is refused naming exactly that field, and
// another nonce's key verifies nothing.
func TestIdentityIntegrityNamesTheAlteredField(t *testing.T) {
	key := credential.IntegrityKey(testNonce(t))
	base := v1alpha1.IdentitySpec{ClusterID: "p", ConsumerClusterID: "c", Namespace: "federate-tenant-c",
		APIServer: "https://p:6443", CA: []byte("ca"), ProxyURL: "", Certificate: []byte("cert")}
	credential.SealIdentity(key, &base)
	if err := credential.VerifyIdentity(key, &base); err != nil {
		t.Fatalf("genuine identity: %v", err)
	}
	alter := map[string]func(s *v1alpha1.IdentitySpec){
		"clusterID":         func(s *v1alpha1.IdentitySpec) { s.ClusterID = "q" },
		"consumerClusterID": func(s *v1alpha1.IdentitySpec) { s.ConsumerClusterID = "d" },
		"namespace":         func(s *v1alpha1.IdentitySpec) { s.Namespace = "kube-system" },
		"apiServer":         func(s *v1alpha1.IdentitySpec) { s.APIServer = "https://attacker:6443" },
		"ca":                func(s *v1alpha1.IdentitySpec) { s.CA = []byte("other") },
		"proxyURL":          func(s *v1alpha1.IdentitySpec) { s.ProxyURL = "http://attacker:3128" },
		"certificate":       func(s *v1alpha1.IdentitySpec) { s.Certificate = []byte("other") },
	}
	for field, f := range alter {
		s := base
		f(&s)
		if err := credential.VerifyIdentity(key, &s); err == nil || !strings.HasPrefix(err.Error(), "spec."+field+":") {
			t.Errorf("altered %s: err = %v", field, err)
		}
	}
	s := base
	s.Integrity = map[string][]byte{}
	for k, v := range base.Integrity {
		if k != "apiServer" {
			s.Integrity[k] = v
		}
	}
	if err := credential.VerifyIdentity(key, &s); err == nil || !strings.Contains(err.Error(), "spec.integrity.apiServer: is missing") {
		t.Errorf("missing MAC: err = %v", err)
	}
	// MACs swapped between fields do not verify: the field name is part of each message.
	s = base
	s.Integrity = map[string][]byte{}
	for k, v := range base.Integrity {
		s.Integrity[k] = v
	}
	s.Integrity["apiServer"], s.Integrity["proxyURL"] = base.Integrity["proxyURL"], base.Integrity["apiServer"]
	if err := credential.VerifyIdentity(key, &s); err == nil {
		t.Error("swapped MACs verified")
	}
	if err := credential.VerifyIdentity(credential.IntegrityKey(testNonce(t)), &base); err == nil {
		t.Error("another nonce's key verified the identity")
	}
}

package handshake

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// The fuzz targets run their seeds as ordinary tests; `make fuzz` explores further for a bounded time.

func seedTenant(t testing.TB) []byte {
	n := testNonce(t)
	user := credential.ExpectedUser("c1", n)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	csr := csrPEM(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: user, Organization: []string{member.TenantGroup}}})
	der, _ := member.DecodePEM("csr", csr, "CERTIFICATE REQUEST")
	doc, err := yaml.Marshal(&v1alpha1.Tenant{
		TypeMeta: metaOf(v1alpha1.TenantKind),
		Spec: v1alpha1.TenantSpec{ClusterID: "c1", ProviderClusterID: "p1", PublicKey: priv.Public().(ed25519.PublicKey),
			CSR: csr, Signature: credential.Sign(priv, credential.Message("p1", "c1", n, der, ""))},
	})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func FuzzDecodeTenant(f *testing.F) {
	f.Add(seedTenant(f))
	f.Add([]byte("apiVersion: federate.dev/v1alpha1\nkind: Tenant\nspec: {csr: '!!'}\n"))
	f.Add([]byte("{\"apiVersion\":\"federate.dev/v1alpha1\",\"kind\":\"Tenant\",\"spec\":{\"clusterID\":\"../x\"}}"))
	f.Add([]byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tn, err := DecodeTenant("f", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f: ") {
				t.Fatalf("error does not name the source: %v", err)
			}
			return
		}
		// Whatever decodes must go through validation and the CSR check without panicking.
		if ValidateTenant(tn, "c1", "p1") == nil {
			_, _ = checkCSR(tn.Spec.CSR, "x")
			_ = credential.VerifySignature(tn.Spec.PublicKey, []byte("m"), tn.Spec.Signature)
		}
	})
}

func FuzzDecodeIdentity(f *testing.F) {
	f.Add([]byte("apiVersion: federate.dev/v1alpha1\nkind: Identity\nspec:\n  clusterID: p1\n  consumerClusterID: c1\n  namespace: federate-tenant-c1\n  apiServer: https://1.2.3.4\n  certificate: AAAA\n"))
	f.Add([]byte("kind: Identity\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		id, err := DecodeIdentity("f", data)
		if err != nil {
			return
		}
		if cred, err := ValidateIdentity(id, "c1", time.Now()); err == nil && cred == nil {
			t.Fatal("valid identity without a certificate")
		}
	})
}

func FuzzCheckCSR(f *testing.F) {
	user := credential.ExpectedUser("c1", testNonce(f))
	f.Add(csrPEM(f, &x509.CertificateRequest{Subject: pkix.Name{CommonName: user, Organization: []string{member.TenantGroup}}}))
	f.Add(csrPEM(f, &x509.CertificateRequest{Subject: pkix.Name{CommonName: user, Organization: []string{"system:masters"}}}))
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		csr, err := checkCSR(data, user)
		if err != nil {
			return
		}
		// Anything accepted must be exactly the expected subject.
		if csr.Subject.CommonName != user || len(csr.Subject.Organization) != 1 || csr.Subject.Organization[0] != member.TenantGroup ||
			len(csr.DNSNames)+len(csr.IPAddresses)+len(csr.URIs)+len(csr.EmailAddresses)+len(csr.Extensions) > 0 {
			t.Fatalf("accepted a CSR with subject %v", csr.Subject)
		}
	})
}

func FuzzVerifySignature(f *testing.F) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	msg := credential.Message("p", "c", testNonce(f), []byte("csr"), "")
	f.Add([]byte(pub), credential.Sign(priv, msg))
	f.Add([]byte(pub), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, key, sig []byte) {
		if credential.VerifySignature(key, msg, sig) == nil && (len(key) != ed25519.PublicKeySize || !ed25519.Verify(key, msg, sig)) {
			t.Fatal("accepted a signature ed25519 rejects")
		}
	})
}

// checkCSR is what issuance checks of a request's CSR: parsed (with its self-signature and key type), then
// its subject exactly.
func checkCSR(csrPEM []byte, user string) (*x509.CertificateRequest, error) {
	csr, err := credential.ParseCSR(csrPEM)
	if err != nil {
		return nil, err
	}
	return csr, credential.CheckCSRSubject(csr, user)
}

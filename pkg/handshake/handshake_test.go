package handshake

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
)

func testNonce(t testing.TB) string {
	n, err := nonce.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func csrPEM(t testing.TB, tmpl *x509.CertificateRequest) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestSignatureBindsEveryField(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	n := testNonce(t)
	csr := []byte("csr-der")
	sig := credential.Sign(priv, credential.Message("prov", "cons", n, csr, ""))
	if err := credential.VerifySignature(pub, credential.Message("prov", "cons", n, csr, ""), sig); err != nil {
		t.Fatalf("genuine signature refused: %v", err)
	}
	others := map[string][]byte{
		"provider": credential.Message("other", "cons", n, csr, ""),
		"consumer": credential.Message("prov", "other", n, csr, ""),
		"nonce":    credential.Message("prov", "cons", testNonce(t), csr, ""),
		"csr":      credential.Message("prov", "cons", n, []byte("csr-der2"), ""),
		"proxy":    credential.Message("prov", "cons", n, csr, "http://attacker:3128"),
	}
	for field, msg := range others {
		if err := credential.VerifySignature(pub, msg, sig); err == nil {
			t.Errorf("a signature for one %s verified for another", field)
		}
	}
	if err := credential.VerifySignature(pub[:31], credential.Message("prov", "cons", n, csr, ""), sig); err == nil || !strings.Contains(err.Error(), "spec.publicKey") {
		t.Errorf("short key: %v", err)
	}
}

func TestExpectedUserIsPerNonce(t *testing.T) {
	a, b := credential.ExpectedUser("c1", testNonce(t)), credential.ExpectedUser("c1", testNonce(t))
	if a == b {
		t.Fatal("two nonces gave the same user")
	}
	if !strings.HasPrefix(a, member.UserPrefix+"c1:") {
		t.Fatalf("user %q", a)
	}
}

func TestCheckCSR(t *testing.T) {
	n := testNonce(t)
	user := credential.ExpectedUser("c1", n)
	good := &x509.CertificateRequest{Subject: pkix.Name{CommonName: user, Organization: []string{member.TenantGroup}}}
	if _, err := checkCSR(csrPEM(t, good), user); err != nil {
		t.Fatalf("genuine CSR refused: %v", err)
	}
	for name, tc := range map[string]struct {
		tmpl *x509.CertificateRequest
		want string
	}{
		"masters":    {&x509.CertificateRequest{Subject: pkix.Name{CommonName: user, Organization: []string{"system:masters"}}}, "subject O"},
		"two groups": {&x509.CertificateRequest{Subject: pkix.Name{CommonName: user, Organization: []string{member.TenantGroup, "x"}}}, "subject O"},
		"no group":   {&x509.CertificateRequest{Subject: pkix.Name{CommonName: user}}, "subject O"},
		"wrong CN":   {&x509.CertificateRequest{Subject: pkix.Name{CommonName: "admin", Organization: []string{member.TenantGroup}}}, "subject CN"},
		"country":    {&x509.CertificateRequest{Subject: pkix.Name{CommonName: user, Organization: []string{member.TenantGroup}, Country: []string{"IT"}}}, "only CN and O"},
		"email SAN":  {&x509.CertificateRequest{Subject: pkix.Name{CommonName: user, Organization: []string{member.TenantGroup}}, EmailAddresses: []string{"a@b"}}, "alternative names"},
	} {
		if _, err := checkCSR(csrPEM(t, tc.tmpl), user); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
	bad := csrPEM(t, good)
	bad[len(bad)/2] ^= 0x04
	if _, err := checkCSR(bad, user); err == nil {
		t.Error("corrupted CSR accepted")
	}
	if _, err := checkCSR(append(csrPEM(t, good), csrPEM(t, good)...), user); err == nil || !strings.Contains(err.Error(), "after") {
		t.Errorf("two PEM blocks: %v", err)
	}
}

func TestValidateClusterID(t *testing.T) {
	for _, ok := range []string{"a", "edge-1", strings.Repeat("a", member.MaxClusterIDLength)} {
		if err := member.ValidateClusterID("--x", ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "../x", "Upper", "-a", "a-", "a.b", strings.Repeat("a", member.MaxClusterIDLength+1), "ａ", "kube_system"} {
		err := member.ValidateClusterID("--remote-cluster-id", bad)
		if err == nil || !strings.Contains(err.Error(), "--remote-cluster-id") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

func TestDecodeTenant(t *testing.T) {
	good := "apiVersion: federate.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: c1\nspec:\n  clusterID: c1\n  providerClusterID: p\n  publicKey: AAAA\n  csr: AAAA\n  signature: AAAA\n"
	if _, err := DecodeTenant("t.yaml", []byte(good)); err != nil {
		t.Fatalf("good tenant: %v", err)
	}
	for name, tc := range map[string]struct{ doc, want string }{
		"empty":         {"", "is empty"},
		"wrong kind":    {strings.Replace(good, "kind: Tenant", "kind: Identity", 1), "is an Identity, not a Tenant"},
		"wrong version": {strings.Replace(good, "v1alpha1", "v1", 1), "apiVersion"},
		"unknown field": {good + "  extra: 1\n", "unknown field"},
		"two docs":      {good + "---\n" + good, "exactly one"},
		"bad base64":    {strings.Replace(good, "csr: AAAA", "csr: '!!!'", 1), "spec.csr"},
		"not yaml":      {"{[", "not valid YAML"},
		"huge":          {good + "#" + strings.Repeat("x", MaxDocumentSize), "more than"},
	} {
		if _, err := DecodeTenant("t.yaml", []byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
}

func metaOf(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: kind}
}

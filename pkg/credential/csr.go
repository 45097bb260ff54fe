package credential

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Client key algorithms for issued identities.
const (
	KeyECDSAP256 = "ecdsa-p256"
	KeyEd25519   = "ed25519"
	KeyRSA3072   = "rsa-3072"
)

// KeyAlgorithms lists the accepted --key-algorithm values.
var KeyAlgorithms = []string{KeyECDSAP256, KeyEd25519, KeyRSA3072}

// NewClientKey generates a fresh TLS client key.
func NewClientKey(alg string) (crypto.Signer, error) {
	switch alg {
	case "", KeyECDSAP256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case KeyEd25519:
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	case KeyRSA3072:
		return rsa.GenerateKey(rand.Reader, 3072)
	}
	return nil, fmt.Errorf("key algorithm %q: must be one of %s", alg, strings.Join(KeyAlgorithms, ", "))
}

// NewCSR returns a PEM CSR for user in TenantGroup, with nothing else in it.
func NewCSR(user string, key crypto.Signer) ([]byte, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: user, Organization: []string{member.TenantGroup}},
	}, key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// ParseCSR decodes a PEM CSR once, with a valid self-signature and an allowed key type; csr.Raw is its
// DER, which the handshake signature covers.
func ParseCSR(csrPEM []byte) (*x509.CertificateRequest, error) {
	der, err := member.DecodePEM("spec.csr", csrPEM, "CERTIFICATE REQUEST")
	if err != nil {
		return nil, err
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return nil, fmt.Errorf("spec.csr: cannot be parsed: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("spec.csr: self-signature is invalid: %w", err)
	}
	if err := checkKey(csr.PublicKey); err != nil {
		return nil, err
	}
	return csr, nil
}

// CheckCSRSubject checks what a parsed CSR asks for: the subject CN=expectedUser, O=TenantGroup and
// nothing else, no SANs, no extensions or attributes.
func CheckCSRSubject(csr *x509.CertificateRequest, expectedUser string) error {
	s := csr.Subject
	if s.CommonName != expectedUser {
		return fmt.Errorf("spec.csr: subject CN %q is not the user expected for this consumer and nonce (%q)", member.Truncate(s.CommonName), expectedUser)
	}
	if len(s.Organization) != 1 || s.Organization[0] != member.TenantGroup {
		return fmt.Errorf("spec.csr: subject O must be exactly [%q], got %q", member.TenantGroup, s.Organization)
	}
	if len(s.Names) != 2 || len(s.ExtraNames) > 0 {
		return fmt.Errorf("spec.csr: subject must hold only CN and O, it has %d attributes", len(s.Names))
	}
	if len(csr.DNSNames)+len(csr.EmailAddresses)+len(csr.IPAddresses)+len(csr.URIs) > 0 {
		return errors.New("spec.csr: must not request subject alternative names")
	}
	if len(csr.Extensions) > 0 {
		return fmt.Errorf("spec.csr: must not request extensions, it requests %d", len(csr.Extensions))
	}
	if len(csr.Attributes) > 0 { //nolint:staticcheck // Attributes is the only view of raw CSR attributes
		return errors.New("spec.csr: must not carry attributes")
	}
	return nil
}

func checkKey(pub any) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return fmt.Errorf("spec.csr: ECDSA curve %s is not allowed (P-256 or P-384)", k.Curve.Params().Name)
		}
	case ed25519.PublicKey:
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n < 2048 || n > 8192 {
			return fmt.Errorf("spec.csr: RSA key of %d bits is not allowed (2048 to 8192)", n)
		}
	default:
		return fmt.Errorf("spec.csr: key type %T is not allowed (ECDSA, Ed25519 or RSA)", pub)
	}
	return nil
}

// SamePublicKey compares two public keys by their PKIX encoding.
func SamePublicKey(a, b any) bool {
	da, err1 := x509.MarshalPKIXPublicKey(a)
	db, err2 := x509.MarshalPKIXPublicKey(b)
	return err1 == nil && err2 == nil && bytes.Equal(da, db)
}

// ValidateKeyAlgorithm checks a key algorithm name without generating a key.
func ValidateKeyAlgorithm(alg string) error {
	for _, a := range KeyAlgorithms {
		if alg == a || alg == "" {
			return nil
		}
	}
	return fmt.Errorf("%q: must be one of %s", alg, strings.Join(KeyAlgorithms, ", "))
}

// ClientKey is a client key with its PKIX public key DER, which names a slice's user.
type ClientKey struct {
	crypto.Signer
	Spki []byte
}

// ClientKeyFrom wraps a signer that already exists (a slice's key, kept across renewals) as a ClientKey.
func ClientKeyFrom(s crypto.Signer) (*ClientKey, error) {
	der, err := x509.MarshalPKIXPublicKey(s.Public())
	if err != nil {
		return nil, err
	}
	return &ClientKey{Signer: s, Spki: der}, nil
}

// ClientAuth tells whether a certificate is valid for client authentication.
func ClientAuth(cert *x509.Certificate) bool {
	for _, u := range cert.ExtKeyUsage {
		if u == x509.ExtKeyUsageClientAuth {
			return true
		}
	}
	return false
}

// ParseCertificate decodes one PEM certificate; errors name field.
func ParseCertificate(field string, data []byte) (*x509.Certificate, error) {
	der, err := member.DecodePEM(field, data, "CERTIFICATE")
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot be parsed: %w", field, err)
	}
	return cert, nil
}

package credential

import (
	"context"
	"crypto/x509"
	"errors"
	"time"

	certv1 "k8s.io/api/certificates/v1"

	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Issuance is one credential a provider issues, the same way for a pairing, a resource slice and an
// exchange: a certificate through the CSR API, else a ServiceAccount token, checked once issued. Binding
// the issued user and recording the credential belong to the caller, whose records differ.
type Issuance struct {
	// CSR is the CertificateSigningRequest this run created, and Request the request it was made from:
	// the certificate must be for exactly its key and user. CSR nil asks for a token.
	CSR     *certv1.CertificateSigningRequest
	Request *x509.CertificateRequest
	// Mode is CredentialCertificate, CredentialToken or CredentialAuto: with auto, a signer that issues
	// nothing in time ends the certificate's step as a warning, and the caller asks for a token.
	Mode          string
	Expiration    time.Duration // asked; the signer or the API server may cut it, which is reported
	SignerTimeout time.Duration // 0: DefaultSignerTimeout
	// Namespace and Labels are where a token's ServiceAccount is made, and its labels.
	Namespace string
	Labels    map[string]string
	// Begin and Done are the step's progress lines; Noun names the certificate in a warning ("client
	// certificate").
	Begin, Done, Noun string
}

// Issued is a credential as issued and checked.
type Issued struct {
	Certificate []byte // PEM; nil for a token
	Token       string
	User        string // a token's: its ServiceAccount's user
	NotAfter    time.Time
}

// Issue issues the credential in one reported step. A certificate is approved, waited for and checked
// (key, user, no later than asked); a token is requested for a new credential ServiceAccount. Either way
// a lifetime shorter than asked is a warning. ErrNoCertificate (wrapped) says the signer issued nothing
// in time; in auto mode that is reported as the fallback it is, and the CSR is deleted at once, so that a
// late signer has nothing left to sign.
func Issue(ctx context.Context, c *member.Cluster, is Issuance) (Issued, error) {
	r := c.Reporter()
	var out Issued
	if is.CSR == nil {
		err := member.Step(r, is.Begin, is.Done, func() error {
			tok, err := issueToken(ctx, c, is.Namespace, is.Labels, is.Expiration)
			if err != nil {
				return err
			}
			out = Issued{Token: tok.Token, User: tok.User, NotAfter: tok.NotAfter}
			if w := ShortenedWarning("token", "The API server", time.Until(tok.NotAfter).Round(time.Minute), is.Expiration, tok.NotAfter); w != "" {
				r.Warn(w)
			}
			return nil
		})
		return out, err
	}
	err := member.Step(r, is.Begin, is.Done, func() error {
		certPEM, err := approveAndWait(ctx, c, is.CSR, is.SignerTimeout)
		if err != nil {
			if errors.Is(err, ErrNoCertificate) && is.Mode == CredentialAuto {
				return &member.FallbackError{Err: err, Msg: "The signer issued no " + is.Noun + " in time (no controller seems to sign " +
					certv1.KubeAPIServerClientSignerName + " here): falling back to a ServiceAccount token"}
			}
			return err
		}
		cert, err := checkIssued(certPEM, is.Request, c.CurrentTime().Add(is.Expiration+IssuedSlack))
		if err != nil {
			return err
		}
		// The signer backdates NotBefore by a few minutes; the lifetime is what it may have cut.
		out = Issued{Certificate: certPEM, NotAfter: cert.NotAfter}
		if w := ShortenedWarning("certificate", "The signer", cert.NotAfter.Sub(cert.NotBefore), is.Expiration, cert.NotAfter); w != "" {
			r.Warn(w)
		}
		return nil
	})
	if errors.Is(err, ErrNoCertificate) && is.Mode == CredentialAuto {
		DeleteCSR(ctx, c, is.CSR)
	}
	return out, err
}

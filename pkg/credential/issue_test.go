package credential

import (
	"context"
	"crypto/x509"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	certv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/internal/fakeapi"
	"github.com/federate-dev/kubectl-federate/pkg/kube/kubetest"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// warnings records what a step reported.
type warnings struct {
	mu   sync.Mutex
	warn []string
}

func (w *warnings) Begin(string, string) func(error) { return func(error) {} }
func (w *warnings) Warn(m string)                    { w.mu.Lock(); w.warn = append(w.warn, m); w.mu.Unlock() }
func (w *warnings) Info(string)                      {}

// issuance is a fake provider and a CSR created there for a new client key of user.
func issuance(t *testing.T, srv *fakeapi.Server, w *warnings) (*member.Cluster, *certv1.CertificateSigningRequest, *x509.CertificateRequest) {
	t.Helper()
	c := &member.Cluster{Kube: kubetest.Wrap(srv.Clientset), Dynamic: srv.DynamicClient, Report: w, Now: func() time.Time { return fakeapi.Now }}
	key, err := NewClientKey(KeyECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	csrPEM, err := NewCSR("federate:consumer:alice", key)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := ParseCSR(csrPEM)
	if err != nil {
		t.Fatal(err)
	}
	req, err := CreateCSR(t.Context(), c, "consumer", member.TenantLabels("consumer"), csrPEM, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return c, req, parsed
}

var serials int64 = 100

func serial() *big.Int { serials++; return big.NewInt(serials) }

func csrGone(t *testing.T, srv *fakeapi.Server, name string) bool {
	_, err := srv.Clientset.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

// The one issuance path checks what the signer returns: the request's key, no later than asked, and a
// lifetime the signer cut is said.
func TestIssueChecksTheCertificate(t *testing.T) {
	srv, w := fakeapi.New(t), &warnings{}
	c, req, parsed := issuance(t, srv, w)
	got, err := Issue(t.Context(), c, Issuance{CSR: req, Request: parsed, Mode: CredentialCertificate, Expiration: 24 * time.Hour, Noun: "client certificate"})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ParseCertificate("certificate", got.Certificate)
	if err != nil || !SamePublicKey(cert.PublicKey, parsed.PublicKey) || !got.NotAfter.Equal(cert.NotAfter) || got.Token != "" {
		t.Fatalf("issued %+v (%v)", got, err)
	}
	if len(w.warn) != 0 {
		t.Errorf("a certificate of the asked lifetime warned: %v", w.warn)
	}

	// A signer that cuts the lifetime to an hour: issued, and said.
	srv2, w2 := fakeapi.New(t), &warnings{}
	srv2.Signer = func(r *x509.CertificateRequest, _ int32) *x509.Certificate {
		return &x509.Certificate{SerialNumber: serial(), Subject: r.Subject, PublicKey: r.PublicKey, NotBefore: fakeapi.Now.Add(-5 * time.Minute),
			NotAfter: fakeapi.Now.Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	}
	c2, req2, parsed2 := issuance(t, srv2, w2)
	if _, err := Issue(t.Context(), c2, Issuance{CSR: req2, Request: parsed2, Mode: CredentialCertificate, Expiration: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if len(w2.warn) != 1 || !strings.Contains(w2.warn[0], "The signer shortened the certificate") {
		t.Errorf("a cut lifetime was not said: %v", w2.warn)
	}
}

// A certificate for another key than the request's is refused, whatever the mode: nothing is returned.
func TestIssueRefusesAnotherKey(t *testing.T) {
	srv, w := fakeapi.New(t), &warnings{}
	other, err := NewClientKey(KeyECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	srv.Signer = func(r *x509.CertificateRequest, seconds int32) *x509.Certificate {
		return &x509.Certificate{SerialNumber: serial(), Subject: r.Subject, PublicKey: other.Public(), NotBefore: fakeapi.Now,
			NotAfter: fakeapi.Now.Add(time.Duration(seconds) * time.Second), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	}
	c, req, parsed := issuance(t, srv, w)
	got, err := Issue(t.Context(), c, Issuance{CSR: req, Request: parsed, Mode: CredentialAuto, Expiration: 24 * time.Hour})
	if err == nil || errors.Is(err, ErrNoCertificate) || got.Certificate != nil {
		t.Fatalf("a certificate for another key: %+v, %v", got, err)
	}
}

// A signer that issues nothing: in auto mode the step ends as the fallback it is and the CSR is gone at
// once (a late signer has nothing left to sign); asked for a certificate, it is an error and the CSR
// stays for the caller, which deletes it with what else it made.
func TestIssueWithoutASigner(t *testing.T) {
	for _, mode := range []string{CredentialAuto, CredentialCertificate} {
		t.Run(mode, func(t *testing.T) {
			srv, w := fakeapi.New(t), &warnings{}
			// This signer approves and never signs.
			srv.Clientset.PrependReactor("update", "certificatesigningrequests", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "approval" {
					return false, nil, nil
				}
				obj := a.(clienttesting.UpdateAction).GetObject().(*certv1.CertificateSigningRequest).DeepCopy()
				return true, obj, srv.Clientset.Tracker().Update(certv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), obj, "")
			})
			c, req, parsed := issuance(t, srv, w)
			got, err := Issue(t.Context(), c, Issuance{CSR: req, Request: parsed, Mode: mode, Expiration: time.Hour,
				SignerTimeout: 50 * time.Millisecond, Noun: "client certificate"})
			if !errors.Is(err, ErrNoCertificate) || got.Certificate != nil {
				t.Fatalf("no signer: %+v, %v", got, err)
			}
			var fb *member.FallbackError
			if fellBack := errors.As(err, &fb); fellBack != (mode == CredentialAuto) {
				t.Errorf("mode %s: a fallback = %v", mode, fellBack)
			} else if fellBack && !strings.Contains(fb.Msg, "The signer issued no client certificate in time") {
				t.Errorf("fallback said %q", fb.Msg)
			}
			if gone := csrGone(t, srv, req.Name); gone != (mode == CredentialAuto) {
				t.Errorf("mode %s: CSR deleted = %v", mode, gone)
			}
		})
	}
}

// Without a CSR, a token: a new credential ServiceAccount, the token the API server returns for it, and
// its user; a token of a shorter life than asked is said.
func TestIssueToken(t *testing.T) {
	srv, w := fakeapi.New(t), &warnings{}
	srv.Clientset.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		return true, &authv1.TokenRequest{Status: authv1.TokenRequestStatus{Token: "t0ken", ExpirationTimestamp: metav1.NewTime(time.Now().Add(time.Hour))}}, nil
	})
	c := &member.Cluster{Kube: kubetest.Wrap(srv.Clientset), Dynamic: srv.DynamicClient, Report: w}
	got, err := Issue(t.Context(), c, Issuance{Mode: CredentialToken, Expiration: 24 * time.Hour, Namespace: "federate-tenant-consumer",
		Labels: map[string]string{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	sas, err := srv.Clientset.CoreV1().ServiceAccounts("federate-tenant-consumer").List(t.Context(), metav1.ListOptions{})
	if err != nil || len(sas.Items) != 1 {
		t.Fatalf("ServiceAccounts: %v, %v", sas, err)
	}
	sa := sas.Items[0]
	if got.Token != "t0ken" || got.User != ServiceAccountUser("federate-tenant-consumer", sa.Name) || got.Certificate != nil ||
		sa.Labels["a"] != "b" || sa.Labels[LabelCredential] != "token" || sa.GenerateName != CredentialServiceAccount+"-" {
		t.Fatalf("issued %+v, ServiceAccount %s %v", got, sa.Name, sa.Labels)
	}
	if len(w.warn) != 1 || !strings.Contains(w.warn[0], "The API server shortened the token") {
		t.Errorf("a token cut to an hour was not said: %v", w.warn)
	}
}

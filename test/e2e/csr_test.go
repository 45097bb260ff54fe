//go:build e2e

package e2e

// Finding 5 of issue 8: the CLI approved CSRs it did not create. Anyone who may create CSRs (every node,
// every bootstrap token) could pre-create the predictable CSR without expirationSeconds and have a
// one-year certificate approved where --expiration 1h was asked, or with other request bytes so that
// issuance failed after the nonce was consumed.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

const csrAttackerUser = "e2e-csr-attacker"

// csrAttacker returns a client for a user of the provider who may create (and read) CSRs and nothing
// else, as every node and bootstrap token may.
func csrAttacker(t *testing.T) kubernetes.Interface {
	t.Helper()
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	ctx := t.Context()
	rbac := admin.RbacV1()
	_ = rbac.ClusterRoleBindings().Delete(ctx, csrAttackerUser, metav1.DeleteOptions{})
	_ = rbac.ClusterRoles().Delete(ctx, csrAttackerUser, metav1.DeleteOptions{})
	if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: csrAttackerUser},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"},
			Verbs: []string{"create", "get", "list", "watch"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: csrAttackerUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: csrAttackerUser},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: csrAttackerUser}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rbac.ClusterRoleBindings().Delete(context.Background(), csrAttackerUser, metav1.DeleteOptions{})
		_ = rbac.ClusterRoles().Delete(context.Background(), csrAttackerUser, metav1.DeleteOptions{})
	})
	cfg, err := clientcmd.BuildConfigFromFlags("", operatorKubeconfig(t, provider, csrAttackerUser))
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// csrWatch records every state a CSR was seen in, from a resource version on.
type csrWatch struct {
	mu      sync.Mutex
	seen    []*certv1.CertificateSigningRequest
	deleted chan struct{}
	stop    func()
}

func watchCSR(t *testing.T, name, rv string) *csrWatch {
	t.Helper()
	w, err := kubernetes.NewForConfigOrDie(provider.Config).CertificatesV1().CertificateSigningRequests().Watch(t.Context(),
		metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	cw := &csrWatch{deleted: make(chan struct{}), stop: w.Stop}
	go func() {
		for ev := range w.ResultChan() {
			o, ok := ev.Object.(*certv1.CertificateSigningRequest)
			if !ok {
				continue
			}
			cw.mu.Lock()
			cw.seen = append(cw.seen, o)
			cw.mu.Unlock()
			if ev.Type == watch.Deleted {
				close(cw.deleted)
				return
			}
		}
	}()
	t.Cleanup(w.Stop)
	return cw
}

// approvedOrIssued says whether a CSR state was approved or carries a certificate.
func approvedOrIssued(o *certv1.CertificateSigningRequest) bool {
	for _, c := range o.Status.Conditions {
		if c.Type == certv1.CertificateApproved {
			return true
		}
	}
	return len(o.Status.Certificate) > 0
}

// checkNeverApproved fails unless the attacker's CSR was never approved nor issued: from its current
// state if it still exists (approval cannot be taken back), else from every state the watch saw until its
// deletion.
func checkNeverApproved(t *testing.T, name string, cw *csrWatch) {
	t.Helper()
	o, err := kubernetes.NewForConfigOrDie(provider.Config).CertificatesV1().CertificateSigningRequests().Get(t.Context(), name, metav1.GetOptions{})
	switch {
	case err == nil:
		if approvedOrIssued(o) {
			t.Errorf("the attacker's CSR %s was approved or issued: %+v", name, o.Status.Conditions)
		}
	case apierrors.IsNotFound(err):
		t.Logf("the attacker's CSR %s was deleted", name)
		select {
		case <-cw.deleted:
		case <-time.After(10 * time.Second):
			t.Fatalf("CSR %s is gone but its watch saw no deletion in 10s", name)
		}
	default:
		t.Fatal(err)
	}
	cw.mu.Lock()
	defer cw.mu.Unlock()
	for _, s := range cw.seen {
		if approvedOrIssued(s) {
			t.Errorf("the attacker's CSR %s was approved or issued (rv %s): %+v", name, s.ResourceVersion, s.Status.Conditions)
		}
	}
}

func TestCSRsOfOthersAreNeverApproved(t *testing.T) {
	attacker := csrAttacker(t)
	otherKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hour := int32(3600)
	cases := []struct {
		name string
		// csr returns the attacker's CSR, given the genuine request and the expected user.
		csr func(t *testing.T, request []byte, user string) *certv1.CertificateSigningRequest
	}{
		{"old name, same request, no expirationSeconds", func(_ *testing.T, request []byte, user string) *certv1.CertificateSigningRequest {
			return &certv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "federate-consumer-" + user[strings.LastIndex(user, ":")+1:]},
				Spec: certv1.CertificateSigningRequestSpec{Request: request, SignerName: certv1.KubeAPIServerClientSignerName,
					Usages: []certv1.KeyUsage{certv1.UsageClientAuth, certv1.UsageDigitalSignature}},
			}
		}},
		{"old name, other request", func(t *testing.T, _ []byte, user string) *certv1.CertificateSigningRequest {
			der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
				Subject: pkix.Name{CommonName: user, Organization: []string{member.TenantGroup}}}, otherKey)
			if err != nil {
				t.Fatal(err)
			}
			return &certv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: "federate-consumer-" + user[strings.LastIndex(user, ":")+1:]},
				Spec: certv1.CertificateSigningRequestSpec{Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
					SignerName: certv1.KubeAPIServerClientSignerName, ExpirationSeconds: &hour,
					Usages: []certv1.KeyUsage{certv1.UsageClientAuth, certv1.UsageDigitalSignature}},
			}
		}},
		// Everything as the CLI would create it (name pattern, labels, signer, usages, the asked
		// lifetime, the very request), except who created it.
		{"look-alike, labelled, exact spec", func(_ *testing.T, request []byte, _ string) *certv1.CertificateSigningRequest {
			return &certv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("federate-consumer-e2e%d", time.Now().UnixNano()%100000),
					Labels: map[string]string{member.LabelManagedBy: member.ManagedBy, member.LabelRemoteClusterID: "consumer", "federate.dev/role": "provider"}},
				Spec: certv1.CertificateSigningRequestSpec{Request: request, SignerName: certv1.KubeAPIServerClientSignerName, ExpirationSeconds: &hour,
					Usages: []certv1.KeyUsage{certv1.UsageClientAuth, certv1.UsageDigitalSignature}},
			}
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var m *manualFlow
			if i == 0 {
				m = startManualFlow(t)
			} else {
				m = nextManualFlow(t) // a renewal: the same checks, without waiting for a namespace deletion
			}
			var tenantDoc struct {
				Spec struct {
					CSR []byte `json:"csr"`
				} `json:"spec"`
			}
			data, err := os.ReadFile(m.tenant)
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(data, &tenantDoc); err != nil {
				t.Fatal(err)
			}
			user := credential.ExpectedUser("consumer", m.nonce)
			evil := tc.csr(t, tenantDoc.Spec.CSR, user)
			created, err := attacker.CertificatesV1().CertificateSigningRequests().Create(t.Context(), evil, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("the attacker creating CSR %s: %v", evil.Name, err)
			}
			t.Cleanup(func() {
				_ = kubernetes.NewForConfigOrDie(provider.Config).CertificatesV1().CertificateSigningRequests().Delete(context.Background(), evil.Name, metav1.DeleteOptions{})
			})
			if created.Spec.Username != csrAttackerUser {
				t.Fatalf("the attacker's CSR was requested by %q", created.Spec.Username)
			}
			cw := watchCSR(t, evil.Name, created.ResourceVersion)

			r := m.generateIdentity(t, m.tenant, "--expiration", "1h")
			if r.code != 0 {
				t.Errorf("generate identity --expiration 1h with the attacker's CSR %s present: %s", evil.Name, r)
			} else {
				checkIssuedCert(t, r.stdout, tenantDoc.Spec.CSR, user, time.Hour)
			}
			checkNeverApproved(t, evil.Name, cw)

			// The CLI's own CSR does not outlive the issuance.
			list, err := kubernetes.NewForConfigOrDie(provider.Config).CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range list.Items {
				if o.Name == evil.Name {
					continue
				}
				if o.Labels[member.LabelRemoteClusterID] == "consumer" || strings.HasPrefix(o.Name, "federate-consumer-") {
					t.Errorf("CSR %s (requested by %s) is left after the issuance", o.Name, o.Spec.Username)
				}
			}
		})
	}
	unauthenticate(t)
}

// checkIssuedCert checks the certificate in an identity.yaml: the genuine request's key and user, and a
// lifetime ending about want from now (never a one-year certificate where one hour was asked).
func checkIssuedCert(t *testing.T, identity string, csrPEM []byte, user string, want time.Duration) {
	t.Helper()
	var doc struct {
		Spec struct {
			Certificate []byte `json:"certificate"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(identity), &doc); err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(doc.Spec.Certificate)
	if block == nil {
		t.Fatalf("identity.yaml has no certificate PEM: %s", base64.StdEncoding.EncodeToString(doc.Spec.Certificate))
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	csrBlock, _ := pem.Decode(csrPEM)
	csr, err := x509.ParseCertificateRequest(csrBlock.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	certKey, _ := x509.MarshalPKIXPublicKey(cert.PublicKey)
	csrKey, _ := x509.MarshalPKIXPublicKey(csr.PublicKey)
	if string(certKey) != string(csrKey) {
		t.Errorf("the issued certificate is not for the consumer's key")
	}
	if cert.Subject.CommonName != user {
		t.Errorf("the issued certificate is for %q, want %q", cert.Subject.CommonName, user)
	}
	left := time.Until(cert.NotAfter)
	t.Logf("issued certificate: NotBefore %s, NotAfter %s (%s from now)", cert.NotBefore.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339), left.Round(time.Second))
	if left > want+3*time.Minute || left < want-10*time.Minute {
		t.Errorf("the certificate expires in %s, want about %s", left.Round(time.Minute), want)
	}
}

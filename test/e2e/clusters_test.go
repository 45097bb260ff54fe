//go:build e2e

package e2e

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"slices"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func clientFor(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// The two clusters are independent: what one stores, the other does not see.
func TestClustersAreIndependent(t *testing.T) {
	ctx := t.Context()
	c, p := clientFor(t, consumer.Config), clientFor(t, provider.Config)
	name := fmt.Sprintf("only-on-consumer-%d", time.Now().UnixNano())
	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.CoreV1().ConfigMaps("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	if _, err := c.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatalf("consumer lost its own ConfigMap: %v", err)
	}
	if _, err := p.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("provider sees the consumer's ConfigMap (err=%v)", err)
	}
	if consumer.Server == provider.Server {
		t.Fatal("both clusters serve on the same address")
	}
	ck, _ := c.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	pk, _ := p.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if ck.UID == "" || ck.UID == pk.UID {
		t.Fatalf("kube-system UIDs %q and %q: the clusters share storage", ck.UID, pk.UID)
	}
}

// CSRs for kubernetes.io/kube-apiserver-client, approved through the API, are issued by the controller
// manager; the certificates authenticate as CN/O and RBAC denies what was not granted.
func TestClientCSRsAreIssuedAndAuthenticate(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  func() (crypto.Signer, error)
	}{
		{"ecdsa", func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }},
		{"ed25519", func() (crypto.Signer, error) { _, k, err := ed25519.GenerateKey(rand.Reader); return k, err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			admin := clientFor(t, provider.Config)
			key, err := tc.key()
			if err != nil {
				t.Fatal(err)
			}
			user := "e2e-" + tc.name
			der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
				Subject: pkix.Name{CommonName: user, Organization: []string{"e2e-group-a", "e2e-group-b"}},
			}, key)
			if err != nil {
				t.Fatal(err)
			}
			certPEM := issue(t, admin, "e2e-"+tc.name, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), 3600)
			cert, _ := pem.Decode(certPEM)
			parsed, err := x509.ParseCertificate(cert.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Until(parsed.NotAfter); d > time.Hour+time.Minute || d < 50*time.Minute {
				t.Fatalf("NotAfter %s is not about one hour away", parsed.NotAfter)
			}
			keyDER, err := x509.MarshalPKCS8PrivateKey(key)
			if err != nil {
				t.Fatal(err)
			}
			cfg := rest.AnonymousClientConfig(provider.Config)
			cfg.CertData = certPEM
			cfg.KeyData = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
			as := clientFor(t, cfg)
			review, err := as.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := review.Status.UserInfo.Username; got != user {
				t.Errorf("user = %q, want %q", got, user)
			}
			for _, g := range []string{"e2e-group-a", "e2e-group-b", "system:authenticated"} {
				if !slices.Contains(review.Status.UserInfo.Groups, g) {
					t.Errorf("groups %v lack %q", review.Status.UserInfo.Groups, g)
				}
			}
			if _, err := as.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("listing kube-system secrets: err = %v, want Forbidden", err)
			}
			if _, err := as.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e-denied"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("creating a namespace: err = %v, want Forbidden", err)
			}
		})
	}
}

// issue creates, approves and waits (by watch) for a kube-apiserver-client CSR, then deletes it.
func issue(t *testing.T, cs kubernetes.Interface, name string, csrPEM []byte, seconds int32) []byte {
	t.Helper()
	ctx := t.Context()
	csrs := cs.CertificatesV1().CertificateSigningRequests()
	obj, err := csrs.Create(ctx, &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certv1.CertificateSigningRequestSpec{
			Request: csrPEM, SignerName: certv1.KubeAPIServerClientSignerName, ExpirationSeconds: &seconds,
			Usages: []certv1.KeyUsage{certv1.UsageClientAuth, certv1.UsageDigitalSignature},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = csrs.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	obj.Status.Conditions = append(obj.Status.Conditions, certv1.CertificateSigningRequestCondition{
		Type: certv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "E2E"})
	if obj, err = csrs.UpdateApproval(ctx, name, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w, err := csrs.Watch(wctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: obj.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if o, ok := ev.Object.(*certv1.CertificateSigningRequest); ok && ev.Type == watch.Modified && len(o.Status.Certificate) > 0 {
			return o.Status.Certificate
		}
	}
	t.Fatalf("CSR %s was not issued within 30s", name)
	return nil
}

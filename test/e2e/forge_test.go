//go:build e2e

package e2e

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// pairingStart resets the pair, initializes both clusters, creates a nonce and the consumer's genuine
// Tenant. It returns the Tenant, the nonce and the consumer's handshake key (what an attacker who
// controls the consumer cluster holds).
func pairingStart(t *testing.T) (*v1alpha1.Tenant, string, ed25519.PrivateKey) {
	t.Helper()
	unauthenticate(t)
	mustRun(t, "", "init", "--kubeconfig", consumer.Kubeconfig, "--cluster-id", "consumer")
	mustRun(t, "", "init", "--kubeconfig", provider.Kubeconfig, "--cluster-id", "provider")
	mustRun(t, "", "create", "nonce", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", "consumer")
	n := bareNonce(t, mustRun(t, "", "get", "nonce", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", "consumer").stdout)
	out := mustRun(t, "", "generate", "tenant", "--kubeconfig", consumer.Kubeconfig, "--remote-cluster-id", "provider", "--nonce", n).stdout
	tenant, err := handshake.DecodeTenant("stdout", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	sec, err := kubernetes.NewForConfigOrDie(consumer.Config).CoreV1().Secrets(member.SystemNamespace).Get(t.Context(), member.HandshakeKeySecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(sec.Data["ed25519.key"])
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return tenant, n, k.(ed25519.PrivateKey)
}

// resign replaces the Tenant's CSR and signs it properly with key: only the CSR checks stand in the way.
func resign(t *testing.T, tenant *v1alpha1.Tenant, n string, key ed25519.PrivateKey, tmpl *x509.CertificateRequest, csrKey crypto.Signer) *v1alpha1.Tenant {
	t.Helper()
	if csrKey == nil {
		var err error
		if csrKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			t.Fatal(err)
		}
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, csrKey)
	if err != nil {
		t.Fatal(err)
	}
	f := tenant.DeepCopyTenant()
	f.Spec.CSR = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	f.Spec.PublicKey = key.Public().(ed25519.PublicKey)
	f.Spec.Signature = credential.Sign(key, credential.Message(f.Spec.ProviderClusterID, f.Spec.ClusterID, n, der, f.Spec.ProxyURL))
	return f
}

func writeTenant(t *testing.T, tenant *v1alpha1.Tenant) string {
	t.Helper()
	data, err := yaml.Marshal(tenant)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tenant.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// expectRefused runs generate identity on a forged Tenant and checks the refusal: exit 1, a message
// naming the problem, and no object created or changed on either cluster.
func expectRefused(t *testing.T, tenant *v1alpha1.Tenant, remoteID, wantMsg string) {
	t.Helper()
	path := writeTenant(t, tenant)
	before := takeSnapshot(t)
	r := cli(t, "", "generate", "identity", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", remoteID, "-f", path)
	after := takeSnapshot(t)
	if r.code != 1 {
		t.Errorf("exit %d, want 1: %s", r.code, r)
	}
	if !strings.Contains(r.stderr, wantMsg) {
		t.Errorf("stderr lacks %q: %s", wantMsg, r)
	}
	if r.stdout != "" {
		t.Errorf("stdout not empty on refusal: %q", r.stdout)
	}
	if d := before.diff(after); len(d) > 0 {
		t.Errorf("a refused request changed the clusters:\n%s", strings.Join(d, "\n"))
	}
}

func TestForgedTenantsAreRefused(t *testing.T) {
	user := func(n string) string { return credential.ExpectedUser("consumer", n) }
	cases := []struct {
		name  string
		forge func(t *testing.T, tn *v1alpha1.Tenant, n string, key ed25519.PrivateKey) *v1alpha1.Tenant
		want  string
	}{
		{"flipped signature byte", func(_ *testing.T, tn *v1alpha1.Tenant, _ string, _ ed25519.PrivateKey) *v1alpha1.Tenant {
			f := tn.DeepCopyTenant()
			f.Spec.Signature[7] ^= 0x01
			return f
		}, "spec.signature: does not verify"},
		{"truncated signature", func(_ *testing.T, tn *v1alpha1.Tenant, _ string, _ ed25519.PrivateKey) *v1alpha1.Tenant {
			f := tn.DeepCopyTenant()
			f.Spec.Signature = f.Spec.Signature[:40]
			return f
		}, "spec.signature: must be 64 bytes"},
		{"signature for another CSR", func(t *testing.T, tn *v1alpha1.Tenant, n string, key ed25519.PrivateKey) *v1alpha1.Tenant {
			f := resign(t, tn, n, key, &x509.CertificateRequest{Subject: pkix.Name{CommonName: user(n), Organization: []string{member.TenantGroup}}}, nil)
			f.Spec.CSR = tn.Spec.CSR
			return f
		}, "spec.signature: does not verify"},
		{"O=system:masters", func(t *testing.T, tn *v1alpha1.Tenant, n string, key ed25519.PrivateKey) *v1alpha1.Tenant {
			return resign(t, tn, n, key, &x509.CertificateRequest{Subject: pkix.Name{CommonName: user(n), Organization: []string{"system:masters"}}}, nil)
		}, "subject O must be exactly"},
		{"extra group", func(t *testing.T, tn *v1alpha1.Tenant, n string, key ed25519.PrivateKey) *v1alpha1.Tenant {
			return resign(t, tn, n, key, &x509.CertificateRequest{Subject: pkix.Name{CommonName: user(n), Organization: []string{member.TenantGroup, "kubeadm:cluster-admins"}}}, nil)
		}, "subject O must be exactly"},
		{"organizational unit", func(t *testing.T, tn *v1alpha1.Tenant, n string, key ed25519.PrivateKey) *v1alpha1.Tenant {
			return resign(t, tn, n, key, &x509.CertificateRequest{Subject: pkix.Name{CommonName: user(n), Organization: []string{member.TenantGroup}, OrganizationalUnit: []string{"x"}}}, nil)
		}, "subject must hold only CN and O"},
		{"SANs", func(t *testing.T, tn *v1alpha1.Tenant, n string, key ed25519.PrivateKey) *v1alpha1.Tenant {
			return resign(t, tn, n, key, &x509.CertificateRequest{Subject: pkix.Name{CommonName: user(n), Organization: []string{member.TenantGroup}},
				DNSNames: []string{"kubernetes.default"}, IPAddresses: []net.IP{net.ParseIP("10.0.0.1")}}, nil)
		}, "subject alternative names"},
		{"another consumer's user", func(t *testing.T, tn *v1alpha1.Tenant, n string, key ed25519.PrivateKey) *v1alpha1.Tenant {
			return resign(t, tn, n, key, &x509.CertificateRequest{Subject: pkix.Name{CommonName: credential.ExpectedUser("victim", n), Organization: []string{member.TenantGroup}}}, nil)
		}, "subject CN"},
		{"a stable user name", func(t *testing.T, tn *v1alpha1.Tenant, n string, key ed25519.PrivateKey) *v1alpha1.Tenant {
			return resign(t, tn, n, key, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "consumer", Organization: []string{member.TenantGroup}}}, nil)
		}, "subject CN"},
		{"handshake key as client key", func(t *testing.T, tn *v1alpha1.Tenant, n string, key ed25519.PrivateKey) *v1alpha1.Tenant {
			return resign(t, tn, n, key, &x509.CertificateRequest{Subject: pkix.Name{CommonName: user(n), Organization: []string{member.TenantGroup}}}, key)
		}, "must not be the handshake key"},
		{"weak ECDSA curve", func(t *testing.T, tn *v1alpha1.Tenant, n string, key ed25519.PrivateKey) *v1alpha1.Tenant {
			weak, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			return resign(t, tn, n, key, &x509.CertificateRequest{Subject: pkix.Name{CommonName: user(n), Organization: []string{member.TenantGroup}}}, weak)
		}, "curve"},
		{"another consumer's ID", func(_ *testing.T, tn *v1alpha1.Tenant, _ string, _ ed25519.PrivateKey) *v1alpha1.Tenant {
			f := tn.DeepCopyTenant()
			f.Spec.ClusterID = "victim"
			return f
		}, "spec.clusterID \"victim\""},
		{"made for another provider", func(_ *testing.T, tn *v1alpha1.Tenant, _ string, _ ed25519.PrivateKey) *v1alpha1.Tenant {
			f := tn.DeepCopyTenant()
			f.Spec.ProviderClusterID = "elsewhere"
			return f
		}, "spec.providerClusterID"},
		{"swapped public key", func(t *testing.T, tn *v1alpha1.Tenant, n string, _ ed25519.PrivateKey) *v1alpha1.Tenant {
			_, other, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			f := tn.DeepCopyTenant()
			f.Spec.PublicKey = other.Public().(ed25519.PublicKey)
			return f
		}, "spec.signature: does not verify"},
	}
	tenant, n, key := pairingStart(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectRefused(t, tc.forge(t, tenant, n, key), "consumer", tc.want)
		})
	}
	// The genuine request still works after all that: the refusals consumed nothing.
	r := mustRun(t, "", "generate", "identity", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", "consumer", "-f", writeTenant(t, tenant))
	if !strings.Contains(r.stdout, "kind: Identity") {
		t.Fatalf("genuine request: %s", r)
	}
}

// A nonce is single-use, expires, and the consumer's handshake key is pinned once an identity is issued.
func TestNonceAndKeyPinning(t *testing.T) {
	t.Run("reused nonce", func(t *testing.T) {
		tenant, n, key := pairingStart(t)
		mustRun(t, "", "generate", "identity", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", "consumer", "-f", writeTenant(t, tenant))
		again := resign(t, tenant, n, key, &x509.CertificateRequest{Subject: pkix.Name{CommonName: credential.ExpectedUser("consumer", n), Organization: []string{member.TenantGroup}}}, nil)
		expectRefused(t, again, "consumer", "already used")
	})
	t.Run("expired nonce", func(t *testing.T) {
		tenant, _, _ := pairingStart(t)
		secrets := kubernetes.NewForConfigOrDie(provider.Config).CoreV1().Secrets(member.SystemNamespace)
		sec, err := secrets.Get(t.Context(), nonce.SecretName("consumer"), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sec.Annotations["federate.dev/expires-at"] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
		if _, err := secrets.Update(t.Context(), sec, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		expectRefused(t, tenant, "consumer", "nonce expired")
	})
	t.Run("key pinned after issuance", func(t *testing.T) {
		tenant, _, _ := pairingStart(t)
		mustRun(t, "", "generate", "identity", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", "consumer", "-f", writeTenant(t, tenant))
		mustRun(t, "", "create", "nonce", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", "consumer")
		n := bareNonce(t, mustRun(t, "", "get", "nonce", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", "consumer").stdout)
		_, attacker, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		forged := resign(t, tenant, n, attacker, &x509.CertificateRequest{Subject: pkix.Name{CommonName: credential.ExpectedUser("consumer", n), Organization: []string{member.TenantGroup}}}, nil)
		expectRefused(t, forged, "consumer", "is pinned to handshake key")
	})
}

// settle waits until the controller manager has populated a new namespace (its default ServiceAccount and
// root CA ConfigMap), so that snapshots taken afterwards see only what the command under test does.
func settle(t *testing.T, c *kubeenv.Cluster, ns string) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(c.Config)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		_, errSA := cs.CoreV1().ServiceAccounts(ns).Get(t.Context(), "default", metav1.GetOptions{})
		_, errCM := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "kube-root-ca.crt", metav1.GetOptions{})
		if errSA == nil && errCM == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("namespace %s on %s was not populated by the controller manager in 30s", ns, c.Name)
}

func decodeTenantText(text string) (*v1alpha1.Tenant, error) {
	return handshake.DecodeTenant("tenant.yaml", []byte(text))
}

//go:build e2e

package e2e

// Finding 8 of issue 8: expired nonces were never removed, and --nonce existed only as an argument
// (visible in ps and shell history).

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
)

const otherNonceConsumer = "e2e-nonce-peer"

// expireNonce sets the consumer's nonce to have expired a minute ago, as its administrator could.
func expireNonce(t *testing.T, consumerID string) {
	t.Helper()
	secrets := kubernetes.NewForConfigOrDie(provider.Config).CoreV1().Secrets(handshakeSystemNS)
	sec, err := secrets.Get(t.Context(), nonce.SecretName(consumerID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Annotations["federate.dev/expires-at"] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	if _, err := secrets.Update(t.Context(), sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func nonceSecret(t *testing.T, consumerID string) (*corev1.Secret, bool) {
	t.Helper()
	sec, err := kubernetes.NewForConfigOrDie(provider.Config).CoreV1().Secrets(handshakeSystemNS).Get(t.Context(), nonce.SecretName(consumerID), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return sec, true
}

// An expired nonce is refused as expired and removed whenever a nonce command runs, also one for another
// consumer.
func TestNonceExpiredIsRemoved(t *testing.T) {
	unauthenticate(t)
	mustRun(t, "", "init", "--kubeconfig", provider.Kubeconfig, "--cluster-id", "provider")
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = admin.CoreV1().Secrets(handshakeSystemNS).Delete(ctx, nonce.SecretName(otherNonceConsumer), metav1.DeleteOptions{})
		// A namespace for the other consumer, if create nonce made one, is removed and waited for, so that
		// no later test sees it go.
		if err := admin.CoreV1().Namespaces().Delete(ctx, "federate-tenant-"+otherNonceConsumer, metav1.DeleteOptions{}); err == nil {
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			w, err := admin.CoreV1().Namespaces().Watch(cctx, metav1.SingleObject(metav1.ObjectMeta{Name: "federate-tenant-" + otherNonceConsumer}))
			if _, gerr := admin.CoreV1().Namespaces().Get(cctx, "federate-tenant-"+otherNonceConsumer, metav1.GetOptions{}); err == nil && gerr == nil {
				for ev := range w.ResultChan() {
					if ev.Type == "DELETED" {
						break
					}
				}
			}
			if err == nil {
				w.Stop()
			}
		}
	})

	create := func(id string) {
		mustRun(t, "", "create", "nonce", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", id)
	}
	create("consumer")
	expireNonce(t, "consumer")
	r := cli(t, "", "get", "nonce", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", "consumer")
	if r.code != 1 || !strings.Contains(r.stderr, "expired") || r.stdout != "" {
		t.Errorf("get nonce of an expired nonce: want exit 1 saying expired and no nonce on stdout: %s", r)
	}
	if _, ok := nonceSecret(t, "consumer"); ok {
		t.Logf("get nonce left the expired nonce in place")
	} else {
		t.Logf("get nonce removed the expired nonce")
		create("consumer")
		expireNonce(t, "consumer")
	}

	// create nonce for another consumer removes the expired one, and only that.
	create(otherNonceConsumer)
	if sec, ok := nonceSecret(t, "consumer"); ok {
		t.Errorf("the expired nonce of consumer is still there after create nonce for %s (expires-at %s)", otherNonceConsumer, sec.Annotations["federate.dev/expires-at"])
	}
	if _, ok := nonceSecret(t, otherNonceConsumer); !ok {
		t.Errorf("create nonce for %s did not leave its nonce", otherNonceConsumer)
	}
	r = cli(t, "", "get", "nonce", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", "consumer")
	if r.code != 1 || r.stdout != "" {
		t.Errorf("get nonce after removal: want exit 1: %s", r)
	}
	// A valid nonce is left alone by a later command.
	create("consumer")
	mustRun(t, "", "get", "nonce", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", otherNonceConsumer)
	if _, ok := nonceSecret(t, "consumer"); !ok {
		t.Errorf("an unexpired nonce was removed")
	}
}

// parseTenant decodes a tenant.yaml and its CSR.
func parseTenant(t *testing.T, text string) (*v1alpha1.Tenant, *x509.CertificateRequest) {
	t.Helper()
	var tn v1alpha1.Tenant
	if err := yaml.Unmarshal([]byte(text), &tn); err != nil {
		t.Fatalf("decoding tenant: %v\n%s", err, text)
	}
	block, _ := pem.Decode(tn.Spec.CSR)
	if block == nil {
		t.Fatalf("tenant has no CSR PEM:\n%s", text)
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return &tn, csr
}

// --nonce-file FILE and --nonce-file - (stdin) give the same Tenant as --nonce; bad combinations are
// refused, naming the flag, with nothing changed.
func TestNonceFile(t *testing.T) {
	m := startManualFlow(t)
	genuine, err := os.ReadFile(m.tenant)
	if err != nil {
		t.Fatal(err)
	}
	want, wantCSR := parseTenant(t, string(genuine))
	same := func(name, text string) {
		t.Helper()
		got, gotCSR := parseTenant(t, text)
		if got.Spec.ClusterID != want.Spec.ClusterID || got.Spec.ProviderClusterID != want.Spec.ProviderClusterID ||
			string(got.Spec.PublicKey) != string(want.Spec.PublicKey) || got.Spec.ProxyURL != want.Spec.ProxyURL {
			t.Errorf("%s: Tenant differs from --nonce's:\n%s\nwant\n%s", name, text, genuine)
		}
		gk, _ := x509.MarshalPKIXPublicKey(gotCSR.PublicKey)
		wk, _ := x509.MarshalPKIXPublicKey(wantCSR.PublicKey)
		if string(gk) != string(wk) || gotCSR.Subject.String() != wantCSR.Subject.String() {
			t.Errorf("%s: CSR for %s differs from --nonce's (%s)", name, gotCSR.Subject, wantCSR.Subject)
		}
	}
	gen := func(stdin string, extra ...string) result {
		return cli(t, stdin, append([]string{"generate", "tenant", "--kubeconfig", consumer.Kubeconfig, "--remote-cluster-id", "provider"}, extra...)...)
	}

	// nonce.txt holds the nonce and a newline, as `get nonce > nonce.txt` writes it.
	r := gen("", "--nonce-file", filepath.Join(m.dir, "nonce.txt"))
	if r.code != 0 {
		t.Fatalf("generate tenant --nonce-file nonce.txt: %s", r)
	}
	same("--nonce-file nonce.txt", r.stdout)
	r = gen("  "+m.nonce+"\n\n", "--nonce-file", "-")
	if r.code != 0 {
		t.Fatalf("generate tenant --nonce-file -: %s", r)
	}
	same("--nonce-file -", r.stdout)
	fromStdin := m.write(t, "tenant-stdin.yaml", r.stdout)

	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"both flags", []string{"--nonce", m.nonce, "--nonce-file", filepath.Join(m.dir, "nonce.txt")}, "", "nonce-file"},
		{"missing file", []string{"--nonce-file", filepath.Join(m.dir, "nope.txt")}, "", "--nonce-file"},
		{"empty stdin", []string{"--nonce-file", "-"}, "", "--nonce-file"},
		{"garbage in file", []string{"--nonce-file", m.write(t, "bad.txt", "not a nonce\n")}, "", "--nonce-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := takeSnapshot(t)
			r := gen(tc.stdin, tc.args...)
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
				t.Errorf("want exit 1 naming %s and nothing on stdout: %s", tc.want, r)
			}
			if d := before.diff(takeSnapshot(t)); len(d) > 0 {
				t.Errorf("a refused generate tenant changed the clusters:\n%s", strings.Join(d, "\n"))
			}
		})
	}

	// The Tenant made from stdin is signed for the right nonce: the provider issues it.
	if r := m.generateIdentity(t, fromStdin); r.code != 0 {
		t.Errorf("generate identity of the Tenant made with --nonce-file -: %s", r)
	}
	unauthenticate(t)
}

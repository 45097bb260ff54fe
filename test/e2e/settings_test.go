//go:build e2e

package e2e

import (
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/status"
)

// connectProxy is a real HTTP CONNECT proxy on loopback, as a consumer's route to its provider.
func connectProxy(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		up, err := net.DialTimeout("tcp", r.Host, 5*time.Second)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		hj, ok := w.(http.Hijacker)
		if !ok {
			_ = up.Close()
			return
		}
		w.WriteHeader(http.StatusOK)
		down, _, err := hj.Hijack()
		if err != nil {
			_ = up.Close()
			return
		}
		go func() { _, _ = io.Copy(up, down); _ = up.Close() }()
		go func() { _, _ = io.Copy(down, up); _ = down.Close() }()
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// pairingSettings are what the clusters hold of a pairing's settings, read from the objects themselves,
// not from the tool's output.
type pairingSettings struct {
	server, proxy, role string
	lifetime            time.Duration // the certificate's NotAfter minus now
	cpuLimit, memLimit  string
}

func readSettings(t *testing.T) pairingSettings {
	t.Helper()
	data, _, _ := storedKubeconfig(t, "provider")
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	var s pairingSettings
	for _, c := range cfg.Clusters {
		s.server, s.proxy = c.Server, c.ProxyURL
	}
	for _, a := range cfg.AuthInfos {
		block, _ := pem.Decode(a.ClientCertificateData)
		if block == nil {
			t.Fatal("the stored kubeconfig holds no client certificate")
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		s.lifetime = time.Until(cert.NotAfter)
	}
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	rb, err := admin.RbacV1().RoleBindings(tenantNS).Get(t.Context(), "federate-tenant", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.role = rb.RoleRef.Name
	lr, err := admin.CoreV1().LimitRanges(tenantNS).Get(t.Context(), sandboxObject, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range lr.Spec.Limits {
		s.cpuLimit, s.memLimit = item.Default.Cpu().String(), item.Default.Memory().String()
	}
	return s
}

// nearDuration says whether a lifetime read from a certificate is the one asked: the signer backdates
// NotBefore by five minutes and counts the lifetime from there.
func nearDuration(got, want time.Duration) bool {
	return got <= want && got > want-10*time.Minute
}

// Done (issue 29): every setting a pairing was given survives renew, renew --all and a plain re-run of
// authenticate, read back from the clusters; an explicit flag on renew changes that one setting, saying so,
// and a widening is a WARNING.
func TestRenewKeepsSettings(t *testing.T) {
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "viewer-x"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}}
	if _, err := admin.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.RbacV1().ClusterRoles().Delete(t.Context(), "viewer-x", metav1.DeleteOptions{}) })
	unauthenticate(t)
	atCleanup(t, "unauthenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
	server := strings.Replace(provider.Server, "127.0.0.1", "localhost", 1) // another route to the same API server
	proxy := connectProxy(t)
	authenticate(t, "--api-server", server, "--proxy-url", proxy, "--expiration", "48h", "--max-expiration", "72h",
		"--default-limits", "cpu=300m,memory=256Mi", "--cluster-role", "viewer-x")
	want := pairingSettings{server: server, proxy: proxy, role: "viewer-x", lifetime: 48 * time.Hour, cpuLimit: "300m", memLimit: "256Mi"}
	check := func(after string) {
		t.Helper()
		got := readSettings(t)
		if got.server != want.server || got.proxy != want.proxy || got.role != want.role || !nearDuration(got.lifetime, want.lifetime) ||
			got.cpuLimit != want.cpuLimit || got.memLimit != want.memLimit {
			t.Errorf("after %s: the clusters hold %+v, want %+v", after, got, want)
		}
		// The stored kubeconfig works, through the proxy, at the recorded address.
		_, cfg := issuedConfig(t)
		if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Pods(tenantNS).List(t.Context(), metav1.ListOptions{}); err != nil {
			t.Errorf("after %s, the stored kubeconfig: %v", after, err)
		}
	}
	check("pairing")
	// A slice asked for 30h keeps that lifetime through every renewal, like the pairing.
	mustRun(t, "", "create", "resourceslice", "kept", "--cpu", "100m", "--memory", "64Mi", "--expiration", "30h",
		"--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
	sliceLifetime := func(after string) {
		t.Helper()
		block, _ := pem.Decode(sliceKubeconfig(t, "kept").CertData)
		if block == nil {
			t.Fatalf("after %s: the slice's kubeconfig holds no certificate", after)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if got := time.Until(cert.NotAfter); !nearDuration(got, 30*time.Hour) {
			t.Errorf("after %s: the slice's certificate lives %s, want the 30h it was asked with", after, got.Round(time.Minute))
		}
	}
	sliceLifetime("pairing")

	renew := func(extra ...string) result {
		t.Helper()
		return mustOn(t, consumer, append([]string{"renew", "--overlap", "0", "--remote-cluster-id", "provider", "--remote-kubeconfig", provider.Kubeconfig}, extra...)...)
	}
	r := renew()
	if strings.Contains(r.stderr, " -> ") {
		t.Errorf("a plain renew reported changes: %s", r)
	}
	check("renew")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "provider"), []byte(r0(t, provider.Kubeconfig)), 0o600); err != nil {
		t.Fatal(err)
	}
	mustOn(t, consumer, "renew", "--overlap", "0", "--all", "--expiring-within", "1000d", "--remote-kubeconfig-dir", dir)
	check("renew --all --expiring-within 1000d")
	if r := authenticate(t); strings.Contains(r.stderr, " -> ") {
		t.Errorf("a plain re-run of authenticate reported changes: %s", r)
	}
	check("a plain re-run of authenticate")
	sliceLifetime("renew, renew --all and a re-run of authenticate")

	// Explicit flags change one setting each, and say so.
	r = renew("--expiration", "60h")
	if !strings.Contains(r.stderr, "lifetime: 2d -> 60h") || !strings.Contains(r.stderr, "WARNING") {
		t.Errorf("renew --expiration 60h: %s", r)
	}
	want.lifetime = 60 * time.Hour
	check("renew --expiration 60h")
	r = renew("--expiration", "100h")
	if !strings.Contains(r.stderr, "capped at the pairing's maximum 3d") {
		t.Errorf("renew --expiration 100h over a 72h maximum: %s", r)
	}
	want.lifetime = 72 * time.Hour
	check("renew --expiration 100h (capped)")
	r = renew("--default-limits", "cpu=200m")
	// Only what changes is named (memory stays as it was).
	if !strings.Contains(r.stderr, "default limits: cpu=300m -> cpu=200m\n") || strings.Contains(r.stderr, "memory=256Mi") {
		t.Errorf("renew --default-limits cpu=200m (a narrowing): %s", r)
	}
	want.cpuLimit = "200m"
	check("renew --default-limits cpu=200m")
	r = renew("--cluster-role", "federate-tenant")
	if !strings.Contains(r.stderr, "role: viewer-x -> federate-tenant (widens what the tenant gets)") || !strings.Contains(r.stderr, "WARNING") {
		t.Errorf("renew --cluster-role federate-tenant: %s", r)
	}
	want.role = "federate-tenant"
	check("renew --cluster-role federate-tenant")
	// status -o yaml shows what is recorded (the table, to stay narrow, does not).
	recorded := map[string]string{}
	for _, s := range statusOf(t, mustOn(t, provider, "status", "--remote-cluster-id", "consumer", "-o", "json")).Credentials {
		if s.Kind == status.KindControlPlane {
			recorded = s.Settings
		}
	}
	if recorded[handshake.SettingRole] != "federate-tenant" || recorded[handshake.SettingLifetime] != "3d" ||
		recorded[handshake.SettingMaxLifetime] != "3d" || recorded[handshake.SettingAPIServer] != server {
		t.Errorf("status -o json settings: %v", recorded)
	}
}

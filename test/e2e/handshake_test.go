//go:build e2e

package e2e

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/federate-dev/kubectl-federate/pkg/member"
)

const tenantNS = "federate-tenant-consumer" // the consumer's namespace on the provider

var doneLine = regexp.MustCompile(`Done in (\S+) with (\d+) API requests to the consumer and (\d+) to the provider`)

// authenticate gives a working, least-privilege kubeconfig and says how many requests it sent.
func TestAuthenticate(t *testing.T) {
	unauthenticate(t)
	r := authenticate(t)
	if r.stdout != "" {
		t.Errorf("authenticate wrote to stdout (it carries data only): %q", r.stdout)
	}
	m := doneLine.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no summary line in stderr:\n%s", r.stderr)
	}
	// Logged, not asserted: wall time depends on the machine's load; the performance targets are make
	// bench's.
	t.Logf("authenticate: wall %s (in-process %s), %s requests to the consumer, %s to the provider", r.wall.Round(time.Millisecond), m[1], m[2], m[3])
	for _, want := range []string{"(local) Tenant request signed", "(remote) Client certificate issued", "(local) Kubeconfig stored"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks step %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "\x1b[") {
		t.Errorf("escape codes in non-terminal stderr: %q", r.stderr)
	}

	// A second run while authenticated converges, and is faster (nothing to initialize).
	again := authenticate(t)
	m2 := doneLine.FindStringSubmatch(again.stderr)
	t.Logf("authenticate again: wall %s, %s requests to the consumer, %s to the provider", again.wall.Round(time.Millisecond), m2[2], m2[3])

	_, cfg := issuedConfig(t)
	as := kubernetes.NewForConfigOrDie(cfg)
	review, err := as.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo.Username; !strings.HasPrefix(u, "kubectl-federate:consumer:") {
		t.Errorf("user %q", u)
	}
	if g := review.Status.UserInfo.Groups; !slices.Contains(g, member.TenantGroup) || slices.Contains(g, "system:masters") {
		t.Errorf("groups %v", g)
	}
	if cfg.Host != provider.Server {
		t.Errorf("kubeconfig server %q, want %q", cfg.Host, provider.Server)
	}
	// One allowed action, for real.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "from-consumer"}}
	if _, err := as.CoreV1().ConfigMaps(tenantNS).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Errorf("creating a ConfigMap in the tenant namespace: %v", err)
	}
	// One denied action, for real.
	if _, err := as.CoreV1().Secrets(member.SystemNamespace).List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing federate-system secrets (nonces): err = %v, want Forbidden", err)
	}
}

// The issued identity may do exactly what rule 7 says, checked as `kubectl auth can-i` does.
func TestPermissionMatrix(t *testing.T) {
	unauthenticate(t)
	authenticate(t)
	_, cfg := issuedConfig(t)
	as := kubernetes.NewForConfigOrDie(cfg)
	type check struct {
		verb, group, resource, sub, ns string
		want                           bool
	}
	checks := []check{
		{"create", "", "pods", "", tenantNS, true},
		{"create", "apps", "deployments", "", tenantNS, true},
		{"create", "batch", "jobs", "", tenantNS, true},
		{"create", "", "configmaps", "", tenantNS, true},
		{"create", "", "secrets", "", tenantNS, true},
		{"create", "", "services", "", tenantNS, true},
		{"get", "", "pods", "log", tenantNS, true},
		{"get", "federate.dev", "tenants", "", tenantNS, true},
		{"update", "federate.dev", "tenants", "", tenantNS, false},
		{"patch", "federate.dev", "tenants", "status", tenantNS, false},
		{"delete", "federate.dev", "tenants", "", tenantNS, false},
		{"create", "federate.dev", "tenants", "", tenantNS, false},
		{"get", "federate.dev", "identities", "", tenantNS, false},
		{"create", "rbac.authorization.k8s.io", "rolebindings", "", tenantNS, false},
		{"create", "rbac.authorization.k8s.io", "roles", "", tenantNS, false},
		{"bind", "rbac.authorization.k8s.io", "clusterroles", "", "", false},
		{"escalate", "rbac.authorization.k8s.io", "roles", "", tenantNS, false},
		{"create", "rbac.authorization.k8s.io", "clusterrolebindings", "", "", false},
		{"impersonate", "", "users", "", "", false},
		{"impersonate", "", "serviceaccounts", "", tenantNS, false},
		{"create", "certificates.k8s.io", "certificatesigningrequests", "", "", false},
		{"list", "certificates.k8s.io", "certificatesigningrequests", "", "", false},
		{"get", "", "secrets", "", member.SystemNamespace, false},
		{"get", "", "configmaps", "", member.SystemNamespace, false},
		{"list", "", "pods", "", "default", false},
		{"create", "", "pods", "", "default", false},
		{"list", "", "namespaces", "", "", false},
		{"create", "", "namespaces", "", "", false},
		{"update", "", "namespaces", "", "", false},
		{"list", "", "secrets", "", "kube-system", false},
		{"create", "", "serviceaccounts", "token", tenantNS, false},
		{"list", "", "nodes", "", "", false},
	}
	for _, c := range checks {
		review, err := as.AuthorizationV1().SelfSubjectAccessReviews().Create(t.Context(), &authzv1.SelfSubjectAccessReview{
			Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
				Verb: c.verb, Group: c.group, Resource: c.resource, Subresource: c.sub, Namespace: c.ns}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed != c.want {
			t.Errorf("can-i %s %s.%s/%s -n %q = %v, want %v", c.verb, c.resource, c.group, c.sub, c.ns, review.Status.Allowed, c.want)
		}
	}
}

// Re-running authenticate converges: the same objects, a new user, and the old certificate loses its rights.
func TestAuthenticateTwiceConverges(t *testing.T) {
	unauthenticate(t)
	authenticate(t)
	_, oldCfg := issuedConfig(t)
	consumerObjs, providerObjs := pairingObjects(t, consumer, "provider"), pairingObjects(t, provider, "consumer")
	authenticate(t)
	if got := pairingObjects(t, consumer, "provider"); !slices.Equal(got, consumerObjs) {
		t.Errorf("consumer objects changed:\nbefore %v\nafter  %v", consumerObjs, got)
	}
	if got := pairingObjects(t, provider, "consumer"); !slices.Equal(got, providerObjs) {
		t.Errorf("provider objects changed:\nbefore %v\nafter  %v", providerObjs, got)
	}
	_, newCfg := issuedConfig(t)
	if _, err := kubernetes.NewForConfigOrDie(newCfg).CoreV1().Pods(tenantNS).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Errorf("new identity: %v", err)
	}
	if _, err := kubernetes.NewForConfigOrDie(oldCfg).CoreV1().Pods(tenantNS).List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("superseded identity: err = %v, want Forbidden", err)
	}
}

// unauthenticate removes every object of the pairing on both sides, revokes the kubeconfig, and can be
// run again.
func TestUnauthenticate(t *testing.T) {
	authenticate(t)
	_, cfg := issuedConfig(t)
	r := mustRun(t, "", "unauthenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
	t.Logf("unauthenticate: wall %s; %s", r.wall.Round(time.Millisecond), doneLine.FindString(r.stderr))
	if left := pairingObjects(t, consumer, "provider"); len(left) > 0 {
		t.Errorf("left on the consumer: %v", left)
	}
	if left := pairingObjects(t, provider, "consumer"); len(left) > 0 {
		t.Errorf("left on the provider: %v", left)
	}
	_, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Pods(tenantNS).List(t.Context(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
		t.Errorf("old kubeconfig after unauthenticate: err = %v, want 401 or 403", err)
	}
	mustRun(t, "", "unauthenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
}

// The manual flow, typed as the docs show it, with files between two administrators and plain
// kubectl apply, ends in the same state as authenticate.
func TestManualFlowMatchesAuthenticate(t *testing.T) {
	unauthenticate(t)
	authenticate(t)
	wantConsumer, wantProvider := pairingObjects(t, consumer, "provider"), pairingObjects(t, provider, "consumer")
	unauthenticate(t)

	dir := t.TempDir()
	r := sh(t, dir, `
		# provider
		kubectl federate create nonce --remote-cluster-id consumer --kubeconfig "$P"
		kubectl federate get nonce --remote-cluster-id consumer --kubeconfig "$P" > nonce.txt
		# consumer
		kubectl federate generate tenant --remote-cluster-id provider --nonce-file nonce.txt --kubeconfig "$C" > tenant.yaml
		# provider
		kubectl federate generate identity --remote-cluster-id consumer -f tenant.yaml --kubeconfig "$P" > identity.yaml
		# consumer
		kubectl federate import identity -f identity.yaml --kubeconfig "$C"
		kubectl federate get kubeconfig --remote-cluster-id provider --kubeconfig "$C" > provider.kubeconfig
		kubectl --kubeconfig provider.kubeconfig auth whoami -o jsonpath='{.status.userInfo.username}'
		echo
		kubectl --kubeconfig provider.kubeconfig create configmap manual-flow
		! kubectl --kubeconfig provider.kubeconfig auth can-i create rolebindings
	`)
	if r.code != 0 {
		t.Fatalf("manual flow: %s", r)
	}
	for _, want := range []string{"kubectl-federate:consumer:", "configmap/manual-flow created", "\nno\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	nonceText, _ := os.ReadFile(filepath.Join(dir, "nonce.txt"))
	for _, f := range []string{"tenant.yaml", "identity.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "PRIVATE KEY") || strings.Contains(string(data), string(nonceText)) || len(nonceText) == 0 {
			t.Errorf("%s carries a secret (private key or nonce):\n%s", f, data)
		}
	}
	if got := pairingObjects(t, consumer, "provider"); !slices.Equal(got, wantConsumer) {
		t.Errorf("consumer state differs from authenticate's:\nmanual       %v\nauthenticate %v", got, wantConsumer)
	}
	if got := pairingObjects(t, provider, "consumer"); !slices.Equal(got, wantProvider) {
		t.Errorf("provider state differs from authenticate's:\nmanual       %v\nauthenticate %v", got, wantProvider)
	}
}

// A --timeout that expires exits 124 with a message that says so: the provider here is an address that
// accepts connections and never answers (a firewall that swallows packets, an API server wedged).
func TestTimeoutExitCode(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	silent := filepath.Join(t.TempDir(), "silent.kubeconfig")
	if err := os.WriteFile(silent, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: s, cluster: {server: \"https://"+l.Addr().String()+"\", insecure-skip-tls-verify: true}}]\n"+
		"contexts: [{name: s, context: {cluster: s, user: s}}]\ncurrent-context: s\nusers: [{name: s, user: {token: x}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := takeSnapshot(t)
	start := time.Now()
	r := cli(t, "", "authenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", silent, "--timeout", "1s")
	if r.code != 124 || !strings.Contains(r.stderr, "timed out") {
		t.Fatalf("want exit 124 and 'timed out': %s", r)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("--timeout 1s returned after %s", took)
	}
	if d := before.diff(takeSnapshot(t)); len(d) > 0 {
		t.Errorf("a timed-out authenticate changed the clusters: %v", d)
	}
}

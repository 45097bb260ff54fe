//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// The federated pairing's clusters: two consumers whose ServiceAccount token issuers are their own API
// servers (https on loopback, each with its own CA), as a provider's API server must reach them, and a
// provider whose API server reads a structured authentication configuration the test writes, as its
// administrator would, and reloads it.
type federatedEnv struct {
	a, b, p *kubeenv.Cluster
}

// startFederated starts the three clusters for one test.
func startFederated(t *testing.T) *federatedEnv {
	t.Helper()
	start := time.Now()
	dir := t.TempDir()
	var consumers, providers []*kubeenv.Cluster
	errs := make(chan error, 2)
	go func() {
		var err error
		consumers, err = kubeenv.Start(t.Context(), kubeenv.Options{Dir: dir, Names: []string{"fed-a", "fed-b"}, IssuerAtServer: true})
		errs <- err
	}()
	go func() {
		var err error
		providers, err = kubeenv.Start(t.Context(), kubeenv.Options{Dir: dir, Names: []string{"fed-p"}, AuthenticationConfig: true})
		errs <- err
	}()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range append(consumers, providers...) {
		t.Cleanup(c.Stop)
	}
	t.Logf("two issuing consumers and a provider with structured authentication started in %s", time.Since(start).Round(10*time.Millisecond))
	return &federatedEnv{a: consumers[0], b: consumers[1], p: providers[0]}
}

// kube is an admin clientset of c.
func kube(t *testing.T, c *kubeenv.Cluster) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// allowAnonymousDiscovery lets anonymous requests read c's issuer discovery document and keys, as the
// provider's API server reads them (the binding the docs ask a consumer's administrator for).
func allowAnonymousDiscovery(t *testing.T, c *kubeenv.Cluster) {
	t.Helper()
	_, err := kube(t, c).RbacV1().ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "service-account-issuer-discovery-anonymous"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:service-account-issuer-discovery"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:unauthenticated"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// serviceAccount makes ServiceAccount ns/name on c, and ns if needed, and returns its UID.
func serviceAccount(t *testing.T, c *kubeenv.Cluster, ns, name string) string {
	t.Helper()
	cs := kube(t, c)
	_, _ = cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	sa, err := cs.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(sa.UID)
}

// mint asks c for a token of ServiceAccount ns/name for the audiences, living seconds.
func mint(t *testing.T, c *kubeenv.Cluster, ns, name string, seconds int64, audiences ...string) string {
	t.Helper()
	tr, err := kube(t, c).CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// bearer is a connection to c's API server with token, and nothing else.
func bearer(c *kubeenv.Cluster, token string) *rest.Config {
	return &rest.Config{Host: c.Server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: c.Config.CAData}, QPS: -1}
}

// whoAmI is what c's API server takes token for: its user and groups, or the error (401 for a token it
// does not authenticate).
func whoAmI(t *testing.T, c *kubeenv.Cluster, token string) (authv1.UserInfo, error) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(bearer(c, token))
	if err != nil {
		t.Fatal(err)
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authv1.UserInfo{}, err
	}
	return r.Status.UserInfo, nil
}

// mayCreatePods asks c, as token, whether it may create pods in ns.
func mayCreatePods(t *testing.T, c *kubeenv.Cluster, token, ns string) (bool, error) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(bearer(c, token))
	if err != nil {
		t.Fatal(err)
	}
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(t.Context(), &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authzv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"}}}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return r.Status.Allowed, nil
}

// jwtEntries reads the jwt entries of an AuthenticationConfiguration as printed.
func jwtEntries(t *testing.T, data string) []map[string]any {
	t.Helper()
	var cfg struct {
		APIVersion string           `json:"apiVersion"`
		Kind       string           `json:"kind"`
		JWT        []map[string]any `json:"jwt"`
	}
	if err := yaml.UnmarshalStrict([]byte(data), &cfg); err != nil {
		t.Fatalf("not an AuthenticationConfiguration: %v\n%s", err, data)
	}
	if cfg.APIVersion != "apiserver.config.k8s.io/v1" || cfg.Kind != "AuthenticationConfiguration" {
		t.Fatalf("apiVersion %q kind %q, want apiserver.config.k8s.io/v1 AuthenticationConfiguration", cfg.APIVersion, cfg.Kind)
	}
	return cfg.JWT
}

// install writes the provider's authentication configuration with the jwt entries, as its administrator
// merges them, and waits until its API server has loaded it.
func install(t *testing.T, p *kubeenv.Cluster, entries ...map[string]any) {
	t.Helper()
	if entries == nil {
		entries = []map[string]any{}
	}
	data, err := yaml.Marshal(map[string]any{"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AuthenticationConfiguration", "jwt": entries})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := p.WriteAuthenticationConfig(t.Context(), data); err != nil {
		t.Fatal(err)
	}
	t.Logf("the provider's API server loaded %d jwt entries in %s", len(entries), time.Since(start).Round(10*time.Millisecond))
}

// kubeconfigOf is the admin kubeconfig path and cluster ID flags of a consumer and the provider.
func pairArgs(c, p *kubeenv.Cluster, extra ...string) []string {
	return append([]string{"--kubeconfig", c.Kubeconfig, "--remote-kubeconfig", p.Kubeconfig, "--cluster-id", c.Name, "--remote-cluster-id", p.Name}, extra...)
}

// contains fails unless s holds every part.
func contains(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Fatalf("%s does not say %q:\n%s", what, p, s)
		}
	}
}

// mustYAML renders v as YAML.
func mustYAML(t *testing.T, v any) string {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

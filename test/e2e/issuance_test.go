//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// The signer's cap on lifetimes is reported, and the NotAfter actually issued is recorded on both sides;
// --proxy-url reaches the kubeconfig.
func TestIssuanceRecordsShortenedExpiryAndProxy(t *testing.T) {
	unauthenticate(t)
	// The route through a proxy that does not exist stays with this pairing: a renewal keeps it.
	defer unauthenticate(t)
	r := authenticate(t, "--expiration", "43800h", "--proxy-url", "http://127.0.0.1:3128")
	if !strings.Contains(r.stderr, "WARNING (remote) The signer shortened the certificate") {
		t.Errorf("no warning for a 5-year request capped by the signer: %s", r.stderr)
	}
	u, err := dyn(t, provider).Resource(v1alpha1.TenantGVR).Namespace(tenantNS).Get(t.Context(), "consumer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	notAfter, _, _ := unstructured.NestedString(u.Object, "status", "notAfter")
	exp, err := time.Parse(time.RFC3339, notAfter)
	if err != nil {
		t.Fatalf("Tenant status.notAfter %q: %v", notAfter, err)
	}
	if d := time.Until(exp); d > 366*24*time.Hour || d < 360*24*time.Hour {
		t.Errorf("recorded NotAfter %s is not the signer's one-year cap", exp)
	}
	iu, err := dyn(t, consumer).Resource(v1alpha1.IdentityGVR).Namespace(member.SystemNamespace).Get(t.Context(), "controlplane-provider", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(iu.Object, "status", "notAfter"); got != notAfter {
		t.Errorf("Identity status.notAfter %q, Tenant %q", got, notAfter)
	}
	kc := mustRun(t, "", "get", "kubeconfig", "--kubeconfig", consumer.Kubeconfig, "--remote-cluster-id", "provider").stdout
	cfg, err := clientcmd.Load([]byte(kc))
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if c := cfg.Clusters[ctx.Cluster]; c.ProxyURL != "http://127.0.0.1:3128" || c.Server != provider.Server {
		t.Errorf("kubeconfig cluster %+v", c)
	}
	if ctx.Namespace != tenantNS {
		t.Errorf("kubeconfig namespace %q, want %q", ctx.Namespace, tenantNS)
	}
}

package lifecycle

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"maps"
	"math/big"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/federate-dev/kubectl-federate/internal/fakeapi"
	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/kube/kubetest"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// The fast tier runs the whole protocol on fake clusters (internal/fakeapi): client-go fake clientsets
// taught what an API server does that the protocol relies on. Everything that touches a real cluster is
// still proven end to end in test/e2e.

// fakeCluster is one side: the domain's view of it, and the fake server with its knobs.
type fakeCluster struct {
	*member.Cluster
	*fakeapi.Server
	kube *fake.Clientset
	dyn  *dynamicfake.FakeDynamicClient
}

var fakeNow = fakeapi.Now

func newFakeCluster(t *testing.T, objects ...runtime.Object) *fakeCluster {
	t.Helper()
	srv := fakeapi.New(t, objects...)
	f := &fakeCluster{Server: srv, kube: srv.Clientset, dyn: srv.DynamicClient}
	// A fake cannot be probed: it answers as a cluster with constrained impersonation, unless a test says
	// otherwise.
	f.Cluster = &member.Cluster{Kube: kubetest.Wrap(srv.Clientset), Dynamic: srv.DynamicClient, Report: member.Discard, Now: func() time.Time { return fakeNow },
		Impersonation: &member.ImpersonationSupport{Constrained: true, Reason: "a fake"}}
	return f
}

// pair is a consumer and a provider, initialized with the IDs "consumer" and "provider".
func fakePair(t *testing.T) (consumer, provider *fakeCluster) {
	t.Helper()
	consumer, provider = newFakeCluster(t), newFakeCluster(t)
	if _, err := sandbox.Init(t.Context(), consumer.Cluster, "consumer"); err != nil {
		t.Fatal(err)
	}
	if _, err := sandbox.Init(t.Context(), provider.Cluster, "provider"); err != nil {
		t.Fatal(err)
	}
	return consumer, provider
}

// issueOptions are a provider's usual choices (the CA is any real certificate).
func issueOptions(tenant *v1alpha1.Tenant) handshake.IssueOptions {
	return handshake.IssueOptions{ConsumerID: "consumer", Tenant: tenant, APIServer: "https://provider.example:6443",
		CA: testCAPEM, Expiration: time.Hour}
}

var testCAPEM = func() []byte {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "provider-ca"}, IsCA: true,
		NotBefore: fakeNow, NotAfter: fakeNow.Add(time.Hour), BasicConstraintsValid: true}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}()

// actions lists "verb resource[/sub]" of the fake's recorded actions, in order.
func (f *fakeCluster) actions() []string { return f.Actions() }

func (f *fakeCluster) count(verb, resource string) int { return f.Count(verb, resource) }

func (f *fakeCluster) tenant(t *testing.T) *v1alpha1.Tenant {
	t.Helper()
	u, err := f.dyn.Resource(v1alpha1.TenantGVR).Namespace(member.TenantNamespace("consumer")).Get(t.Context(), "consumer", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Tenant: %v", err)
	}
	var tn v1alpha1.Tenant
	if err := objects.FromUnstructured(u, &tn); err != nil {
		t.Fatal(err)
	}
	return &tn
}

// Fakes have no impersonation cache to wait out.
func init() { handshake.ImpersonationCacheTTL = 0 }

// revokedUsers lists the users a consumer's revocation record holds, sorted.
func revokedUsers(t *testing.T, c *member.Cluster, consumerID string) ([]string, error) {
	m, err := handshake.RevokedUntil(t.Context(), c, consumerID)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(m)), nil
}

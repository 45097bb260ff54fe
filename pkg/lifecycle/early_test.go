package lifecycle

import (
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// A first pairing begins its sandbox (namespace and ledger) alongside the CSR, before the certificate;
// when no certificate comes, the run removes what it made and the provider is as it was.
func TestFirstPairingBeginsTheSandboxEarlyAndRemovesItOnFailure(t *testing.T) {
	consumer, provider := fakePair(t)
	o := AuthenticateOptions{APIServer: "https://provider.example:6443", Expiration: time.Hour}

	// Issued: the namespace and the ledger were created before the CSR was approved.
	if _, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, o); err != nil {
		t.Fatal(err)
	}
	acts := provider.actions()
	ns, ledger, approval := slices.Index(acts, "create namespaces"), slices.Index(acts, "create configmaps"), slices.Index(acts, "update certificatesigningrequests/approval")
	if ns < 0 || ledger < 0 || approval < 0 || ns > approval || ledger > approval {
		t.Errorf("a first pairing's namespace (at %d) and ledger (at %d) come before the approval (at %d): %v", ns, ledger, approval, acts)
	}
	if _, err := Unauthenticate(t.Context(), consumer.Cluster, provider.Cluster, UnauthenticateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Refused at approval: nothing of the pairing stays on the provider.
	refused := apierrors.NewForbidden(schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}, "x", nil)
	provider.Guard = func(a clienttesting.Action) error {
		if a.GetVerb() == "update" && a.GetSubresource() == "approval" {
			return refused
		}
		return nil
	}
	before := provider.count("create", "namespaces")
	if _, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, o); !apierrors.IsForbidden(err) {
		t.Fatalf("authenticate with the approval refused: %v", err)
	}
	if provider.count("create", "namespaces") != before+1 {
		t.Fatalf("the run did not begin the sandbox early: %v", provider.actions())
	}
	if _, err := provider.kube.CoreV1().Namespaces().Get(t.Context(), member.TenantNamespace("consumer"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the tenant namespace after the failed run: %v", err)
	}
	if _, err := provider.kube.CoreV1().ConfigMaps(member.SystemNamespace).Get(t.Context(), sandbox.GrantsLedgerName("consumer"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ledger after the failed run: %v", err)
	}
	csrs, err := provider.kube.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
	if err != nil || len(csrs.Items) > 0 {
		t.Errorf("CSRs after the failed run: %v %v", csrs, err)
	}
}

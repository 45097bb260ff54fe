package lifecycle

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
)

// A one-shot run's CSR is made with its first reads, before the run knows it can use it. These tests hold
// the two ways it ends: adopted by the issuance (one CSR per run), or deleted; never a CSR left behind,
// and never one approved for a request the issuance did not verify.

// csrsLeft lists the CSRs on the provider.
func csrsLeft(t *testing.T, f *fakeCluster) int {
	t.Helper()
	list, err := f.kube.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// A first pairing and a renewal each make exactly one CSR (the one made ahead) and leave none.
func TestAheadRequestIsAdopted(t *testing.T) {
	consumer, provider := fakePair(t)
	made := provider.count("create", "namespaces") // federate-system, by the initialization
	for i := range 2 {
		if _, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, authOptions()); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if n := provider.count("create", "certificatesigningrequests"); n != i+1 {
			t.Errorf("after run %d, %d CSRs were created, want %d: the one made ahead was not adopted", i, n, i+1)
		}
		if n := csrsLeft(t, provider); n != 0 {
			t.Errorf("after run %d, %d CSRs left", i, n)
		}
		// The tenant namespace made ahead is the pairing's (tried again, and left alone, by the renewal).
		if n, d := provider.count("create", "namespaces")-made, provider.count("delete", "namespaces"); n != i+1 || d != 0 {
			t.Errorf("after run %d, %d namespace creates and %d deletes, want %d and none", i, n, d, i+1)
		}
	}
}

// A renewal that keeps a recorded lifetime other than the one the CSR made ahead asked for: that CSR is
// deleted, unapproved, and the issuance makes its own.
func TestAheadRequestOfAnotherLifetimeIsDeleted(t *testing.T) {
	consumer, provider := fakePair(t)
	o := authOptions()
	o.Expiration = 2 * time.Hour
	if _, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, o); err != nil {
		t.Fatal(err)
	}
	var approved []string
	provider.kube.PrependReactor("update", "certificatesigningrequests", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "approval" {
			approved = append(approved, a.(clienttesting.UpdateActionImpl).GetObject().(metav1.Object).GetName())
		}
		return false, nil, nil
	})
	o.Expiration = 0 // kept: the recorded 2h, not the default the CSR made ahead asked for
	if _, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, o); err != nil {
		t.Fatal(err)
	}
	if n := provider.count("create", "certificatesigningrequests"); n != 3 {
		t.Errorf("%d CSRs created over both runs, want 3 (the renewal's made ahead, then its own)", n)
	}
	if len(approved) != 1 {
		t.Errorf("approvals in the renewal: %v, want one", approved)
	}
	if n := csrsLeft(t, provider); n != 0 {
		t.Errorf("%d CSRs left", n)
	}
	if st := provider.tenant(t).Status; st.Lifetime == nil || st.Lifetime.Duration != 2*time.Hour {
		t.Errorf("the renewal's lifetime: %v", st.Lifetime)
	}
}

// An unused nonce of a manual handshake is there: the run uses it, so the CSR made ahead (for a nonce of
// its own) is deleted, unapproved.
func TestAheadRequestForAnotherNonceIsDeleted(t *testing.T) {
	consumer, provider := fakePair(t)
	if _, _, err := handshake.CreateNonce(t.Context(), provider.Cluster, handshake.NonceOptions{ConsumerID: "consumer", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, authOptions()); err != nil {
		t.Fatal(err)
	}
	if n := provider.count("create", "certificatesigningrequests"); n != 2 {
		t.Errorf("%d CSRs created, want 2 (the one made ahead, then the request for the manual nonce)", n)
	}
	if n := csrsLeft(t, provider); n != 0 {
		t.Errorf("%d CSRs left", n)
	}
}

// The nonce's consumption runs beside the approval in a renewal: when it fails, the run fails, the new
// user is taken back out of the binding it was bound into beside the current one, the CSR goes, and the
// Tenant still records the current user.
func TestAheadConsumptionFailureUndoesTheRenewal(t *testing.T) {
	consumer, provider := pairedFakes(t)
	ns := member.TenantNamespace("consumer")
	before, request := provider.tenant(t).Status.User, provider.tenant(t).Spec.CSR
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	provider.kube.PrependReactor("update", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetResource() == secrets && a.(clienttesting.UpdateActionImpl).GetObject().(metav1.Object).GetName() == nonce.SecretName("consumer") {
			return true, nil, apierrors.NewConflict(secrets.GroupResource(), nonce.SecretName("consumer"), errors.New("replaced meanwhile"))
		}
		return false, nil, nil
	})
	if _, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, authOptions()); !errors.Is(err, nonce.ErrUsed) {
		t.Fatalf("a renewal whose nonce could not be used up: %v, want ErrUsed", err)
	}
	if users := binding(t, provider, ns); !slices.Equal(users, []string{before}) {
		t.Errorf("the binding after the failed renewal: %v, want only %s", users, before)
	}
	if n := csrsLeft(t, provider); n != 0 {
		t.Errorf("%d CSRs left", n)
	}
	if tn := provider.tenant(t); tn.Status.User != before || tn.Status.Phase != handshake.PhaseActive || !bytes.Equal(tn.Spec.CSR, request) {
		t.Errorf("the Tenant after the failed renewal: %s %s (its request put back: %v), want Active %s", tn.Status.Phase, tn.Status.User, bytes.Equal(tn.Spec.CSR, request), before)
	}
}

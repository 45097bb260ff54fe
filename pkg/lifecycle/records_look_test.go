package lifecycle

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// An issuance's second look goes with its records only while the records cannot grant: these tests
// make a revocation land exactly where the records' conditions must catch it, and check that it is
// caught (taken back, no binding left, the Tenant Revoked), and that in the ordinary run the conditions
// are there (a status write at the version the run wrote, a binding patched, never applied anew).

func authOptions() AuthenticateOptions {
	return AuthenticateOptions{ConsumerID: "consumer", ProviderID: "provider", APIServer: "https://provider.example:6443", CA: testCAPEM, Expiration: time.Hour}
}

// countRevocation bumps the consumer's revocation count in the provider's record, as revoke's first step.
func countRevocation(t *testing.T, f *fakeCluster) {
	t.Helper()
	cms := corev1.SchemeGroupVersion.WithResource("configmaps")
	name := "federate-revoked-consumer"
	obj, err := f.kube.Tracker().Get(cms, member.SystemNamespace, name)
	if apierrors.IsNotFound(err) {
		if err := f.kube.Tracker().Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: member.SystemNamespace}, Data: map[string]string{"revocations": "1"}}); err != nil {
			t.Error(err)
		}
		return
	}
	if err != nil {
		t.Error(err)
		return
	}
	cm := obj.(*corev1.ConfigMap).DeepCopy()
	cm.Data["revocations"] += "9"
	if err := f.kube.Tracker().Update(cms, cm, member.SystemNamespace); err != nil {
		t.Error(err)
	}
}

// staleSecondLook makes the issuance's second look (the first read of the revocation record after the
// renewal's prebind) see the record as it was at the prebind: a look sent with the records may be
// answered before a revocation that lands while they are written. Only the run's own conditions can then
// catch that revocation.
func staleSecondLook(t *testing.T, f *fakeCluster) {
	t.Helper()
	ns := member.TenantNamespace("consumer")
	var mu sync.Mutex
	var prebound, answered bool
	var snapshot runtime.Object
	var snapshotErr error
	cms := corev1.SchemeGroupVersion.WithResource("configmaps")
	f.kube.PrependReactor("patch", "rolebindings", func(a clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if !prebound && a.GetNamespace() == ns && a.(clienttesting.PatchActionImpl).GetPatchType() == types.ApplyPatchType {
			prebound = true
			snapshot, snapshotErr = f.kube.Tracker().Get(cms, member.SystemNamespace, "federate-revoked-consumer")
		}
		return false, nil, nil
	})
	f.kube.PrependReactor("get", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if !prebound || answered || a.(clienttesting.GetActionImpl).GetName() != "federate-revoked-consumer" {
			return false, nil, nil
		}
		answered = true
		return true, snapshot, snapshotErr
	})
}

// In the ordinary renewal, the records write the Tenant's status at the version the run's own spec write
// left, and bind the new user alone by patching the binding it wrote (a JSON patch naming its UID).
func TestRenewalRecordsAreConditional(t *testing.T) {
	consumer, provider := pairedFakes(t)
	var statusRV string
	var rbPatches []types.PatchType
	provider.dyn.PrependReactor("patch", "tenants", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pa := a.(clienttesting.PatchActionImpl)
		if pa.GetSubresource() == "status" && pa.GetPatchType() == types.ApplyPatchType {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(pa.GetPatch()); err == nil {
				statusRV = u.GetResourceVersion()
			}
		}
		return false, nil, nil
	})
	provider.kube.PrependReactor("patch", "rolebindings", func(a clienttesting.Action) (bool, runtime.Object, error) {
		rbPatches = append(rbPatches, a.(clienttesting.PatchActionImpl).GetPatchType())
		return false, nil, nil
	})
	if _, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, authOptions()); err != nil {
		t.Fatalf("renewal: %v", err)
	}
	if statusRV == "" {
		t.Error("the renewal's record of the Tenant's status names no resourceVersion: it could land over a revocation")
	}
	if len(rbPatches) != 2 || rbPatches[0] != types.ApplyPatchType || rbPatches[1] != types.JSONPatchType {
		t.Errorf("the tenant namespace's binding was written as %v, want the prebind's apply, then a JSON patch", rbPatches)
	}
	if st := provider.tenant(t).Status; st.Phase != handshake.PhaseActive {
		t.Errorf("the Tenant after a renewal: %s", st.Phase)
	}
}

// A revocation that marks the Tenant after the run wrote its spec: the conditional status write meets a
// Conflict, the second look comes after the records, and the renewal is taken back.
func TestRecordsMeetARevocationMarkedMeanwhile(t *testing.T) {
	consumer, provider := pairedFakes(t)
	ns := member.TenantNamespace("consumer")
	staleSecondLook(t, provider)
	var conditional atomic.Bool
	provider.dyn.PrependReactor("patch", "tenants", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pa := a.(clienttesting.PatchActionImpl)
		if pa.GetSubresource() != "status" || pa.GetPatchType() != types.ApplyPatchType || !strings.Contains(string(pa.GetPatch()), `"resourceVersion"`) {
			return false, nil, nil
		}
		if conditional.Swap(true) {
			return false, nil, nil
		}
		// Revoke: counted, then the Tenant marked (a new version), before this write lands.
		countRevocation(t, provider)
		obj, err := provider.dyn.Tracker().Get(v1alpha1.TenantGVR, ns, "consumer")
		if err != nil {
			t.Error(err)
			return false, nil, nil
		}
		u := obj.(*unstructured.Unstructured).DeepCopy()
		_ = unstructured.SetNestedField(u.Object, handshake.PhaseRevoked, "status", "phase")
		u.SetResourceVersion(u.GetResourceVersion() + "-marked")
		if err := provider.dyn.Tracker().Update(v1alpha1.TenantGVR, u, ns); err != nil {
			t.Error(err)
		}
		return false, nil, nil
	})
	_, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, authOptions())
	var taken *handshake.RevokedMeanwhileError
	if !errors.As(err, &taken) {
		t.Fatalf("a renewal whose records met a revocation: %v, want taken back", err)
	}
	if !conditional.Load() {
		t.Fatal("no conditional status write was made")
	}
	if users := binding(t, provider, ns); users != nil {
		t.Errorf("RoleBinding left in the tenant namespace for %v", users)
	}
	if st := provider.tenant(t).Status; st.Phase != handshake.PhaseRevoked {
		t.Errorf("the Tenant's phase: %q, want Revoked", st.Phase)
	}
}

// A revocation that deletes the binding between the prebind and the records: the records' patch of that
// binding fails (it never makes one), the binding is made as before, the second look comes after, and the
// renewal is taken back.
func TestRecordsMeetABindingRevokedMeanwhile(t *testing.T) {
	consumer, provider := pairedFakes(t)
	ns := member.TenantNamespace("consumer")
	staleSecondLook(t, provider)
	var deleted atomic.Bool
	provider.kube.PrependReactor("patch", "rolebindings", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pa := a.(clienttesting.PatchActionImpl)
		if pa.GetNamespace() != ns || pa.GetPatchType() != types.JSONPatchType || deleted.Swap(true) {
			return false, nil, nil
		}
		countRevocation(t, provider)
		if err := provider.kube.Tracker().Delete(a.GetResource(), ns, member.RoleBindingName); err != nil {
			t.Error(err)
		}
		return false, nil, nil
	})
	_, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, authOptions())
	var taken *handshake.RevokedMeanwhileError
	if !errors.As(err, &taken) {
		t.Fatalf("a renewal whose binding was revoked meanwhile: %v, want taken back", err)
	}
	if !deleted.Load() {
		t.Fatal("the records never patched the binding")
	}
	if users := binding(t, provider, ns); users != nil {
		t.Errorf("RoleBinding left in the tenant namespace for %v", users)
	}
}

// A first pairing makes the consumer's Identity while the provider binds, so that its status goes with
// the kubeconfig; when the binding fails, that Identity is removed again and nothing of the pairing is
// left on the consumer.
func TestFirstPairingIdentityMadeAheadAndRemovedOnFailure(t *testing.T) {
	consumer, provider := fakePair(t)
	if _, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, authOptions()); err != nil {
		t.Fatal(err)
	}
	acts := consumer.DynamicActions()
	created, status := -1, -1
	for i, a := range acts {
		switch {
		case a == "create identities" && created < 0:
			created = i
		case a == "patch identities/status" && status < 0:
			status = i
		}
	}
	if created < 0 || status < 0 || created > status {
		t.Errorf("the consumer's Identity was not created ahead of its status: %v", acts)
	}

	consumer, provider = fakePair(t)
	provider.kube.PrependReactor("patch", "rolebindings", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("the binding fails"))
	})
	if _, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, authOptions()); err == nil || !strings.Contains(err.Error(), "the binding fails") {
		t.Fatalf("a first pairing whose binding fails: %v", err)
	}
	if !slices.Contains(consumer.DynamicActions(), "create identities") {
		t.Fatalf("the Identity was not made ahead: %v", consumer.DynamicActions())
	}
	list, err := consumer.dyn.Resource(v1alpha1.IdentityGVR).Namespace(member.SystemNamespace).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("Identities left on the consumer after the failed pairing: %d (%v)", len(list.Items), err)
	}
}

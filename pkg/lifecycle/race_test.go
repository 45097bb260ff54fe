package lifecycle

import (
	"errors"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// revokeWhenBound makes a revoke land the moment a grant binds in ns: when kubectl federate's RoleBinding
// there is applied, the revocation is counted in the record and (markTenant) the Tenant is marked Revoked,
// straight in the fakes' trackers, as a concurrent revoke would.
func revokeWhenBound(t *testing.T, f *fakeCluster, ns string, markTenant bool) {
	t.Helper()
	var once sync.Once
	f.kube.PrependReactor("patch", "rolebindings", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() != ns {
			return false, nil, nil
		}
		once.Do(func() {
			cms := corev1.SchemeGroupVersion.WithResource("configmaps")
			record := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "federate-revoked-consumer", Namespace: member.SystemNamespace}, Data: map[string]string{"revocations": "1"}}
			if obj, err := f.kube.Tracker().Get(cms, member.SystemNamespace, record.Name); err == nil {
				record = obj.(*corev1.ConfigMap).DeepCopy()
				record.Data["revocations"] = "7"
				err = f.kube.Tracker().Update(cms, record, member.SystemNamespace)
				if err != nil {
					t.Error(err)
				}
			} else if err := f.kube.Tracker().Add(record); err != nil {
				t.Error(err)
			}
			if !markTenant {
				return
			}
			obj, err := f.dyn.Tracker().Get(v1alpha1.TenantGVR, member.TenantNamespace("consumer"), "consumer")
			if err != nil {
				t.Error(err)
				return
			}
			u := obj.(*unstructured.Unstructured).DeepCopy()
			if err := unstructured.SetNestedField(u.Object, handshake.PhaseRevoked, "status", "phase"); err != nil {
				t.Error(err)
			}
			if err := f.dyn.Tracker().Update(v1alpha1.TenantGVR, u, member.TenantNamespace("consumer")); err != nil {
				t.Error(err)
			}
		})
		return false, nil, nil
	})
}

// binding reads kubectl federate's RoleBinding of ns on the provider (nil: none).
func binding(t *testing.T, f *fakeCluster, ns string) []string {
	t.Helper()
	rb, err := f.kube.RbacV1().RoleBindings(ns).Get(t.Context(), member.RoleBindingName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, s := range rb.Subjects {
		users = append(users, s.Name)
	}
	return users
}

// A grant of an extra namespace whose consumer is revoked while it binds takes its binding back: it fails
// as revoked meanwhile, no binding is left, the user is recorded revoked and what runs there is stopped.
func TestGrantNamespaceTakenBackWhenRevokedMeanwhile(t *testing.T) {
	_, provider := pairedFakes(t)
	user := provider.tenant(t).Status.User
	revokeWhenBound(t, provider, "ci", true)
	err := grants.GrantNamespace(t.Context(), provider.Cluster, grants.GrantNamespaceOptions{ConsumerID: "consumer", Name: "ci"})
	var taken *handshake.RevokedMeanwhileError
	if !errors.As(err, &taken) || !errors.Is(err, member.ErrRevoked) {
		t.Fatalf("GrantNamespace while revoked: %v, want taken back", err)
	}
	if users := binding(t, provider, "ci"); users != nil {
		t.Errorf("RoleBinding left in ci for %v", users)
	}
	revoked, err := revokedUsers(t, provider.Cluster, "consumer")
	if err != nil || !slices.Contains(revoked, user) {
		t.Errorf("revoked users %v (%v), want %s", revoked, err, user)
	}
	if !slices.Contains(provider.actions(), "delete-collection pods") {
		t.Errorf("nothing stopped in ci: %v", provider.actions())
	}
}

// Only the count moves (the Tenant is not marked yet): the grant still sees the revocation.
func TestAcceptSliceTakenBackWhenRevokedMeanwhile(t *testing.T) {
	consumer, provider := pairedFakes(t)
	via, _ := handshake.ViaPairing(t.Context(), consumer.Cluster, "provider")
	if err := grants.SubmitSlice(t.Context(), consumer.Cluster, via, requestSlice(t, consumer, "s", "", map[string]string{"cpu": "1", "memory": "1Gi"})); err != nil {
		t.Fatal(err)
	}
	ns := member.SliceNamespace("consumer", "s")
	revokeWhenBound(t, provider, ns, false)
	_, err := grants.AcceptSlice(t.Context(), provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "s"})
	if !errors.Is(err, member.ErrRevoked) {
		t.Fatalf("AcceptSlice while revoked: %v, want taken back", err)
	}
	if users := binding(t, provider, ns); users != nil {
		t.Errorf("RoleBinding left in %s for %v", ns, users)
	}
	s, err := grants.ProviderSlices(t.Context(), provider.Cluster, "consumer")
	if err != nil || len(s) != 1 || s[0].Phase == grants.SliceAccepted && s[0].User != "" {
		t.Errorf("the slice taken back is recorded as granted: %+v (%v)", s, err)
	}
}

// A renewal that binds its new user while the consumer is revoked takes it back, and the Tenant says
// Revoked again (its own record had said Active).
func TestRenewalTakenBackWhenRevokedMeanwhile(t *testing.T) {
	consumer, provider := pairedFakes(t)
	ns := member.TenantNamespace("consumer")
	revokeWhenBound(t, provider, ns, false)
	o := AuthenticateOptions{ConsumerID: "consumer", ProviderID: "provider", APIServer: "https://provider.example:6443", CA: testCAPEM}
	if _, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, o); !errors.Is(err, member.ErrRevoked) {
		t.Fatalf("a renewal while revoked: %v, want taken back", err)
	}
	if users := binding(t, provider, ns); users != nil {
		t.Errorf("RoleBinding left in the tenant namespace for %v", users)
	}
	if st := provider.tenant(t).Status; st.Phase != handshake.PhaseRevoked {
		t.Errorf("the Tenant's phase after a renewal taken back: %q", st.Phase)
	}
}

// A binding found after the revocation (one made by hand, or by a grant that raced it) is removed by a
// second revoke, which then says Done; a third finds nothing and writes nothing.
func TestRevokeAgainSweeps(t *testing.T) {
	_, provider := pairedFakes(t)
	ns := member.TenantNamespace("consumer")
	if out, err := Revoke(t.Context(), provider.Cluster, "consumer"); err != nil || out != handshake.Done {
		t.Fatalf("Revoke: %v %v", out, err)
	}
	if err := sandbox.BindRole(t.Context(), provider.Cluster, ns, "kubectl-federate:consumer:late", member.DefaultClusterRole, "consumer"); err != nil {
		t.Fatal(err)
	}
	if out, err := Revoke(t.Context(), provider.Cluster, "consumer"); err != nil || out != handshake.Done {
		t.Fatalf("a second Revoke with a binding left: %v %v, want Done", out, err)
	}
	if users := binding(t, provider, ns); users != nil {
		t.Errorf("RoleBinding left after the second revoke: %v", users)
	}
	revoked, _ := revokedUsers(t, provider.Cluster, "consumer")
	if !slices.Contains(revoked, "kubectl-federate:consumer:late") {
		t.Errorf("the late binding's user is not recorded revoked: %v", revoked)
	}
	before := len(provider.kube.Actions())
	if out, err := Revoke(t.Context(), provider.Cluster, "consumer"); err != nil || out != handshake.Already {
		t.Fatalf("a third Revoke: %v %v, want Already", out, err)
	}
	for _, a := range provider.kube.Actions()[before:] {
		if v := a.GetVerb(); v != "get" && v != "list" && (v != "create" || a.GetResource().Resource != "subjectaccessreviews") {
			t.Errorf("a revoke with nothing left wrote: %s %s", v, a.GetResource().Resource)
		}
	}
}

// A namespace granted while the consumer is cordoned starts cordoned; one granted while it is uncordoned
// at the same moment follows the Tenant.
func TestGrantFollowsTheCordon(t *testing.T) {
	_, provider := pairedFakes(t)
	if _, err := Cordon(t.Context(), provider.Cluster, "consumer"); err != nil {
		t.Fatal(err)
	}
	if err := grants.GrantNamespace(t.Context(), provider.Cluster, grants.GrantNamespaceOptions{ConsumerID: "consumer", Name: "ci"}); err != nil {
		t.Fatal(err)
	}
	ns, err := provider.kube.CoreV1().Namespaces().Get(t.Context(), "ci", metav1.GetOptions{})
	if err != nil || ns.Labels[sandbox.LabelCordoned] != "true" {
		t.Errorf("a namespace granted while cordoned: %v (%v)", ns.Labels, err)
	}
	// Uncordoned while the next grant binds: it reads the Tenant again and follows.
	var once sync.Once
	provider.kube.PrependReactor("patch", "rolebindings", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "tools" {
			once.Do(func() {
				obj, _ := provider.dyn.Tracker().Get(v1alpha1.TenantGVR, member.TenantNamespace("consumer"), "consumer")
				u := obj.(*unstructured.Unstructured).DeepCopy()
				_ = unstructured.SetNestedField(u.Object, false, "status", "cordoned")
				_ = provider.dyn.Tracker().Update(v1alpha1.TenantGVR, u, member.TenantNamespace("consumer"))
			})
		}
		return false, nil, nil
	})
	if err := grants.GrantNamespace(t.Context(), provider.Cluster, grants.GrantNamespaceOptions{ConsumerID: "consumer", Name: "tools"}); err != nil {
		t.Fatal(err)
	}
	ns, err = provider.kube.CoreV1().Namespaces().Get(t.Context(), "tools", metav1.GetOptions{})
	if _, cordoned := ns.Labels[sandbox.LabelCordoned]; err != nil || cordoned {
		t.Errorf("a namespace granted while uncordoned meanwhile: %v (%v)", ns.Labels, err)
	}
}

// A renewal that began after the revocation was counted is a re-admission: when revoke's last look finds
// the Tenant Active again, the binding of its user stays, so the record and the bindings agree.
func TestRevokeLeavesAReadmission(t *testing.T) {
	_, provider := pairedFakes(t)
	ns := member.TenantNamespace("consumer")
	const readmitted = "kubectl-federate:consumer:readmitted"
	var marked, landed bool
	provider.dyn.PrependReactor("patch", "tenants", func(a clienttesting.Action) (bool, runtime.Object, error) {
		marked = marked || a.GetSubresource() == "status"
		return false, nil, nil
	})
	provider.dyn.PrependReactor("get", "tenants", func(clienttesting.Action) (bool, runtime.Object, error) {
		if marked && !landed { // revoke's last look, the Tenant marked: the re-admission has landed
			landed = true
			obj, err := provider.dyn.Tracker().Get(v1alpha1.TenantGVR, ns, "consumer")
			if err != nil {
				t.Error(err)
				return false, nil, nil
			}
			u := obj.(*unstructured.Unstructured).DeepCopy()
			_ = unstructured.SetNestedField(u.Object, handshake.PhaseActive, "status", "phase")
			_ = unstructured.SetNestedField(u.Object, readmitted, "status", "user")
			if err := provider.dyn.Tracker().Update(v1alpha1.TenantGVR, u, ns); err != nil {
				t.Error(err)
			}
			rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: member.RoleBindingName, Namespace: ns, Labels: member.TenantLabels("consumer")},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: readmitted}},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: member.DefaultClusterRole}}
			if err := provider.kube.Tracker().Add(rb); err != nil {
				t.Error(err)
			}
		}
		return false, nil, nil
	})
	if out, err := Revoke(t.Context(), provider.Cluster, "consumer"); err != nil || out != handshake.Done {
		t.Fatalf("Revoke: %v %v", out, err)
	}
	if !landed {
		t.Fatal("revoke did not read the Tenant once it was marked")
	}
	if users := binding(t, provider, ns); !slices.Equal(users, []string{readmitted}) {
		t.Errorf("after the revoke, the re-admission's binding: %v", users)
	}
}

// A renewal whose record lands after revoke's last look read the Tenant, and whose own second look came
// before its user was recorded revoked: the last look removes its binding and says Revoked again, so the
// Tenant never says Active for a user nothing binds.
func TestRevokeRemarksALateRenewal(t *testing.T) {
	_, provider := pairedFakes(t)
	ns := member.TenantNamespace("consumer")
	const late = "kubectl-federate:consumer:late-renewal"
	var marked bool
	gets := 0
	provider.dyn.PrependReactor("patch", "tenants", func(a clienttesting.Action) (bool, runtime.Object, error) {
		marked = marked || a.GetSubresource() == "status"
		return false, nil, nil
	})
	provider.dyn.PrependReactor("get", "tenants", func(clienttesting.Action) (bool, runtime.Object, error) {
		if !marked {
			return false, nil, nil
		}
		switch gets++; gets {
		case 1: // the renewal has bound its user, not recorded it yet
			rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: member.RoleBindingName, Namespace: ns, Labels: member.TenantLabels("consumer")},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: late}},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: member.DefaultClusterRole}}
			if err := provider.kube.Tracker().Add(rb); err != nil {
				t.Error(err)
			}
		case 2: // and now its record says Active
			obj, _ := provider.dyn.Tracker().Get(v1alpha1.TenantGVR, ns, "consumer")
			u := obj.(*unstructured.Unstructured).DeepCopy()
			_ = unstructured.SetNestedField(u.Object, handshake.PhaseActive, "status", "phase")
			_ = unstructured.SetNestedField(u.Object, late, "status", "user")
			if err := provider.dyn.Tracker().Update(v1alpha1.TenantGVR, u, ns); err != nil {
				t.Error(err)
			}
		}
		return false, nil, nil
	})
	if out, err := Revoke(t.Context(), provider.Cluster, "consumer"); err != nil || out != handshake.Done {
		t.Fatalf("Revoke: %v %v", out, err)
	}
	if gets < 2 {
		t.Fatalf("revoke read the Tenant %d times once it was marked, want two", gets)
	}
	if users := binding(t, provider, ns); users != nil {
		t.Errorf("the late renewal's binding is left: %v", users)
	}
	if st := provider.tenant(t).Status; st.Phase != handshake.PhaseRevoked {
		t.Errorf("the Tenant says %s for %s, which nothing binds", st.Phase, st.User)
	}
}

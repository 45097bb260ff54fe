package lifecycle

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// pairedFakes authenticates a consumer with a provider and lets the consumer "dial" the provider through
// its stored kubeconfig (the fake provider stands for what the pairing's identity sees).
func pairedFakes(t *testing.T) (consumer, provider *fakeCluster) {
	t.Helper()
	consumer, provider = newFakeCluster(t), newFakeCluster(t)
	o := AuthenticateOptions{ConsumerID: "consumer", ProviderID: "provider", APIServer: "https://provider.example:6443", CA: testCAPEM, Expiration: time.Hour}
	if _, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, o); err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	consumer.Dial = func([]byte) (*member.Cluster, error) { return provider.Cluster, nil }
	return consumer, provider
}

func requestSlice(t *testing.T, consumer *fakeCluster, name, class string, res map[string]string) *v1alpha1.ResourceSlice {
	t.Helper()
	s, err := grants.RequestSlice(t.Context(), consumer.Cluster, grants.SliceRequestOptions{ProviderID: "provider", Name: name, Class: class, Resources: res})
	if err != nil {
		t.Fatalf("RequestSlice: %v", err)
	}
	return s
}

// The slice flow on fakes: request, submit through the pairing, accept under a class that clamps, import;
// a second accept and a second import change nothing.
func TestSliceFlowOnFakes(t *testing.T) {
	consumer, provider := pairedFakes(t)
	if _, _, err := grants.ApplySliceClass(t.Context(), provider.Cluster, grants.SliceClassOptions{Name: "small", Spec: v1alpha1.ResourceSliceClassSpec{
		Max: map[string]string{"cpu": "1", "pods": "2"}}}); err != nil {
		t.Fatal(err)
	}
	slice := requestSlice(t, consumer, "batch", "small", map[string]string{"cpu": "2", "memory": "1Gi"})
	via, err := handshake.ViaPairing(t.Context(), consumer.Cluster, "provider")
	if err != nil {
		t.Fatal(err)
	}
	if err := grants.SubmitSlice(t.Context(), consumer.Cluster, via, slice); err != nil {
		t.Fatalf("SubmitSlice: %v", err)
	}
	granted, err := grants.AcceptSlice(t.Context(), provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "batch", Expiration: time.Hour})
	if err != nil {
		t.Fatalf("AcceptSlice: %v", err)
	}
	want := map[string]string{"cpu": "1", "memory": "1Gi", "pods": "2", "ephemeral-storage": "2Gi"}
	if fmtAny(granted.Status.Granted) != fmtAny(want) {
		t.Errorf("granted %v, want %v (cpu clamped to the class maximum, pods never over it)", granted.Status.Granted, want)
	}
	ns := member.SliceNamespace("consumer", "batch")
	u, err := provider.dyn.Resource(sandbox.ResourceQuotaGVR).Namespace(ns).Get(t.Context(), sandbox.SandboxName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("slice quota: %v", err)
	}
	q := &corev1.ResourceQuota{}
	if err := objects.FromUnstructured(u, q); err != nil {
		t.Fatal(err)
	}
	for key, v := range map[string]string{"requests.cpu": "1", "limits.cpu": "1", "requests.memory": "1Gi", "pods": "2"} {
		if got := q.Spec.Hard[corev1.ResourceName(key)]; got.Cmp(resource.MustParse(v)) != 0 {
			t.Errorf("quota %s = %s, want %s", key, got.String(), v)
		}
	}
	rb, err := provider.kube.RbacV1().RoleBindings(ns).Get(t.Context(), member.RoleBindingName, metav1.GetOptions{})
	if err != nil || len(rb.Subjects) != 1 || rb.Subjects[0].Name != granted.Status.User || !strings.Contains(granted.Status.User, ":slice-batch:") {
		t.Errorf("slice binding %+v %v", rb, err)
	}
	again, err := grants.AcceptSlice(t.Context(), provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "batch", Expiration: time.Hour})
	if err != nil || string(again.Status.Certificate) != string(granted.Status.Certificate) {
		t.Errorf("a second accept issued again: %v", err)
	}
	res, err := grants.ImportSlice(t.Context(), consumer.Cluster, grants.ImportSliceOptions{ProviderID: "provider", Name: "batch", Provider: via})
	if err != nil {
		t.Fatalf("ImportSlice: %v", err)
	}
	if res.Namespace != ns || res.User != granted.Status.User {
		t.Errorf("import %+v", res)
	}
	if _, err := handshake.GetSliceKubeconfig(t.Context(), consumer.Cluster, "provider", "batch"); err != nil {
		t.Errorf("slice kubeconfig: %v", err)
	}
	if res, err := grants.ImportSlice(t.Context(), consumer.Cluster, grants.ImportSliceOptions{ProviderID: "provider", Name: "batch", Provider: via}); err != nil || !res.AlreadyImported {
		t.Errorf("a second import: %+v %v", res, err)
	}
	// The import is on the consumer's audit trail, once: the second import changed nothing.
	recorded(t, consumer, handshake.EventImported, "resource slice batch (Certificate) on provider provider imported; by ", 1)
	// Unauthenticate removes the slice on both sides.
	if _, err := Unauthenticate(t.Context(), consumer.Cluster, provider.Cluster, UnauthenticateOptions{}); err != nil {
		t.Fatalf("Unauthenticate: %v", err)
	}
	if _, err := provider.kube.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("slice namespace left: %v", err)
	}
	if _, err := handshake.GetSliceKubeconfig(t.Context(), consumer.Cluster, "provider", "batch"); err == nil {
		t.Error("slice kubeconfig left on the consumer")
	}
}

// Requests altered after signing, or not the consumer's, are refused before anything is created.
func TestForgedSlicesGrantNothing(t *testing.T) {
	consumer, provider := pairedFakes(t)
	other := newFakeCluster(t)
	if _, err := sandbox.Init(t.Context(), other.Cluster, "consumer"); err != nil { // same ID, another handshake key
		t.Fatal(err)
	}
	other.kube.Tracker().Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: member.KubeconfigSecretName("provider"), Namespace: member.SystemNamespace}}) //nolint:errcheck // a fresh tracker
	foreign, err := grants.RequestSlice(t.Context(), other.Cluster, grants.SliceRequestOptions{ProviderID: "provider", Name: "x", Resources: map[string]string{"cpu": "1", "memory": "1Gi"}})
	if err != nil {
		t.Fatal(err)
	}
	signature := "spec.signature: does not verify"
	cases := map[string]struct {
		alter func(s *v1alpha1.ResourceSlice)
		want  string
	}{
		"resources changed": {func(s *v1alpha1.ResourceSlice) { s.Spec.Resources["cpu"] = "64" }, signature},
		"class changed":     {func(s *v1alpha1.ResourceSlice) { s.Spec.Class = "gold" }, signature},
		"signature flipped": {func(s *v1alpha1.ResourceSlice) { s.Spec.Signature[0] ^= 1 }, signature},
		"another consumer":  {func(s *v1alpha1.ResourceSlice) { s.Spec.ClusterID = "intruder" }, "is not the consumer"},
		"csr of another slice": {func(s *v1alpha1.ResourceSlice) {
			s.Spec.CSR = requestSlice(t, consumer, "y", "", map[string]string{"cpu": "1", "memory": "1Gi"}).Spec.CSR
		}, signature},
		"wrong key": {func(s *v1alpha1.ResourceSlice) { *s = *foreign }, signature},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := requestSlice(t, consumer, "x", "", map[string]string{"cpu": "1", "memory": "1Gi"})
			s.Spec.Resources = map[string]string{"cpu": "1", "memory": "1Gi"}
			tc.alter(s)
			provider.kube.ClearActions()
			provider.dyn.ClearActions()
			_, err := grants.AcceptSlice(t.Context(), provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "x", Request: s, Expiration: time.Hour})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a refusal saying %q", err, tc.want)
			}
			for _, a := range append(provider.actions(), dynActions(provider)...) {
				if strings.HasPrefix(a, "create") || strings.HasPrefix(a, "update") || strings.HasPrefix(a, "patch") {
					t.Errorf("%s after a refused request (%v)", a, err)
				}
			}
		})
	}
}

// A grant is never more than asked nor over the class's maximum; a class that denies over its maximum
// records the denial, which the consumer's import reports.
func TestSliceGrantPolicy(t *testing.T) {
	consumer, provider := pairedFakes(t)
	if _, _, err := grants.ApplySliceClass(t.Context(), provider.Cluster, grants.SliceClassOptions{Name: "strict", Spec: v1alpha1.ResourceSliceClassSpec{
		Max: map[string]string{"memory": "1Gi"}, OverMax: grants.OverMaxDeny}}); err != nil {
		t.Fatal(err)
	}
	via, _ := handshake.ViaPairing(t.Context(), consumer.Cluster, "provider")
	big := requestSlice(t, consumer, "big", "strict", map[string]string{"cpu": "1", "memory": "2Gi"})
	if err := grants.SubmitSlice(t.Context(), consumer.Cluster, via, big); err != nil {
		t.Fatal(err)
	}
	if _, err := grants.AcceptSlice(t.Context(), provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "big"}); !errors.Is(err, member.ErrDenied) {
		t.Fatalf("over a deny class's maximum: %v", err)
	}
	if _, err := grants.ImportSlice(t.Context(), consumer.Cluster, grants.ImportSliceOptions{ProviderID: "provider", Name: "big", Provider: via}); !errors.Is(err, member.ErrDenied) || !strings.Contains(err.Error(), "maximum") {
		t.Errorf("import of a denied slice: %v", err)
	}
	ok := requestSlice(t, consumer, "ok", "", map[string]string{"cpu": "2", "memory": "1Gi"})
	if err := grants.SubmitSlice(t.Context(), consumer.Cluster, via, ok); err != nil {
		t.Fatal(err)
	}
	var ge *grants.GrantError
	if _, err := grants.AcceptSlice(t.Context(), provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "ok", Grant: corev1.ResourceList{"cpu": resource.MustParse("3")}}); !errors.As(err, &ge) {
		t.Errorf("a grant over the request: %v", err)
	}
	if _, err := grants.AcceptSlice(t.Context(), provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "missing"}); err == nil {
		t.Error("accepted a slice nobody asked for")
	}
	if _, err := grants.AcceptSlice(t.Context(), provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "nobody", Name: "ok"}); !errors.Is(err, member.ErrNotActive) {
		t.Errorf("a slice for an unpaired consumer: %v", err)
	}
}

// Extra namespaces follow the pairing's identity: granted, rebound at renewal, refused when taken.
func TestExtraNamespacesOnFakes(t *testing.T) {
	consumer, provider := pairedFakes(t)
	via, _ := handshake.ViaPairing(t.Context(), consumer.Cluster, "provider")
	if err := grants.RequestNamespace(t.Context(), consumer.Cluster, via, "team-a", "ci"); err != nil {
		t.Fatal(err)
	}
	if err := grants.GrantNamespace(t.Context(), provider.Cluster, grants.GrantNamespaceOptions{ConsumerID: "consumer", Name: "team-a"}); err != nil {
		t.Fatalf("GrantNamespace: %v", err)
	}
	list, err := grants.ExtraNamespaces(t.Context(), provider.Cluster, "consumer", false)
	if err != nil || len(list) != 1 || list[0].Phase != grants.NamespaceGranted || !list[0].Requested {
		t.Errorf("extra namespaces %+v %v", list, err)
	}
	o := AuthenticateOptions{ConsumerID: "consumer", ProviderID: "provider", APIServer: "https://provider.example:6443", Expiration: time.Hour}
	renewed, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, o)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := provider.kube.RbacV1().RoleBindings("team-a").Get(t.Context(), member.RoleBindingName, metav1.GetOptions{})
	if err != nil || rb.Subjects[0].Name != renewed.User {
		t.Errorf("extra namespace not rebound at renewal: %+v %v", rb, err)
	}
	provider.kube.Tracker().Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "taken"}}) //nolint:errcheck // a fresh name
	if err := grants.GrantNamespace(t.Context(), provider.Cluster, grants.GrantNamespaceOptions{ConsumerID: "consumer", Name: "taken"}); !errors.Is(err, member.ErrNameTaken) {
		t.Errorf("a taken name: %v", err)
	}
	if err := grants.GrantNamespace(t.Context(), provider.Cluster, grants.GrantNamespaceOptions{ConsumerID: "consumer", Name: member.TenantNamespace("consumer")}); err == nil {
		t.Error("granted the tenant namespace as an extra one")
	}
	ticking(provider)
	if _, err := grants.RevokeNamespace(t.Context(), provider.Cluster, "consumer", "team-a"); err != nil {
		t.Fatalf("RevokeNamespace: %v", err)
	}
	if outcome, err := grants.RevokeNamespace(t.Context(), provider.Cluster, "consumer", "team-a"); err != nil || outcome != handshake.Already {
		t.Fatalf("RevokeNamespace again: %v %v, want Already", outcome, err)
	}
	// On the provider's audit trail, once: the second run found nothing granted.
	recorded(t, provider, handshake.EventRevoked, "namespace team-a of consumer consumer revoked and removed", 1)
	if _, err := provider.kube.CoreV1().Namespaces().Get(t.Context(), "team-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("revoked namespace left: %v", err)
	}
}

func dynActions(f *fakeCluster) []string {
	var out []string
	for _, a := range f.dyn.Actions() {
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return out
}

// Asking again for an imported slice is its renewal: a new key and user, pending until accepted, and the
// binding then names only the new user.
func TestSliceRenewalOnFakes(t *testing.T) {
	consumer, provider := pairedFakes(t)
	via, _ := handshake.ViaPairing(t.Context(), consumer.Cluster, "provider")
	round := func() *grants.SliceImport {
		t.Helper()
		if err := grants.SubmitSlice(t.Context(), consumer.Cluster, via, requestSlice(t, consumer, "s", "", map[string]string{"cpu": "1", "memory": "1Gi"})); err != nil {
			t.Fatal(err)
		}
		list, err := grants.ProviderSlices(t.Context(), provider.Cluster, "consumer")
		if err != nil || len(list) != 1 || list[0].Phase != grants.SlicePending {
			t.Fatalf("a new request is not pending: %+v %v", list, err)
		}
		if _, err := grants.ImportSlice(t.Context(), consumer.Cluster, grants.ImportSliceOptions{ProviderID: "provider", Name: "s", Provider: via}); err == nil || !strings.Contains(err.Error(), "not accepted it yet") {
			t.Fatalf("import before the answer: %v", err)
		}
		if _, err := grants.AcceptSlice(t.Context(), provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "s"}); err != nil {
			t.Fatal(err)
		}
		res, err := grants.ImportSlice(t.Context(), consumer.Cluster, grants.ImportSliceOptions{ProviderID: "provider", Name: "s", Provider: via})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first, second := round(), round()
	if first.User == second.User {
		t.Fatalf("a renewal kept the user %s", first.User)
	}
	rb, err := provider.kube.RbacV1().RoleBindings(member.SliceNamespace("consumer", "s")).Get(t.Context(), member.RoleBindingName, metav1.GetOptions{})
	if err != nil || len(rb.Subjects) != 1 || rb.Subjects[0].Name != second.User {
		t.Errorf("binding after the slice's renewal: %+v %v", rb, err)
	}
}

// The provider's decisions hold against whatever the tenant does to its requests (found by an attack
// on real clusters): the unattended run grants only auto-accept classes and never a denied request, a
// decoy request under another name is not listed, a deleted slice's key is never granted again, and a
// granted slice cannot be "denied" into looking revoked.
func TestSliceDecisionsHold(t *testing.T) {
	consumer, provider := pairedFakes(t)
	via, _ := handshake.ViaPairing(t.Context(), consumer.Cluster, "provider")
	for _, cls := range []grants.SliceClassOptions{
		{Name: "small", Spec: v1alpha1.ResourceSliceClassSpec{Max: map[string]string{"cpu": "2"}, AutoAccept: true}},
		{Name: "big", Spec: v1alpha1.ResourceSliceClassSpec{PodSecurity: sandbox.PodSecurityPrivileged}},
	} {
		if _, _, err := grants.ApplySliceClass(t.Context(), provider.Cluster, cls); err != nil {
			t.Fatal(err)
		}
	}
	submit := func(name, class string) *v1alpha1.ResourceSlice {
		s := requestSlice(t, consumer, name, class, map[string]string{"cpu": "1", "memory": "1Gi"})
		if err := grants.SubmitSlice(t.Context(), consumer.Cluster, via, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	big := submit("bigone", "big")
	// A decoy under another name that claims the big request's slice name with an auto-accept class.
	u, _ := objects.ToUnstructured(&v1alpha1.ResourceSlice{TypeMeta: big.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: "decoy", Namespace: big.Namespace},
		Spec: v1alpha1.ResourceSliceSpec{ClusterID: "consumer", ProviderClusterID: "provider", Slice: "bigone", Class: "small",
			Resources: map[string]string{"cpu": "1", "memory": "1Gi"}, CSR: big.Spec.CSR, Signature: []byte("x")}})
	if _, err := provider.dyn.Resource(v1alpha1.ResourceSliceGVR).Namespace(big.Namespace).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := grants.ProviderSlices(t.Context(), provider.Cluster, "consumer")
	if err != nil || len(list) != 1 || list[0].Name != "bigone" || list[0].AutoAccept {
		t.Fatalf("listing with a decoy: %+v %v", list, err)
	}
	if _, err := grants.AcceptSlice(t.Context(), provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "bigone", RequireAutoAccept: true}); err == nil {
		t.Fatal("the unattended run granted a class without auto-accept")
	}
	// Denied, then the unattended run: refused even after the tenant wipes the status by re-creating it.
	small := submit("small1", "small")
	if err := grants.DenySlice(t.Context(), provider.Cluster, "consumer", "small1", "no"); err != nil {
		t.Fatal(err)
	}
	rs := provider.dyn.Resource(v1alpha1.ResourceSliceGVR).Namespace(small.Namespace)
	if err := rs.Delete(t.Context(), "small1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := grants.SubmitSlice(t.Context(), consumer.Cluster, via, small); err != nil {
		t.Fatal(err)
	}
	if _, err := grants.AcceptSlice(t.Context(), provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "small1", RequireAutoAccept: true}); !errors.Is(err, member.ErrDenied) {
		t.Errorf("the unattended run granted a denied request: %v", err)
	}
	// Withdrawn and asked again with a new key: the name stays denied for the unattended run...
	if err := rs.Delete(t.Context(), "small1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := grants.DeleteSliceLocal(t.Context(), consumer.Cluster, "provider", "small1", nil); err != nil {
		t.Fatal(err)
	}
	submit("small1", "small")
	if _, err := grants.AcceptSlice(t.Context(), provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "small1", RequireAutoAccept: true}); !errors.Is(err, member.ErrDenied) {
		t.Errorf("the unattended run granted a denied name asked again with a new key: %v", err)
	}
	// ... until the provider accepts it explicitly, which lifts the denial.
	if _, err := grants.AcceptSlice(t.Context(), provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "small1"}); err != nil {
		t.Errorf("an explicit accept of a denied name: %v", err)
	}
	// Granted, deleted, replayed: refused.
	ok := submit("ok", "small")
	if _, err := grants.AcceptSlice(t.Context(), provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "ok", RequireAutoAccept: true}); err != nil {
		t.Fatal(err)
	}
	if err := grants.DenySlice(t.Context(), provider.Cluster, "consumer", "ok", "too late"); err == nil {
		t.Error("denied a granted slice, which would leave its identity working")
	}
	ticking(provider)
	if err := grants.DeleteSliceProvider(t.Context(), provider.Cluster, "consumer", "ok"); err != nil {
		t.Fatal(err)
	}
	if err := grants.DeleteSliceProvider(t.Context(), provider.Cluster, "consumer", "ok"); err != nil {
		t.Fatal(err)
	}
	recorded(t, provider, handshake.EventRevoked, "resource slice ok of consumer consumer revoked and removed", 1)
	if err := grants.SubmitSlice(t.Context(), consumer.Cluster, via, ok); err != nil {
		t.Fatal(err)
	}
	if _, err := grants.AcceptSlice(t.Context(), provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "ok"}); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("a deleted slice's request replayed: %v", err)
	}
}

// Accepting a granted request again converges the grant (here: lower) and keeps the certificate.
func TestSliceReacceptConverges(t *testing.T) {
	consumer, provider := pairedFakes(t)
	via, _ := handshake.ViaPairing(t.Context(), consumer.Cluster, "provider")
	if err := grants.SubmitSlice(t.Context(), consumer.Cluster, via, requestSlice(t, consumer, "s", "", map[string]string{"cpu": "2", "memory": "1Gi"})); err != nil {
		t.Fatal(err)
	}
	first, err := grants.AcceptSlice(t.Context(), provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := grants.AcceptSlice(t.Context(), provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "s", Grant: corev1.ResourceList{"cpu": resource.MustParse("1")}})
	if err != nil {
		t.Fatal(err)
	}
	if second.Status.Granted["cpu"] != "1" || string(second.Status.Certificate) != string(first.Status.Certificate) {
		t.Errorf("re-accept: granted %v, same certificate %v", second.Status.Granted, string(second.Status.Certificate) == string(first.Status.Certificate))
	}
}

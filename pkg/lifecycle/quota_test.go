package lifecycle

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
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

func rl(m map[string]string) corev1.ResourceList { return sandbox.MustResources(m) }

// Every grant bounds everything the total does (a resource its quota leaves out is unbounded in its
// namespace), and the defaults are modest: four grants with nothing chosen fit in the default total.
func TestDefaultGrantQuotaIsCompleteAndModest(t *testing.T) {
	total, grant := sandbox.DefaultQuota(), sandbox.DefaultGrantQuota()
	if got, want := slices.Sorted(maps.Keys(grant)), slices.Sorted(maps.Keys(total)); !slices.Equal(got, want) {
		t.Errorf("DefaultGrantQuota names %v, DefaultQuota %v", got, want)
	}
	for name, g := range grant {
		tq := total[name]
		four := g.DeepCopy()
		four.Add(g)
		four.Add(four)
		if four.Cmp(tq) > 0 {
			t.Errorf("DefaultGrantQuota %s=%s is more than a quarter of the total's %s", name, g.String(), tq.String())
		}
	}
}

func TestTotalsArithmetic(t *testing.T) {
	total := rl(map[string]string{"pods": "20", "requests.cpu": "4", "requests.memory": "8Gi", "services.nodeports": "0"})
	granted := sandbox.SumQuotas(rl(map[string]string{"pods": "4", "requests.cpu": "1500m"}), rl(map[string]string{"pods": "4", "requests.cpu": "1", "requests.memory": "2Gi"}))
	if got := fmtList(granted); got != "pods=8,requests.cpu=2500m,requests.memory=2Gi" {
		t.Errorf("sum %s", got)
	}
	if got := fmtList(sandbox.TenantShare(total, granted)); got != "pods=12,requests.cpu=1500m,requests.memory=6Gi,services.nodeports=0" {
		t.Errorf("tenant share %s", got)
	}
	used := rl(map[string]string{"pods": "10", "requests.cpu": "2", "requests.memory": "1Gi"})
	remaining := sandbox.RemainingOf(total, granted, used)
	if got := fmtList(remaining); got != "pods=2,requests.cpu=0,requests.memory=5Gi,services.nodeports=0" {
		t.Errorf("remaining %s (never below zero)", got)
	}
	want := rl(map[string]string{"pods": "3", "requests.cpu": "100m", "requests.memory": "5Gi", "requests.nvidia.com/gpu": "1"})
	if got := sandbox.OverRemaining(want, remaining); !slices.Equal(got, []corev1.ResourceName{"pods", "requests.cpu"}) {
		t.Errorf("over %v (a resource the total does not name is not carved)", got)
	}
	// A grant that converges is refused only for what it raises.
	held := rl(map[string]string{"pods": "3", "requests.cpu": "50m"})
	if got := fmtList(sandbox.NeedsMore(want, held, remaining)); got != "requests.cpu=100m" {
		t.Errorf("needs more %s", got)
	}
	if got := fmtList(sandbox.CompleteGrant(rl(map[string]string{"pods": "2"}), total)); got != "pods=2,requests.cpu=0,requests.memory=0,services.nodeports=0" {
		t.Errorf("complete %s", got)
	}
	if got := fmtList(sandbox.MaxQuota(rl(map[string]string{"pods": "2", "secrets": "5"}), rl(map[string]string{"pods": "3", "configmaps": "1"}))); got != "configmaps=1,pods=3,secrets=5" {
		t.Errorf("max %s", got)
	}
	if !sandbox.SameQuota(rl(map[string]string{"requests.cpu": "1000m"}), rl(map[string]string{"requests.cpu": "1"})) ||
		sandbox.SameQuota(rl(map[string]string{"pods": "1"}), rl(map[string]string{"pods": "1", "secrets": "0"})) {
		t.Error("sameQuota compares amounts, and names")
	}
	err := sandbox.CheckTotal("edge-1", total, rl(map[string]string{"pods": "21", "requests.cpu": "4"}))
	if !errors.Is(err, sandbox.ErrBelowGranted) || !strings.Contains(err.Error(), "pods 20 (granted: 21)") || strings.Contains(err.Error(), "requests.cpu") {
		t.Errorf("checkTotal: %v", err)
	}
}

func podsOf(l corev1.ResourceList) string { return l.Pods().String() }

func fmtList(l corev1.ResourceList) string {
	return sandbox.FormatResourceList(sandbox.FormatResources(l))
}

func TestRemainingErrorListsWhatRemains(t *testing.T) {
	err := error(&sandbox.RemainingError{ConsumerID: "edge-1", Grant: `resource slice "big"`,
		Needs:     rl(map[string]string{"requests.cpu": "8"}),
		Remaining: rl(map[string]string{"requests.cpu": "1", "requests.memory": "2Gi", "pods": "3"})})
	// Only what does not fit, with what remains of it, and what can be done.
	want := `resource slice "big" needs more than remains of consumer "edge-1"'s total: requests.cpu 8 (1 remains); free some (delete a slice, revoke a namespace, stop workloads in the tenant namespace), ask for less, or raise the consumer's total`
	if err.Error() != want || !errors.Is(err, sandbox.ErrOverTotal) {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}

func TestLedgerRoundTrip(t *testing.T) {
	l := &sandbox.GrantLedger{Total: sandbox.DefaultQuota(), Generation: 7, Grants: map[string]corev1.ResourceList{
		sandbox.SliceGrantKey("batch"): rl(map[string]string{"pods": "2", "requests.cpu": "500m"}), sandbox.NamespaceGrantKey("ci"): sandbox.DefaultGrantQuota()}}
	cm := l.ConfigMap("edge-1")
	if cm.Name != "federate-grants-edge-1" || cm.Namespace != member.SystemNamespace || cm.Labels[member.LabelRemoteClusterID] != "edge-1" || cm.Labels[member.LabelRole] != member.RoleProvider {
		t.Errorf("ledger ConfigMap %s/%s labels %v", cm.Namespace, cm.Name, cm.Labels)
	}
	back, err := sandbox.ParseLedger(cm)
	if err != nil {
		t.Fatal(err)
	}
	if back.Generation != 7 || !sandbox.SameQuota(back.Total, l.Total) || back.Slices() != 1 || len(back.Grants) != 2 ||
		!sandbox.SameQuota(back.Granted(sandbox.SliceGrantKey("batch")), sandbox.DefaultGrantQuota()) {
		t.Errorf("round trip: %+v", back)
	}
	cm.Data["slice.x"] = "pods=lots"
	if _, err := sandbox.ParseLedger(cm); err == nil || !strings.Contains(err.Error(), "slice.x") {
		t.Errorf("a corrupt entry: %v", err)
	}
}

// withResourceVersions makes a fake's ConfigMaps carry resourceVersions and refuses an update from a stale
// one, as the API server does; the fake itself ignores them. before, if set, runs before each update is
// decided, on the fake's store (the fake's client cannot be called from there): a concurrent writer.
func withResourceVersions(f *fakeCluster, before func(clienttesting.ObjectTracker)) {
	var mu sync.Mutex
	version := 100
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	tr := f.kube.Tracker()
	f.kube.PrependReactor("create", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		cm := a.(clienttesting.CreateAction).GetObject().(*corev1.ConfigMap).DeepCopy()
		version++
		cm.ResourceVersion = strconv.Itoa(version)
		if err := tr.Create(gvr, cm, cm.Namespace); err != nil {
			return true, nil, err
		}
		return true, cm, nil
	})
	f.kube.PrependReactor("update", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if before != nil {
			before(tr)
		}
		mu.Lock()
		defer mu.Unlock()
		cm := a.(clienttesting.UpdateAction).GetObject().(*corev1.ConfigMap).DeepCopy()
		old, err := tr.Get(gvr, cm.Namespace, cm.Name)
		if err != nil {
			return true, nil, err
		}
		if cm.ResourceVersion != "" && old.(*corev1.ConfigMap).ResourceVersion != cm.ResourceVersion {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), cm.Name, errors.New("the object has been modified"))
		}
		version++
		cm.ResourceVersion = strconv.Itoa(version)
		if err := tr.Update(gvr, cm, cm.Namespace); err != nil {
			return true, nil, err
		}
		return true, cm, nil
	})
}

func readLedgerOf(t *testing.T, f *fakeCluster, consumerID string) *sandbox.GrantLedger {
	t.Helper()
	cm, err := f.kube.CoreV1().ConfigMaps(member.SystemNamespace).Get(t.Context(), sandbox.GrantsLedgerName(consumerID), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the ledger: %v", err)
	}
	l, err := sandbox.ParseLedger(cm)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Reservations race through the ledger's resourceVersion: of 12 at once, exactly the 10 the cap allows
// are held, and a total that fits only 3 holds 3; nothing is lost to a conflict.
func TestLedgerReservationsAreAtomic(t *testing.T) {
	for _, tc := range []struct {
		name  string
		total corev1.ResourceList
		held  int
		err   error
	}{
		{"cap", sandbox.DefaultQuota(), sandbox.MaxSlicesPerConsumer, sandbox.ErrTooManySlices},
		{"total", sandbox.Merged(sandbox.DefaultQuota(), rl(map[string]string{"requests.cpu": "1"})), 3, sandbox.ErrOverTotal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster(t)
			withResourceVersions(f, nil)
			want := rl(map[string]string{"requests.cpu": "300m", "pods": "1"})
			errs := make([]error, 12)
			var wg sync.WaitGroup
			for i := range errs {
				wg.Go(func() {
					_, errs[i] = sandbox.ReserveGrant(t.Context(), f.Cluster, "edge-1", sandbox.SliceGrantKey(fmt.Sprintf("s%d", i)), "a slice", want, tc.total)
				})
			}
			wg.Wait()
			ok := 0
			for _, err := range errs {
				switch {
				case err == nil:
					ok++
				case !errors.Is(err, tc.err):
					t.Errorf("a refused reservation: %v, want %v", err, tc.err)
				}
			}
			l := readLedgerOf(t, f, "edge-1")
			if ok != tc.held || l.Slices() != tc.held {
				t.Errorf("%d reservations succeeded and the ledger holds %d slices, want %d", ok, l.Slices(), tc.held)
			}
			if l.Generation != int64(tc.held) {
				t.Errorf("generation %d after %d writes", l.Generation, tc.held)
			}
			if g, tq := l.Granted("")[corev1.ResourceRequestsCPU], l.Total[corev1.ResourceRequestsCPU]; g.Cmp(tq) > 0 {
				t.Errorf("granted cpu %s over the total %s", g.String(), tq.String())
			}
		})
	}
}

// A write that loses to a concurrent one reads the ledger again and decides on what is there now: the
// other writer's grant is kept, and counts against what remains.
func TestLedgerConflictReadsAgain(t *testing.T) {
	f := newFakeCluster(t)
	total := sandbox.Merged(sandbox.DefaultQuota(), rl(map[string]string{"requests.cpu": "1"}))
	once, armed := sync.Once{}, false
	withResourceVersions(f, func(tr clienttesting.ObjectTracker) {
		if !armed {
			return
		}
		once.Do(func() { // another administrator takes most of the CPU first
			gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
			obj, err := tr.Get(gvr, member.SystemNamespace, sandbox.GrantsLedgerName("edge-1"))
			if err != nil {
				t.Error(err)
				return
			}
			l, err := sandbox.ParseLedger(obj.(*corev1.ConfigMap))
			if err != nil {
				t.Error(err)
				return
			}
			l.Grants[sandbox.NamespaceGrantKey("other")] = rl(map[string]string{"requests.cpu": "800m"})
			l.Generation++
			cm := l.ConfigMap("edge-1")
			cm.ResourceVersion = "concurrent"
			if err := tr.Update(gvr, cm, member.SystemNamespace); err != nil {
				t.Error(err)
			}
		})
	})
	if _, err := sandbox.ReserveGrant(t.Context(), f.Cluster, "edge-1", sandbox.NamespaceGrantKey("ci"), "namespace", rl(map[string]string{"requests.cpu": "100m"}), total); err != nil {
		t.Fatal(err)
	}
	armed = true
	_, err := sandbox.ReserveGrant(t.Context(), f.Cluster, "edge-1", sandbox.SliceGrantKey("s"), `resource slice "s"`, rl(map[string]string{"requests.cpu": "500m"}), total)
	var re *sandbox.RemainingError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "requests.cpu 500m (100m remains)") {
		t.Fatalf("after losing the race: %v, want refused with 100m of CPU remaining", err)
	}
	l := readLedgerOf(t, f, "edge-1")
	if _, ok := l.Grants[sandbox.NamespaceGrantKey("other")]; !ok || l.Slices() != 0 {
		t.Errorf("the ledger after the conflict: %v", slices.Sorted(maps.Keys(l.Grants)))
	}
	if _, err := sandbox.ReserveGrant(t.Context(), f.Cluster, "edge-1", sandbox.SliceGrantKey("s"), "", rl(map[string]string{"requests.cpu": "100m"}), total); err != nil {
		t.Errorf("what remains: %v", err)
	}
}

// The tenant quota only ever moves forward in ledger generations, whatever order writers land in.
func TestTenantQuotaFollowsNewerGenerationsOnly(t *testing.T) {
	f := newFakeCluster(t)
	total := rl(map[string]string{"pods": "20"})
	newer := &sandbox.GrantLedger{Total: total, Generation: 5, Grants: map[string]corev1.ResourceList{"slice.a": rl(map[string]string{"pods": "4"})}}
	older := &sandbox.GrantLedger{Total: total, Generation: 4, Grants: map[string]corev1.ResourceList{}}
	if err := sandbox.ApplyTenantQuota(t.Context(), f.Cluster, "edge-1", newer, nil, false, true); err != nil {
		t.Fatal(err)
	}
	if err := sandbox.ApplyTenantQuota(t.Context(), f.Cluster, "edge-1", older, nil, false, true); err != nil {
		t.Fatal(err)
	}
	q, err := sandbox.QuotaRead(f.Cluster, member.TenantNamespace("edge-1")).Get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := fmtList(q.Spec.Hard); got != "pods=16" || sandbox.QuotaGeneration(q) != 5 {
		t.Errorf("tenant quota %s at generation %d, want pods=16 at 5", got, sandbox.QuotaGeneration(q))
	}
	writes := len(f.dyn.Actions())
	if err := sandbox.ApplyTenantQuota(t.Context(), f.Cluster, "edge-1", newer, q, true, true); err != nil || len(f.dyn.Actions()) != writes {
		t.Errorf("an unchanged quota was written again (%v)", err)
	}
}

// A quota write that loses to a concurrent one (409 on its resourceVersion) reads the quota again, and
// leaves a newer generation in place.
func TestTenantQuotaWriteConflictReadsAgain(t *testing.T) {
	f := newFakeCluster(t)
	ns := member.TenantNamespace("edge-1")
	total := rl(map[string]string{"pods": "20"})
	if err := sandbox.ApplyTenantQuota(t.Context(), f.Cluster, "edge-1", &sandbox.GrantLedger{Total: total, Generation: 1, Grants: map[string]corev1.ResourceList{}}, nil, false, true); err != nil {
		t.Fatal(err)
	}
	applies := 0
	f.dyn.PrependReactor("patch", sandbox.ResourceQuotaGVR.Resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		applies++
		if applies > 1 {
			return false, nil, nil
		}
		// Another writer lands generation 9 first.
		obj, err := f.dyn.Tracker().Get(sandbox.ResourceQuotaGVR, ns, sandbox.SandboxName)
		if err != nil {
			return true, nil, err
		}
		u := obj.(*unstructured.Unstructured).DeepCopy()
		u.SetAnnotations(map[string]string{sandbox.AnnotationGrantsGeneration: "9"})
		_ = unstructured.SetNestedField(u.Object, "1", "spec", "hard", "pods")
		_ = unstructured.SetNestedField(u.Object, "1", "status", "hard", "pods")
		if err := f.dyn.Tracker().Update(sandbox.ResourceQuotaGVR, u, ns); err != nil {
			return true, nil, err
		}
		return true, nil, apierrors.NewConflict(sandbox.ResourceQuotaGVR.GroupResource(), sandbox.SandboxName, errors.New("the object has been modified"))
	})
	older := &sandbox.GrantLedger{Total: total, Generation: 5, Grants: map[string]corev1.ResourceList{"slice.a": rl(map[string]string{"pods": "4"})}}
	if err := sandbox.ApplyTenantQuota(t.Context(), f.Cluster, "edge-1", older, nil, false, true); err != nil {
		t.Fatal(err)
	}
	q, err := sandbox.QuotaRead(f.Cluster, ns).Get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if applies != 1 || podsOf(q.Spec.Hard) != "1" || sandbox.QuotaGeneration(q) != 9 {
		t.Errorf("after a conflict: %d applies, pods %s at generation %d; want 1 apply and generation 9's pods=1 kept", applies, podsOf(q.Spec.Hard), sandbox.QuotaGeneration(q))
	}
}

// A class bounds every quota a slice's namespace has; what a slice cannot ask for gets the allowance,
// never over the class's maximum.
func TestClassMaximaCoverEveryQuota(t *testing.T) {
	cls, err := grants.ValidateSliceClass("lean", v1alpha1.ResourceSliceClassSpec{Max: map[string]string{
		"pods": "3", "secrets": "2", "requests.storage": "0", "count/deployments.apps": "1", "count/pods": "5"}})
	if err != nil {
		t.Fatal(err)
	}
	q := grants.SliceQuota(rl(map[string]string{"cpu": "2", "memory": "1Gi"}), cls)
	for name, want := range map[string]string{"requests.cpu": "2", "limits.cpu": "2", "requests.memory": "1Gi", "limits.memory": "1Gi",
		"pods": "3", "requests.ephemeral-storage": "2Gi", "secrets": "2", "requests.storage": "0", "configmaps": "4",
		"count/deployments.apps": "1", "count/pods": "5", "count/resourceslices.federate.dev": "0"} {
		if got := q[corev1.ResourceName(name)]; got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("slice quota %s = %s, want %s", name, got.String(), want)
		}
	}
	if got, want := slices.Sorted(maps.Keys(q)), slices.Sorted(maps.Keys(sandbox.DefaultQuota())); !slices.Equal(got, want) {
		t.Errorf("a slice's quota names %v, want every resource of the default total", got)
	}
	// Without a class maximum: the allowance, and room for twice the pods asked.
	open, _ := grants.ValidateSliceClass("open", v1alpha1.ResourceSliceClassSpec{})
	q = grants.SliceQuota(rl(map[string]string{"cpu": "1", "memory": "1Gi", "pods": "8"}), open)
	if pods, stored, secrets := q[corev1.ResourcePods], q["count/pods"], q[corev1.ResourceSecrets]; pods.String() != "8" || stored.String() != "16" || secrets.String() != "4" {
		t.Errorf("pods %s, count/pods %s, secrets %s; want 8, 16, 4", pods.String(), stored.String(), secrets.String())
	}
	for max, want := range map[string]string{
		"requests.cpu": "set by a slice resource", "secret": "not a slice resource", "secrets": "", "configmaps": "",
	} {
		for _, v := range []string{"-1", "1.5"} {
			_, err := grants.ValidateSliceClass("x", v1alpha1.ResourceSliceClassSpec{Max: map[string]string{max: v}})
			if want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
				t.Errorf("max %s=%s: %v, want %q", max, v, err, want)
			}
			if want == "" && err == nil {
				t.Errorf("max %s=%s accepted", max, v)
			}
		}
	}
}

// The done-means of totals on fakes: grants are carved out of the total (the tenant namespace keeps the
// rest), a grant beyond what remains is refused with nothing made, a renewal keeps the tenant namespace at
// its share, removing a grant gives its share back, and unauthenticate removes the ledger.
func TestGrantsAreCarvedOutOfTheTotal(t *testing.T) {
	consumer, provider := pairedFakes(t)
	ctx := t.Context()
	via, _ := handshake.ViaPairing(ctx, consumer.Cluster, "provider")
	total := sandbox.DefaultQuota()
	tenantQuota := func() corev1.ResourceList {
		t.Helper()
		q, err := sandbox.QuotaRead(provider.Cluster, member.TenantNamespace("consumer")).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return q.Spec.Hard
	}
	sumBelowTotal := func(when string) {
		t.Helper()
		nss, err := handshake.NamespacesOf(ctx, provider.Cluster, "consumer", member.KindTenant, member.KindSlice, member.KindExtra)
		if err != nil {
			t.Fatal(err)
		}
		var all []corev1.ResourceList
		for _, ns := range nss {
			q, err := sandbox.QuotaRead(provider.Cluster, ns.Name).Get(ctx)
			if err != nil {
				t.Fatalf("%s: quota of %s: %v", when, ns.Name, err)
			}
			all = append(all, q.Spec.Hard)
		}
		sum := sandbox.SumQuotas(all...)
		for name, tq := range total {
			if s := sum[name]; s.Cmp(tq) > 0 {
				t.Errorf("%s: the %d namespaces' %s add up to %s, over the total %s", when, len(nss), name, s.String(), tq.String())
			}
		}
	}
	if !sandbox.SameQuota(tenantQuota(), total) {
		t.Errorf("a fresh pairing's tenant quota: %s", fmtList(tenantQuota()))
	}

	if err := grants.SubmitSlice(ctx, consumer.Cluster, via, requestSlice(t, consumer, "s", "", map[string]string{"cpu": "2", "memory": "3Gi"})); err != nil {
		t.Fatal(err)
	}
	if _, err := grants.AcceptSlice(ctx, provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := grants.GrantNamespace(ctx, provider.Cluster, grants.GrantNamespaceOptions{ConsumerID: "consumer", Name: "ci", Quota: rl(map[string]string{"requests.cpu": "500m"})}); err != nil {
		t.Fatal(err)
	}
	sumBelowTotal("a slice and an extra namespace")
	share := tenantQuota()
	for name, want := range map[string]string{"requests.cpu": "1500m", "limits.cpu": "6", "requests.memory": "3Gi", "pods": "12",
		"secrets": "12", "count/deployments.apps": "6", "count/controllerrevisions.apps": "9", "count/resourceslices.federate.dev": "10"} {
		if got := share[corev1.ResourceName(name)]; got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("tenant namespace's %s = %s, want %s", name, got.String(), want)
		}
	}

	// Beyond what remains: refused, naming what remains, with nothing made.
	if err := grants.SubmitSlice(ctx, consumer.Cluster, via, requestSlice(t, consumer, "big", "", map[string]string{"cpu": "2", "memory": "1Gi"})); err != nil {
		t.Fatal(err)
	}
	before := len(provider.kube.Actions())
	_, err := grants.AcceptSlice(ctx, provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "big"})
	if !errors.Is(err, sandbox.ErrOverTotal) || !strings.Contains(err.Error(), `more than remains of consumer "consumer"'s total: `) || !strings.Contains(err.Error(), "(1500m remains)") {
		t.Fatalf("a slice beyond what remains: %v", err)
	}
	for _, a := range provider.kube.Actions()[before:] {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("a refused grant wrote: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if ok, _ := grants.HasSliceNamespace(ctx, provider.Cluster, "consumer", "big"); ok {
		t.Error("the refused slice has a namespace")
	}
	if err := grants.GrantNamespace(ctx, provider.Cluster, grants.GrantNamespaceOptions{ConsumerID: "consumer", Name: "ci2", Quota: rl(map[string]string{"pods": "13"})}); !errors.Is(err, sandbox.ErrOverTotal) {
		t.Errorf("a namespace beyond what remains: %v", err)
	}
	if _, err := provider.kube.CoreV1().Namespaces().Get(ctx, "ci2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused namespace exists: %v", err)
	}

	// A renewal applies the tenant namespace's share, not the total; a total below what is granted is
	// refused before anything changes.
	o := AuthenticateOptions{ConsumerID: "consumer", ProviderID: "provider", APIServer: "https://provider.example:6443", CA: testCAPEM, Expiration: time.Hour}
	if _, err := Authenticate(ctx, consumer.Cluster, provider.Cluster, o); err != nil {
		t.Fatal(err)
	}
	if !sandbox.SameQuota(tenantQuota(), share) {
		t.Errorf("after a renewal the tenant quota is %s, want its share %s", fmtList(tenantQuota()), fmtList(share))
	}
	low := o
	low.Sandbox.Quota = rl(map[string]string{"requests.cpu": "2"})
	low.Given = handshake.Given{handshake.SettingQuota: true} // a renewal keeps the recorded quota unless one is given
	if _, err := Authenticate(ctx, consumer.Cluster, provider.Cluster, low); !errors.Is(err, sandbox.ErrBelowGranted) {
		t.Errorf("a renewal with less CPU than granted: %v", err)
	}
	if !sandbox.SameQuota(tenantQuota(), share) {
		t.Errorf("a refused renewal changed the tenant quota to %s", fmtList(tenantQuota()))
	}
	more := o
	more.Sandbox.Quota = rl(map[string]string{"requests.cpu": "10"})
	more.Given = handshake.Given{handshake.SettingQuota: true}
	if _, err := Authenticate(ctx, consumer.Cluster, provider.Cluster, more); err != nil {
		t.Fatal(err)
	}
	if got := tenantQuota()[corev1.ResourceRequestsCPU]; got.String() != "7500m" {
		t.Errorf("a renewal with a total of 10 CPUs leaves %s to the tenant namespace, want 7500m", got.String())
	}
	if l := readLedgerOf(t, provider, "consumer"); l.Total.Name(corev1.ResourceRequestsCPU, resource.DecimalSI).String() != "10" {
		t.Errorf("the ledger's total after the renewal: %s", fmtList(l.Total))
	}
	// A plain renewal keeps the total it was given last (10 CPUs); the default comes back only when asked.
	back := o
	back.Sandbox.Quota = rl(map[string]string{"requests.cpu": "4"})
	back.Given = handshake.Given{handshake.SettingQuota: true}
	if _, err := Authenticate(ctx, consumer.Cluster, provider.Cluster, back); err != nil {
		t.Fatal(err)
	}

	// Removing grants gives their share back.
	if err := grants.DeleteSliceProvider(ctx, provider.Cluster, "consumer", "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := grants.RevokeNamespace(ctx, provider.Cluster, "consumer", "ci"); err != nil {
		t.Fatal(err)
	}
	if !sandbox.SameQuota(tenantQuota(), total) {
		t.Errorf("with no grant left, the tenant quota is %s, want the total", fmtList(tenantQuota()))
	}
	if l := readLedgerOf(t, provider, "consumer"); len(l.Grants) != 0 {
		t.Errorf("the ledger still holds %v", slices.Sorted(maps.Keys(l.Grants)))
	}
	if _, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := provider.kube.CoreV1().ConfigMaps(member.SystemNamespace).Get(ctx, sandbox.GrantsLedgerName("consumer"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("unauthenticate left the ledger: %v", err)
	}
}

// A pairing from before the ledger: its grants are found from their namespaces, and a renewal records the
// ledger without refusing grants that overdraw the total.
func TestLedgerIsMadeUpFromExistingGrants(t *testing.T) {
	consumer, provider := pairedFakes(t)
	ctx := t.Context()
	if err := grants.GrantNamespace(ctx, provider.Cluster, grants.GrantNamespaceOptions{ConsumerID: "consumer", Name: "old", Quota: rl(map[string]string{"pods": "6"})}); err != nil {
		t.Fatal(err)
	}
	if err := provider.kube.CoreV1().ConfigMaps(member.SystemNamespace).Delete(ctx, sandbox.GrantsLedgerName("consumer"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := sandbox.ReadLedger(ctx, provider.Cluster, "consumer")
	if err != nil {
		t.Fatal(err)
	}
	if l.Cm != nil || l.Total != nil || len(l.Grants) != 1 || podsOf(l.Grants[sandbox.NamespaceGrantKey("old")]) != "6" {
		t.Fatalf("made up: %+v", l)
	}
	o := AuthenticateOptions{ConsumerID: "consumer", ProviderID: "provider", APIServer: "https://provider.example:6443", CA: testCAPEM, Expiration: time.Hour,
		Sandbox: sandbox.Options{Quota: rl(map[string]string{"pods": "5"})}, Given: handshake.Given{handshake.SettingQuota: true}}
	if _, err := Authenticate(ctx, consumer.Cluster, provider.Cluster, o); err != nil {
		t.Fatalf("a renewal over grants from before the ledger: %v", err)
	}
	l = readLedgerOf(t, provider, "consumer")
	if podsOf(l.Total) != "5" || podsOf(l.Grants[sandbox.NamespaceGrantKey("old")]) != "6" {
		t.Errorf("recorded: total %s, grants %v", fmtList(l.Total), l.Grants)
	}
	q, _ := sandbox.QuotaRead(provider.Cluster, member.TenantNamespace("consumer")).Get(ctx)
	if q.Spec.Hard.Pods().String() != "0" || sandbox.QuotaGeneration(q) <= 1 {
		t.Errorf("the tenant namespace keeps pods %s (generation %d), want 0 beyond a generation the deleted ledger left", q.Spec.Hard.Pods().String(), sandbox.QuotaGeneration(q))
	}
}

//go:build e2e

package e2e

// Totals: a tenant's namespaces on a provider share one total. Every kind the tenant role creates is
// counted; grants (slices, extra namespaces) are carved out of the total, so the hard limits of all of a
// tenant's ResourceQuotas never add up to more than it; a grant beyond what remains is refused with
// nothing created; concurrent grants never exceed the slice cap or the total; a removed grant's share
// goes back to the tenant namespace.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// A tenant creates Deployments and CronJobs until the quota refuses: the count read back as the
// administrator is the configured cap, not one more (120 of each were admitted before).
func TestTotalCountsWorkloadKinds(t *testing.T) {
	freshPairing(t)
	ctx := t.Context()
	_, cfg := issuedConfig(t)
	as := kubernetes.NewForConfigOrDie(unlimited(cfg))
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	waitQuotaSynced(t, admin, tenantNS)
	zero := int32(0)
	kinds := []struct {
		quota  string
		create func(i int) error
		count  func() int
	}{
		{"count/deployments.apps", func(i int) error {
			p := restrictedPod("")
			_, err := as.AppsV1().Deployments(tenantNS).Create(ctx, &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fill-%03d", i)},
				Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "fill"}},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "fill"}}, Spec: p.Spec}},
			}, metav1.CreateOptions{})
			return err
		}, func() int {
			l, err := admin.AppsV1().Deployments(tenantNS).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return len(l.Items)
		}},
		{"count/cronjobs.batch", func(i int) error {
			p := restrictedPod("")
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			suspend := true
			_, err := as.BatchV1().CronJobs(tenantNS).Create(ctx, &batchv1.CronJob{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fill-%03d", i)},
				Spec: batchv1.CronJobSpec{Schedule: "0 0 1 1 *", Suspend: &suspend, JobTemplate: batchv1.JobTemplateSpec{
					Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: p.Spec}}}},
			}, metav1.CreateOptions{})
			return err
		}, func() int {
			l, err := admin.BatchV1().CronJobs(tenantNS).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return len(l.Items)
		}},
	}
	total := sandbox.DefaultQuota()
	for _, k := range kinds {
		t.Run(k.quota, func(t *testing.T) {
			limit := total[corev1.ResourceName(k.quota)]
			capped := int(limit.Value())
			created := 0
			var refusal error
			for i := range 3 * capped {
				if err := k.create(i); err != nil {
					refusal = err
					break
				}
				created++
			}
			if !apierrors.IsForbidden(refusal) || !strings.Contains(refusal.Error(), quotaExceeded) || !strings.Contains(refusal.Error(), k.quota) {
				t.Errorf("after %d created, the refusal is %v, want Forbidden: %s ... %s", created, refusal, quotaExceeded, k.quota)
			}
			if n := k.count(); n != capped || created != capped {
				t.Errorf("%d created as the tenant, %d stored, want the cap %d", created, n, capped)
			}
			t.Logf("%s: %d created, the next refused: %s", k.quota, created, lastLine(refusal.Error()))
		})
	}
}

// quotasOf reads, as the administrator, the sandbox ResourceQuota of each of the consumer's namespaces on
// the provider (tenant, slices, extra ones), by namespace.
func quotasOf(t *testing.T, consumerID string) map[string]*corev1.ResourceQuota {
	t.Helper()
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	nss, err := admin.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{LabelSelector: member.LabelRemoteClusterID + "=" + consumerID +
		"," + labelRole + "=provider"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*corev1.ResourceQuota{}
	for _, ns := range nss.Items {
		q, err := admin.CoreV1().ResourceQuotas(ns.Name).Get(t.Context(), sandboxObject, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("ResourceQuota %s/%s: %v", ns.Name, sandboxObject, err)
		}
		out[ns.Name] = q
	}
	return out
}

// recordedTotal is the tenant's total as the provider recorded it (Tenant status.sandbox.quota).
func recordedTotal(t *testing.T) corev1.ResourceList {
	t.Helper()
	tn, err := dyn(t, provider).Resource(tenantsGVR).Namespace(tenantNS).Get(t.Context(), "consumer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := unstructured.NestedStringMap(tn.Object, "status", "sandbox", "quota")
	if err != nil || len(m) == 0 {
		t.Fatalf("Tenant status.sandbox.quota: %v %v", m, err)
	}
	out := corev1.ResourceList{}
	for k, v := range m {
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

// checkSumWithinTotal proves, as the administrator, that the hard limits of all of the consumer's quotas
// add up to no more than its total, resource by resource (spec, and status once the controller synced);
// it returns the sum.
func checkSumWithinTotal(t *testing.T, total corev1.ResourceList, quotas map[string]*corev1.ResourceQuota) corev1.ResourceList {
	t.Helper()
	sum, enforced := corev1.ResourceList{}, corev1.ResourceList{}
	for _, q := range quotas {
		for name, v := range q.Spec.Hard {
			s := sum[name]
			s.Add(v)
			sum[name] = s
		}
		for name, v := range q.Status.Hard {
			s := enforced[name]
			s.Add(v)
			enforced[name] = s
		}
	}
	for _, name := range slices.Sorted(maps.Keys(total)) {
		tq := total[name]
		for what, l := range map[string]corev1.ResourceList{"spec.hard": sum, "status.hard": enforced} {
			if s := l[name]; s.Cmp(tq) > 0 {
				t.Errorf("the %d quotas' %s of %s add up to %s, over the total %s", len(quotas), what, name, s.String(), tq.String())
			}
		}
	}
	return sum
}

// The done-means of the total: an extra namespace and a slice are carved out of it (the per-resource sum
// of all the tenant's quotas stays within it, and equals it); a slice beyond what remains is refused with
// the remaining amounts and nothing created; deleting a slice gives its share back, enough for the slice
// refused before.
func TestTotalCarvedByGrants(t *testing.T) {
	freshPairing(t)
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	const sliceName, bigName, nsName = "e2e-carved", "e2e-beyond", "e2e-carved-ns"
	mustOn(t, consumer, "request", "namespace", nsName, "--remote-kubeconfig", provider.Kubeconfig)
	mustOn(t, consumer, "create", "resourceslice", sliceName, "--cpu", "1", "--memory", "1Gi", "--remote-kubeconfig", provider.Kubeconfig)
	total := recordedTotal(t)
	for _, ns := range []string{tenantNS, nsName, member.SliceNamespace("consumer", sliceName)} {
		waitQuotaSynced(t, admin, ns)
	}
	quotas := quotasOf(t, "consumer")
	if len(quotas) != 3 {
		t.Fatalf("the consumer's quotas: %v, want the tenant namespace, %s and the slice's", slices.Sorted(maps.Keys(quotas)), nsName)
	}
	sum := checkSumWithinTotal(t, total, quotas)
	for name, tq := range total {
		if s := sum[name]; s.Cmp(tq) != 0 {
			t.Errorf("the quotas' %s add up to %s, want all of the total %s (the tenant namespace keeps the rest)", name, s.String(), tq.String())
		}
	}
	shareBefore := quotas[tenantNS].Spec.Hard.DeepCopy()
	t.Logf("tenant namespace's share with an extra namespace and a slice: %s", sandbox.FormatResourceList(formatList(shareBefore)))

	// A slice beyond what remains (4 CPUs in all: 1 for the extra namespace, 1 for the slice, 0 used):
	// refused, naming what remains, and nothing is created.
	mustOn(t, consumer, "create", "resourceslice", bigName, "--cpu", "3", "--memory", "1Gi", "--remote-cluster-id", "provider")
	before := grantSnapshot(t)
	r := on(t, provider, "accept", "resourceslice", bigName, "--remote-cluster-id", "consumer")
	t.Logf("%s", lastLine(r.stderr))
	if r.code != 1 || !strings.Contains(r.stderr, `needs more than remains of consumer "consumer"'s total: `) || !strings.Contains(r.stderr, "(2 remains)") ||
		strings.Contains(r.stderr, "configmaps") {
		t.Errorf("accept of a slice beyond what remains: want exit 1 naming what does not fit and what remains of it (requests.cpu: 2), and nothing else: %s", r)
	}
	if d := before.diff(grantSnapshot(t)); len(d) > 0 {
		t.Errorf("a refused slice changed the clusters:\n%s", strings.Join(d, "\n"))
	}
	bigNS := member.SliceNamespace("consumer", bigName)
	if _, err := admin.CoreV1().Namespaces().Get(ctx, bigNS, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s exists after the refusal (err = %v)", bigNS, err)
	}
	if _, err := admin.RbacV1().RoleBindings(bigNS).Get(ctx, member.RoleBindingName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("RoleBinding %s/%s exists after the refusal (err = %v)", bigNS, member.RoleBindingName, err)
	}
	csrs, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: member.LabelSlice + "=" + bigName})
	if err != nil || len(csrs.Items) > 0 {
		t.Errorf("CSRs of the refused slice: %d (err = %v)", len(csrs.Items), err)
	}

	// Deleting the slice gives its share back: the tenant namespace has it again, and the slice refused
	// before now fits.
	mustOn(t, provider, "delete", "resourceslice", sliceName, "--remote-cluster-id", "consumer")
	quotas = quotasOf(t, "consumer")
	share := quotas[tenantNS].Spec.Hard
	sliceQuota := shareBefore.DeepCopy()
	for name, q := range share {
		back := q.DeepCopy()
		back.Sub(shareBefore[name])
		sliceQuota[name] = back
	}
	for name, want := range map[string]string{"requests.cpu": "1", "limits.cpu": "1", "requests.memory": "1Gi", "pods": "4", "secrets": "4"} {
		if got := sliceQuota[corev1.ResourceName(name)]; got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("after the slice's deletion the tenant namespace got %s more %s, want its share %s", got.String(), name, want)
		}
	}
	checkSumWithinTotal(t, total, quotas)
	l, err := admin.CoreV1().ConfigMaps(member.SystemNamespace).Get(ctx, sandbox.GrantsLedgerName("consumer"), metav1.GetOptions{})
	if err != nil || l.Data["slice."+sliceName] != "" || l.Data["namespace."+nsName] == "" {
		t.Errorf("the ledger after the deletion: %v (err = %v)", l.Data, err)
	}
	r = mustOn(t, provider, "accept", "resourceslice", bigName, "--remote-cluster-id", "consumer")
	if !strings.Contains(r.stdout, "cpu=3") {
		t.Errorf("the slice refused before, once the share was back: %s", r)
	}
	checkSumWithinTotal(t, total, quotasOf(t, "consumer"))
}

// Twelve accepts at once against the cap of 10 slices, and against a total that fits only 5: never more
// slice namespaces than allowed, whatever the order the runs land in; every refusal names the cap or the
// remaining amounts; the quotas still add up to no more than the total.
func TestTotalConcurrentAccepts(t *testing.T) {
	const class, asked = "e2e-tiny", 12
	// A class whose slices take little of what they do not ask for, so ten of them fit in the total.
	newSliceClass(t, class, "--max-pods", "1", "--max-ephemeral-storage", "1Gi", "--max-quota",
		"requests.storage=0,persistentvolumeclaims=0,services=0,secrets=1,configmaps=1,count/pods=2,count/deployments.apps=0,"+
			"count/statefulsets.apps=0,count/replicasets.apps=0,count/jobs.batch=0,count/cronjobs.batch=0,count/controllerrevisions.apps=0,"+
			"count/endpointslices.discovery.k8s.io=0")
	rounds := []struct {
		name  string
		quota string // the total, over the defaults: room for the 12 requests, and the CPU for some
		want  int
		why   string
	}{
		{"cap", "count/resourceslices.federate.dev=20", sandbox.MaxSlicesPerConsumer, "already holds 10 resource slices"},
		{"total", "count/resourceslices.federate.dev=20,requests.cpu=500m", 5, `more than remains of consumer "consumer"'s total`},
		{"cap again", "count/resourceslices.federate.dev=20", sandbox.MaxSlicesPerConsumer, "already holds 10 resource slices"},
	}
	for n, round := range rounds {
		t.Run(round.name, func(t *testing.T) {
			freshPairing(t, "--quota", round.quota)
			names, requests := make([]string, asked), make([]result, asked)
			var wg sync.WaitGroup
			for i := range names {
				names[i] = fmt.Sprintf("e2e-r%d-%02d", n, i)
				wg.Go(func() {
					requests[i] = on(t, consumer, "create", "resourceslice", names[i], "--remote-cluster-id", "provider", "--class", class,
						"--cpu", "100m", "--memory", "64Mi", "--pods", "1")
				})
			}
			wg.Wait()
			for i, r := range requests {
				if r.code != 0 {
					t.Fatalf("create resourceslice %s: %s", names[i], r)
				}
			}
			results := make([]result, asked)
			for i := range names {
				wg.Go(func() {
					results[i] = on(t, provider, "accept", "resourceslice", names[i], "--remote-cluster-id", "consumer")
				})
			}
			wg.Wait()
			accepted := 0
			for i, r := range results {
				switch {
				case r.code == 0:
					accepted++
				case !strings.Contains(r.stderr, round.why):
					t.Errorf("accept %s: refused, but not for %q: %s", names[i], round.why, r)
				}
			}
			admin := kubernetes.NewForConfigOrDie(provider.Config)
			nss, err := admin.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{LabelSelector: member.LabelRemoteClusterID + "=consumer," +
				member.LabelNamespaceKind + "=" + member.KindSlice})
			if err != nil {
				t.Fatal(err)
			}
			if accepted != round.want || len(nss.Items) != round.want {
				t.Errorf("%d of %d concurrent accepts succeeded, %d slice namespaces exist; want %d", accepted, asked, len(nss.Items), round.want)
			}
			for _, ns := range nss.Items {
				waitQuotaSynced(t, admin, ns.Name)
			}
			checkSumWithinTotal(t, recordedTotal(t), quotasOf(t, "consumer"))
			t.Logf("round %q: %d accepted, %d refused", round.name, accepted, asked-accepted)
		})
	}
}

func formatList(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

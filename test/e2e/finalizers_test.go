//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// A tenant cannot add a finalizer that nothing serves (found by attack: one in the tenant namespace kept
// it terminating forever, and unauthenticate and a new pairing with it). The attack is performed with the
// tenant's own identity on a real provider; it is refused, nothing is stored, and removal then finishes.
func TestTenantCannotAddFinalizers(t *testing.T) {
	authenticate(t)
	defer unauthenticate(t)
	_, cfg := issuedConfig(t)
	tenant := clientFor(t, cfg)
	ns := "federate-tenant-consumer"
	ctx := t.Context()
	stuck := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stuck", Finalizers: []string{"example.com/never"}}}
	// The policy is loaded by the API server about a second after init created it: retry a refusal for a
	// bounded time, then require it.
	deadline := time.Now().Add(20 * time.Second)
	var err error
	for {
		_, err = tenant.CoreV1().ConfigMaps(ns).Create(ctx, stuck, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond) //nolint:forbidigo // polling an admission policy's load, which has no watch
	}
	if err == nil || !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "finalizers") {
		t.Fatalf("a ConfigMap with a finalizer nothing serves: %v, want refused by the sandbox", err)
	}
	if _, err := tenant.CoreV1().ConfigMaps(ns).Create(ctx, stuck, metav1.CreateOptions{}); err == nil {
		t.Fatal("created for real")
	}
	if _, err := tenant.CoreV1().ConfigMaps(ns).Get(ctx, "stuck", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the refused ConfigMap exists: %v", err)
	}
	// Adding one later, by patch, is refused the same way.
	plain, err := tenant.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tenant.CoreV1().ConfigMaps(ns).Patch(ctx, plain.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/never"]}}`), metav1.PatchOptions{}); err == nil {
		t.Fatal("a finalizer added by patch")
	}
	// Nor through a template, which a controller copies onto the objects it creates under its own name.
	never := []string{"example.com/never"}
	tmpl := func(fin []string) corev1.PodTemplateSpec {
		p := restrictedPod("")
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}, Finalizers: fin}, Spec: p.Spec}
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	apps := tenant.AppsV1().Deployments(ns)
	if _, err := apps.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "fin"}, Spec: appsv1.DeploymentSpec{Selector: sel, Template: tmpl(never)}}, dry); !byFinalizerPolicy(err) {
		t.Error("a Deployment whose pods would carry a finalizer nothing serves")
	}
	if _, err := apps.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: appsv1.DeploymentSpec{Selector: sel, Template: tmpl(nil)}}, dry); err != nil {
		t.Errorf("a plain Deployment: %v", err)
	}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "fin"}, Spec: appsv1.StatefulSetSpec{Selector: sel, Template: tmpl(nil),
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "d", Finalizers: never}, Spec: pvcSpec()}}}}
	if _, err := tenant.AppsV1().StatefulSets(ns).Create(ctx, sts, dry); !byFinalizerPolicy(err) {
		t.Error("a StatefulSet whose PVCs would carry a finalizer nothing serves")
	}
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "fin"}, Spec: batchv1.CronJobSpec{Schedule: "@daily", JobTemplate: batchv1.JobTemplateSpec{
		Spec: batchv1.JobSpec{Template: tmpl(never)}}}}
	cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	if _, err := tenant.BatchV1().CronJobs(ns).Create(ctx, cj, dry); !byFinalizerPolicy(err) {
		t.Error("a CronJob whose pods would carry a finalizer nothing serves")
	}
	// What Kubernetes itself adds is kept working: a PVC gets the API server's protection finalizer.
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: pvcSpec()}
	if _, err := tenant.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a plain PVC: %v", err)
	}
}

// pvcSpec names a storage class: the sandbox refuses a claim without one (it would bind any PersistentVolume
// that has none), and the test clusters have no default class to fill it in. No class of that name exists,
// so the claim stays pending.
func pvcSpec() corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		StorageClassName: new("federate-e2e-pending"),
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}
}

// byFinalizerPolicy reports whether err is the sandbox's template policy refusing a request.
func byFinalizerPolicy(err error) bool {
	return err != nil && strings.Contains(err.Error(), "templates must not carry finalizers")
}

// Removal finishes even when an object in a granted namespace carries a finalizer nothing will remove
// (a tenant can orphan a controller's finalizer; here the administrator plants one, which no policy
// matches): revoke namespace waits a while, then removes the leftover finalizers, and the namespace goes.
func TestRemovalClearsOrphanedFinalizers(t *testing.T) {
	freshPairing(t)
	const extra = "e2e-stuck"
	mustOn(t, provider, "grant", "namespace", extra, "--remote-cluster-id", "consumer")
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	ctx := t.Context()
	if _, err := admin.CoreV1().ConfigMaps(extra).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stuck",
		Finalizers: []string{"example.com/never"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := mustOn(t, provider, "revoke", "namespace", extra, "--remote-cluster-id", "consumer")
	if !strings.Contains(r.stderr, "removing the finalizers") {
		t.Errorf("revoke namespace did not say it cleared finalizers: %s", r)
	}
	if _, err := admin.CoreV1().Namespaces().Get(ctx, extra, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after revoke namespace: %v", extra, err)
	}
}

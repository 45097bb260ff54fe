package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	// What Kubernetes itself adds is kept working: a PVC gets the API server's protection finalizer.
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
	if _, err := tenant.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a plain PVC: %v", err)
	}
}

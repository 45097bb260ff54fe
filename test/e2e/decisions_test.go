//go:build e2e

package e2e

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// The provider's decisions hold against the tenant, which may create, replace and withdraw its own
// requests (attacks found by a review on real clusters, replayed here with the tenant's own identity):
// a decoy request under another name cannot get a class without auto-accept granted by the unattended
// `accept --pending`, and a slice the provider deleted is not granted again when its request is replayed.
func TestProviderDecisionsHoldAgainstTheTenant(t *testing.T) {
	freshPairing(t)
	newSliceClass(t, "e2e-auto", "--max-cpu", "1", "--max-memory", "1Gi", "--auto-accept")
	newSliceClass(t, "e2e-manual", "--pod-security", "privileged")
	_, cfg := issuedConfig(t)
	tenant := dynamic.NewForConfigOrDie(cfg).Resource(v1alpha1.ResourceSliceGVR).Namespace(tenantNS)
	ctx := t.Context()

	// 1. A decoy: named otherwise, claiming the big request's slice and an auto-accept class.
	mustOn(t, consumer, "create", "resourceslice", "e2e-big", "--remote-cluster-id", "provider", "--cpu", "4", "--memory", "4Gi", "--class", "e2e-manual")
	decoy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.APIVersion, "kind": v1alpha1.ResourceSliceKind,
		"metadata": map[string]any{"name": "e2e-decoy"},
		"spec": map[string]any{"clusterID": "consumer", "providerClusterID": "provider", "slice": "e2e-big", "class": "e2e-auto",
			"resources": map[string]any{"cpu": "1", "memory": "1Gi"}, "csr": "AA==", "signature": "AA=="},
	}}
	if _, err := tenant.Create(ctx, decoy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the tenant leaves a decoy: %v", err)
	}
	r := on(t, provider, "accept", "resourceslice", "--pending")
	if strings.Contains(r.stdout, "e2e-big") {
		t.Errorf("the unattended accept granted a slice of a class without auto-accept: %s", r)
	}
	if s := providerSlice(t, "consumer", "e2e-big"); s != nil && s.Status.Phase == grants.SliceAccepted {
		t.Errorf("e2e-big is %s", s.Status.Phase)
	}
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	if _, err := admin.CoreV1().Namespaces().Get(ctx, member.SliceNamespace("consumer", "e2e-big"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the big slice's namespace exists: %v", err)
	}

	// 2. Granted, deleted by the provider, replayed by the tenant: not granted again.
	mustOn(t, consumer, "create", "resourceslice", "e2e-replay", "--remote-cluster-id", "provider", "--cpu", "1", "--memory", "1Gi", "--class", "e2e-auto")
	mustOn(t, provider, "accept", "resourceslice", "e2e-replay", "--remote-cluster-id", "consumer")
	saved, err := tenant.Get(ctx, "e2e-replay", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustOn(t, provider, "delete", "resourceslice", "e2e-replay", "--remote-cluster-id", "consumer")
	replay := &unstructured.Unstructured{Object: map[string]any{"apiVersion": saved.GetAPIVersion(), "kind": saved.GetKind(),
		"metadata": map[string]any{"name": "e2e-replay"}, "spec": saved.Object["spec"]}}
	if _, err := tenant.Create(ctx, replay, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the tenant replays its request: %v", err)
	}
	for _, args := range [][]string{{"accept", "resourceslice", "--pending"}, {"accept", "resourceslice", "e2e-replay", "--remote-cluster-id", "consumer"}} {
		if r := on(t, provider, args...); r.code == 0 || !strings.Contains(r.stderr, "revoked") {
			t.Errorf("%s after the replay: %s, want refused as revoked", strings.Join(args, " "), r)
		}
	}
	if _, err := admin.CoreV1().Namespaces().Get(ctx, member.SliceNamespace("consumer", "e2e-replay"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the deleted slice's namespace is back: %v", err)
	}
}

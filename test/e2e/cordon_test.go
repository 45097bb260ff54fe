package e2e

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// cordon keeps a tenant from starting anything new while what runs keeps running (its controllers still
// replace pods), in every namespace it was granted; uncordon lifts it; drain also deletes what runs.
// Each shows on the Tenant and in status.
func TestCordonAndDrain(t *testing.T) {
	defer unauthenticate(t)
	authenticate(t)
	mustRun(t, "", "create", "resourceslice", "cordon-s1", "--cpu", "1", "--memory", "1Gi",
		"--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
	_, cfg := issuedConfig(t)
	tenant := kubernetes.NewForConfigOrDie(cfg)
	startTenantWorkloads(t, tenant)
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	ctx := t.Context()

	r := mustOn(t, provider, "cordon", "tenant", "consumer")
	if r.stdout != "tenant/consumer cordoned\n" {
		t.Errorf("cordon stdout: %q", r.stdout)
	}
	for _, ns := range []string{tenantNS, handshake.SliceNamespace("consumer", "cordon-s1")} {
		live, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil || live.Labels[handshake.LabelCordoned] != "true" {
			t.Errorf("namespace %s after cordon: %v %v", ns, live.Labels, err)
		}
	}
	if st := tenantStatus(t, provider); !st.Cordoned {
		t.Error("the Tenant does not say cordoned")
	}
	if !strings.Contains(mustOn(t, provider, "status").stdout, "yes") {
		t.Error("status does not show the tenant cordoned")
	}

	// Refused at once: a pod, a Deployment, a scale-up (through /scale and through the object).
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cordoned-pod"}, Spec: restrictedPodSpec()}
	if _, err := tenant.CoreV1().Pods(tenantNS).Create(ctx, pod, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "cordoned") {
		t.Errorf("a cordoned tenant created a pod: %v", err)
	}
	one := int32(1)
	labels := map[string]string{"app": "cordoned"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "cordoned"}, Spec: appsv1.DeploymentSpec{Replicas: &one,
		Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: restrictedPodSpec()}}}
	if _, err := tenant.AppsV1().Deployments(tenantNS).Create(ctx, dep, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "cordoned") {
		t.Errorf("a cordoned tenant created a Deployment: %v", err)
	}
	if _, err := tenant.AppsV1().Deployments(tenantNS).UpdateScale(ctx, "e2e-revoke", &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-revoke", Namespace: tenantNS}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}}, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "scale workloads up") {
		t.Errorf("a cordoned tenant scaled up through /scale: %v", err)
	}
	live, err := tenant.AppsV1().Deployments(tenantNS).Get(ctx, "e2e-revoke", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	three := int32(3)
	live.Spec.Replicas = &three
	if _, err := tenant.AppsV1().Deployments(tenantNS).Update(ctx, live, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "scale workloads up") {
		t.Errorf("a cordoned tenant scaled up by update: %v", err)
	}
	// What runs keeps running: the Deployment's controller replaces a pod deleted under it.
	pods, err := admin.CoreV1().Pods(tenantNS).List(ctx, metav1.ListOptions{LabelSelector: "app=e2e-revoke"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the Deployment's pods: %v %v", pods, err)
	}
	if err := tenant.CoreV1().Pods(tenantNS).Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("a cordoned tenant may still delete its pods: %v", err)
	}
	if n := waitCount(t, dyn(t, provider), podsGVR, tenantNS, func(n int) bool { return n >= 2 }, 30*time.Second); n < 2 {
		t.Errorf("the controller did not replace the deleted pod while cordoned (%d pods)", n)
	}

	// Uncordon: allowed again.
	mustOn(t, provider, "uncordon", "tenant", "consumer")
	if st := tenantStatus(t, provider); st.Cordoned {
		t.Error("the Tenant still says cordoned")
	}
	if _, err := tenant.CoreV1().Pods(tenantNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Errorf("an uncordoned tenant cannot create a pod: %v", err)
	}

	// Drain: cordoned, and nothing runs.
	if r := mustOn(t, provider, "drain", "tenant", "consumer"); r.stdout != "tenant/consumer drained\n" {
		t.Errorf("drain stdout: %q", r.stdout)
	}
	if n := waitCount(t, dyn(t, provider), replicaSetsGVR, tenantNS, func(n int) bool { return n == 0 }, 30*time.Second); n != 0 {
		t.Errorf("%d ReplicaSets left after drain", n)
	}
	if n := waitCount(t, dyn(t, provider), podsGVR, tenantNS, func(n int) bool { return n == 0 }, 60*time.Second); n != 0 {
		t.Errorf("%d pods left after drain", n)
	}
	if st := tenantStatus(t, provider); !st.Cordoned {
		t.Error("drain left the Tenant uncordoned")
	}
	if _, err := tenant.CoreV1().ConfigMaps(tenantNS).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("a drained tenant lost its rights: %v", err)
	}
	hasEvent(t, provider, time.Now().Add(-10*time.Minute), "Cordoned", "Uncordoned", "Drained")
	// An unknown consumer: a clear error, nothing labelled.
	if r := cli(t, "", "cordon", "tenant", "nobody", "--kubeconfig", provider.Kubeconfig); r.code != 1 || !strings.Contains(r.stderr, `consumer "nobody" has no Tenant`) {
		t.Errorf("cordon of an unknown consumer: %s", r)
	}
}

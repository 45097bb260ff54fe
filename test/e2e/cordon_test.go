//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// cordon keeps a tenant from starting anything new while what runs keeps running (its controllers replace
// nothing until it is uncordoned), in every namespace it was granted; uncordon lifts it; drain also deletes what runs.
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
	// A suspended Job and CronJob: what a cordoned tenant could otherwise start by resuming them.
	jobSpec := func() batchv1.JobSpec {
		spec := restrictedPodSpec()
		spec.RestartPolicy = corev1.RestartPolicyNever
		return batchv1.JobSpec{Suspend: new(true), Parallelism: new(int32(1)), Template: corev1.PodTemplateSpec{Spec: spec}}
	}
	if _, err := tenant.BatchV1().Jobs(tenantNS).Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "cordon-job"}, Spec: jobSpec()}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tenant.BatchV1().CronJobs(tenantNS).Create(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "cordon-cronjob"},
		Spec: batchv1.CronJobSpec{Schedule: "* * * * *", Suspend: new(true), JobTemplate: batchv1.JobTemplateSpec{Spec: jobSpec()}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	r := mustOn(t, provider, "cordon", "tenant", "consumer")
	if r.stdout != "tenant/consumer cordoned\n" {
		t.Errorf("cordon stdout: %q", r.stdout)
	}
	for _, ns := range []string{tenantNS, member.SliceNamespace("consumer", "cordon-s1")} {
		live, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil || live.Labels[sandbox.LabelCordoned] != "true" {
			t.Errorf("namespace %s after cordon: %v %v", ns, live.Labels, err)
		}
	}
	if st := tenantStatus(t, provider); !st.Cordoned {
		t.Error("the Tenant does not say cordoned")
	}
	if !strings.Contains(mustOn(t, provider, "status").stdout, "Active,Cordoned") {
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
	// Nor more of a Job's pods at once, nor a suspended Job or CronJob resumed (to true -> false, or removed).
	for _, try := range []struct {
		name, kind, patch, want string
	}{
		{"raise a Job's parallelism", "jobs", `{"spec":{"parallelism":3}}`, "raise a Job's parallelism"},
		{"resume a Job", "jobs", `{"spec":{"suspend":false}}`, "resume a suspended Job or CronJob"},
		{"resume a Job by removing suspend", "jobs", `{"spec":{"suspend":null}}`, "resume a suspended Job or CronJob"},
		{"resume a CronJob", "cronjobs", `{"spec":{"suspend":false}}`, "resume a suspended Job or CronJob"},
	} {
		var err error
		if try.kind == "jobs" {
			_, err = tenant.BatchV1().Jobs(tenantNS).Patch(ctx, "cordon-job", types.MergePatchType, []byte(try.patch), metav1.PatchOptions{})
		} else {
			_, err = tenant.BatchV1().CronJobs(tenantNS).Patch(ctx, "cordon-cronjob", types.MergePatchType, []byte(try.patch), metav1.PatchOptions{})
		}
		if err == nil || !strings.Contains(err.Error(), try.want) {
			t.Errorf("a cordoned tenant tried to %s: err = %v, want refused (%s)", try.name, err, try.want)
		}
	}
	job, err := admin.BatchV1().Jobs(tenantNS).Get(ctx, "cordon-job", metav1.GetOptions{})
	if err != nil || job.Spec.Suspend == nil || !*job.Spec.Suspend || job.Spec.Parallelism == nil || *job.Spec.Parallelism != 1 {
		t.Errorf("the Job changed while cordoned: %+v %v", job, err)
	}
	cron, err := admin.BatchV1().CronJobs(tenantNS).Get(ctx, "cordon-cronjob", metav1.GetOptions{})
	if err != nil || cron.Spec.Suspend == nil || !*cron.Spec.Suspend {
		t.Errorf("the CronJob was resumed while cordoned: %+v %v", cron, err)
	}
	// Lowering is allowed: what runs may shrink.
	if _, err := tenant.BatchV1().Jobs(tenantNS).Patch(ctx, "cordon-job", types.MergePatchType, []byte(`{"spec":{"parallelism":0}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("a cordoned tenant lowering a Job's parallelism: %v", err)
	}

	// What runs keeps running, but nothing new starts (issue 43): a pod deleted under the Deployment is
	// not replaced while cordoned; its controller is refused by the cordon.
	pods, err := admin.CoreV1().Pods(tenantNS).List(ctx, metav1.ListOptions{LabelSelector: "app=e2e-revoke"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the Deployment's pods: %v %v", pods, err)
	}
	if err := tenant.CoreV1().Pods(tenantNS).Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("a cordoned tenant may still delete its pods: %v", err)
	}
	if msg := waitControllerRefused(t, admin, tenantNS, "ReplicaSet", pods.Items[0].OwnerReferences[0].Name, byCordon, watchTimeout); msg == "" {
		t.Errorf("the ReplicaSet controller's replacement was not refused by the cordon")
	}
	if l, err := admin.CoreV1().Pods(tenantNS).List(ctx, metav1.ListOptions{LabelSelector: "app=e2e-revoke"}); err != nil || len(l.Items) != 0 {
		t.Errorf("the Deployment's pods while cordoned: %d (%v), want none: the deleted one is not replaced", len(l.Items), err)
	}

	// Uncordon: allowed again, and the controller catches up.
	mustOn(t, provider, "uncordon", "tenant", "consumer")
	if st := tenantStatus(t, provider); st.Cordoned {
		t.Error("the Tenant still says cordoned")
	}
	if _, err := tenant.CoreV1().Pods(tenantNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Errorf("an uncordoned tenant cannot create a pod: %v", err)
	}
	if n := waitCount(t, dyn(t, provider), podsGVR, tenantNS, func(n int) bool { return n >= 3 }, 30*time.Second); n < 3 {
		t.Errorf("after uncordon the controller did not replace the deleted pod (%d pods)", n)
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
	if r := cli(t, "", "cordon", "tenant", "nobody", "--kubeconfig", provider.Kubeconfig); r.code != 1 || !strings.Contains(r.stderr, `consumer "nobody" not found`) {
		t.Errorf("cordon of an unknown consumer: %s", r)
	}
}

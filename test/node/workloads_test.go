//go:build e2e

package node

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// TestWorkloads runs what a tenant runs first, with its own kubeconfig, in the pairing's tenant namespace
// and in a resource slice's namespace: a Deployment that becomes Available, a Job that completes, and a
// CronJob whose first Job completes. Each runs under the sandbox as installed (Pod Security restricted,
// the LimitRange, the quota), so a default that blocks real pods fails here.
func TestWorkloads(t *testing.T) {
	for _, tn := range []*tenant{pair(t, consumer), slice(t)} {
		t.Run(strings.ReplaceAll(tn.id, "/", "-"), func(t *testing.T) {
			t.Parallel() // each waits up to a minute for its CronJob's first Job
			ctx := t.Context()
			ns := tn.namespace
			// The CronJob first: its controller starts a Job at the next minute, while the rest runs.
			cron := &batchv1.CronJob{
				ObjectMeta: metav1.ObjectMeta{Name: "tick"},
				Spec: batchv1.CronJobSpec{
					Schedule: "* * * * *", ConcurrencyPolicy: batchv1.ForbidConcurrent,
					SuccessfulJobsHistoryLimit: new(int32(1)), FailedJobsHistoryLimit: new(int32(1)),
					JobTemplate: batchv1.JobTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"cron": "tick"}}, Spec: jobSpec("tick")},
				},
			}
			if _, err := tn.client.BatchV1().CronJobs(ns).Create(ctx, cron, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating CronJob as %s: %v", tn.id, err)
			}
			labels := map[string]string{"app": "web"}
			deploy := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "web"},
				Spec: appsv1.DeploymentSpec{
					Replicas: new(int32(1)),
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: probeSpec()},
				},
			}
			if _, err := tn.client.AppsV1().Deployments(ns).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating Deployment as %s: %v", tn.id, err)
			}
			mustKubectl(t, tn.kubeconfig, "rollout", "status", "-n", ns, "deployment/web", "--timeout=120s")
			pods := mustKubectl(t, tn.kubeconfig, "get", "pods", "-n", ns, "-l", "app=web", "-o", "jsonpath={.items[*].status.phase}")
			if strings.TrimSpace(pods.stdout) != "Running" {
				t.Fatalf("the Deployment's pod is %q, want Running", pods.stdout)
			}

			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "once"}, Spec: jobSpec("done")}
			if _, err := tn.client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating Job as %s: %v", tn.id, err)
			}
			mustKubectl(t, tn.kubeconfig, "wait", "-n", ns, "--for=condition=Complete", "job/once", "--timeout=120s")
			if logs := mustKubectl(t, tn.kubeconfig, "logs", "-n", ns, "job/once"); strings.TrimSpace(logs.stdout) != "done" {
				t.Fatalf("the Job's log is %q, want \"done\"", logs.stdout)
			}

			name := waitJob(t, tn.client, ns, "cron=tick", 150*time.Second)
			if logs := mustKubectl(t, tn.kubeconfig, "logs", "-n", ns, "job/"+name); strings.TrimSpace(logs.stdout) != "tick" {
				t.Fatalf("the CronJob's Job %s logged %q, want \"tick\"", name, logs.stdout)
			}
			// Leave the namespace as found: the quota test counts its pods.
			background := metav1.DeletePropagationBackground
			for _, del := range []func() error{
				func() error {
					return tn.client.BatchV1().CronJobs(ns).Delete(ctx, "tick", metav1.DeleteOptions{PropagationPolicy: &background})
				},
				func() error {
					return tn.client.BatchV1().Jobs(ns).Delete(ctx, "once", metav1.DeleteOptions{PropagationPolicy: &background})
				},
				func() error {
					return tn.client.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: &background})
				},
			} {
				if err := del(); err != nil && !apierrors.IsNotFound(err) {
					t.Fatal(err)
				}
			}
		})
	}
}

// waitJob watches the Jobs matching selector until one has completed and returns its name; a Job that
// fails fails the test.
func waitJob(t *testing.T, cs kubernetes.Interface, ns, selector string, timeout time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	w, err := cs.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		job, ok := ev.Object.(*batchv1.Job)
		if !ok || ev.Type == watch.Deleted {
			continue
		}
		for _, c := range job.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case batchv1.JobComplete:
				return job.Name
			case batchv1.JobFailed:
				t.Fatalf("Job %s/%s failed: %s", ns, job.Name, c.Message)
			}
		}
	}
	t.Fatalf("no Job %s in %s completed within %s", selector, ns, timeout)
	return ""
}

// TestQuotaEdge fills the slice's pod quota (2 pods, its class's maximum) with running pods as the slice's identity, then
// creates one more: it is refused by the quota, the running pods keep running and answering, and once one
// is deleted the next pod is admitted and runs.
func TestQuotaEdge(t *testing.T) {
	tn := slice(t)
	ctx := t.Context()
	ns := tn.namespace
	// What earlier tests ran here is gone first: the quota counts a pod until it is.
	waitNoPods(t, ns, 120*time.Second)
	q, err := tn.client.CoreV1().ResourceQuotas(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("reading the quota as %s: %v", tn.id, err)
	}
	free := -1
	for _, rq := range q.Items {
		if hard, ok := rq.Spec.Hard[corev1.ResourcePods]; ok && (free < 0 || int(hard.Value()) < free) {
			free = int(hard.Value())
		}
	}
	if free < 1 {
		t.Fatalf("the slice's quota allows %d pods (quotas %+v); the test needs at least one", free, q.Items)
	}
	var running []string
	for i := range free {
		p := startPod(t, tn.client, tn.kubeconfig, ns, probePod("edge-"+string(rune('a'+i))))
		running = append(running, p.Name)
	}
	_, err = tn.client.CoreV1().Pods(ns).Create(ctx, probePod("edge-over"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota") {
		t.Fatalf("a pod over the quota: got %v, want Forbidden: exceeded quota", err)
	}
	if _, err := admin(t).CoreV1().Pods(ns).Get(ctx, "edge-over", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the refused pod: got %v, want NotFound", err)
	}
	for _, name := range running {
		out := mustKubectl(t, tn.kubeconfig, "exec", "-n", ns, name, "--", "/probe", "get", "http://127.0.0.1:8080/")
		if !strings.Contains(out.stdout, "probe "+name) {
			t.Fatalf("pod %s after the refusal answered %q", name, out.stdout)
		}
	}
	if err := tn.client.CoreV1().Pods(ns).Delete(ctx, running[0], metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, tn.kubeconfig, "wait", "-n", ns, "--for=delete", "pod/"+running[0], "--timeout=60s")
	startPod(t, tn.client, tn.kubeconfig, ns, probePod("edge-next"))
	for _, name := range append(running[1:], "edge-next") {
		if err := tn.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
			t.Fatal(err)
		}
	}
}

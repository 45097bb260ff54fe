//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Done (issue 19, finding 6): revoke races the RBAC cache no more. A tenant creating CronJobs,
// Deployments, Jobs and Pods as fast as it can while its provider revokes it leaves nothing behind: every
// object it made is gone when revoke returns (what controllers made from them goes with them), and its
// next request is refused. Twenty times, each after a renewal.
func TestRevokeConvergesUnderLoad(t *testing.T) {
	freshPairing(t)
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	const rounds = 20
	var made atomic.Int64
	for round := range rounds {
		if round > 0 {
			authenticate(t)
		}
		_, cfg := issuedConfig(t)
		tenant := kubernetes.NewForConfigOrDie(unlimited(cfg))
		stop := createInLoop(t, tenant, fmt.Sprintf("r%d", round), &made)
		mustOn(t, provider, "revoke", "--remote-cluster-id", "consumer")
		stop()
		if left := tenantMade(t, admin); len(left) > 0 {
			t.Fatalf("round %d: revoke left %v", round, left)
		}
		if err := createOne(t.Context(), tenant, fmt.Sprintf("r%d-after", round), 0); err == nil {
			t.Fatalf("round %d: the revoked tenant still creates", round)
		}
	}
	t.Logf("%d rounds, %d objects created by the tenant while being revoked, none left", rounds, made.Load())
}

// Done (issue 19, finding 6, drain): drain returns once admission refuses the tenant's new workloads and
// what it ran is deleted: a tenant creating in a loop during drain leaves nothing. Twenty times, each after
// an uncordon.
func TestDrainConvergesUnderLoad(t *testing.T) {
	freshPairing(t)
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	_, cfg := issuedConfig(t)
	tenant := kubernetes.NewForConfigOrDie(unlimited(cfg))
	const rounds = 20
	var made atomic.Int64
	for round := range rounds {
		if round > 0 {
			mustOn(t, provider, "uncordon", "tenant", "consumer")
		}
		stop := createInLoop(t, tenant, fmt.Sprintf("d%d", round), &made)
		mustOn(t, provider, "drain", "tenant", "consumer")
		stop()
		if left := tenantMade(t, admin); len(left) > 0 {
			t.Fatalf("round %d: drain left %v", round, left)
		}
		if err := createOne(t.Context(), tenant, fmt.Sprintf("d%d-after", round), 3); err == nil {
			t.Fatalf("round %d: the drained tenant still starts pods", round)
		}
	}
	mustOn(t, provider, "uncordon", "tenant", "consumer")
	t.Logf("%d rounds, %d objects created by the tenant while being drained, none left", rounds, made.Load())
}

// createInLoop has four workers create, as the tenant, CronJobs, Deployments, Jobs and Pods named
// prefix-w<worker>-<i> as fast as they can, counting each one made, and returns once the first exists. Its
// stop lets the workers keep trying a moment longer (the attacker's own pace, not a wait for the system:
// every try after the command returned must be refused), then stops and waits for them.
func createInLoop(t *testing.T, tenant kubernetes.Interface, prefix string, made *atomic.Int64) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	first := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				if err := createOne(ctx, tenant, fmt.Sprintf("%s-w%d-%d", prefix, w, i), i%4); err == nil {
					made.Add(1)
					once.Do(func() { close(first) })
				}
			}
		}()
	}
	select {
	case <-first:
	case <-time.After(30 * time.Second):
		cancel()
		wg.Wait()
		t.Fatalf("%s: the tenant could not create anything", prefix)
	}
	return func() {
		time.Sleep(200 * time.Millisecond)
		cancel()
		wg.Wait()
	}
}

// createOne makes one object of the kind i selects, as the tenant.
func createOne(ctx context.Context, cs kubernetes.Interface, name string, kind int) error {
	pod := restrictedPod(name).Spec
	meta := metav1.ObjectMeta{Name: name}
	labels := map[string]string{"app": name}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod}
	var err error
	switch kind {
	case 0:
		_, err = cs.BatchV1().CronJobs(tenantNS).Create(ctx, &batchv1.CronJob{ObjectMeta: meta, Spec: batchv1.CronJobSpec{Schedule: "* * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: withRestart(tmpl)}}}}, metav1.CreateOptions{})
	case 1:
		one := int32(1)
		_, err = cs.AppsV1().Deployments(tenantNS).Create(ctx, &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}, metav1.CreateOptions{})
	case 2:
		_, err = cs.BatchV1().Jobs(tenantNS).Create(ctx, &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Template: withRestart(tmpl)}}, metav1.CreateOptions{})
	default:
		_, err = cs.CoreV1().Pods(tenantNS).Create(ctx, &corev1.Pod{ObjectMeta: meta, Spec: pod}, metav1.CreateOptions{})
	}
	return err
}

func withRestart(t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	t.Spec.RestartPolicy = corev1.RestartPolicyNever
	return t
}

// tenantMade lists what is left in the tenant namespace that runs or makes something run: the kinds the
// tenant creates, at once, and after a bounded wait what controllers made from them (their garbage
// collector removes those after their owner).
func tenantMade(t *testing.T, admin kubernetes.Interface) []string {
	t.Helper()
	ctx := t.Context()
	var left []string
	add := func(kind string, n int, err error) {
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			left = append(left, fmt.Sprintf("%d %s", n, kind))
		}
	}
	cj, err := admin.BatchV1().CronJobs(tenantNS).List(ctx, metav1.ListOptions{})
	add("cronjobs", len(cj.Items), err)
	dep, err := admin.AppsV1().Deployments(tenantNS).List(ctx, metav1.ListOptions{})
	add("deployments", len(dep.Items), err)
	if len(left) > 0 {
		return left
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		left = nil
		jobs, err := admin.BatchV1().Jobs(tenantNS).List(ctx, metav1.ListOptions{})
		add("jobs", len(jobs.Items), err)
		rs, err := admin.AppsV1().ReplicaSets(tenantNS).List(ctx, metav1.ListOptions{})
		add("replicasets", len(rs.Items), err)
		pods, err := admin.CoreV1().Pods(tenantNS).List(ctx, metav1.ListOptions{})
		add("pods", len(pods.Items), err)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(250 * time.Millisecond) // the garbage collector has nothing to watch for "done"
	}
}

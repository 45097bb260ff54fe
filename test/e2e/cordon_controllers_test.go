//go:build e2e

package e2e

// Issue 43, finding 4: the tenant walked around a cordon. The cordon policies refused the tenant's own
// creates, not the controllers': relabelling a pod out of its ReplicaSet, or a ReplicaSet out of its
// Deployment, made the controllers start replacements; a live CronJob's schedule and its Job template's
// parallelism could be changed, and a Job of 5 pods started within a minute; a namespace granted or a
// slice accepted while cordoned was not cordoned. Now, while cordoned, no new pod (nor workload) is
// created in any of the consumer's namespaces by anyone, controllers included, and a namespace granted
// while cordoned starts cordoned. Pods are counted (no kubelet is needed to see a Pod object made).

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/federate-dev/kubectl-federate/pkg/member"
)

const byCordon = "cordoned by the provider"

// waitControllerRefused waits, by watch on the namespace's events, for a warning event about the object
// kind/name whose message carries want: a controller tried to create something and was refused. It
// returns the message ("" if none came within timeout).
func waitControllerRefused(t *testing.T, admin kubernetes.Interface, ns, kind, name, want string, timeout time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name}.AsSelector().String()
	match := func(e *corev1.Event) bool {
		return e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, want)
	}
	l, err := admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	for i := range l.Items {
		if match(&l.Items[i]) {
			return l.Items[i].Message
		}
	}
	w, err := admin.CoreV1().Events(ns).Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: l.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if e, ok := ev.Object.(*corev1.Event); ok && ev.Type != watch.Deleted && match(e) {
			return e.Message
		}
	}
	return ""
}

func TestCordonHoldsAgainstControllers(t *testing.T) {
	freshPairing(t)
	ctx := t.Context()
	_, cfg := issuedConfig(t)
	tenant := kubernetes.NewForConfigOrDie(unlimited(cfg))
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	d := dyn(t, provider)

	two := int32(2)
	labels := map[string]string{"app": "walk"}
	if _, err := tenant.AppsV1().Deployments(tenantNS).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "walk"},
		Spec: appsv1.DeploymentSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: restrictedPodSpec()}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobPod := restrictedPodSpec()
	jobPod.RestartPolicy = corev1.RestartPolicyNever
	if _, err := tenant.BatchV1().CronJobs(tenantNS).Create(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "tick"},
		Spec: batchv1.CronJobSpec{Schedule: "0 0 1 1 *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Parallelism: new(int32(1)), Template: corev1.PodTemplateSpec{Spec: jobPod}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := waitCount(t, d, podsGVR, tenantNS, func(n int) bool { return n == 2 }, watchTimeout); n != 2 {
		t.Fatalf("%d pods before the cordon, want the Deployment's 2", n)
	}
	mustOn(t, provider, "cordon", "tenant", "consumer")
	before := countOf(t, d, podsGVR, tenantNS)

	// (a) A pod relabelled out of its ReplicaSet: the ReplicaSet controller wants a replacement, and is
	// refused by the cordon.
	pods, err := admin.CoreV1().Pods(tenantNS).List(ctx, metav1.ListOptions{LabelSelector: "app=walk"})
	if err != nil || len(pods.Items) != 2 {
		t.Fatalf("the Deployment's pods: %v %v", pods, err)
	}
	if _, err := tenant.CoreV1().Pods(tenantNS).Patch(ctx, pods.Items[0].Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"walked-out"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("the tenant relabelling its pod: %v", err)
	}
	rs := pods.Items[0].OwnerReferences[0].Name
	if msg := waitControllerRefused(t, admin, tenantNS, "ReplicaSet", rs, byCordon, watchTimeout); msg == "" {
		t.Errorf("(a) no refusal of the ReplicaSet controller's replacement pod seen")
	} else {
		t.Logf("(a) the ReplicaSet controller: %s", msg)
	}

	// (b) The ReplicaSet relabelled out of its Deployment: the Deployment controller makes a new one.
	if _, err := tenant.AppsV1().ReplicaSets(tenantNS).Patch(ctx, rs, types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"walked-out"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("the tenant relabelling its ReplicaSet: %v", err)
	}
	if msg := waitControllerRefused(t, admin, tenantNS, "Deployment", "walk", byCordon, watchTimeout); msg == "" {
		t.Errorf("(b) no refusal of the Deployment controller's new ReplicaSet seen")
	} else {
		t.Logf("(b) the Deployment controller: %s", msg)
	}

	// (c) The CronJob made to fire every minute with 5 pods at once: its Job is refused at the next minute.
	if _, err := tenant.BatchV1().CronJobs(tenantNS).Patch(ctx, "tick", types.MergePatchType,
		[]byte(`{"spec":{"schedule":"* * * * *","jobTemplate":{"spec":{"parallelism":5}}}}`), metav1.PatchOptions{}); err != nil {
		t.Logf("(c) the tenant's CronJob change was refused: %v", err)
	} else if msg := waitControllerRefused(t, admin, tenantNS, "CronJob", "tick", byCordon, 90*time.Second); msg == "" {
		t.Errorf("(c) no refusal of the CronJob controller's Job seen within 90 s")
	} else {
		t.Logf("(c) the CronJob controller: %s", msg)
	}

	// (d) A namespace granted and (e) a slice accepted while cordoned start cordoned.
	mustOn(t, provider, "grant", "namespace", "e2e-cordoned-ns", "--remote-cluster-id", "consumer")
	mustRun(t, "", "create", "resourceslice", "e2e-cordoned", "--cpu", "1", "--memory", "1Gi",
		"--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
	sliceNS := member.SliceNamespace("consumer", "e2e-cordoned")
	for _, ns := range []string{"e2e-cordoned-ns", sliceNS} {
		live, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil || live.Labels["federate.dev/cordoned"] != "true" {
			t.Errorf("namespace %s, granted while cordoned: labels %v (%v)", ns, live.Labels, err)
		}
	}
	for ns, as := range map[string]kubernetes.Interface{"e2e-cordoned-ns": tenant, sliceNS: kubernetes.NewForConfigOrDie(sliceConfig(t, "e2e-cordoned"))} {
		_, err := as.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cordoned"}, Spec: restrictedPodSpec()}, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), byCordon) {
			t.Errorf("a pod in %s, granted while cordoned: err = %v, want refused (%s)", ns, err, byCordon)
		}
	}

	// Counted: no pod was made anywhere while cordoned.
	for _, ns := range []string{tenantNS, "e2e-cordoned-ns", sliceNS} {
		n := countOf(t, d, podsGVR, ns)
		want := 0
		if ns == tenantNS {
			want = before
		}
		if n != want {
			t.Errorf("%d pods in %s while cordoned, want %d", n, ns, want)
		}
	}
	jobs, err := admin.BatchV1().Jobs(tenantNS).List(ctx, metav1.ListOptions{})
	if err != nil || len(jobs.Items) > 0 {
		t.Errorf("Jobs made while cordoned: %d (%v)", len(jobs.Items), err)
	}

	// Uncordoned, the controllers catch up: the cordon was what held them.
	mustOn(t, provider, "uncordon", "tenant", "consumer")
	if n := waitCount(t, d, podsGVR, tenantNS, func(n int) bool { return n > before }, watchTimeout); n <= before {
		t.Errorf("after uncordon the controllers made no pod (%d)", n)
	}
}

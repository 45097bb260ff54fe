//go:build e2e

package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sessionEnd bounds how long an exec session may outlive the command that ends it (drain, revoke): the
// kubelet kills the containers of deleted pods, and the stream ends with them.
const sessionEnd = 60 * time.Second

// TestCordonDrainRevoke takes a running tenant (leaver) through what its provider can do to it, with an
// exec session open each time. Cordon: nothing new is admitted, what runs keeps running, the open session
// too. Drain: the workloads and pods are deleted, their containers are gone from the node, the open
// session ends, and nothing new starts. Revoke (after uncordon and a new pod and session): a new exec is
// refused and the session opened before ends; how long it outlived revoke is logged.
func TestCordonDrainRevoke(t *testing.T) {
	tn := pair(t, leaver)
	ctx := t.Context()
	ns := tn.namespace
	labels := map[string]string{"app": "keep"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "keep"},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: probeSpec()},
		},
	}
	if _, err := tn.client.AppsV1().Deployments(ns).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, tn.kubeconfig, "rollout", "status", "-n", ns, "deployment/keep", "--timeout=120s")
	held := startPod(t, tn.client, tn.kubeconfig, ns, probePod("held"))
	s := openSession(t, tn.kubeconfig, "exec", "-i", "-n", ns, held.Name, "--", "/probe", "cat")
	defer s.close()
	if got, err := s.roundTrip("before", 30*time.Second); err != nil || got != "before" {
		t.Fatalf("the exec session: %q, %v", got, err)
	}

	must(t, "kubectl", "federate", "cordon", "tenant", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", leaver.Name)
	if _, err := tn.client.CoreV1().Pods(ns).Create(ctx, probePod("after-cordon"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Fatalf("a new pod while cordoned: got %v, want refused", err)
	}
	if got, err := s.roundTrip("cordoned", 30*time.Second); err != nil || got != "cordoned" {
		t.Fatalf("cordon is meant to leave what runs: the exec session answered %q, %v", got, err)
	}
	if phase := podPhase(t, ns, held.Name); phase != corev1.PodRunning {
		t.Fatalf("cordon is meant to leave what runs: pod %s is %s", held.Name, phase)
	}

	drained := time.Now()
	must(t, "kubectl", "federate", "drain", "tenant", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", leaver.Name)
	waitNoPods(t, ns, 60*time.Second)
	if err := node.WaitNoContainers(ctx, ns); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
		t.Logf("drain: the exec session opened before ended %s after drain began", s.ended.Sub(drained).Round(time.Millisecond))
	case <-time.After(sessionEnd):
		t.Fatalf("the exec session opened before drain still runs %s after its pod was deleted", sessionEnd)
	}
	// Nothing new starts: a Deployment made now gets no pod.
	again := deploy.DeepCopy()
	again.Name = "again"
	_, err := tn.client.AppsV1().Deployments(ns).Create(ctx, again, metav1.CreateOptions{})
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
	case err != nil:
		t.Fatal(err)
	default:
		// Admitted: its ReplicaSet must fail to create the pod.
		mustKubectl(t, provider.Kubeconfig, "wait", "-n", ns, "--for=condition=ReplicaFailure", "deployment/again", "--timeout=90s")
	}
	if pods, err := admin(t).CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil || len(pods.Items) != 0 {
		t.Fatalf("after drain, pods in %s: %v (%v), want none", ns, podNames(pods), err)
	}

	must(t, "kubectl", "federate", "uncordon", "tenant", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", leaver.Name)
	_ = tn.client.AppsV1().Deployments(ns).Delete(ctx, "again", metav1.DeleteOptions{})
	again2 := startPod(t, tn.client, tn.kubeconfig, ns, probePod("held-again"))
	s2 := openSession(t, tn.kubeconfig, "exec", "-i", "-n", ns, again2.Name, "--", "/probe", "cat")
	defer s2.close()
	if got, err := s2.roundTrip("before revoke", 30*time.Second); err != nil || got != "before revoke" {
		t.Fatalf("the exec session after uncordon: %q, %v", got, err)
	}
	must(t, "kubectl", "federate", "revoke", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", leaver.Name)
	revoked := time.Now()
	if r := kubectl(t, tn.kubeconfig, "exec", "-n", ns, again2.Name, "--", "/probe", "echo", "inside"); r.code == 0 || strings.Contains(r.stdout, "inside") {
		t.Fatalf("a new exec after revoke: %s", r)
	}
	select {
	case <-s2.done:
		t.Logf("revoke: the exec session opened before ended %s after revoke returned", s2.ended.Sub(revoked).Round(time.Millisecond))
	case <-time.After(sessionEnd):
		t.Fatalf("the exec session opened before revoke still runs %s after revoke returned", sessionEnd)
	}
	if _, err := s2.roundTrip("after revoke", time.Second); err == nil {
		t.Fatal("the exec session opened before revoke still answers")
	}
}

func podPhase(t *testing.T, ns, name string) corev1.PodPhase {
	t.Helper()
	p, err := admin(t).CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Status.Phase
}

func podNames(l *corev1.PodList) string {
	if l == nil {
		return ""
	}
	var names []string
	for _, p := range l.Items {
		names = append(names, fmt.Sprintf("%s (%s)", p.Name, p.Status.Phase))
	}
	return strings.Join(names, ", ")
}

//go:build e2e

package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// result is one run of a command.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// command builds a command in the tests' one environment: our kubectl and kubectl-federate first on PATH,
// a home of its own (no default kubeconfig), no colour.
func command(ctx context.Context, t *testing.T, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = []string{"PATH=" + binDir + ":/usr/bin:/bin", "HOME=" + t.TempDir(), "NO_COLOR=1"}
	return cmd
}

// run runs name with args to its end, within 3 minutes.
func run(t *testing.T, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := command(ctx, t, name, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errOut.String(), code: cmd.ProcessState.ExitCode()}
	if err != nil && r.code == 0 {
		r.code, r.stderr = -1, r.stderr+err.Error()
	}
	return r
}

// must runs name with args and fails the test unless it exits 0.
func must(t *testing.T, name string, args ...string) result {
	t.Helper()
	r := run(t, name, args...)
	if r.code != 0 {
		t.Fatalf("%s %s: %s", name, strings.Join(args, " "), r)
	}
	return r
}

// kubectl runs kubectl with a kubeconfig (the tenant's, a slice's, or a cluster's admin one).
func kubectl(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	return run(t, "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
}

func mustKubectl(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	return must(t, "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
}

// tenant is a consumer paired with the provider: the kubeconfig it was issued and the namespace it acts in.
type tenant struct {
	id, kubeconfig, namespace string
	client                    kubernetes.Interface
}

var (
	tenantsMu sync.Mutex
	tenants   = map[string]*tenant{}
)

// pair authenticates c with the provider (once per test binary) as consumer id and returns the tenant,
// acting with the kubeconfig the consumer was issued.
func pair(t *testing.T, c *kubeenv.Cluster) *tenant {
	t.Helper()
	tenantsMu.Lock()
	defer tenantsMu.Unlock()
	if tn, ok := tenants[c.Name]; ok {
		return tn
	}
	must(t, "kubectl", "federate", "authenticate", "--kubeconfig", c.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig,
		"--cluster-id", c.Name, "--remote-cluster-id", "provider")
	kc := filepath.Join(workDir, c.Name+".kubeconfig")
	out := must(t, "kubectl", "federate", "get", "kubeconfig", "--kubeconfig", c.Kubeconfig, "--remote-cluster-id", "provider")
	tn := newTenant(t, c.Name, kc, []byte(out.stdout))
	tenants[c.Name] = tn
	return tn
}

// newTenant writes a kubeconfig and reads the namespace its context names.
func newTenant(t *testing.T, id, path string, kubeconfig []byte) *tenant {
	t.Helper()
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := raw.Contexts[raw.CurrentContext]
	if ctx == nil || ctx.Namespace == "" {
		t.Fatalf("the kubeconfig issued to %s names no namespace in its context", id)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &tenant{id: id, kubeconfig: path, namespace: ctx.Namespace, client: cs}
}

var sliceOnce struct {
	sync.Once
	tn *tenant
}

// slice is the consumer's resource slice "batch" (its own identity and namespace, under the provider's
// class "small": 1 CPU, 1Gi, 2 pods), made once per test binary.
func slice(t *testing.T) *tenant {
	t.Helper()
	pair(t, consumer)
	sliceOnce.Do(func() {
		must(t, "kubectl", "federate", "create", "resourceslice-class", "small", "--kubeconfig", provider.Kubeconfig,
			"--max-cpu", "1", "--max-memory", "1Gi", "--max-pods", "2")
		must(t, "kubectl", "federate", "create", "resourceslice", "batch", "--kubeconfig", consumer.Kubeconfig,
			"--remote-cluster-id", "provider", "--cpu", "1", "--memory", "1Gi", "--class", "small")
		must(t, "kubectl", "federate", "accept", "resourceslice", "batch", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", "consumer")
		must(t, "kubectl", "federate", "import", "resourceslice", "batch", "--kubeconfig", consumer.Kubeconfig, "--remote-cluster-id", "provider")
		out := must(t, "kubectl", "federate", "get", "kubeconfig", "--kubeconfig", consumer.Kubeconfig, "--remote-cluster-id", "provider",
			"--resource-slice", "batch")
		sliceOnce.tn = newTenant(t, "consumer/batch", filepath.Join(workDir, "batch.kubeconfig"), []byte(out.stdout))
	})
	if sliceOnce.tn == nil {
		t.Fatal("the resource slice was not set up (an earlier test failed setting it up)")
	}
	return sliceOnce.tn
}

// admin is the provider's administrator's clientset.
func admin(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(provider.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// probeSpec is the spec of a pod that Pod Security restricted admits, running the probe as nobody with
// small requests and limits: by default `probe serve` (HTTP on 8080).
func probeSpec(args ...string) corev1.PodSpec {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}
	return corev1.PodSpec{
		AutomountServiceAccountToken:  new(false),
		TerminationGracePeriodSeconds: new(int64(1)),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   new(true),
			RunAsUser:      new(int64(65534)),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:            "probe",
			Image:           kubeenv.ProbeImage,
			ImagePullPolicy: corev1.PullNever,
			Args:            args,
			Ports:           []corev1.ContainerPort{{ContainerPort: 8080}},
			Resources:       corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()},
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: new(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		}},
	}
}

// probePod is a pod of probeSpec named name, labelled app=name. A server (no args) is Ready once it
// answers, not merely once it started.
func probePod(name string, args ...string) *corev1.Pod {
	spec := probeSpec(args...)
	if len(args) == 0 {
		spec.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}}}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}}, Spec: spec}
}

// startPod creates a probe pod as the tenant (or admin) and waits for it to be Ready; it returns the pod as
// it then is (with its addresses). The pod is deleted when the test ends.
func startPod(t *testing.T, cs kubernetes.Interface, kubeconfig, ns string, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	if _, err := cs.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s/%s: %v", ns, pod.Name, err)
	}
	t.Cleanup(func() {
		err := admin(t).CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting pod %s/%s: %v", ns, pod.Name, err)
		}
	})
	mustKubectl(t, kubeconfig, "wait", "-n", ns, "--for=condition=Ready", "pod/"+pod.Name, "--timeout=120s")
	got, err := cs.CoreV1().Pods(ns).Get(t.Context(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// providerNamespace creates a namespace of the provider's own (no sandbox, no policy) for the test.
func providerNamespace(t *testing.T, name string) {
	t.Helper()
	if _, err := admin(t).CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := admin(t).CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting namespace %s: %v", name, err)
		}
	})
}

// waitNoPods waits until namespace ns holds no pod: it lists, and watches for deletions until a list comes
// back empty.
func waitNoPods(t *testing.T, ns string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cs := admin(t)
	for {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("pods of %s still there after %s: %v", ns, timeout, err)
		}
		if len(pods.Items) == 0 {
			return
		}
		w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: pods.ResourceVersion})
		if err != nil {
			t.Fatalf("pods of %s still there after %s: %v", ns, timeout, err)
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				break
			}
		}
		w.Stop()
	}
}

// podIPs returns a pod's IPv4 and IPv6 addresses.
func podIPs(t *testing.T, p *corev1.Pod) (v4, v6 string) {
	t.Helper()
	for _, ip := range p.Status.PodIPs {
		if strings.Contains(ip.IP, ":") {
			v6 = ip.IP
		} else {
			v4 = ip.IP
		}
	}
	if v4 == "" || v6 == "" {
		t.Fatalf("pod %s/%s has addresses %v, not one of each family", p.Namespace, p.Name, p.Status.PodIPs)
	}
	return v4, v6
}

// jobSpec is a Job that runs `probe echo words...` once.
func jobSpec(words ...string) batchv1.JobSpec {
	spec := probeSpec(append([]string{"echo"}, words...)...)
	spec.RestartPolicy = corev1.RestartPolicyNever
	spec.Containers[0].Ports = nil
	return batchv1.JobSpec{BackoffLimit: new(int32(0)), Template: corev1.PodTemplateSpec{Spec: spec}}
}

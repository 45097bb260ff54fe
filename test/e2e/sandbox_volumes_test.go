//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// What the sandbox's storage, placement and token rules refuse, as the messages say it (the security
// review's findings: each was reproduced on a real cluster before the rules existed).
const (
	rootPV            = "federate-e2e-root" // an administrator's hostPath:/ volume, Available
	pendingClass      = "federate-e2e-pending"
	allowedClass      = "federate-e2e-fast"
	refusedRuntime    = "federate-e2e-kata"
	allowedRuntime    = "federate-e2e-gvisor"
	allowedScheduler  = "federate-e2e-scheduler"
	allowedToleration = "example.com/gpu"

	byVolumeName      = "must not set spec.volumeName"
	byClassless       = "must name a storage class"
	byClassNotAllowed = "this storage class is not allowed"
	byClaimTemplate   = "a volume claim template must not"
	byClaimRebind     = "may not set or change a PersistentVolumeClaim's spec.volumeName"
	byControlPlane    = "the control plane's taints"
	byTolerations     = "pods may tolerate only"
	byNodeRole        = "must not select nodes by their node-role.kubernetes.io/* labels"
	byRuntimeClass    = "this runtimeClassName is not allowed"
	byScheduler       = "this schedulerName is not allowed"
	byToken           = "must not mount a ServiceAccount token"
)

// adminStorage makes, as the provider's administrator, what the attacks aim at: an Available hostPath
// PersistentVolume of the node's root without a class, and two RuntimeClasses. It returns their removal.
func adminStorage(t *testing.T, admin kubernetes.Interface) func() {
	t.Helper()
	ctx := t.Context()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: rootPV},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}},
		},
	}
	if _, err := admin.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	waitPVAvailable(t, admin)
	for name, handler := range map[string]string{refusedRuntime: "kata", allowedRuntime: "runsc"} {
		if _, err := admin.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler},
			metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, err := range []error{
			admin.CoreV1().PersistentVolumes().Delete(ctx, rootPV, metav1.DeleteOptions{}),
			admin.NodeV1().RuntimeClasses().Delete(ctx, refusedRuntime, metav1.DeleteOptions{}),
			admin.NodeV1().RuntimeClasses().Delete(ctx, allowedRuntime, metav1.DeleteOptions{}),
		} {
			if err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}
	}
}

// waitPVAvailable waits, by watch, until the PersistentVolume controller has made the root volume
// Available: only then would a claim bind it, so only then does a refusal prove anything.
func waitPVAvailable(t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), watchTimeout)
	defer cancel()
	pvs := admin.CoreV1().PersistentVolumes()
	pv, err := pvs.Get(ctx, rootPV, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Status.Phase == corev1.VolumeAvailable {
		return
	}
	w, err := pvs.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + rootPV, ResourceVersion: pv.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if pv, ok := ev.Object.(*corev1.PersistentVolume); ok && ev.Type == watch.Modified && pv.Status.Phase == corev1.VolumeAvailable {
			return
		}
	}
	t.Fatalf("PersistentVolume %s did not become Available within %s", rootPV, watchTimeout)
}

// rootPVUnclaimed checks that the root volume is still Available and claimed by nobody.
func rootPVUnclaimed(ctx context.Context, admin kubernetes.Interface) error {
	pv, err := admin.CoreV1().PersistentVolumes().Get(ctx, rootPV, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if pv.Spec.ClaimRef != nil || pv.Status.Phase != corev1.VolumeAvailable {
		return fmt.Errorf("PersistentVolume %s is %s, claimed by %v", rootPV, pv.Status.Phase, pv.Spec.ClaimRef)
	}
	return nil
}

func claim(name, class string) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
	if class != "-" {
		c.Spec.StorageClassName = &class
	}
	return c
}

func toleration(key string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
}

func nodeRoleAffinity(op corev1.NodeSelectorOperator) *corev1.Affinity {
	req := corev1.NodeSelectorRequirement{Key: "node-role.kubernetes.io/control-plane", Operator: op}
	if op == corev1.NodeSelectorOpIn || op == corev1.NodeSelectorOpNotIn {
		req.Values = []string{""}
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{req}}}}}}
}

// checkAllowListsAdmit runs, as the tenant, what the provider allowed (the allowed variants of the
// attacks) and requires each to be admitted; then what it still did not allow is refused.
func checkAllowListsAdmit(t *testing.T, as kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	for name, mutate := range map[string]func(*corev1.Pod){
		"allowed-toleration":  toleration(allowedToleration),
		"default-toleration":  toleration("node.kubernetes.io/not-ready"),
		"affinity-notin-role": func(p *corev1.Pod) { p.Spec.Affinity = nodeRoleAffinity(corev1.NodeSelectorOpNotIn) },
		"affinity-no-role":    func(p *corev1.Pod) { p.Spec.Affinity = nodeRoleAffinity(corev1.NodeSelectorOpDoesNotExist) },
		"allowed-runtime":     func(p *corev1.Pod) { p.Spec.RuntimeClassName = new(allowedRuntime) },
		"allowed-scheduler":   func(p *corev1.Pod) { p.Spec.SchedulerName = allowedScheduler },
		"allowed-ephemeral": func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: claim("", allowedClass).Spec}}}}}
		},
	} {
		p := restrictedPod(name)
		mutate(p)
		if _, err := as.CoreV1().Pods(tenantNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Errorf("%s: the provider allowed it, but it was refused: %v", name, err)
		}
	}
	if _, err := as.CoreV1().PersistentVolumeClaims(tenantNS).Create(ctx, claim("allowed-class", allowedClass), metav1.CreateOptions{}); err != nil {
		t.Errorf("a claim of the allowed class %s was refused: %v", allowedClass, err)
	}
	_, err := as.CoreV1().PersistentVolumeClaims(tenantNS).Create(ctx, claim("unlisted-class", pendingClass), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), byClassNotAllowed) {
		t.Errorf("with an allowed list, a claim of class %s: err = %v, want refused (%s)", pendingClass, err, byClassNotAllowed)
	}
	p := restrictedPod("still-critical-addons")
	toleration("CriticalAddonsOnly")(p)
	if _, err := as.CoreV1().Pods(tenantNS).Create(ctx, p, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), byTolerations) {
		t.Errorf("with an allowed list, CriticalAddonsOnly: err = %v, want refused (%s)", err, byTolerations)
	}
}

// A sandbox admission policy or binding that an administrator deleted, or a policy whose expression was
// edited, is put back by init; a re-run with nothing touched changes nothing. Every policy type-checks
// (an expression that does not would fail at runtime, and with failurePolicy Fail refuse everything).
func TestSandboxPoliciesRestoredByInit(t *testing.T) {
	mustRun(t, "", "init", "--kubeconfig", provider.Kubeconfig, "--cluster-id", "provider")
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	ctx := t.Context()
	policies := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	bindings := admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	typeChecked(t, admin)

	pods, err := policies.Get(ctx, sandboxObject+"-pods", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claims, err := bindings.Get(ctx, sandboxObject+"-persistentvolumeclaims", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := policies.Get(ctx, sandboxObject+"-secrets", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := policies.Delete(ctx, pods.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := bindings.Delete(ctx, claims.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, "", "init", "--kubeconfig", provider.Kubeconfig)
	for _, name := range []string{"ValidatingAdmissionPolicy " + pods.Name + " was missing", "ValidatingAdmissionPolicyBinding " + claims.Name + " was missing"} {
		if !strings.Contains(r.stderr, name) {
			t.Errorf("init did not say %q:\n%s", name, r.stderr)
		}
	}
	if now, err := policies.Get(ctx, pods.Name, metav1.GetOptions{}); err != nil || !equality.Semantic.DeepEqual(now.Spec, pods.Spec) {
		t.Errorf("policy %s after init: %v (spec restored: %v)", pods.Name, err, err == nil && equality.Semantic.DeepEqual(now.Spec, pods.Spec))
	}
	if now, err := bindings.Get(ctx, claims.Name, metav1.GetOptions{}); err != nil || !equality.Semantic.DeepEqual(now.Spec, claims.Spec) {
		t.Errorf("binding %s after init: %v", claims.Name, err)
	}

	// An edited expression (the policy that refuses token Secrets, made to admit everything).
	edited := secrets.DeepCopy()
	edited.Spec.Validations[0].Expression = "true"
	if _, err := policies.Update(ctx, edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = mustRun(t, "", "init", "--kubeconfig", provider.Kubeconfig)
	if !strings.Contains(r.stderr, "ValidatingAdmissionPolicy "+secrets.Name+" was changed") {
		t.Errorf("init did not say the edited policy was restored:\n%s", r.stderr)
	}
	now, err := policies.Get(ctx, secrets.Name, metav1.GetOptions{})
	if err != nil || !equality.Semantic.DeepEqual(now.Spec, secrets.Spec) {
		t.Errorf("policy %s after init: %v, expression %q", secrets.Name, err, now.Spec.Validations[0].Expression)
	}

	// They hold again: in a sandbox namespace, the restored policy and binding refuse.
	ns := fmt.Sprintf("federate-e2e-restored-%d", time.Now().UnixNano()%100000) // its own per run: -count=N does not wait for the last one to go
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{labelSandbox: "true"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := admin.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	}()
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	eventually(t, "a pod with spec.nodeName refused by the restored "+pods.Name, func() error {
		p := restrictedPod("probe")
		p.Spec.NodeName = "control-plane-0"
		_, err := admin.CoreV1().Pods(ns).Create(ctx, p, dry)
		return refusedBy(err, "must not set spec.nodeName")
	})
	eventually(t, "a claim without a class refused through the restored "+claims.Name, func() error {
		_, err := admin.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim("probe", "-"), dry)
		return refusedBy(err, byClassless)
	})
	eventually(t, "a token Secret refused by the restored "+secrets.Name, func() error {
		_, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "probe",
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}}, Type: corev1.SecretTypeServiceAccountToken}, dry)
		return refusedBy(err, "kubernetes.io/service-account-token are not allowed")
	})

	// Nothing touched: init writes nothing. A policy and a binding are compared by UID and generation, not
	// resourceVersion: the API server writes a policy's status (its type checking) by itself, shortly after
	// the policy is created, as it does for the one restored above.
	versions := func() map[string]string {
		out := map[string]string{}
		pl, err := policies.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pl.Items {
			out["policy/"+p.Name] = fmt.Sprintf("%s/%d", p.UID, p.Generation)
		}
		bl, err := bindings.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bl.Items {
			out["binding/"+b.Name] = fmt.Sprintf("%s/%d", b.UID, b.Generation)
		}
		role, err := admin.RbacV1().ClusterRoles().Get(ctx, "federate-tenant", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out["clusterrole"] = role.ResourceVersion
		return out
	}
	before := versions()
	r = mustRun(t, "", "init", "--kubeconfig", provider.Kubeconfig)
	if strings.Contains(r.stderr, "WARNING") {
		t.Errorf("init of an intact cluster warned:\n%s", r.stderr)
	}
	if after := versions(); !equalStringMaps(before, after) {
		t.Errorf("init of an intact cluster changed objects: %v -> %v", before, after)
	}
}

// typeChecked waits until the API server has type-checked every sandbox policy, and requires no warning.
func typeChecked(t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	eventually(t, "every sandbox policy type-checked without warnings", func() error {
		l, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		n := 0
		for _, p := range l.Items {
			if !strings.HasPrefix(p.Name, sandboxObject+"-") {
				continue
			}
			n++
			if p.Status.ObservedGeneration != p.Generation || p.Status.TypeChecking == nil {
				return fmt.Errorf("%s not type-checked yet", p.Name)
			}
			if w := p.Status.TypeChecking.ExpressionWarnings; len(w) > 0 {
				t.Errorf("%s: type-checking warnings: %v", p.Name, warnings(w))
			}
		}
		if n == 0 {
			return fmt.Errorf("no sandbox policy")
		}
		return nil
	})
}

func warnings(w []admissionv1.ExpressionWarning) string {
	var b strings.Builder
	for _, x := range w {
		b.WriteString(x.FieldRef + ": " + x.Warning + "\n")
	}
	return b.String()
}

// eventually retries check, with a short pause, until it succeeds or 20 s have passed: admission has
// nothing to watch (a policy reaches it about a second after it is written).
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: %v", what, err)
			return
		}
		time.Sleep(200 * time.Millisecond) //nolint:forbidigo // polling admission, which has no watch
	}
}

func refusedBy(err error, want string) error {
	if err == nil {
		return fmt.Errorf("admitted (want refused: %s)", want)
	}
	if !refused(err) || !strings.Contains(err.Error(), want) {
		return fmt.Errorf("%w (want refused: %s)", err, want)
	}
	return nil
}

func equalStringMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

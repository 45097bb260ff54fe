package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// A sandbox is only as good as the moment it starts to hold. The API server enforces what was just
// written asynchronously: a ResourceQuota counts nothing until the quota controller has written its
// status, and admission policies, their bindings and a namespace's labels reach admission through
// informers (a policy about a second after it was created). So the identity is not issued until the
// sandbox is seen to hold: the quota by watching its status, admission by dry-run requests that it must
// refuse (a dry run is admitted or refused exactly like the real thing, and stores nothing).

// PolicyTimeout bounds the wait for admission to refuse the probes.
const PolicyTimeout = 15 * time.Second

// applyEnforcedQuota server-side applies the sandbox's ResourceQuota and waits until its status enforces
// what was applied. The watch starts with the apply, from the current state (resourceVersion ""), so a new
// quota's first status is seen one round trip after the apply, not two; an apply that answers with an
// enforced quota (a renewal) ends the wait at once.
func applyEnforcedQuota(ctx context.Context, c *member.Cluster, ns string, want *corev1.ResourceQuota) error {
	enforced := func(q *corev1.ResourceQuota) bool {
		return apiequality.Semantic.DeepEqual(q.Spec.Hard, want.Spec.Hard) && apiequality.Semantic.DeepEqual(q.Spec.Hard, q.Status.Hard)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watched := parallel.Background(func() error {
		return c.WaitFor(wctx, c.Kube.CoreV1().ResourceQuotas(ns), SandboxName, "", func(ev watch.Event) (bool, error) {
			q, ok := ev.Object.(*corev1.ResourceQuota)
			return ok && ev.Type != watch.Deleted && enforced(q), nil
		})
	})
	applied, err := applyQuota(ctx, c, ns, want)
	if err != nil {
		cancel()
		_ = watched()
		return WrapApply("ResourceQuota", ns, err)
	}
	if enforced(applied) {
		cancel()
		_ = watched()
		return nil
	}
	if err := watched(); err != nil {
		return fmt.Errorf("waiting for the quota controller to enforce ResourceQuota %s/%s: %w", ns, SandboxName, err)
	}
	return nil
}

// probe is a request the sandbox must refuse, and who must refuse it.
type probe struct {
	what   string
	by     string // a substring of the refusal that names the guard
	create func(ctx context.Context, dry metav1.CreateOptions) error
}

func probes(c *member.Cluster, ns, level string) []probe {
	restricted := func(p *corev1.Pod) *corev1.Pod {
		yes, no := true, false
		p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: &yes, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		p.Spec.Containers = []corev1.Container{{Name: "probe", Image: "registry.k8s.io/pause:3.10", SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: &no, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}}
		return p
	}
	meta := metav1.ObjectMeta{Name: "federate-sandbox-probe", Namespace: ns}
	ps := []probe{
		{"a pod with spec.nodeName", SandboxName + "-pods", func(ctx context.Context, dry metav1.CreateOptions) error {
			_, err := c.Kube.CoreV1().Pods(ns).Create(ctx, restricted(&corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{NodeName: "probe"}}), dry)
			return err
		}},
		// The pods policy is already there when its newest rules are not (an update reaches admission a
		// moment later): a rule only this version has proves that version is loaded. A projected token is
		// the worst of the new rules to miss.
		{"a pod with a projected ServiceAccount token", SandboxName + "-pods", func(ctx context.Context, dry metav1.CreateOptions) error {
			p := restricted(&corev1.Pod{ObjectMeta: meta})
			p.Spec.Volumes = []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "probe", Path: "token"}}}}}}}
			_, err := c.Kube.CoreV1().Pods(ns).Create(ctx, p, dry)
			return err
		}},
		{"a Service with externalIPs", SandboxName + "-services", func(ctx context.Context, dry metav1.CreateOptions) error {
			_, err := c.Kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{
				Ports: []corev1.ServicePort{{Port: 80}}, ExternalIPs: []string{"192.0.2.1"}}}, dry)
			return err
		}},
		{"a service-account-token Secret", SandboxName + "-secrets", func(ctx context.Context, dry metav1.CreateOptions) error {
			m := meta
			m.Annotations = map[string]string{corev1.ServiceAccountNameKey: "default"}
			_, err := c.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: m, Type: corev1.SecretTypeServiceAccountToken}, dry)
			return err
		}},
	}
	if level != PodSecurityPrivileged {
		// A host port: Pod Security baseline and restricted refuse it, and nothing else does (API validation
		// accepts it, unlike host namespaces, which a cluster may forbid with --allow-privileged=false).
		ps = append(ps, probe{"a pod with a host port", "PodSecurity", func(ctx context.Context, dry metav1.CreateOptions) error {
			p := restricted(&corev1.Pod{ObjectMeta: meta})
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
			_, err := c.Kube.CoreV1().Pods(ns).Create(ctx, p, dry)
			return err
		}})
	}
	return ps
}

// waitEnforced sends each probe as a dry run until the guard it names refuses it, all at once: on a
// cluster whose policies were loaded long ago, one request per probe and one round trip in all. In a new
// namespace the policies may need a moment to see its labels; each probe then repeats on its own.
func waitEnforced(ctx context.Context, c *member.Cluster, ns, level string) error {
	var fns []func() error
	for _, p := range probes(c, ns, level) {
		fns = append(fns, func() error { return waitRefused(ctx, c, ns, p) })
	}
	return parallel.All(fns...)
}

// WaitEnforced is waitEnforced for a sandbox whose guards were restored outside issuance (the admission
// policies and bindings put back by init): it returns once admission refuses every probe.
func WaitEnforced(ctx context.Context, c *member.Cluster, ns, level string) error {
	return waitEnforced(ctx, c, ns, level)
}

// waitRefused repeats one probe until its guard refuses it (admission has nothing to watch). A new
// ValidatingAdmissionPolicy or binding is enforced at the API server's next refresh of its compiled
// policies, a one-second ticker (policyRefreshInterval in k8s.io/apiserver's admission/plugin/policy/
// generic): so the probe repeats every 100 ms for as long as that can take, then with a growing pause.
func waitRefused(ctx context.Context, c *member.Cluster, ns string, p probe) error {
	if c.DryRun {
		return nil // the sandbox was not written, so admission has nothing new to hold
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	deadline := time.Now().Add(PolicyTimeout)
	pause := 100 * time.Millisecond
	for {
		err := p.create(ctx, dry)
		refused := apierrors.IsInvalid(err) || apierrors.IsForbidden(err)
		switch {
		case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "cannot create resource"):
			// RBAC, not the sandbox: the operator may not send the dry run. Waiting would not change that.
			return fmt.Errorf("checking that the sandbox %s refuses %s needs a dry-run create: %w", ns, p.what, err)
		case refused && strings.Contains(err.Error(), p.by):
			return nil
		case err != nil && !refused:
			return fmt.Errorf("checking that the sandbox %s refuses %s: %w", ns, p.what, err)
		case time.Now().After(deadline):
			// Admitted (err is nil), or refused by another guard only.
			last := "admitted"
			if err != nil {
				last = err.Error()
			}
			return fmt.Errorf("%w: %s in %s was not refused by %s within %s (last answer: %s); is ValidatingAdmissionPolicy enabled on this cluster?",
				ErrNotEnforced, p.what, ns, p.by, PolicyTimeout, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("checking that the sandbox %s refuses %s: %w", ns, p.what, ctx.Err())
		case <-time.After(pause):
		}
		if time.Until(deadline) < PolicyTimeout-policyRefresh {
			pause = min(2*pause, time.Second)
		}
	}
}

// policyRefresh is how long an API server may take to enforce a new admission policy: its refresh
// interval, and a little more for compiling it.
const policyRefresh = 1200 * time.Millisecond

// ErrNotEnforced means the API server does not (yet) enforce a sandbox guard.
var ErrNotEnforced = errors.New("the sandbox is not enforced")

// AccessReview asks whether user, in groups, may do a.
func AccessReview(ctx context.Context, c *member.Cluster, user string, groups []string, a authzv1.ResourceAttributes) (bool, error) {
	r, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{
		Spec: authzv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &a},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return r.Status.Allowed, nil
}

// CordonProbe is a pod every other sandbox rule admits, marked for the cordon policy.
func CordonProbe(ns string) *corev1.Pod {
	yes, no := true, false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "federate-cordon-probe", Namespace: ns, Annotations: map[string]string{AnnotationCordonProbe: "true"}},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "probe", Image: "registry.k8s.io/pause:3.10", SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: &no, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
		},
	}
}

// WaitCordoned sends the cordon probe (a dry-run pod the cordon policy matches as a tenant's) until
// admission answers as the namespace's cordon label says: refused by the cordon policy when on, admitted
// by it when off. A pod the rest of the sandbox refuses is never the answer: the probe passes every other
// rule. A namespace that is gone holds nothing to start.
func WaitCordoned(ctx context.Context, c *member.Cluster, ns string, on bool) error {
	if c.DryRun {
		return nil // the cordon label was not written
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	p := CordonProbe(ns)
	deadline := time.Now().Add(PolicyTimeout)
	pause := 50 * time.Millisecond
	what := map[bool]string{true: "refuse the tenant's new pods", false: "admit the tenant's pods again"}[on]
	for {
		_, err := c.Kube.CoreV1().Pods(ns).Create(ctx, p, dry)
		cordoned := err != nil && strings.Contains(err.Error(), SandboxName+"-cordon")
		switch {
		case apierrors.IsNotFound(err):
			return nil // the namespace is gone: nothing runs there
		case err != nil && !cordoned:
			return fmt.Errorf("checking that admission in %s will %s: %w", ns, what, err)
		case cordoned == on:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("%w: admission in %s did not %s within %s", ErrNotEnforced, ns, what, PolicyTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 500*time.Millisecond)
	}
}

// SetCordoned labels one sandbox cordoned (or not) and waits until admission answers accordingly.
func SetCordoned(ctx context.Context, c *member.Cluster, ns string, on bool) error {
	label := `null` // a merge patch removes the label
	if on {
		label = `"true"`
	}
	patch := []byte(`{"metadata":{"labels":{"` + LabelCordoned + `":` + label + `}}}`)
	if _, err := c.Kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: member.FieldManager}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("labelling namespace %s: %w", ns, err)
	}
	return WaitCordoned(ctx, c, ns, on)
}

//go:build e2e

package e2e

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pauseImage is what every pod of the tests runs.
const pauseImage = "registry.k8s.io/pause:3.10"

// podOption changes a pod restrictedPod builds.
type podOption func(*corev1.Pod)

// restrictedPod is the one pod builder of the tests: a pod named name, running pause, that the restricted
// Pod Security level admits (non-root, RuntimeDefault seccomp, no privilege escalation, every capability
// dropped), with no resources set (the sandbox's LimitRange fills them) unless an option sets them.
func restrictedPod(name string, opts ...podOption) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   new(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:  "c",
				Image: pauseImage,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: new(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// sized sets the container's requests and limits to cpu and memory.
func sized(cpu, memory string) podOption {
	return func(p *corev1.Pod) {
		rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}
	}
}

// asNobody runs the pod as uid 65534, with no ServiceAccount token mounted.
func asNobody(p *corev1.Pod) {
	p.Spec.AutomountServiceAccountToken = new(false)
	p.Spec.SecurityContext.RunAsUser = new(int64(65534))
	p.Spec.Containers[0].SecurityContext.RunAsNonRoot = new(true)
}

// smallPod is a restricted pod with small requests and limits, so that only the pod count binds in the
// quota.
func smallPod(name string) *corev1.Pod { return restrictedPod(name, sized("50m", "64Mi")) }

// restrictedPodSpec is the spec of a restricted pod that names its resources and runs as nobody: what the
// tests' Deployments and bare pods of a tenant run.
func restrictedPodSpec() corev1.PodSpec {
	return restrictedPod("", sized("10m", "16Mi"), asNobody).Spec
}

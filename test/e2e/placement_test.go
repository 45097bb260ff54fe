//go:build e2e

package e2e

// Issue 43, the smaller findings: a control-plane node could still be targeted by name where its taint is
// missing (nodeSelector kubernetes.io/hostname, matchFields metadata.name, pod affinity to the API
// server's pods across namespaces); Akamai's IPv6 metadata address was not excluded from egress.

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	byNodeName     = "must not select nodes by name"
	byPodNamespace = "pod affinity and anti-affinity may only name pods of the pod's own namespace"
	controlPlane   = "provider-control-plane"
)

func nodeTerm(req ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: req}
}

func requiredNodeAffinity(term corev1.NodeSelectorTerm) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}}}
	}
}

func apiServerPods() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"component": "kube-apiserver"}}
}

func TestSandboxRefusesControlPlaneByName(t *testing.T) {
	freshPairing(t)
	ctx := t.Context()
	_, cfg := issuedConfig(t)
	as := kubernetes.NewForConfigOrDie(unlimited(cfg))
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	attacks := []attack{
		podAttack("nodeselector-hostname", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": controlPlane} }, byNodeName),
		podAttack("affinity-hostname-in", requiredNodeAffinity(nodeTerm(corev1.NodeSelectorRequirement{
			Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{controlPlane}})), byNodeName),
		podAttack("affinity-match-fields-name", requiredNodeAffinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{controlPlane}}}}), byNodeName),
		podAttack("preferred-match-fields-name", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 100, Preference: corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
					Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{controlPlane}}}}}}}}
		}, byNodeName),
		podAttack("pod-affinity-kube-system", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: apiServerPods(), Namespaces: []string{"kube-system"}, TopologyKey: "kubernetes.io/hostname"}}}}
		}, byPodNamespace),
		podAttack("pod-affinity-every-namespace", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: apiServerPods(), NamespaceSelector: &metav1.LabelSelector{}, TopologyKey: "kubernetes.io/hostname"}}}}}
		}, byPodNamespace),
		podAttack("pod-anti-affinity-kube-system", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: apiServerPods(), Namespaces: []string{"kube-system"}, TopologyKey: "kubernetes.io/hostname"}}}}
		}, byPodNamespace),
	}
	for _, a := range attacks {
		err := a.try(ctx, as)
		if err == nil || !refused(err) || !containsAny(err.Error(), a.want) {
			t.Errorf("%s: err = %v, want refused (%v)", a.name, err, a.want)
		}
		if err := a.intact(ctx, admin); err != nil {
			t.Errorf("%s: %v", a.name, err)
		}
	}
	// Still admitted: keeping away from a node by name, and affinity to the tenant's own pods.
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	for name, mutate := range map[string]func(*corev1.Pod){
		"hostname-notin": requiredNodeAffinity(nodeTerm(corev1.NodeSelectorRequirement{
			Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpNotIn, Values: []string{controlPlane}})),
		"own-pods": func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mine"}}, TopologyKey: "kubernetes.io/hostname"}}}}
		},
		"own-namespace-named": func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mine"}}, Namespaces: []string{tenantNS}, TopologyKey: "kubernetes.io/hostname"}}}}
		},
	} {
		p := restrictedPod("allowed-" + name)
		mutate(p)
		if _, err := as.CoreV1().Pods(tenantNS).Create(ctx, p, dry); err != nil {
			t.Errorf("%s: refused: %v", name, err)
		}
	}

	// Akamai's (Linode's) metadata service over IPv6 is excepted from egress, like the others.
	np, err := admin.NetworkingV1().NetworkPolicies(tenantNS).Get(ctx, sandboxObject, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{"fd00:a9fe:a9fe::1", "169.254.169.254", "fd00:ec2::254"} {
		if why := egressAllowed(np, netip.MustParseAddr(addr), 80, corev1.ProtocolTCP); why != "" {
			t.Errorf("a tenant pod may reach the metadata address %s: %s", addr, why)
		}
	}
}

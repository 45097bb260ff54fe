package verify

import (
	corev1 "k8s.io/api/core/v1"
)

// The pod attacks: what Pod Security refuses (privilege, the host's namespaces, paths and ports, added
// capabilities), where a pod may be placed, what it may mount and at what priority it runs.

// podSecurityAttacks are refused by Pod Security: at baseline and restricted, or at restricted only.
func podSecurityAttacks(p Params) []Attack {
	hostPath := func(pod *corev1.Pod) {
		pod.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "root", MountPath: "/host"}}
	}
	return []Attack{
		// An API server run with --allow-privileged=false refuses it in validation first, which counts too.
		podAttack(p, "privileged", ClassHost, baseline, func(pod *corev1.Pod) {
			pod.Spec.Containers[0].SecurityContext.Privileged = new(true)
			pod.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = new(true)
		}, ByPodSecurity, byPrivilegedDisallowed),
		podAttack(p, "hostnetwork", ClassHost, baseline, func(pod *corev1.Pod) { pod.Spec.HostNetwork = true }, ByPodSecurity),
		podAttack(p, "hostpid", ClassHost, baseline, func(pod *corev1.Pod) { pod.Spec.HostPID = true }, ByPodSecurity),
		podAttack(p, "hostipc", ClassHost, baseline, func(pod *corev1.Pod) { pod.Spec.HostIPC = true }, ByPodSecurity),
		// Pod Security refuses it at baseline and restricted; the volume allowlist refuses it too.
		podAttack(p, "hostpath-root", ClassHostPath, baseline, hostPath, ByPodSecurity, ByPolicy),
		podAttack(p, "host-port", ClassHostPorts, baseline, func(pod *corev1.Pod) {
			pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
		}, ByPodSecurity),
		podAttack(p, "cap-sys-admin", ClassCaps, baseline, func(pod *corev1.Pod) {
			pod.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		}, ByPodSecurity),
		// Restricted, not merely baseline: what baseline admits.
		podAttack(p, "privilege-escalation", ClassCaps, restrictedOnly, func(pod *corev1.Pod) {
			pod.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = new(true)
		}, ByPodSecurity),
		podAttack(p, "root-no-seccomp", ClassPodSecurity, restrictedOnly, func(pod *corev1.Pod) {
			pod.Spec.SecurityContext = nil
			pod.Spec.Containers[0].SecurityContext = nil
		}, ByPodSecurity),
	}
}

func toleration(key string) func(*corev1.Pod) {
	return func(pod *corev1.Pod) {
		pod.Spec.Tolerations = []corev1.Toleration{{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
}

func nodeAffinity(term corev1.NodeSelectorTerm) func(*corev1.Pod) {
	return func(pod *corev1.Pod) {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}}}
	}
}

// A CSI driver and an image no provider allows: the attacks need nothing to exist (nothing is mounted).
const (
	unlistedDriver = "csi.federate-verify.invalid"
	unlistedImage  = "federate-verify.invalid/absent:1"
)

const controlPlaneRole = "node-role.kubernetes.io/control-plane"

// placementAttacks try to put a pod on the control plane or a node the provider reserved: by name, by a
// role label, by tolerating taints, through another scheduler or runtime.
func placementAttacks(p Params) []Attack {
	out := []Attack{
		podAttack(p, "nodename", ClassPlacement, nil, func(pod *corev1.Pod) { pod.Spec.NodeName = "control-plane-0" }, bySetNodeName),
		podAttack(p, "tolerate-everything", ClassPlacement, nil, func(pod *corev1.Pod) {
			pod.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}, byControlPlane),
		podAttack(p, "tolerate-control-plane", ClassPlacement, nil, toleration(controlPlaneRole), byControlPlane),
		podAttack(p, "tolerate-etcd", ClassPlacement, nil, toleration("node-role.kubernetes.io/etcd"), byControlPlane),
		podAttack(p, "tolerate-rke-controlplane", ClassPlacement, nil, toleration("node-role.kubernetes.io/controlplane"), byControlPlane),
		podAttack(p, "tolerate-critical-addons-only", ClassPlacement, nil, toleration("CriticalAddonsOnly"), byTolerations),
		podAttack(p, "nodeselector-control-plane", ClassPlacement, nil, func(pod *corev1.Pod) {
			pod.Spec.NodeSelector = map[string]string{controlPlaneRole: ""}
		}, byNodeRole),
		podAttack(p, "affinity-in-control-plane", ClassPlacement, nil, nodeAffinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: controlPlaneRole, Operator: corev1.NodeSelectorOpIn, Values: []string{""}}}}), byNodeRole),
		podAttack(p, "preferred-affinity-exists-control-plane", ClassPlacement, nil, func(pod *corev1.Pod) {
			pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: controlPlaneRole, Operator: corev1.NodeSelectorOpExists}}}}}}}
		}, byNodeRole),
		podAttack(p, "nodeselector-hostname", ClassPlacement, nil, func(pod *corev1.Pod) {
			pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "control-plane-0"}
		}, byNodeName),
		podAttack(p, "affinity-match-fields-name", ClassPlacement, nil, nodeAffinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"control-plane-0"}}}}), byNodeName),
	}
	if p.Toleration != "" {
		out = append(out, podAttack(p, "tolerate-unlisted-key", ClassPlacement, nil, toleration(p.Toleration), byTolerations))
	}
	if p.Scheduler != "" {
		out = append(out, podAttack(p, "scheduler-not-allowed", ClassPlacement, nil, func(pod *corev1.Pod) { pod.Spec.SchedulerName = p.Scheduler }, byScheduler))
	}
	if p.RuntimeClass != "" {
		out = append(out, podAttack(p, "runtime-class-not-allowed", ClassPlacement, nil, func(pod *corev1.Pod) { pod.Spec.RuntimeClassName = new(p.RuntimeClass) }, byRuntimeClass))
	}
	return out
}

// tokenAndPriorityAttacks: a ServiceAccount token in a pod (with an audience a cloud trusts, or the one
// automounting adds), a token Secret, and priority classes that preempt the provider's own pods.
func tokenAndPriorityAttacks(p Params) []Attack {
	out := []Attack{
		podAttack(p, "projected-token-with-audience", ClassTokens, nil, func(pod *corev1.Pod) {
			pod.Spec.Volumes = []corev1.Volume{{Name: "cloud-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "sts.amazonaws.com", Path: "token"}}}}}}}
			pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cloud-token", MountPath: "/var/run/secrets/cloud"}}
		}, byToken),
		podAttack(p, "automount-service-account-token", ClassTokens, nil, func(pod *corev1.Pod) { pod.Spec.AutomountServiceAccountToken = new(true) }, byToken),
		secretAttack(p, "service-account-token-secret", func(s *corev1.Secret) {
			s.Annotations = map[string]string{corev1.ServiceAccountNameKey: "default"}
			s.Type = corev1.SecretTypeServiceAccountToken
		}, byTokenSecret),
		podAttack(p, "emptydir-unbounded", ClassHostPath, baseline, func(pod *corev1.Pod) {
			pod.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, byEmptyDirLimit),
		podAttack(p, "csi-inline-volume", ClassHostPath, baseline, func(pod *corev1.Pod) {
			pod.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: unlistedDriver,
				VolumeAttributes: map[string]string{"server": "nfs.provider.internal", "share": "/"}}}}}
		}, byCSIDriver),
		podAttack(p, "pod-certificate", ClassTokens, nil, func(pod *corev1.Pod) {
			pod.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{
				PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/tenant-signer", KeyType: "ED25519", CredentialBundlePath: "credentialbundle.pem"}}}}}}}
		}, byPodCertificate),
		podAttack(p, "system-node-critical", ClassPriority, nil, func(pod *corev1.Pod) { pod.Spec.PriorityClassName = "system-node-critical" }, byPriority),
		podAttack(p, "system-cluster-critical", ClassPriority, nil, func(pod *corev1.Pod) { pod.Spec.PriorityClassName = "system-cluster-critical" }, byPriority),
	}
	if !p.AnyImage {
		out = append(out, podAttack(p, "image-volume", ClassHostPath, baseline, func(pod *corev1.Pod) {
			pod.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: unlistedImage, PullPolicy: corev1.PullIfNotPresent}}}}
		}, byImageVolume))
	}
	if p.PriorityClass != "" {
		out = append(out, podAttack(p, "unlisted-priority-class", ClassPriority, nil, func(pod *corev1.Pod) { pod.Spec.PriorityClassName = p.PriorityClass }, byPriority))
	}
	return out
}

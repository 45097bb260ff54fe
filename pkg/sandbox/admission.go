package sandbox

import (
	"fmt"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// GVRs of what init and the sandbox apply through the dynamic client.
var (
	PolicyGVR         = admissionv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies")
	PolicyBindingGVR  = admissionv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings")
	ResourceQuotaGVR  = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}
	LimitRangeGVR     = schema.GroupVersionResource{Version: "v1", Resource: "limitranges"}
	ServiceAccountGVR = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	NetworkPolicyGVR  = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}
)

// What Pod Security Admission, RBAC and quotas cannot express is refused by ValidatingAdmissionPolicies,
// evaluated by the API server itself (CEL, no webhook to run), one per kind so that each expression
// type-checks against that kind's schema, and bound to every namespace that carries LabelSandbox. Each
// rule names itself in its message so a refused tenant knows which one it hit. These policies match every
// requester, the controllers that act on a tenant's templates included (a ReplicaSet's pods, a
// StatefulSet's or an ephemeral volume's claims), since what they create is the tenant's.
var sandboxValidations = map[string][]admissionv1.Validation{
	"services": {{
		Expression: `!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0`,
		Message:    "kubectl federate sandbox: Service spec.externalIPs is not allowed (it can intercept traffic for any address, CVE-2020-8554)",
	}, {
		Expression: `!has(object.spec.type) || object.spec.type == 'ClusterIP'`,
		Message:    "kubectl federate sandbox: only ClusterIP Services are allowed (no NodePort, LoadBalancer or ExternalName)",
	}},
	"secrets": {{
		Expression: `!has(object.type) || object.type != 'kubernetes.io/service-account-token'`,
		Message:    "kubectl federate sandbox: Secrets of type kubernetes.io/service-account-token are not allowed (a token that outlives the tenant's binding)",
	}},
	"pods": append([]admissionv1.Validation{{
		Expression: `!has(object.spec.priorityClassName) || object.spec.priorityClassName == '' || ` +
			`(!object.spec.priorityClassName.startsWith('system-') && has(namespaceObject.metadata.annotations) && ` +
			`'` + AnnotationPriorityClasses + `' in namespaceObject.metadata.annotations && ` +
			`object.spec.priorityClassName in namespaceObject.metadata.annotations['` + AnnotationPriorityClasses + `'].split(','))`,
		Message: "kubectl federate sandbox: this priorityClassName is not allowed (system-* never; others only those the provider allowed, namespace annotation " + AnnotationPriorityClasses + ")",
	}, {
		Expression: `!has(object.spec.serviceAccountName) || !object.spec.serviceAccountName.startsWith('` + credential.CredentialServiceAccount + `-')`,
		Message:    "kubectl federate sandbox: pods must not run as a " + credential.CredentialServiceAccount + "-* ServiceAccount (a Token identity's own: the pod could mint its tokens)",
	}, {
		Expression: `request.operation != 'CREATE' || !has(object.spec.nodeName) || object.spec.nodeName == ''`,
		Message:    "kubectl federate sandbox: pods must not set spec.nodeName (it bypasses the scheduler and taints)",
	}, {
		Expression: `!has(object.spec.tolerations) || !object.spec.tolerations.exists(t, ` +
			`((!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists') || ` +
			`(has(t.key) && t.key in ` + celList(ControlPlaneTaints) + `))`,
		Message: "kubectl federate sandbox: pods must not tolerate every taint or the control plane's taints",
	}, {
		// Placement: a taint keeps a tenant off the nodes the provider reserved (GPU pools, dedicated
		// nodes, CriticalAddonsOnly), so a pod tolerates only what DefaultTolerationSeconds adds and what
		// the provider allowed. A pod's tolerations can be added to after creation, so an update is checked
		// too, unless it leaves them as they were (a pod that predates a stricter list keeps running).
		Expression: unchanged("tolerations") + ` || !has(object.spec.tolerations) || ` +
			`object.spec.tolerations.all(t, has(t.key) && t.key in variables.tolerations)`,
		Message: "kubectl federate sandbox: pods may tolerate only " + strings.Join(DefaultTolerations, ", ") +
			" and the taints the provider allowed (namespace annotation " + AnnotationTolerations + ")",
	}, {
		// A control-plane node that carries no taint (single-node clusters, k3s servers) is kept from a
		// tenant only by not being selected: no node-role.kubernetes.io/* label may be asked for. NotIn and
		// DoesNotExist keep pods away from such nodes, which is welcome.
		Expression: unchanged("nodeSelector") + ` || !has(object.spec.nodeSelector) || ` +
			`!object.spec.nodeSelector.exists(k, k.startsWith('` + nodeRolePrefix + `'))`,
		Message: nodeRoleMessage,
	}, {
		Expression: unchanged("affinity") + ` || !has(object.spec.affinity) || !has(object.spec.affinity.nodeAffinity) || (` +
			`(!has(object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution) || ` +
			`!object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.exists(t, ` + selectsNodeRole("t") + `)) && ` +
			`(!has(object.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution) || ` +
			`!object.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution.exists(p, ` + selectsNodeRole("p.preference") + `)))`,
		Message: nodeRoleMessage,
	}, {
		// A control-plane node without its taint can also be chosen by name: its hostname label, or the
		// node's name through matchFields. A tenant never needs to pin a node by name in a shared cluster.
		Expression: unchanged("nodeSelector") + ` || !has(object.spec.nodeSelector) || ` +
			`!object.spec.nodeSelector.exists(k, k in ` + celList(NodeNameLabels) + `)`,
		Message: nodeNameMessage,
	}, {
		Expression: unchanged("affinity") + ` || !has(object.spec.affinity) || !has(object.spec.affinity.nodeAffinity) || (` +
			`(!has(object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution) || ` +
			`!object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.exists(t, ` + selectsNodeByName("t") + `)) && ` +
			`(!has(object.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution) || ` +
			`!object.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution.exists(p, ` + selectsNodeByName("p.preference") + `)))`,
		Message: nodeNameMessage,
	}, {
		// Pod (anti-)affinity to pods of other namespaces places a tenant's pod next to the provider's
		// (the API server's static pods mark the control-plane nodes), and a required anti-affinity of a
		// running pod keeps other namespaces' pods off its node. Only the pod's own namespace may be named.
		Expression: unchanged("affinity") + ` || !has(object.spec.affinity) || (` +
			podAffinityOwnNamespace("object.spec.affinity", "podAffinity") + ` && ` + podAffinityOwnNamespace("object.spec.affinity", "podAntiAffinity") + `)`,
		Message: "kubectl federate sandbox: pod affinity and anti-affinity may only name pods of the pod's own namespace (no namespaces of others, no namespaceSelector)",
	}, {
		// A runtime class may be a privileged or host-sharing runtime; a scheduler may ignore taints and
		// quotas of its own. Both are immutable, so they are checked at creation.
		Expression: `request.operation != 'CREATE' || !has(object.spec.runtimeClassName) || object.spec.runtimeClassName in variables.runtimeClasses`,
		Message:    "kubectl federate sandbox: this runtimeClassName is not allowed (only those the provider allowed, namespace annotation " + AnnotationRuntimeClasses + ")",
	}, {
		Expression: `request.operation != 'CREATE' || !has(object.spec.schedulerName) || object.spec.schedulerName == '' || object.spec.schedulerName in variables.schedulers`,
		Message:    "kubectl federate sandbox: this schedulerName is not allowed (" + DefaultScheduler + ", or one the provider allowed, namespace annotation " + AnnotationSchedulers + ")",
	}, {
		// A projected ServiceAccount token, whatever its audience, can be presented to services outside
		// the cluster that trust the provider's issuer (cloud workload identity federation). This also
		// refuses the kube-api-access volume the ServiceAccount admission plugin adds to a pod that sets
		// automountServiceAccountToken: true. Volumes are immutable: checked at creation.
		Expression: `request.operation != 'CREATE' || !has(object.spec.volumes) || !object.spec.volumes.exists(v, ` +
			`has(v.projected) && has(v.projected.sources) && v.projected.sources.exists(s, has(s.serviceAccountToken)))`,
		Message: "kubectl federate sandbox: pods must not mount a ServiceAccount token (a projected serviceAccountToken volume, also the one automountServiceAccountToken: true adds): " +
			"a token can be presented to services outside the cluster that trust its issuer",
	}, {
		Expression: `request.operation != 'CREATE' || ` + ephemeralClaimsOK("object.spec"),
		Message:    claimTemplateMessage,
	}}, volumeValidations("object.spec", `request.operation != 'CREATE' || `)...),
	// A PersistentVolumeClaim is checked whoever creates it: a StatefulSet's claims and generic ephemeral
	// volumes' are created by controllers under their own names, from the tenant's templates.
	"persistentvolumeclaims": {{
		Expression: `request.operation != 'CREATE' || ` + claimNoVolumeName("object.spec"),
		Message:    "kubectl federate sandbox: a PersistentVolumeClaim must not set spec.volumeName (it would bind a PersistentVolume it did not make, such as an administrator's hostPath volume)",
	}, {
		Expression: `request.operation != 'CREATE' || ` + claimSourceHere("object.spec"),
		Message:    "kubectl federate sandbox: a PersistentVolumeClaim must not take its data from another namespace (spec.dataSourceRef.namespace)",
	}, {
		// A claim without a class binds to any Available PersistentVolume without one, which only an
		// administrator makes (a hostPath volume, another tenant's released data). The DefaultStorageClass
		// admission plugin mutates before validation runs, so on a cluster with a default class a claim
		// that names none already carries it here and is admitted; without a default class it is refused.
		Expression: `request.operation != 'CREATE' || (has(object.spec.storageClassName) && object.spec.storageClassName != '')`,
		Message:    "kubectl federate sandbox: a PersistentVolumeClaim must name a storage class (one without binds any PersistentVolume that has none, which only an administrator makes)",
	}, {
		Expression: `request.operation != 'CREATE' || !has(object.spec.storageClassName) || object.spec.storageClassName == '' || ` +
			`size(variables.storageClasses) == 0 || object.spec.storageClassName in variables.storageClasses`,
		Message: "kubectl federate sandbox: this storage class is not allowed (only those the provider allowed, namespace annotation " + AnnotationStorageClasses + ")",
	}},
}

// policyVariables are the policies' CEL variables: the provider's allowed lists, read from the sandbox
// namespace's annotations (an annotation that is missing or empty allows nothing beyond the defaults).
var policyVariables = map[string][]admissionv1.Variable{
	"pods": append([]admissionv1.Variable{
		{Name: "tolerations", Expression: celList(DefaultTolerations) + ` + ` + annotationList(AnnotationTolerations)},
		{Name: "runtimeClasses", Expression: annotationList(AnnotationRuntimeClasses)},
		{Name: "schedulers", Expression: celList([]string{DefaultScheduler}) + ` + ` + annotationList(AnnotationSchedulers)},
		{Name: "storageClasses", Expression: annotationList(AnnotationStorageClasses)},
	}, volumeVariables...),
	"persistentvolumeclaims": {{Name: "storageClasses", Expression: annotationList(AnnotationStorageClasses)}},
	"workloads":              append([]admissionv1.Variable{{Name: "storageClasses", Expression: annotationList(AnnotationStorageClasses)}}, volumeVariables...),
	"statefulsets":           {{Name: "storageClasses", Expression: annotationList(AnnotationStorageClasses)}},
	"cronjobs":               volumeVariables,
}

// volumeVariables are what the volume rules read: the provider's CSI drivers and image sources, and
// whether the sandbox is privileged (there a pod may mount the host anyway: the allowlist does not apply).
var volumeVariables = []admissionv1.Variable{
	{Name: "csiDrivers", Expression: annotationList(AnnotationCSIDrivers)},
	{Name: "imageVolumes", Expression: annotationList(AnnotationImageVolumes)},
	{Name: "privileged", Expression: `has(namespaceObject.metadata.labels) && '` + PsaPrefix + `enforce' in namespaceObject.metadata.labels && ` +
		`namespaceObject.metadata.labels['` + PsaPrefix + `enforce'] == '` + PodSecurityPrivileged + `'`},
}

// NodeNameLabels name a single node: selecting on one picks a node by name.
var NodeNameLabels = []string{"kubernetes.io/hostname"}

const (
	nodeNameMessage = "kubectl federate sandbox: pods must not select nodes by name (kubernetes.io/hostname in a nodeSelector or node affinity, " +
		"or matchFields on metadata.name, with In, Exists, Gt or Lt; NotIn and DoesNotExist are allowed): the node chosen may be a control-plane node without its taint"
	nodeRolePrefix  = "node-role.kubernetes.io/"
	nodeRoleMessage = "kubectl federate sandbox: pods must not select nodes by their " + nodeRolePrefix + "* labels (nodeSelector, or node affinity with In, Exists, Gt or Lt; NotIn and DoesNotExist are allowed)"
	// claimTemplateMessage is the template-level refusal of what the PersistentVolumeClaim policy would
	// refuse later, under a controller's name, where the tenant would never see why.
	claimTemplateMessage = "kubectl federate sandbox: a volume claim template must not set spec.volumeName, take its data from another namespace, " +
		"or name an empty storage class or one the provider did not allow (namespace annotation " + AnnotationStorageClasses + ")"
)

// celList is a CEL list literal of strings.
func celList(l []string) string {
	return "['" + strings.Join(l, "', '") + "']"
}

// annotationList is a CEL expression for the comma-separated list a sandbox namespace's annotation holds.
func annotationList(annotation string) string {
	return `(has(namespaceObject.metadata.annotations) && '` + annotation + `' in namespaceObject.metadata.annotations ? ` +
		`namespaceObject.metadata.annotations['` + annotation + `'].split(',').filter(n, n != '') : [])`
}

// unchanged is a CEL condition that holds for an update that leaves the pod's spec.<field> as it was.
func unchanged(field string) string {
	n, o := "object.spec."+field, "oldObject.spec."+field
	return `(request.operation == 'UPDATE' && has(` + n + `) == has(` + o + `) && (!has(` + n + `) || ` + n + ` == ` + o + `))`
}

// selectsNodeRole is a CEL condition that holds when a node selector term selects nodes by a
// node-role.kubernetes.io/* label.
func selectsNodeRole(term string) string {
	role := func(e string) string {
		return e + `.key.startsWith('` + nodeRolePrefix + `') && ` + e + `.operator in ['In', 'Exists', 'Gt', 'Lt']`
	}
	return `(has(` + term + `.matchExpressions) && ` + term + `.matchExpressions.exists(e, ` + role("e") + `)) || ` +
		`(has(` + term + `.matchFields) && ` + term + `.matchFields.exists(f, ` + role("f") + `))`
}

// selectsNodeByName is a CEL condition that holds when a node selector term picks a node by name: its
// hostname label, or any matchFields (metadata.name is the only field), with a positive operator.
func selectsNodeByName(term string) string {
	positive := `.operator in ['In', 'Exists', 'Gt', 'Lt']`
	return `(has(` + term + `.matchExpressions) && ` + term + `.matchExpressions.exists(e, e.key in ` + celList(NodeNameLabels) + ` && e` + positive + `)) || ` +
		`(has(` + term + `.matchFields) && ` + term + `.matchFields.exists(f, f` + positive + `))`
}

// podAffinityOwnNamespace is a CEL condition that holds when every term of affinity.<kind> (podAffinity or
// podAntiAffinity), required or preferred, names only the pod's own namespace.
func podAffinityOwnNamespace(affinity, kind string) string {
	k := affinity + "." + kind
	own := func(t string) string {
		return `(!has(` + t + `.namespaceSelector) && (!has(` + t + `.namespaces) || ` + t + `.namespaces.all(n, n == request.namespace)))`
	}
	return `(!has(` + k + `) || ((!has(` + k + `.requiredDuringSchedulingIgnoredDuringExecution) || ` + k + `.requiredDuringSchedulingIgnoredDuringExecution.all(t, ` + own("t") + `)) && ` +
		`(!has(` + k + `.preferredDuringSchedulingIgnoredDuringExecution) || ` + k + `.preferredDuringSchedulingIgnoredDuringExecution.all(w, ` + own("w.podAffinityTerm") + `))))`
}

// claimNoVolumeName, claimSourceHere and claimTemplateOK check a PersistentVolumeClaimSpec at path (a
// claim's, or a template's).
func claimNoVolumeName(path string) string {
	return `(!has(` + path + `.volumeName) || ` + path + `.volumeName == '')`
}

func claimSourceHere(path string) string {
	return `(!has(` + path + `.dataSourceRef) || !has(` + path + `.dataSourceRef.namespace) || ` +
		path + `.dataSourceRef.namespace == '' || ` + path + `.dataSourceRef.namespace == request.namespace)`
}

// claimTemplateOK: in a template, a missing storageClassName is left to the DefaultStorageClass admission
// plugin when the claim is made (the claim policy refuses it there if the cluster has no default class);
// an empty one means no class and is refused.
func claimTemplateOK(path string) string {
	return claimNoVolumeName(path) + ` && ` + claimSourceHere(path) + ` && (!has(` + path + `.storageClassName) || (` +
		path + `.storageClassName != '' && (size(variables.storageClasses) == 0 || ` + path + `.storageClassName in variables.storageClasses)))`
}

// ephemeralClaimsOK checks the generic ephemeral volumes of a pod spec at path.
func ephemeralClaimsOK(path string) string {
	return `(!has(` + path + `.volumes) || ` + path + `.volumes.all(v, !has(v.ephemeral) || !has(v.ephemeral.volumeClaimTemplate) || (` +
		claimTemplateOK("v.ephemeral.volumeClaimTemplate.spec") + `)))`
}

// Volumes are an allowlist: what a pod may mount is its own namespace's data (ConfigMaps, Secrets, the
// downward API, projections of those and of public trust bundles), scratch space with a size limit, and
// claims, which the claim rules hold. Anything else reaches beyond the namespace: a CSI inline volume is
// whatever its driver mounts from wherever the node reaches (an NFS export of the provider's, with
// csi-driver-nfs), an image volume is pulled with the node's credentials, and the in-tree network volumes
// (nfs, iscsi, cephfs, rbd, ...) name the provider's storage outright. A CSI driver or an image source is
// allowed only where the provider listed it (namespace annotations); a privileged sandbox, whose pods may
// mount the host, is not held to the allowlist. A pod certificate (a projected podCertificate) is never
// allowed: a signer of the provider's would issue it, with the provider's trust.
var (
	emptyDirMessage = "kubectl federate sandbox: an emptyDir volume must set sizeLimit (the kubelet evicts a pod that writes more; unlimited, it fills the node's disk)"
	csiMessage      = "kubectl federate sandbox: CSI inline volumes are allowed only for the drivers the provider allowed (namespace annotation " + AnnotationCSIDrivers + "): the driver mounts whatever the node reaches"
	imageMessage    = "kubectl federate sandbox: image volumes are allowed only from the sources the provider allowed (namespace annotation " + AnnotationImageVolumes + "): the node pulls them with its own credentials"
	podCertMessage  = "kubectl federate sandbox: pods must not mount a pod certificate (a projected podCertificate volume): a signer of the provider's would issue it"
	volumeMessage   = "kubectl federate sandbox: this volume type is not allowed (only configMap, secret, downwardAPI, emptyDir with sizeLimit, projected configMap, secret, downwardAPI " +
		"or clusterTrustBundle, persistentVolumeClaim and ephemeral; csi and image where the provider allowed them)"
)

// volumeValidations are the volume rules for the pod spec at path; guard (ending in " || ", or empty) is
// what lets a request through unchecked (a pod's volumes cannot change after its creation).
func volumeValidations(path, guard string) []admissionv1.Validation {
	each := func(cond string) string {
		return guard + `!has(` + path + `.volumes) || ` + path + `.volumes.all(v, ` + cond + `)`
	}
	held := func(cond string) string { return each(`variables.privileged || ` + cond) }
	return []admissionv1.Validation{{
		Expression: each(`!has(v.projected) || !has(v.projected.sources) || !v.projected.sources.exists(s, has(s.podCertificate))`),
		Message:    podCertMessage,
	}, {
		Expression: held(`!has(v.csi) || v.csi.driver in variables.csiDrivers`),
		Message:    csiMessage,
	}, {
		Expression: held(`!has(v.image) || (has(v.image.reference) && variables.imageVolumes.exists(p, p == '*' || v.image.reference.startsWith(p)))`),
		Message:    imageMessage,
	}, {
		// sizeLimit is a quantity, which the type checker does not resolve: read through dyn.
		Expression: held(`!has(v.emptyDir) || has(dyn(v.emptyDir).sizeLimit)`),
		Message:    emptyDirMessage,
	}, {
		// What the rules above and the token and claim rules judge is let through here; anything else is
		// refused, including a volume type Kubernetes adds later.
		Expression: held(`has(v.configMap) || has(v.secret) || has(v.downwardAPI) || has(v.emptyDir) || has(v.persistentVolumeClaim) || ` +
			`has(v.ephemeral) || has(v.csi) || has(v.image) || (has(v.projected) && (!has(v.projected.sources) || v.projected.sources.all(s, ` +
			`has(s.configMap) || has(s.secret) || has(s.downwardAPI) || has(s.clusterTrustBundle) || has(s.serviceAccountToken) || has(s.podCertificate))))`),
		Message: volumeMessage,
	}}
}

// SandboxPolicyResources are the kinds the sandbox policies check; each has a policy and a binding named
// SandboxName-<resource>. "finalizers" checks every kind (see finalizersPolicy); "volumeclaims" is the
// tenants' own changes to PersistentVolumeClaims. "cordon", "cordon-scale", "cordon-jobs" and
// "cordon-cronjobs" are bound only to cordoned sandboxes (LabelCordoned).
var SandboxPolicyResources = []string{"pods", "services", "secrets", "persistentvolumeclaims", "finalizers", "workloads", "statefulsets",
	"cronjobs", "history", "volumeclaims", "cordon", "cordon-scale", "cordon-jobs", "cordon-cronjobs"}

// noTemplateFinalizers refuses finalizers in what controllers create from a tenant's templates (pods of
// Deployments, ReplicaSets, StatefulSets, DaemonSets and Jobs; a StatefulSet's PVCs; a CronJob's Jobs and
// their pods): the controller copies them onto objects it creates under its own name, which the
// finalizers policy does not see, and one that nothing removes keeps the namespace terminating forever.
func noTemplateFinalizers(path string) string {
	return `!has(` + path + `.metadata) || !has(` + path + `.metadata.finalizers) || size(` + path + `.metadata.finalizers) == 0`
}

var templateMessage = "kubectl federate sandbox: templates must not carry finalizers (the objects made from them could never be deleted)"

// tenantValidations are the checks of the policies that match tenant identities only (tenantPolicy): the
// "workloads" policy's (apps and batch kinds with spec.template), the "statefulsets", "cronjobs" and
// "volumeclaims" policies'.
var tenantValidations = map[string][]admissionv1.Validation{
	"workloads": append([]admissionv1.Validation{{
		Expression: noTemplateFinalizers("object.spec.template"),
		Message:    templateMessage,
	}, {
		// The claims these templates make are refused under the controller's name, where the tenant would
		// only see a stuck workload; refusing the template says why.
		Expression: ephemeralClaimsOK("object.spec.template.spec"),
		Message:    claimTemplateMessage,
	}}, volumeValidations("object.spec.template.spec", "")...),
	// A StatefulSet's volumeClaimTemplates, in a policy of their own so that each expression type-checks
	// against the one kind that has them.
	"statefulsets": {{
		Expression: revisionHistoryCapped,
		Message:    revisionHistoryMessage,
	}, {
		Expression: `!has(object.spec.volumeClaimTemplates) || object.spec.volumeClaimTemplates.all(c, ` + noTemplateFinalizers("c") + `)`,
		Message:    templateMessage,
	}, {
		Expression: `!has(object.spec.volumeClaimTemplates) || object.spec.volumeClaimTemplates.all(c, ` + claimTemplateOK("c.spec") + `)`,
		Message:    claimTemplateMessage,
	}},
	"cronjobs": append([]admissionv1.Validation{{
		Expression: "(" + noTemplateFinalizers("object.spec.jobTemplate") + ") && (" + noTemplateFinalizers("object.spec.jobTemplate.spec.template") + ")",
		Message:    templateMessage,
	}, {
		Expression: `(!has(object.spec.successfulJobsHistoryLimit) || object.spec.successfulJobsHistoryLimit <= ` + strconv.Itoa(MaxJobsHistory) + `) && ` +
			`(!has(object.spec.failedJobsHistoryLimit) || object.spec.failedJobsHistoryLimit <= ` + strconv.Itoa(MaxFailedJobsHistory) + `)`,
		Message: fmt.Sprintf("kubectl federate sandbox: a CronJob may keep at most %d successful and %d failed Jobs (successfulJobsHistoryLimit, failedJobsHistoryLimit): "+
			"each one kept is an object in the provider's etcd", MaxJobsHistory, MaxFailedJobsHistory),
	}}, volumeValidations("object.spec.jobTemplate.spec.template.spec", "")...),
	// Deployments and DaemonSets keep old ReplicaSets and ControllerRevisions: their history is capped.
	"history": {{
		Expression: revisionHistoryCapped,
		Message:    revisionHistoryMessage,
	}},
	// The PersistentVolume binder sets spec.volumeName on an update when it binds a claim, so this cannot
	// apply to everyone; a tenant that sets it on a pending claim would pick the volume it binds.
	"volumeclaims": {{
		Expression: `request.operation != 'UPDATE' || ` +
			`(has(object.spec.volumeName) ? object.spec.volumeName : '') == (has(oldObject.spec.volumeName) ? oldObject.spec.volumeName : '')`,
		Message: "kubectl federate sandbox: a tenant may not set or change a PersistentVolumeClaim's spec.volumeName (it would pick the PersistentVolume it binds)",
	}},
}

// The history limits a tenant may set, at most: Kubernetes's own defaults, so that a workload that sets
// none is admitted. The quota's counts bound the objects kept in all; these keep one workload from taking
// them all.
const (
	MaxRevisionHistory   = 10 // revisionHistoryLimit of Deployments, StatefulSets and DaemonSets
	MaxJobsHistory       = 3  // successfulJobsHistoryLimit of CronJobs
	MaxFailedJobsHistory = 1  // failedJobsHistoryLimit of CronJobs
)

var (
	revisionHistoryCapped  = `!has(object.spec.revisionHistoryLimit) || object.spec.revisionHistoryLimit <= ` + strconv.Itoa(MaxRevisionHistory)
	revisionHistoryMessage = fmt.Sprintf("kubectl federate sandbox: revisionHistoryLimit may be at most %d: each old revision kept is an object in the provider's etcd", MaxRevisionHistory)
)

// A cordoned tenant (cordon tenant) keeps what runs, and may change it, but nothing new starts: no pod or
// workload is created in its namespaces, by the tenant or by a controller acting on its objects (a
// ReplicaSet replacing a pod the tenant relabelled out of it or deleted, a Deployment replacing a
// ReplicaSet, a CronJob's next Job, whatever the tenant changed in them). The tenant itself is also told
// at once when it tries to raise a workload's replicas or a Job's parallelism, or to resume a suspended
// Job or CronJob. Pods that end are not replaced until the tenant is uncordoned.
var cordonValidations = map[string][]admissionv1.Validation{
	"cordon": {{
		Expression: `request.operation != 'CREATE'`,
		Message:    "kubectl federate sandbox: this tenant is cordoned by the provider: it may not create pods or workloads until it is uncordoned",
	}},
	"cordon-scale": {{
		Expression: `request.operation != 'UPDATE' || !has(object.spec.replicas) || ` +
			`(has(oldObject.spec.replicas) && object.spec.replicas <= oldObject.spec.replicas)`,
		Message: "kubectl federate sandbox: this tenant is cordoned by the provider: it may not scale workloads up until it is uncordoned",
	}},
	"cordon-jobs": {{
		Expression: `request.operation != 'UPDATE' || !has(object.spec.parallelism) || ` +
			`(has(oldObject.spec.parallelism) && object.spec.parallelism <= oldObject.spec.parallelism)`,
		Message: "kubectl federate sandbox: this tenant is cordoned by the provider: it may not raise a Job's parallelism until it is uncordoned",
	}, {
		Expression: notResumed,
		Message:    resumeMessage,
	}},
	"cordon-cronjobs": {{
		Expression: notResumed,
		Message:    resumeMessage,
	}},
}

// notResumed holds unless an update takes a Job or CronJob out of suspension (suspend true to false, or
// removed, which defaulting makes false).
const notResumed = `request.operation != 'UPDATE' || !has(oldObject.spec.suspend) || !oldObject.spec.suspend || ` +
	`(has(object.spec.suspend) && object.spec.suspend)`

const resumeMessage = "kubectl federate sandbox: this tenant is cordoned by the provider: it may not resume a suspended Job or CronJob until it is uncordoned"

var tenantRules = map[string]admissionv1.Rule{
	"cordon": {APIGroups: []string{"", "apps", "batch"}, APIVersions: []string{"v1"},
		Resources: []string{"pods", "replicationcontrollers", "deployments", "replicasets", "statefulsets", "daemonsets", "jobs", "cronjobs"}},
	"cordon-scale": {APIGroups: []string{"", "apps"}, APIVersions: []string{"v1"},
		Resources: []string{"replicationcontrollers", "replicationcontrollers/scale", "deployments", "deployments/scale",
			"replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale"}},
	"cordon-jobs":     {APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs"}},
	"cordon-cronjobs": {APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"cronjobs"}},
	"workloads": {APIGroups: []string{"apps", "batch"}, APIVersions: []string{"v1"},
		Resources: []string{"deployments", "replicasets", "statefulsets", "daemonsets", "jobs"}},
	"statefulsets": {APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"statefulsets"}},
	"history":      {APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments", "daemonsets"}},
	"cronjobs":     {APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"cronjobs"}},
	"volumeclaims": {APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"persistentvolumeclaims"}},
}

// finalizersValidation keeps a tenant from adding finalizers: one that no controller serves would keep
// an object, and so its namespace, from ever being deleted, and the provider could never finish removing
// a slice or a pairing. A tenant may keep the finalizers an object already has (a controller's), use the
// garbage collector's, and carry the one the API server itself adds to a new PersistentVolumeClaim.
var finalizersValidation = admissionv1.Validation{
	Expression: `!has(object.metadata.finalizers) || object.metadata.finalizers.all(f, ` +
		`f in ['foregroundDeletion', 'orphan'] || ` +
		`(f == 'kubernetes.io/pvc-protection' && request.resource.resource == 'persistentvolumeclaims') || ` +
		`(oldObject != null && has(oldObject.metadata.finalizers) && f in oldObject.metadata.finalizers))`,
	Message: "kubectl federate sandbox: a tenant may not add finalizers (one no controller removes would keep the namespace from ever being deleted)",
}

// Policy is the admission policy that holds tenants to the sandbox for one kind of request.
func Policy(resource string) *admissionv1.ValidatingAdmissionPolicy {
	if resource == "finalizers" {
		return finalizersPolicy()
	}
	if rule, ok := tenantRules[resource]; ok {
		if v, ok := cordonValidations[resource]; ok {
			return tenantPolicy(resource, rule, v)
		}
		return tenantPolicy(resource, rule, tenantValidations[resource])
	}
	fail := admissionv1.Fail
	return &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: SandboxName + "-" + resource, Labels: map[string]string{member.LabelManagedBy: member.ManagedBy}},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{resource}},
				},
			}}},
			Variables:   policyVariables[resource],
			Validations: sandboxValidations[resource],
		},
	}
}

// finalizersPolicy applies finalizersValidation to every kind, for the requests of tenant identities (the
// group every issued certificate carries); the provider's own requests and its controllers' are not
// matched.
func finalizersPolicy() *admissionv1.ValidatingAdmissionPolicy {
	return tenantPolicy("finalizers", admissionv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}},
		[]admissionv1.Validation{finalizersValidation})
}

// tenantPolicy is a sandbox policy for the requests of tenant identities only.
func tenantPolicy(name string, rule admissionv1.Rule, validations []admissionv1.Validation) *admissionv1.ValidatingAdmissionPolicy {
	fail := admissionv1.Fail
	return &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: SandboxName + "-" + name, Labels: map[string]string{member.LabelManagedBy: member.ManagedBy}},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       rule,
				},
			}}},
			MatchConditions: []admissionv1.MatchCondition{{
				Name:       "tenant",
				Expression: matchCondition(name),
			}},
			Variables:   policyVariables[name],
			Validations: validations,
		},
	}
}

// AnnotationCordonProbe marks the dry-run pod with which cordon proves that admission already refuses the
// tenant's new pods in a namespace: the cordon policy matches it as it matches a tenant. A dry run stores
// nothing, so matching it gives nobody anything.
const AnnotationCordonProbe = "federate.dev/cordon-probe"

// tenantMatch holds for the requests of tenant identities: certificates carry the tenant group; a Token
// identity is its namespace's credential ServiceAccount, a user name only tokens the API server signed
// can have.
var tenantMatch = `request.userInfo.groups.exists(g, g == '` + member.TenantGroup + `') || ` +
	`request.userInfo.username.matches('^` + credential.ServiceAccountPrefix + `[^:]+:` + credential.CredentialServiceAccount + `-[a-z0-9]+$')`

// matchCondition is whom a tenant policy applies to: tenant identities; for the cordon policy, everyone,
// controllers included (a ReplicaSet replacing a pod relabelled out of it, a CronJob's next Job), but
// for the provider's own dry runs that prove its other guards (they store nothing), save the cordon probe.
func matchCondition(name string) string {
	if name != "cordon" {
		return tenantMatch
	}
	return `!request.dryRun || ` + tenantMatch + ` || (has(object.metadata.annotations) && '` + AnnotationCordonProbe + `' in object.metadata.annotations)`
}

// PolicyBinding binds Policy(resource) to every tenant namespace, denying what it refuses.
func PolicyBinding(resource string) *admissionv1.ValidatingAdmissionPolicyBinding {
	return &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: SandboxName + "-" + resource, Labels: map[string]string{member.LabelManagedBy: member.ManagedBy}},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        SandboxName + "-" + resource,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: bindingLabels(resource),
			}},
		},
	}
}

// bindingLabels selects the namespaces a sandbox policy applies to: every sandbox, or for the cordon
// policies the cordoned ones.
func bindingLabels(resource string) map[string]string {
	if _, ok := cordonValidations[resource]; ok {
		return map[string]string{LabelSandbox: "true", LabelCordoned: "true"}
	}
	return map[string]string{LabelSandbox: "true"}
}

// LabelCordoned marks the namespaces of a cordoned consumer; the cordon admission policies are bound to
// the sandboxes that carry it.
const LabelCordoned = "federate.dev/cordoned"

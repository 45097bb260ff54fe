package handshake

import (
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GVRs of what init and the sandbox apply through the dynamic client.
var (
	policyGVR         = admissionv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies")
	policyBindingGVR  = admissionv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings")
	resourceQuotaGVR  = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}
	limitRangeGVR     = schema.GroupVersionResource{Version: "v1", Resource: "limitranges"}
	serviceAccountGVR = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	networkPolicyGVR  = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}
)

// What Pod Security Admission, RBAC and quotas cannot express is refused by ValidatingAdmissionPolicies,
// evaluated by the API server itself (CEL, no webhook to run), one per kind so that each expression
// type-checks against that kind's schema, and bound to every namespace that carries LabelSandbox. Each
// rule names itself in its message so a refused tenant knows which one it hit.
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
	"pods": {{
		Expression: `!has(object.spec.priorityClassName) || object.spec.priorityClassName == '' || ` +
			`(!object.spec.priorityClassName.startsWith('system-') && has(namespaceObject.metadata.annotations) && ` +
			`'` + AnnotationPriorityClasses + `' in namespaceObject.metadata.annotations && ` +
			`object.spec.priorityClassName in namespaceObject.metadata.annotations['` + AnnotationPriorityClasses + `'].split(','))`,
		Message: "kubectl federate sandbox: this priorityClassName is not allowed (system-* never; others only if the provider allowed them with --priority-classes)",
	}, {
		Expression: `!has(object.spec.serviceAccountName) || !object.spec.serviceAccountName.startsWith('` + CredentialServiceAccount + `-')`,
		Message:    "kubectl federate sandbox: pods must not run as a " + CredentialServiceAccount + "-* ServiceAccount (a Token identity's own: the pod could mint its tokens)",
	}, {
		Expression: `request.operation != 'CREATE' || !has(object.spec.nodeName) || object.spec.nodeName == ''`,
		Message:    "kubectl federate sandbox: pods must not set spec.nodeName (it bypasses the scheduler and taints)",
	}, {
		Expression: `!has(object.spec.tolerations) || !object.spec.tolerations.exists(t, ` +
			`((!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists') || ` +
			`(has(t.key) && t.key in ['node-role.kubernetes.io/control-plane', 'node-role.kubernetes.io/master']))`,
		Message: "kubectl federate sandbox: pods must not tolerate every taint or the control plane's taints",
	}},
}

// SandboxPolicyResources are the kinds the sandbox policies check; each has a policy and a binding named
// SandboxName-<resource>. "finalizers" checks every kind (see finalizersPolicy).
// "cordon" and "cordon-scale" are bound only to cordoned sandboxes (LabelCordoned).
var SandboxPolicyResources = []string{"pods", "services", "secrets", "finalizers", "workloads", "cronjobs", "cordon", "cordon-scale"}

// noTemplateFinalizers refuses finalizers in what controllers create from a tenant's templates (pods of
// Deployments, ReplicaSets, StatefulSets, DaemonSets and Jobs; a StatefulSet's PVCs; a CronJob's Jobs and
// their pods): the controller copies them onto objects it creates under its own name, which the
// finalizers policy does not see, and one that nothing removes keeps the namespace terminating forever.
func noTemplateFinalizers(path string) string {
	return `!has(` + path + `.metadata) || !has(` + path + `.metadata.finalizers) || size(` + path + `.metadata.finalizers) == 0`
}

var templateMessage = "kubectl federate sandbox: templates must not carry finalizers (the objects made from them could never be deleted)"

// workloadValidations are the "workloads" policy's (apps and batch kinds with spec.template) and the
// "cronjobs" policy's checks.
var workloadValidations = map[string][]admissionv1.Validation{
	"workloads": {{
		Expression: noTemplateFinalizers("object.spec.template"),
		Message:    templateMessage,
	}, {
		Expression: `request.resource.resource != 'statefulsets' || !has(object.spec.volumeClaimTemplates) || ` +
			`object.spec.volumeClaimTemplates.all(c, ` + noTemplateFinalizers("c") + `)`,
		Message: templateMessage,
	}},
	"cronjobs": {{
		Expression: "(" + noTemplateFinalizers("object.spec.jobTemplate") + ") && (" + noTemplateFinalizers("object.spec.jobTemplate.spec.template") + ")",
		Message:    templateMessage,
	}},
}

// A cordoned tenant (cordon tenant) keeps what runs, and may change it, but starts nothing new: it may not
// create pods or workloads, nor raise a workload's replicas. What its controllers do under their own
// names (a ReplicaSet replacing a failed pod) is not matched, so existing workloads keep running.
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
}

var workloadRules = map[string]admissionv1.Rule{
	"cordon": {APIGroups: []string{"", "apps", "batch"}, APIVersions: []string{"v1"},
		Resources: []string{"pods", "replicationcontrollers", "deployments", "replicasets", "statefulsets", "daemonsets", "jobs", "cronjobs"}},
	"cordon-scale": {APIGroups: []string{"", "apps"}, APIVersions: []string{"v1"},
		Resources: []string{"replicationcontrollers", "replicationcontrollers/scale", "deployments", "deployments/scale",
			"replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale"}},
	"workloads": {APIGroups: []string{"apps", "batch"}, APIVersions: []string{"v1"},
		Resources: []string{"deployments", "replicasets", "statefulsets", "daemonsets", "jobs"}},
	"cronjobs": {APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"cronjobs"}},
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

func sandboxPolicy(resource string) *admissionv1.ValidatingAdmissionPolicy {
	if resource == "finalizers" {
		return finalizersPolicy()
	}
	if rule, ok := workloadRules[resource]; ok {
		if v, ok := cordonValidations[resource]; ok {
			return tenantPolicy(resource, rule, v)
		}
		return tenantPolicy(resource, rule, workloadValidations[resource])
	}
	fail := admissionv1.Fail
	return &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: SandboxName + "-" + resource, Labels: map[string]string{LabelManagedBy: ManagedBy}},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{resource}},
				},
			}}},
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
		ObjectMeta: metav1.ObjectMeta{Name: SandboxName + "-" + name, Labels: map[string]string{LabelManagedBy: ManagedBy}},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       rule,
				},
			}}},
			MatchConditions: []admissionv1.MatchCondition{{
				Name: "tenant",
				// Certificates carry the tenant group; a Token identity is its namespace's credential
				// ServiceAccount, a user name only tokens the API server signed can have.
				Expression: `request.userInfo.groups.exists(g, g == '` + TenantGroup + `') || ` +
					`request.userInfo.username.matches('^` + serviceAccountPrefix + `[^:]+:` + CredentialServiceAccount + `-[a-z0-9]+$')`,
			}},
			Validations: validations,
		},
	}
}

func sandboxPolicyBinding(resource string) *admissionv1.ValidatingAdmissionPolicyBinding {
	return &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: SandboxName + "-" + resource, Labels: map[string]string{LabelManagedBy: ManagedBy}},
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

package verify

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	authzv1 "k8s.io/api/authorization/v1"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"

	"github.com/federate-dev/kubectl-federate/pkg/kube"

	authnv1 "k8s.io/api/authentication/v1"

	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// The attacks beyond pods: storage that reaches a volume or data the tenant did not make, Services that
// reach beyond the cluster, the sandbox's own objects, and every right the sandbox never grants (other
// namespaces, cluster-scoped objects, Secrets, RBAC, impersonation, tokens, CSRs, nodes), and the quota.

// byEscalation is RBAC's refusal of a binding or role that grants more than its maker holds.
const byEscalation = "is attempting to grant RBAC permissions not currently held"

func claim(name string, class *string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		StorageClassName: class,
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
}

// claimAttack creates a claim changed by mutate.
func claimAttack(p Params, name string, mutate func(*corev1.PersistentVolumeClaim), guards ...string) Attack {
	obj := p.name(name)
	return Attack{Name: name, Class: ClassStorage, Guards: guards,
		Access: authzv1.ResourceAttributes{Namespace: p.Namespace, Verb: "create", Resource: "persistentvolumeclaims"},
		Object: Object{Resource: claimsGVR, Namespace: p.Namespace, Name: obj},
		try: func(ctx context.Context, cs kube.Interface, dry []string) error {
			c := claim(obj, nil)
			mutate(c)
			_, err := cs.CoreV1().PersistentVolumeClaims(p.Namespace).Create(ctx, c, metav1.CreateOptions{DryRun: dry})
			return err
		}}
}

// storageAttacks claim a volume the tenant did not make (by name, or by naming no class), another
// namespace's data, or a volume through a template a controller would create the claim from.
func storageAttacks(p Params) []Attack {
	volume := p.Volume
	if volume == "" {
		volume = Absent
	}
	byName := func(s *corev1.PersistentVolumeClaimSpec) { s.VolumeName, s.StorageClassName = volume, new("") }
	out := []Attack{
		claimAttack(p, "pvc-volume-name", func(c *corev1.PersistentVolumeClaim) { byName(&c.Spec) }, byVolumeName),
		claimAttack(p, "pvc-empty-class", func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = new("") }, byClassless),
		podAttack(p, "ephemeral-volume-name", ClassStorage, nil, func(pod *corev1.Pod) {
			spec := claim("", nil).Spec
			byName(&spec)
			pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: spec}}}}}
			pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/host"}}
		}, byClaimTemplate),
		statefulSetAttack(p, byName),
	}
	out = append(out, otherNamespaceData(p))
	if p.ClasslessRefused {
		out = append(out, claimAttack(p, "pvc-classless", func(*corev1.PersistentVolumeClaim) {}, byClassless))
	}
	if p.PendingClaim != "" {
		out = append(out, Attack{Name: "pvc-update-volume-name", Class: ClassStorage, Guards: []string{byClaimRebind},
			Access: authzv1.ResourceAttributes{Namespace: p.Namespace, Verb: "patch", Resource: "persistentvolumeclaims"},
			Object: Object{Resource: claimsGVR, Namespace: p.Namespace, Name: p.PendingClaim},
			try: func(ctx context.Context, cs kube.Interface, dry []string) error {
				_, err := cs.CoreV1().PersistentVolumeClaims(p.Namespace).Patch(ctx, p.PendingClaim, types.MergePatchType,
					[]byte(`{"spec":{"volumeName":"`+volume+`"}}`), metav1.PatchOptions{DryRun: dry})
				return err
			}})
	}
	return out
}

// otherNamespaceData claims another namespace's data. On an API server without
// CrossNamespaceVolumeDataSource the namespace is dropped and an ordinary claim remains: so this one is a
// dry run for every caller, and a claim admitted without it counts as refused (the API server dropped it).
func otherNamespaceData(p Params) Attack {
	a := claimAttack(p, "pvc-other-namespace-data", nil, byDataSource, byDropped)
	a.Always = true
	a.try = func(ctx context.Context, cs kube.Interface, dry []string) error {
		c := claim(a.Object.Name, new("standard"))
		c.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "data", Namespace: new(member.SystemNamespace)}
		got, err := cs.CoreV1().PersistentVolumeClaims(p.Namespace).Create(ctx, c, metav1.CreateOptions{DryRun: dry})
		if err != nil || got == nil || (got.Spec.DataSourceRef != nil && got.Spec.DataSourceRef.Namespace != nil) {
			return err
		}
		return fmt.Errorf("%w: spec.dataSourceRef.namespace (the API server does not enable cross-namespace data sources)", errDropped)
	}
	return a
}

func statefulSetAttack(p Params, byName func(*corev1.PersistentVolumeClaimSpec)) Attack {
	obj := p.name("statefulset-claim-template-volume-name")
	return Attack{Name: "statefulset-claim-template-volume-name", Class: ClassStorage, Guards: []string{byClaimTemplate},
		Access: authzv1.ResourceAttributes{Namespace: p.Namespace, Verb: "create", Group: "apps", Resource: "statefulsets"},
		Object: Object{Resource: appsv1.SchemeGroupVersion.WithResource("statefulsets"), Namespace: p.Namespace, Name: obj},
		try: func(ctx context.Context, cs kube.Interface, dry []string) error {
			tmpl := claim("data", nil)
			byName(&tmpl.Spec)
			labels := map[string]string{"app": obj}
			_, err := cs.AppsV1().StatefulSets(p.Namespace).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: obj},
				Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template:             corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: restrictedPod("").Spec},
					VolumeClaimTemplates: []corev1.PersistentVolumeClaim{*tmpl}}}, metav1.CreateOptions{DryRun: dry})
			return err
		}}
}

func serviceAttack(p Params, name string, mutate func(*corev1.Service), guards ...string) Attack {
	obj := p.name(name)
	return Attack{Name: name, Class: ClassServices, Guards: guards,
		Access: authzv1.ResourceAttributes{Namespace: p.Namespace, Verb: "create", Resource: "services"},
		Object: Object{Resource: corev1.SchemeGroupVersion.WithResource("services"), Namespace: p.Namespace, Name: obj},
		try: func(ctx context.Context, cs kube.Interface, dry []string) error {
			s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: obj}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "x"},
				Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}}
			mutate(s)
			_, err := cs.CoreV1().Services(p.Namespace).Create(ctx, s, metav1.CreateOptions{DryRun: dry})
			return err
		}}
}

// serviceAttacks: Services that intercept any address or open the provider's nodes or load balancers.
func serviceAttacks(p Params) []Attack {
	return []Attack{
		serviceAttack(p, "externalips", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"10.0.0.1", "203.0.113.7"} }, byExternalIPs),
		serviceAttack(p, "nodeport", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }, byServiceType, ByQuota),
		serviceAttack(p, "loadbalancer", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer }, byServiceType, ByQuota),
		serviceAttack(p, "externalname", func(s *corev1.Service) {
			s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "kubernetes.default.svc.cluster.local"}
		}, byServiceType),
	}
}

func secretAttack(p Params, name string, mutate func(*corev1.Secret), guards ...string) Attack {
	obj := p.name(name)
	return Attack{Name: name, Class: ClassTokens, Guards: guards,
		Access: authzv1.ResourceAttributes{Namespace: p.Namespace, Verb: "create", Resource: "secrets"},
		Object: Object{Resource: corev1.SchemeGroupVersion.WithResource("secrets"), Namespace: p.Namespace, Name: obj},
		try: func(ctx context.Context, cs kube.Interface, dry []string) error {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: obj}}
			mutate(s)
			_, err := cs.CoreV1().Secrets(p.Namespace).Create(ctx, s, metav1.CreateOptions{DryRun: dry})
			return err
		}}
}

// patchAttack changes one of the sandbox's own objects (a merge patch): only the provider may.
func patchAttack(name string, gvr schema.GroupVersionResource, ns, object, patch string) Attack {
	return Attack{Name: name, Class: ClassSandbox, Guards: []string{ByRBAC},
		Access: authzv1.ResourceAttributes{Namespace: ns, Verb: "patch", Group: gvr.Group, Resource: gvr.Resource},
		Object: Object{Resource: gvr, Namespace: ns, Name: object},
		try: func(ctx context.Context, cs kube.Interface, dry []string) error {
			opts, data := metav1.PatchOptions{DryRun: dry}, []byte(patch)
			var err error
			switch gvr.Resource {
			case "networkpolicies":
				_, err = cs.NetworkingV1().NetworkPolicies(ns).Patch(ctx, object, types.MergePatchType, data, opts)
			case "resourcequotas":
				_, err = cs.CoreV1().ResourceQuotas(ns).Patch(ctx, object, types.MergePatchType, data, opts)
			case "limitranges":
				_, err = cs.CoreV1().LimitRanges(ns).Patch(ctx, object, types.MergePatchType, data, opts)
			case "serviceaccounts":
				_, err = cs.CoreV1().ServiceAccounts(ns).Patch(ctx, object, types.MergePatchType, data, opts)
			case "namespaces":
				_, err = cs.CoreV1().Namespaces().Patch(ctx, object, types.MergePatchType, data, opts)
			default:
				err = fmt.Errorf("no patch for %s", gvr.Resource)
			}
			return err
		}}
}

// createAttack creates obj (a typed object of the clientset) where the tenant has no right to.
func createAttack(name, class string, access authzv1.ResourceAttributes, obj Object, create func(context.Context, kube.Interface, metav1.CreateOptions) error, guards ...string) Attack {
	if len(guards) == 0 {
		guards = []string{ByRBAC}
	}
	return Attack{Name: name, Class: class, Guards: guards, Access: access, Object: obj,
		try: func(ctx context.Context, cs kube.Interface, dry []string) error {
			return create(ctx, cs, metav1.CreateOptions{DryRun: dry})
		}}
}

var (
	npGVR  = networkingv1.SchemeGroupVersion.WithResource("networkpolicies")
	nsGVR  = corev1.SchemeGroupVersion.WithResource("namespaces")
	dsGVR  = appsv1.SchemeGroupVersion.WithResource("daemonsets")
	rbGVR  = rbacv1.SchemeGroupVersion.WithResource("rolebindings")
	roGVR  = rbacv1.SchemeGroupVersion.WithResource("roles")
	crbGVR = rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")
	cmGVR  = corev1.SchemeGroupVersion.WithResource("configmaps")
)

// sandboxObjectAttacks: what the tenant may not do to its sandbox itself (its network policy, quota,
// limits, namespace labels, ServiceAccount), nor run a pod on every node.
func sandboxObjectAttacks(p Params) []Attack {
	ns := p.Namespace
	ds := p.name("daemonset")
	np := p.name("allow-all-networkpolicy")
	return []Attack{
		createAttack("daemonset", ClassWorkloads, authzv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: "apps", Resource: "daemonsets"},
			Object{Resource: dsGVR, Namespace: ns, Name: ds}, func(ctx context.Context, cs kube.Interface, o metav1.CreateOptions) error {
				labels := map[string]string{"app": "everywhere"}
				_, err := cs.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: ds}, Spec: appsv1.DaemonSetSpec{
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: restrictedPod("").Spec}}}, o)
				return err
			}),
		createAttack("allow-all-networkpolicy", ClassSandbox, authzv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: "networking.k8s.io", Resource: "networkpolicies"},
			Object{Resource: npGVR, Namespace: ns, Name: np}, func(ctx context.Context, cs kube.Interface, o metav1.CreateOptions) error {
				_, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: np},
					Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
						Ingress: []networkingv1.NetworkPolicyIngressRule{{}}, Egress: []networkingv1.NetworkPolicyEgressRule{{}}}}, o)
				return err
			}),
		patchAttack("open-networkpolicy", npGVR, ns, sandbox.SandboxName, `{"spec":{"egress":[{}],"ingress":[{}]}}`),
		patchAttack("raise-quota", corev1.SchemeGroupVersion.WithResource("resourcequotas"), ns, sandbox.SandboxName, `{"spec":{"hard":{"pods":"100000"}}}`),
		patchAttack("empty-limitrange", corev1.SchemeGroupVersion.WithResource("limitranges"), ns, sandbox.SandboxName, `{"spec":{"limits":[]}}`),
		patchAttack("relabel-namespace-privileged", nsGVR, "", ns, `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}`),
		patchAttack("automount-default-serviceaccount", corev1.SchemeGroupVersion.WithResource("serviceaccounts"), ns, "default", `{"automountServiceAccountToken":true}`),
	}
}

// absentRead turns the answer to a read of an object that does not exist into an attack's answer: NotFound
// means the read was authorized (admitted), anything else is the answer as it is.
func absentRead(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		return nil // it exists after all: read, so admitted
	}
	return err
}

// readAttack reads an object that does not exist, where the tenant may not read: nothing is ever read.
func readAttack(name, class string, access authzv1.ResourceAttributes, read func(context.Context, kube.Interface) error) Attack {
	return Attack{Name: name, Class: class, Guards: []string{ByRBAC}, Access: access,
		try: func(ctx context.Context, cs kube.Interface, _ []string) error { return absentRead(read(ctx, cs)) }}
}

// reviewAttack asks the API server, as the tenant (a SelfSubjectAccessReview), whether it may do what no
// request can show without doing it (impersonating someone else).
func reviewAttack(name, class string, access authzv1.ResourceAttributes) Attack {
	return Attack{Name: name, Class: class, Guards: []string{ByRBAC}, Access: access,
		try: func(ctx context.Context, cs kube.Interface, _ []string) error {
			a := access
			r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
				Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}}, metav1.CreateOptions{})
			switch {
			case err != nil:
				return err
			case r.Status.Allowed:
				return nil
			}
			return apierrors.NewForbidden(schema.GroupResource{Group: a.Group, Resource: a.Resource}, a.Name,
				fmt.Errorf("the API server says it cannot %s %s (SelfSubjectAccessReview)", a.Verb, a.Resource))
		}}
}

// accessAttacks: the rights the sandbox never grants, each tried as a request the API server answers as
// the tenant: writes as dry runs, reads of objects that do not exist.
func accessAttacks(p Params) []Attack {
	ns := p.Namespace
	own := member.SystemNamespace
	out := []Attack{
		createAttack("create-namespace", ClassCluster, authzv1.ResourceAttributes{Verb: "create", Resource: "namespaces"},
			Object{Resource: nsGVR, Name: p.name("namespace")}, func(ctx context.Context, cs kube.Interface, o metav1.CreateOptions) error {
				_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.name("namespace")}}, o)
				return err
			}),
		createAttack("bind-cluster-admin-cluster-wide", ClassRBAC, authzv1.ResourceAttributes{Verb: "create", Group: rbacv1.GroupName, Resource: "clusterrolebindings"},
			Object{Resource: crbGVR, Name: p.name("cluster-admin")}, func(ctx context.Context, cs kube.Interface, o metav1.CreateOptions) error {
				_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: p.name("cluster-admin")},
					Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: member.TenantGroup}},
					RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}}, o)
				return err
			}, ByRBAC, byEscalation),
		createAttack("bind-cluster-admin", ClassRBAC, authzv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: rbacv1.GroupName, Resource: "rolebindings"},
			Object{Resource: rbGVR, Namespace: ns, Name: p.name("cluster-admin")}, func(ctx context.Context, cs kube.Interface, o metav1.CreateOptions) error {
				_, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: p.name("cluster-admin")},
					Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: member.TenantGroup}},
					RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}}, o)
				return err
			}, ByRBAC, byEscalation),
		createAttack("escalate-role", ClassRBAC, authzv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: rbacv1.GroupName, Resource: "roles"},
			Object{Resource: roGVR, Namespace: ns, Name: p.name("everything")}, func(ctx context.Context, cs kube.Interface, o metav1.CreateOptions) error {
				_, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: p.name("everything")},
					Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}, o)
				return err
			}, ByRBAC, byEscalation),
		reviewAttack("impersonate-user", ClassRBAC, authzv1.ResourceAttributes{Verb: "impersonate", Resource: "users", Name: "system:admin"}),
		reviewAttack("impersonate-group", ClassRBAC, authzv1.ResourceAttributes{Verb: "impersonate", Resource: "groups", Name: "system:masters"}),
		reviewAttack("impersonate-serviceaccount", ClassRBAC, authzv1.ResourceAttributes{Namespace: "kube-system", Verb: "impersonate", Resource: "serviceaccounts"}),
		createAttack("pod-in-kube-system", ClassNamespaces, authzv1.ResourceAttributes{Namespace: "kube-system", Verb: "create", Resource: "pods"},
			Object{Resource: podsGVR, Namespace: "kube-system", Name: p.name("pod")}, func(ctx context.Context, cs kube.Interface, o metav1.CreateOptions) error {
				_, err := cs.CoreV1().Pods("kube-system").Create(ctx, restrictedPod(p.name("pod")), o)
				return err
			}),
		createAttack("configmap-in-federate-system", ClassNamespaces, authzv1.ResourceAttributes{Namespace: own, Verb: "create", Resource: "configmaps"},
			Object{Resource: cmGVR, Namespace: own, Name: p.name("record")}, func(ctx context.Context, cs kube.Interface, o metav1.CreateOptions) error {
				_, err := cs.CoreV1().ConfigMaps(own).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: p.name("record")}}, o)
				return err
			}),
		readAttack("secret-in-kube-system", ClassSecrets, authzv1.ResourceAttributes{Namespace: "kube-system", Verb: "get", Resource: "secrets"},
			func(ctx context.Context, cs kube.Interface) error {
				_, err := cs.CoreV1().Secrets("kube-system").Get(ctx, Absent, metav1.GetOptions{})
				return err
			}),
		readAttack("secret-in-federate-system", ClassSecrets, authzv1.ResourceAttributes{Namespace: own, Verb: "get", Resource: "secrets"},
			func(ctx context.Context, cs kube.Interface) error {
				_, err := cs.CoreV1().Secrets(own).Get(ctx, Absent, metav1.GetOptions{})
				return err
			}),
		// A list everywhere that matches nothing: allowed, it answers an empty list and reads no Secret.
		readAttack("list-secrets-everywhere", ClassSecrets, authzv1.ResourceAttributes{Verb: "list", Resource: "secrets"},
			func(ctx context.Context, cs kube.Interface) error {
				_, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + Absent})
				return err
			}),
		readAttack("mint-token", ClassTokens, authzv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "serviceaccounts", Subresource: "token"},
			func(ctx context.Context, cs kube.Interface) error {
				_, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, Absent, &authnTokenRequest, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				return err
			}),
		readAttack("approve-csr", ClassCSR, authzv1.ResourceAttributes{Verb: "update", Group: certv1.GroupName, Resource: "certificatesigningrequests", Subresource: "approval"},
			func(ctx context.Context, cs kube.Interface) error {
				_, err := cs.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, Absent, &certv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: Absent}},
					metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
				return err
			}),
		readAttack("node-proxy", ClassNodeProxy, authzv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "proxy"},
			func(ctx context.Context, cs kube.Interface) error {
				rc, ok := cs.CoreV1().RESTClient().(*rest.RESTClient)
				if !ok || rc == nil { // a fake clientset has no REST client: ask instead
					return reviewAttack("node-proxy", ClassNodeProxy, authzv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "proxy"}).try(ctx, cs, nil)
				}
				return rc.Get().AbsPath("/api/v1/nodes/" + Absent + "/proxy/").Do(ctx).Error()
			}),
	}
	return out
}

// quotaAttacks: a pod asking more than the whole of the sandbox's quota.
func quotaAttacks(p Params) []Attack {
	if p.QuotaCPU == nil {
		return nil
	}
	over := p.QuotaCPU.DeepCopy()
	over.Add(resource.MustParse("1"))
	return []Attack{podAttack(p, "cpu-over-quota", ClassQuota, nil, func(pod *corev1.Pod) {
		rl := corev1.ResourceList{corev1.ResourceCPU: over, corev1.ResourceMemory: resource.MustParse("64Mi")}
		pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}
	}, ByQuota, "maximum cpu usage")}
}

// authnTokenRequest is the token the mint-token attack asks for (of a ServiceAccount that does not exist).
var authnTokenRequest = authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: new(int64(600))}}

package kube

import (
	"context"
	"fmt"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// clientset is the Interface over one connection: a REST client per group version, all sharing one
// HTTP client (one connection pool) and one rate limiter, as client-go's clientset shares them.
type clientset struct {
	codecs    *codecs
	discovery *discovery
	groups    map[schema.GroupVersion]*rest.RESTClient
}

// NewForConfig returns the clients of the cluster c connects to.
func NewForConfig(c *rest.Config) (Interface, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	hc, err := rest.HTTPClientFor(&cfg)
	if err != nil {
		return nil, err
	}
	return newForConfigAndClient(&cfg, hc)
}

// newForConfigAndClient is NewForConfig over the one HTTP client every group shares.
func newForConfigAndClient(c *rest.Config, hc *http.Client) (Interface, error) {
	cfg := *c
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	cs := &clientset{codecs: theCodecs(), groups: make(map[schema.GroupVersion]*rest.RESTClient, len(apiGroups))}
	for _, g := range apiGroups {
		gv := g.gv
		gc := cfg
		gc.GroupVersion = &gv
		gc.APIPath = "/apis"
		if gv.Group == "" {
			gc.APIPath = "/api"
		}
		gc.NegotiatedSerializer = cs.codecs.serializer
		rc, err := rest.RESTClientForConfigAndClient(&gc, hc)
		if err != nil {
			return nil, err
		}
		cs.groups[gv] = rc
	}
	d, err := newDiscovery(&cfg, hc, cs.codecs)
	if err != nil {
		return nil, err
	}
	cs.discovery = d
	return cs, nil
}

func (cs *clientset) Discovery() Discovery { return cs.discovery }

// group is the shape every group's clients share: their REST client and codecs.
type group struct {
	rc     *rest.RESTClient
	codecs *codecs
}

func (cs *clientset) group(gv schema.GroupVersion) group {
	return group{rc: cs.groups[gv], codecs: cs.codecs}
}

// collection is the client of one kind.
func collection[T object, L runtime.Object](g group, resource, namespace string, newT func() T, newL func() L) *typed[T, L] {
	return newTyped(g, resource, namespace, newT, newL)
}

// creator is the client of a review kind: create only.
func creator[T object](g group, resource string, newT func() T) *typed[T, T] {
	return newTyped(g, resource, "", newT, newT)
}

func (cs *clientset) CoreV1() CoreV1 { return coreV1{cs.group(corev1.SchemeGroupVersion)} }
func (cs *clientset) RbacV1() RbacV1 { return rbacV1{cs.group(rbacv1.SchemeGroupVersion)} }
func (cs *clientset) CertificatesV1() CertificatesV1 {
	return certificatesV1{cs.group(certificatesv1.SchemeGroupVersion)}
}
func (cs *clientset) AuthenticationV1() AuthenticationV1 {
	return authenticationV1{cs.group(authenticationv1.SchemeGroupVersion)}
}
func (cs *clientset) AuthorizationV1() AuthorizationV1 {
	return authorizationV1{cs.group(authorizationv1.SchemeGroupVersion)}
}
func (cs *clientset) NetworkingV1() NetworkingV1 {
	return networkingV1{cs.group(networkingv1.SchemeGroupVersion)}
}
func (cs *clientset) CoordinationV1() CoordinationV1 {
	return coordinationV1{cs.group(coordinationv1.SchemeGroupVersion)}
}
func (cs *clientset) EventsV1() EventsV1   { return eventsV1{cs.group(eventsv1.SchemeGroupVersion)} }
func (cs *clientset) AppsV1() AppsV1       { return appsV1{cs.group(appsv1.SchemeGroupVersion)} }
func (cs *clientset) StorageV1() StorageV1 { return storageV1{cs.group(storagev1.SchemeGroupVersion)} }
func (cs *clientset) SchedulingV1() SchedulingV1 {
	return schedulingV1{cs.group(schedulingv1.SchemeGroupVersion)}
}
func (cs *clientset) NodeV1() NodeV1 { return nodeV1{cs.group(nodev1.SchemeGroupVersion)} }

type coreV1 struct{ group }

func (g coreV1) RESTClient() rest.Interface { return g.rc }
func (g coreV1) Namespaces() Resource[*corev1.Namespace, *corev1.NamespaceList] {
	return collection(g.group, "namespaces", "", func() *corev1.Namespace { return &corev1.Namespace{} }, func() *corev1.NamespaceList { return &corev1.NamespaceList{} })
}
func (g coreV1) Nodes() Collection[*corev1.Node, *corev1.NodeList] {
	return collection(g.group, "nodes", "", func() *corev1.Node { return &corev1.Node{} }, func() *corev1.NodeList { return &corev1.NodeList{} })
}
func (g coreV1) Secrets(ns string) Collection[*corev1.Secret, *corev1.SecretList] {
	return collection(g.group, "secrets", ns, func() *corev1.Secret { return &corev1.Secret{} }, func() *corev1.SecretList { return &corev1.SecretList{} })
}
func (g coreV1) ConfigMaps(ns string) Collection[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return collection(g.group, "configmaps", ns, func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} })
}
func (g coreV1) ServiceAccounts(ns string) ServiceAccounts {
	return serviceAccounts{collection(g.group, "serviceaccounts", ns, func() *corev1.ServiceAccount { return &corev1.ServiceAccount{} }, func() *corev1.ServiceAccountList { return &corev1.ServiceAccountList{} })}
}
func (g coreV1) Pods(ns string) Collection[*corev1.Pod, *corev1.PodList] {
	return collection(g.group, "pods", ns, func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} })
}
func (g coreV1) Services(ns string) Resource[*corev1.Service, *corev1.ServiceList] {
	return collection(g.group, "services", ns, func() *corev1.Service { return &corev1.Service{} }, func() *corev1.ServiceList { return &corev1.ServiceList{} })
}
func (g coreV1) ResourceQuotas(ns string) Collection[*corev1.ResourceQuota, *corev1.ResourceQuotaList] {
	return collection(g.group, "resourcequotas", ns, func() *corev1.ResourceQuota { return &corev1.ResourceQuota{} }, func() *corev1.ResourceQuotaList { return &corev1.ResourceQuotaList{} })
}
func (g coreV1) LimitRanges(ns string) Collection[*corev1.LimitRange, *corev1.LimitRangeList] {
	return collection(g.group, "limitranges", ns, func() *corev1.LimitRange { return &corev1.LimitRange{} }, func() *corev1.LimitRangeList { return &corev1.LimitRangeList{} })
}
func (g coreV1) PersistentVolumeClaims(ns string) Collection[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList] {
	return collection(g.group, "persistentvolumeclaims", ns, func() *corev1.PersistentVolumeClaim { return &corev1.PersistentVolumeClaim{} }, func() *corev1.PersistentVolumeClaimList { return &corev1.PersistentVolumeClaimList{} })
}

// serviceAccounts adds the token subresource to the generic client.
type serviceAccounts struct {
	*typed[*corev1.ServiceAccount, *corev1.ServiceAccountList]
}

func (c serviceAccounts) CreateToken(ctx context.Context, name string, req *authenticationv1.TokenRequest, opts metav1.CreateOptions) (*authenticationv1.TokenRequest, error) {
	out := &authenticationv1.TokenRequest{}
	return out, c.subresource(ctx, c.rc.Post(), name, "token", &opts, req, out)
}

type rbacV1 struct{ group }

func (g rbacV1) Roles(ns string) Collection[*rbacv1.Role, *rbacv1.RoleList] {
	return collection(g.group, "roles", ns, func() *rbacv1.Role { return &rbacv1.Role{} }, func() *rbacv1.RoleList { return &rbacv1.RoleList{} })
}
func (g rbacV1) RoleBindings(ns string) Collection[*rbacv1.RoleBinding, *rbacv1.RoleBindingList] {
	return collection(g.group, "rolebindings", ns, func() *rbacv1.RoleBinding { return &rbacv1.RoleBinding{} }, func() *rbacv1.RoleBindingList { return &rbacv1.RoleBindingList{} })
}
func (g rbacV1) ClusterRoles() Collection[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList] {
	return collection(g.group, "clusterroles", "", func() *rbacv1.ClusterRole { return &rbacv1.ClusterRole{} }, func() *rbacv1.ClusterRoleList { return &rbacv1.ClusterRoleList{} })
}
func (g rbacV1) ClusterRoleBindings() Collection[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList] {
	return collection(g.group, "clusterrolebindings", "", func() *rbacv1.ClusterRoleBinding { return &rbacv1.ClusterRoleBinding{} }, func() *rbacv1.ClusterRoleBindingList { return &rbacv1.ClusterRoleBindingList{} })
}

type certificatesV1 struct{ group }

func (g certificatesV1) CertificateSigningRequests() CertificateSigningRequests {
	return csrs{collection(g.group, "certificatesigningrequests", "", func() *certificatesv1.CertificateSigningRequest { return &certificatesv1.CertificateSigningRequest{} },
		func() *certificatesv1.CertificateSigningRequestList {
			return &certificatesv1.CertificateSigningRequestList{}
		})}
}

// csrs adds the approval subresource to the generic client.
type csrs struct {
	*typed[*certificatesv1.CertificateSigningRequest, *certificatesv1.CertificateSigningRequestList]
}

func (c csrs) UpdateApproval(ctx context.Context, name string, csr *certificatesv1.CertificateSigningRequest, opts metav1.UpdateOptions) (*certificatesv1.CertificateSigningRequest, error) {
	out := &certificatesv1.CertificateSigningRequest{}
	return out, c.subresource(ctx, c.rc.Put(), name, "approval", &opts, csr, out)
}

type authenticationV1 struct{ group }

func (g authenticationV1) SelfSubjectReviews() Creator[*authenticationv1.SelfSubjectReview] {
	return creator(g.group, "selfsubjectreviews", func() *authenticationv1.SelfSubjectReview { return &authenticationv1.SelfSubjectReview{} })
}

type authorizationV1 struct{ group }

func (g authorizationV1) SubjectAccessReviews() Creator[*authorizationv1.SubjectAccessReview] {
	return creator(g.group, "subjectaccessreviews", func() *authorizationv1.SubjectAccessReview { return &authorizationv1.SubjectAccessReview{} })
}
func (g authorizationV1) SelfSubjectAccessReviews() Creator[*authorizationv1.SelfSubjectAccessReview] {
	return creator(g.group, "selfsubjectaccessreviews", func() *authorizationv1.SelfSubjectAccessReview { return &authorizationv1.SelfSubjectAccessReview{} })
}

type networkingV1 struct{ group }

func (g networkingV1) NetworkPolicies(ns string) Collection[*networkingv1.NetworkPolicy, *networkingv1.NetworkPolicyList] {
	return collection(g.group, "networkpolicies", ns, func() *networkingv1.NetworkPolicy { return &networkingv1.NetworkPolicy{} }, func() *networkingv1.NetworkPolicyList { return &networkingv1.NetworkPolicyList{} })
}

type coordinationV1 struct{ group }

func (g coordinationV1) Leases(ns string) Collection[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return collection(g.group, "leases", ns, func() *coordinationv1.Lease { return &coordinationv1.Lease{} }, func() *coordinationv1.LeaseList { return &coordinationv1.LeaseList{} })
}

type eventsV1 struct{ group }

func (g eventsV1) Events(ns string) Collection[*eventsv1.Event, *eventsv1.EventList] {
	return collection(g.group, "events", ns, func() *eventsv1.Event { return &eventsv1.Event{} }, func() *eventsv1.EventList { return &eventsv1.EventList{} })
}

type appsV1 struct{ group }

func (g appsV1) DaemonSets(ns string) Collection[*appsv1.DaemonSet, *appsv1.DaemonSetList] {
	return collection(g.group, "daemonsets", ns, func() *appsv1.DaemonSet { return &appsv1.DaemonSet{} }, func() *appsv1.DaemonSetList { return &appsv1.DaemonSetList{} })
}
func (g appsV1) StatefulSets(ns string) Collection[*appsv1.StatefulSet, *appsv1.StatefulSetList] {
	return collection(g.group, "statefulsets", ns, func() *appsv1.StatefulSet { return &appsv1.StatefulSet{} }, func() *appsv1.StatefulSetList { return &appsv1.StatefulSetList{} })
}

type storageV1 struct{ group }

func (g storageV1) StorageClasses() Collection[*storagev1.StorageClass, *storagev1.StorageClassList] {
	return collection(g.group, "storageclasses", "", func() *storagev1.StorageClass { return &storagev1.StorageClass{} }, func() *storagev1.StorageClassList { return &storagev1.StorageClassList{} })
}

type schedulingV1 struct{ group }

func (g schedulingV1) PriorityClasses() Collection[*schedulingv1.PriorityClass, *schedulingv1.PriorityClassList] {
	return collection(g.group, "priorityclasses", "", func() *schedulingv1.PriorityClass { return &schedulingv1.PriorityClass{} }, func() *schedulingv1.PriorityClassList { return &schedulingv1.PriorityClassList{} })
}

type nodeV1 struct{ group }

func (g nodeV1) RuntimeClasses() Collection[*nodev1.RuntimeClass, *nodev1.RuntimeClassList] {
	return collection(g.group, "runtimeclasses", "", func() *nodev1.RuntimeClass { return &nodev1.RuntimeClass{} }, func() *nodev1.RuntimeClassList { return &nodev1.RuntimeClassList{} })
}

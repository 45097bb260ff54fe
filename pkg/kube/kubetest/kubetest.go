// Package kubetest adapts client-go clientsets to kube.Interface for tests: the fake clientset of the
// unit tier above all (end-to-end tests use the plugin's own clients). The generated clients' method
// sets include kube's resource interfaces, so each method hands the clientset's client through. Tests
// only: importing it links all of client-go's typed clients, which the plugin's binary must not.
package kubetest

import (
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/federate-dev/kubectl-federate/pkg/kube"
)

// Wrap returns cs as a kube.Interface.
func Wrap(cs kubernetes.Interface) kube.Interface { return clientset{cs} }

// Fake is Wrap(fake.NewClientset(objects...)).
func Fake(objects ...runtime.Object) kube.Interface { return Wrap(fake.NewClientset(objects...)) }

type clientset struct{ cs kubernetes.Interface }

func (c clientset) Discovery() kube.Discovery { return c.cs.Discovery() }

func (c core) RESTClient() rest.Interface { return c.cs.CoreV1().RESTClient() }

func (c clientset) CoreV1() kube.CoreV1 { return core(c) }

type core struct{ cs kubernetes.Interface }

func (c core) Namespaces() kube.Resource[*corev1.Namespace, *corev1.NamespaceList] {
	return c.cs.CoreV1().Namespaces()
}

func (c core) Nodes() kube.Collection[*corev1.Node, *corev1.NodeList] { return c.cs.CoreV1().Nodes() }

func (c core) Secrets(ns string) kube.Collection[*corev1.Secret, *corev1.SecretList] {
	return c.cs.CoreV1().Secrets(ns)
}

func (c core) ConfigMaps(ns string) kube.Collection[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return c.cs.CoreV1().ConfigMaps(ns)
}

func (c core) ServiceAccounts(ns string) kube.ServiceAccounts {
	return c.cs.CoreV1().ServiceAccounts(ns)
}

func (c core) Pods(ns string) kube.Collection[*corev1.Pod, *corev1.PodList] {
	return c.cs.CoreV1().Pods(ns)
}

func (c core) Services(ns string) kube.Resource[*corev1.Service, *corev1.ServiceList] {
	return c.cs.CoreV1().Services(ns)
}

func (c core) ResourceQuotas(ns string) kube.Collection[*corev1.ResourceQuota, *corev1.ResourceQuotaList] {
	return c.cs.CoreV1().ResourceQuotas(ns)
}

func (c core) LimitRanges(ns string) kube.Collection[*corev1.LimitRange, *corev1.LimitRangeList] {
	return c.cs.CoreV1().LimitRanges(ns)
}

func (c core) PersistentVolumeClaims(ns string) kube.Collection[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList] {
	return c.cs.CoreV1().PersistentVolumeClaims(ns)
}

func (c clientset) RbacV1() kube.RbacV1 { return rbac(c) }

type rbac struct{ cs kubernetes.Interface }

func (c rbac) Roles(ns string) kube.Collection[*rbacv1.Role, *rbacv1.RoleList] {
	return c.cs.RbacV1().Roles(ns)
}

func (c rbac) RoleBindings(ns string) kube.Collection[*rbacv1.RoleBinding, *rbacv1.RoleBindingList] {
	return c.cs.RbacV1().RoleBindings(ns)
}

func (c rbac) ClusterRoles() kube.Collection[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList] {
	return c.cs.RbacV1().ClusterRoles()
}

func (c rbac) ClusterRoleBindings() kube.Collection[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList] {
	return c.cs.RbacV1().ClusterRoleBindings()
}

func (c clientset) CertificatesV1() kube.CertificatesV1 { return certs(c) }

type certs struct{ cs kubernetes.Interface }

func (c certs) CertificateSigningRequests() kube.CertificateSigningRequests {
	return c.cs.CertificatesV1().CertificateSigningRequests()
}

func (c clientset) AuthenticationV1() kube.AuthenticationV1 { return authn(c) }

type authn struct{ cs kubernetes.Interface }

func (c authn) SelfSubjectReviews() kube.Creator[*authenticationv1.SelfSubjectReview] {
	return c.cs.AuthenticationV1().SelfSubjectReviews()
}

func (c clientset) AuthorizationV1() kube.AuthorizationV1 { return authz(c) }

type authz struct{ cs kubernetes.Interface }

func (c authz) SubjectAccessReviews() kube.Creator[*authorizationv1.SubjectAccessReview] {
	return c.cs.AuthorizationV1().SubjectAccessReviews()
}

func (c authz) SelfSubjectAccessReviews() kube.Creator[*authorizationv1.SelfSubjectAccessReview] {
	return c.cs.AuthorizationV1().SelfSubjectAccessReviews()
}

func (c clientset) NetworkingV1() kube.NetworkingV1 { return networking(c) }

type networking struct{ cs kubernetes.Interface }

func (c networking) NetworkPolicies(ns string) kube.Collection[*networkingv1.NetworkPolicy, *networkingv1.NetworkPolicyList] {
	return c.cs.NetworkingV1().NetworkPolicies(ns)
}

func (c clientset) CoordinationV1() kube.CoordinationV1 { return coordination(c) }

type coordination struct{ cs kubernetes.Interface }

func (c coordination) Leases(ns string) kube.Collection[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return c.cs.CoordinationV1().Leases(ns)
}

func (c clientset) EventsV1() kube.EventsV1 { return events(c) }

type events struct{ cs kubernetes.Interface }

func (c events) Events(ns string) kube.Collection[*eventsv1.Event, *eventsv1.EventList] {
	return c.cs.EventsV1().Events(ns)
}

func (c clientset) AppsV1() kube.AppsV1 { return apps(c) }

type apps struct{ cs kubernetes.Interface }

func (c apps) DaemonSets(ns string) kube.Collection[*appsv1.DaemonSet, *appsv1.DaemonSetList] {
	return c.cs.AppsV1().DaemonSets(ns)
}

func (c apps) StatefulSets(ns string) kube.Collection[*appsv1.StatefulSet, *appsv1.StatefulSetList] {
	return c.cs.AppsV1().StatefulSets(ns)
}

func (c clientset) StorageV1() kube.StorageV1 { return storage(c) }

type storage struct{ cs kubernetes.Interface }

func (c storage) StorageClasses() kube.Collection[*storagev1.StorageClass, *storagev1.StorageClassList] {
	return c.cs.StorageV1().StorageClasses()
}

func (c clientset) SchedulingV1() kube.SchedulingV1 { return scheduling(c) }

type scheduling struct{ cs kubernetes.Interface }

func (c scheduling) PriorityClasses() kube.Collection[*schedulingv1.PriorityClass, *schedulingv1.PriorityClassList] {
	return c.cs.SchedulingV1().PriorityClasses()
}

func (c clientset) NodeV1() kube.NodeV1 { return node(c) }

type node struct{ cs kubernetes.Interface }

func (c node) RuntimeClasses() kube.Collection[*nodev1.RuntimeClass, *nodev1.RuntimeClassList] {
	return c.cs.NodeV1().RuntimeClasses()
}

package kube

import (
	"context"

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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// Interface is the clients of one cluster, by API group, as client-go's kubernetes.Interface spells them.
type Interface interface {
	Discovery() Discovery
	CoreV1() CoreV1
	RbacV1() RbacV1
	CertificatesV1() CertificatesV1
	AuthenticationV1() AuthenticationV1
	AuthorizationV1() AuthorizationV1
	NetworkingV1() NetworkingV1
	CoordinationV1() CoordinationV1
	EventsV1() EventsV1
	AppsV1() AppsV1
	StorageV1() StorageV1
	SchedulingV1() SchedulingV1
	NodeV1() NodeV1
}

// Resource is one kind's client: the verbs every generated client of a stored kind has.
type Resource[T, L any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// Collection is a Resource whose objects can also be deleted by a selector (every kind but Namespace).
type Collection[T, L any] interface {
	Resource[T, L]
	DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error
}

// Creator is a kind that is only ever created: a review, which stores nothing.
type Creator[T any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
}

// ServiceAccounts adds the token subresource.
type ServiceAccounts interface {
	Collection[*corev1.ServiceAccount, *corev1.ServiceAccountList]
	CreateToken(ctx context.Context, name string, req *authenticationv1.TokenRequest, opts metav1.CreateOptions) (*authenticationv1.TokenRequest, error)
}

// CertificateSigningRequests adds the approval subresource.
type CertificateSigningRequests interface {
	Collection[*certificatesv1.CertificateSigningRequest, *certificatesv1.CertificateSigningRequestList]
	UpdateApproval(ctx context.Context, name string, csr *certificatesv1.CertificateSigningRequest, opts metav1.UpdateOptions) (*certificatesv1.CertificateSigningRequest, error)
}

// CoreV1 is the core group's clients the plugin uses.
type CoreV1 interface {
	RESTClient() rest.Interface
	Namespaces() Resource[*corev1.Namespace, *corev1.NamespaceList]
	Nodes() Collection[*corev1.Node, *corev1.NodeList]
	Secrets(namespace string) Collection[*corev1.Secret, *corev1.SecretList]
	ConfigMaps(namespace string) Collection[*corev1.ConfigMap, *corev1.ConfigMapList]
	ServiceAccounts(namespace string) ServiceAccounts
	Pods(namespace string) Collection[*corev1.Pod, *corev1.PodList]
	Services(namespace string) Resource[*corev1.Service, *corev1.ServiceList]
	ResourceQuotas(namespace string) Collection[*corev1.ResourceQuota, *corev1.ResourceQuotaList]
	LimitRanges(namespace string) Collection[*corev1.LimitRange, *corev1.LimitRangeList]
	PersistentVolumeClaims(namespace string) Collection[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList]
}

// RbacV1 is rbac.authorization.k8s.io/v1.
type RbacV1 interface {
	Roles(namespace string) Collection[*rbacv1.Role, *rbacv1.RoleList]
	RoleBindings(namespace string) Collection[*rbacv1.RoleBinding, *rbacv1.RoleBindingList]
	ClusterRoles() Collection[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList]
	ClusterRoleBindings() Collection[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList]
}

// CertificatesV1 is certificates.k8s.io/v1.
type CertificatesV1 interface {
	CertificateSigningRequests() CertificateSigningRequests
}

// AuthenticationV1 is authentication.k8s.io/v1.
type AuthenticationV1 interface {
	SelfSubjectReviews() Creator[*authenticationv1.SelfSubjectReview]
}

// AuthorizationV1 is authorization.k8s.io/v1.
type AuthorizationV1 interface {
	SubjectAccessReviews() Creator[*authorizationv1.SubjectAccessReview]
	SelfSubjectAccessReviews() Creator[*authorizationv1.SelfSubjectAccessReview]
}

// NetworkingV1 is networking.k8s.io/v1.
type NetworkingV1 interface {
	NetworkPolicies(namespace string) Collection[*networkingv1.NetworkPolicy, *networkingv1.NetworkPolicyList]
}

// CoordinationV1 is coordination.k8s.io/v1.
type CoordinationV1 interface {
	Leases(namespace string) Collection[*coordinationv1.Lease, *coordinationv1.LeaseList]
}

// EventsV1 is events.k8s.io/v1.
type EventsV1 interface {
	Events(namespace string) Collection[*eventsv1.Event, *eventsv1.EventList]
}

// AppsV1 is apps/v1.
type AppsV1 interface {
	DaemonSets(namespace string) Collection[*appsv1.DaemonSet, *appsv1.DaemonSetList]
	StatefulSets(namespace string) Collection[*appsv1.StatefulSet, *appsv1.StatefulSetList]
}

// StorageV1 is storage.k8s.io/v1.
type StorageV1 interface {
	StorageClasses() Collection[*storagev1.StorageClass, *storagev1.StorageClassList]
}

// SchedulingV1 is scheduling.k8s.io/v1.
type SchedulingV1 interface {
	PriorityClasses() Collection[*schedulingv1.PriorityClass, *schedulingv1.PriorityClassList]
}

// NodeV1 is node.k8s.io/v1.
type NodeV1 interface {
	RuntimeClasses() Collection[*nodev1.RuntimeClass, *nodev1.RuntimeClassList]
}

package kube

import (
	"sync"

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
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
)

// codecs is what every client of this package encodes and decodes with: a scheme of the used groups,
// built once, when the first client is.
type codecs struct {
	scheme     *runtime.Scheme
	serializer runtime.NegotiatedSerializer // the typed clients': protobuf or JSON, no conversion
	params     runtime.ParameterCodec       // options (GetOptions, ListOptions, ...) to query parameters
}

// apiGroups are the group versions the Interface serves, each with what registers its kinds: one list
// for the scheme and the REST clients alike.
var apiGroups = []struct {
	gv          schema.GroupVersion
	addToScheme func(*runtime.Scheme) error
}{
	{corev1.SchemeGroupVersion, corev1.AddToScheme},
	{rbacv1.SchemeGroupVersion, rbacv1.AddToScheme},
	{certificatesv1.SchemeGroupVersion, certificatesv1.AddToScheme},
	{authenticationv1.SchemeGroupVersion, authenticationv1.AddToScheme},
	{authorizationv1.SchemeGroupVersion, authorizationv1.AddToScheme},
	{networkingv1.SchemeGroupVersion, networkingv1.AddToScheme},
	{coordinationv1.SchemeGroupVersion, coordinationv1.AddToScheme},
	{eventsv1.SchemeGroupVersion, eventsv1.AddToScheme},
	{appsv1.SchemeGroupVersion, appsv1.AddToScheme},
	{storagev1.SchemeGroupVersion, storagev1.AddToScheme},
	{schedulingv1.SchemeGroupVersion, schedulingv1.AddToScheme},
	{nodev1.SchemeGroupVersion, nodev1.AddToScheme},
}

var theCodecs = sync.OnceValue(func() *codecs {
	s := runtime.NewScheme()
	// The unversioned meta types (Status above all, which every error answer is) as client-go registers them.
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	for _, g := range apiGroups {
		utilruntime.Must(g.addToScheme(s))
	}
	f := serializer.NewCodecFactory(s)
	return &codecs{
		scheme:     s,
		serializer: rest.CodecFactoryForGeneratedClient(s, f).WithoutConversion(),
		params:     runtime.NewParameterCodec(s),
	}
})

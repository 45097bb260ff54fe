package kube

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// object is what a typed client needs of its kind: something the codecs know, with a name.
type object interface {
	runtime.Object
	GetName() string
}

// typed is one kind's client, namespaced when namespace is set: the requests client-go's generated
// clients send (protobuf preferred, options as query parameters). Not client-go's gentype: its package
// also holds the fake clients, whose imports (client-go/testing, managed fields, structured merge diff)
// would be linked, and their initializers run, in every process.
type typed[T object, L runtime.Object] struct {
	rc        rest.Interface
	params    runtime.ParameterCodec
	resource  string
	namespace string
	newT      func() T
	newL      func() L
}

func newTyped[T object, L runtime.Object](g group, resource, namespace string, newT func() T, newL func() L) *typed[T, L] {
	return &typed[T, L]{rc: g.rc, params: g.codecs.params, resource: resource, namespace: namespace, newT: newT, newL: newL}
}

// request starts a request of verb for the kind, in its namespace if it has one.
func (c *typed[T, L]) request(r *rest.Request) *rest.Request {
	return r.UseProtobufAsDefault().NamespaceIfScoped(c.namespace, c.namespace != "").Resource(c.resource)
}

// timeout is a list's or watch's own limit, if it sets one.
func timeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}

func (c *typed[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	out := c.newT()
	err := c.request(c.rc.Get()).Name(name).VersionedParams(&opts, c.params).Do(ctx).Into(out)
	return out, err
}

func (c *typed[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := c.newL()
	err := c.request(c.rc.Get()).VersionedParams(&opts, c.params).Timeout(timeout(opts)).Do(ctx).Into(out)
	return out, err
}

func (c *typed[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return c.request(c.rc.Get()).VersionedParams(&opts, c.params).Timeout(timeout(opts)).Watch(ctx)
}

func (c *typed[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	out := c.newT()
	err := c.request(c.rc.Post()).VersionedParams(&opts, c.params).Body(obj).Do(ctx).Into(out)
	return out, err
}

func (c *typed[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	out := c.newT()
	err := c.request(c.rc.Put()).Name(obj.GetName()).VersionedParams(&opts, c.params).Body(obj).Do(ctx).Into(out)
	return out, err
}

func (c *typed[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return c.request(c.rc.Delete()).Name(name).Body(&opts).Do(ctx).Error()
}

func (c *typed[T, L]) DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error {
	return c.request(c.rc.Delete()).VersionedParams(&listOpts, c.params).Timeout(timeout(listOpts)).Body(&opts).Do(ctx).Error()
}

func (c *typed[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	out := c.newT()
	err := c.request(c.rc.Patch(pt)).Name(name).SubResource(subresources...).VersionedParams(&opts, c.params).Body(data).Do(ctx).Into(out)
	return out, err
}

// subresource sends obj to the named object's subresource with verb (a token request, an approval) and
// decodes the answer into out.
func (c *typed[T, L]) subresource(ctx context.Context, r *rest.Request, name, sub string, opts runtime.Object, obj, out runtime.Object) error {
	return c.request(r).Name(name).SubResource(sub).VersionedParams(opts, c.params).Body(obj).Do(ctx).Into(out)
}

package member

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
)

// watcher is what waitFor needs of a client: namespaced or not, typed or dynamic.
type watcher interface {
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// WaitFor watches the object called name from resourceVersion until done says so. A deletion of the
// object ends the wait if done accepts the Deleted event.
func (c *Cluster) WaitFor(ctx context.Context, w watcher, name, resourceVersion string, done func(watch.Event) (bool, error)) error {
	if c.DryRun {
		return nil // a dry run's writes have no effect to wait for
	}
	for {
		wi, err := w.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion: resourceVersion,
		})
		if err != nil {
			return err
		}
		restart, err := func() (bool, error) {
			defer wi.Stop()
			for {
				select {
				case <-ctx.Done():
					return false, ctx.Err()
				case ev, ok := <-wi.ResultChan():
					if !ok {
						return true, nil // the server closed the watch: start another
					}
					if ev.Type == watch.Error {
						return false, apierrors.FromObject(ev.Object)
					}
					if m, ok := ev.Object.(metav1.Object); ok {
						resourceVersion = m.GetResourceVersion()
					}
					if ok, err := done(ev); ok || err != nil {
						return false, err
					}
				}
			}
		}()
		if !restart {
			return err
		}
	}
}

// EnsureNamespace creates a namespace, or accepts an existing one; one that is being deleted (a previous
// unauthenticate) is waited out and created again.
func (c *Cluster) EnsureNamespace(ctx context.Context, name string, labels map[string]string) error {
	if c.ensured[name] {
		return nil
	}
	if err := c.createNamespace(ctx, name, labels); err != nil {
		return err
	}
	if c.ensured == nil {
		c.ensured = map[string]bool{}
	}
	c.ensured[name] = true
	return nil
}

func (c *Cluster) createNamespace(ctx context.Context, name string, labels map[string]string) error {
	nss := c.Kube.CoreV1().Namespaces()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	_, err := nss.Create(ctx, ns, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing, err := nss.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = nss.Create(ctx, ns, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if existing.DeletionTimestamp == nil {
		return nil
	}
	if err := c.WaitDeleted(ctx, Deletable[*corev1.Namespace](nss), name, existing.ResourceVersion); err != nil {
		return fmt.Errorf("waiting for namespace %s to finish terminating: %w", name, err)
	}
	_, err = nss.Create(ctx, ns, metav1.CreateOptions{})
	return err
}

// WaitDeleted waits until the named object is gone.
func (c *Cluster) WaitDeleted(ctx context.Context, w deletionWatcher, name, resourceVersion string) error {
	for {
		err := c.WaitFor(ctx, w, name, resourceVersion, func(ev watch.Event) (bool, error) {
			return ev.Type == watch.Deleted, nil
		})
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			return err
		}
		// An object unchanged for long has a resourceVersion older than the API server's watch cache
		// keeps ("too old resource version"): read it again and watch from now.
		if resourceVersion, err = w.currentVersion(ctx, name); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// deletionWatcher is what waitDeleted needs of a client: a watch, and the object's current version.
type deletionWatcher interface {
	watcher
	currentVersion(ctx context.Context, name string) (string, error)
}

// getWatcher is a typed client of one resource.
type getWatcher[T metav1.Object] interface {
	watcher
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
}

// Deletable makes a typed client a deletionWatcher.
func Deletable[T metav1.Object](w getWatcher[T]) deletionWatcher { return typedDeletion[T]{w} }

type typedDeletion[T metav1.Object] struct{ getWatcher[T] }

func (t typedDeletion[T]) currentVersion(ctx context.Context, name string) (string, error) {
	o, err := t.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return o.GetResourceVersion(), nil
}

// ApplyStatus server-side applies a typed object's status through its status subresource, without its
// spec (which this request would not change anyway).
func (c *Cluster) ApplyStatus(ctx context.Context, gvr schema.GroupVersionResource, obj any) error {
	u, err := objects.ToUnstructured(obj)
	if err != nil {
		return err
	}
	unstructured.RemoveNestedField(u.Object, "spec")
	_, err = c.Dynamic.Resource(gvr).Namespace(u.GetNamespace()).ApplyStatus(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}

// ApplyTyped server-side-applies a typed object through the dynamic client.
func (c *Cluster) ApplyTyped(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj any) error {
	_, err := c.ApplyTypedObject(ctx, gvr, namespace, obj)
	return err
}

// ApplyTypedObject is ApplyTyped returning the object as written.
func (c *Cluster) ApplyTypedObject(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj any) (*unstructured.Unstructured, error) {
	u, err := objects.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return c.Dynamic.Resource(gvr).Namespace(namespace).Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
}

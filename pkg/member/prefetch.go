package member

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Through a slow link every dependent round trip costs the link's latency, so a run sends the reads it
// will need as early as it knows their names, all at once, and each step takes its answer from here
// instead of asking again. A read is taken once: after a step writes the object, a second read must go to
// the API server. A run that learns its early reads may be stale (it had to wait for another run's lock)
// forgets them all.

// pending is one read in flight or done.
type pending struct {
	done chan struct{}
	obj  any
	err  error
}

// reads are a run's early reads, by key ("Kind/namespace/name").
type reads struct {
	mu      sync.Mutex
	m       map[string]*pending
	batches map[string]bool // the batches of reads (prefetchIssue, ...) already sent
}

// FirstBatch tells whether the batch of reads called name is sent for the first time, and marks it sent.
func (c *Cluster) FirstBatch(name string) bool {
	c.early.mu.Lock()
	defer c.early.mu.Unlock()
	if c.early.batches[name] {
		return false
	}
	if c.early.batches == nil {
		c.early.batches = map[string]bool{}
	}
	c.early.batches[name] = true
	return true
}

// Read is one read a run may send early: its key and how to send it.
type Read[T any] struct {
	key string
	Get func(context.Context) (T, error)
}

// NewRead is a read keyed by key ("Kind/namespace/name"), sent by get.
func NewRead[T any](key string, get func(context.Context) (T, error)) Read[T] {
	return Read[T]{key: key, Get: get}
}

// Start sends the read in the background, unless a read of that key is already waiting.
func (r Read[T]) Start(ctx context.Context, c *Cluster) {
	c.prefetch(ctx, r.key, func(ctx context.Context) (any, error) { return r.Get(ctx) })
}

// Take returns the early read, waiting for it if it is in flight, and forgets it; without one it reads now.
func (r Read[T]) Take(ctx context.Context, c *Cluster) (T, error) {
	c.early.mu.Lock()
	p := c.early.m[r.key]
	delete(c.early.m, r.key)
	c.early.mu.Unlock()
	if p == nil {
		return r.Get(ctx)
	}
	return await[T](ctx, p)
}

// await waits for a read in flight and returns its answer.
func await[T any](ctx context.Context, p *pending) (T, error) {
	var zero T
	select {
	case <-p.done:
	case <-ctx.Done():
		return zero, ctx.Err()
	}
	if p.err != nil {
		return zero, p.err
	}
	return p.obj.(T), nil
}

// Taken is take without a read of its own: sent tells whether the read had been sent early.
func (r Read[T]) Taken(ctx context.Context, c *Cluster) (obj T, sent bool, err error) {
	if !r.Sent(c) {
		return obj, false, nil
	}
	obj, err = r.Take(ctx, c)
	return obj, true, err
}

// Sent tells whether the read was sent early and not taken yet.
func (r Read[T]) Sent(c *Cluster) bool {
	c.early.mu.Lock()
	defer c.early.mu.Unlock()
	_, ok := c.early.m[r.key]
	return ok
}

// Peek is take that leaves the early read for the next take: for a check that a later step repeats with
// nothing written in between. Without one, it sends it first.
func (r Read[T]) Peek(ctx context.Context, c *Cluster) (T, error) {
	r.Start(ctx, c)
	c.early.mu.Lock()
	p := c.early.m[r.key]
	c.early.mu.Unlock()
	if p == nil { // forgotten meanwhile
		return r.Get(ctx)
	}
	return await[T](ctx, p)
}

// Forget drops the early read (answered or in flight), so that the next take reads afresh: for a read
// that a write of this run may have overtaken and that the run then undid.
func (r Read[T]) Forget(c *Cluster) {
	c.early.mu.Lock()
	defer c.early.mu.Unlock()
	delete(c.early.m, r.key)
}

func (c *Cluster) prefetch(ctx context.Context, key string, get func(context.Context) (any, error)) {
	c.early.mu.Lock()
	defer c.early.mu.Unlock()
	if c.early.m == nil {
		c.early.m = map[string]*pending{}
	}
	if _, ok := c.early.m[key]; ok {
		return
	}
	p := &pending{done: make(chan struct{})}
	c.early.m[key] = p
	go func() {
		defer close(p.done)
		p.obj, p.err = get(ctx)
	}()
}

// ForgetReads drops every early read: they may predate another run's writes.
func (c *Cluster) ForgetReads() {
	c.early.mu.Lock()
	defer c.early.mu.Unlock()
	c.early.m, c.early.batches = nil, nil
}

// The reads that can be sent early.

// SecretRead is the early read of a Secret.
func (c *Cluster) SecretRead(ns, name string) Read[*corev1.Secret] {
	return Read[*corev1.Secret]{"Secret/" + ns + "/" + name, func(ctx context.Context) (*corev1.Secret, error) {
		return c.Kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	}}
}

// NamespaceRead is the early read of a Namespace.
func (c *Cluster) NamespaceRead(name string) Read[*corev1.Namespace] {
	return Read[*corev1.Namespace]{"Namespace/" + name, func(ctx context.Context) (*corev1.Namespace, error) {
		return c.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	}}
}

// ObjectRead is the early read of an object of any resource.
func (c *Cluster) ObjectRead(gvr schema.GroupVersionResource, ns, name string) Read[*unstructured.Unstructured] {
	return Read[*unstructured.Unstructured]{gvr.Resource + "/" + ns + "/" + name, func(ctx context.Context) (*unstructured.Unstructured, error) {
		return c.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	}}
}

// ServiceAccountsRead is the early read of the ServiceAccounts of a namespace.
func (c *Cluster) ServiceAccountsRead(ns string) Read[*corev1.ServiceAccountList] {
	return Read[*corev1.ServiceAccountList]{"ServiceAccounts/" + ns, func(ctx context.Context) (*corev1.ServiceAccountList, error) {
		return c.Kube.CoreV1().ServiceAccounts(ns).List(ctx, metav1.ListOptions{})
	}}
}

// NamespacesOfRead is the early read of the namespaces of a consumer of the given kinds.
func (c *Cluster) NamespacesOfRead(consumerID string, kinds ...string) Read[[]corev1.Namespace] {
	return Read[[]corev1.Namespace]{"Namespaces/" + consumerID + "/" + strings.Join(kinds, ","), func(ctx context.Context) ([]corev1.Namespace, error) {
		sel := labels.SelectorFromSet(TenantLabels(consumerID)).String() + "," + LabelNamespaceKind + " in (" + strings.Join(kinds, ",") + ")"
		l, err := c.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return nil, fmt.Errorf("listing the namespaces of consumer %q: %w", consumerID, err)
		}
		return l.Items, nil
	}}
}

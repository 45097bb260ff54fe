package handshake

import (
	"context"
	"fmt"
	"strings"
	"sync"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
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

// firstBatch tells whether the batch of reads called name is sent for the first time, and marks it sent.
func (c *Cluster) firstBatch(name string) bool {
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

// read is one read a run may send early: its key and how to send it.
type read[T any] struct {
	key string
	get func(context.Context) (T, error)
}

// start sends the read in the background, unless a read of that key is already waiting.
func (r read[T]) start(ctx context.Context, c *Cluster) {
	c.prefetch(ctx, r.key, func(ctx context.Context) (any, error) { return r.get(ctx) })
}

// take returns the early read, waiting for it if it is in flight, and forgets it; without one it reads now.
func (r read[T]) take(ctx context.Context, c *Cluster) (T, error) {
	c.early.mu.Lock()
	p := c.early.m[r.key]
	delete(c.early.m, r.key)
	c.early.mu.Unlock()
	if p == nil {
		return r.get(ctx)
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

// taken is take without a read of its own: sent tells whether the read had been sent early.
func (r read[T]) taken(ctx context.Context, c *Cluster) (obj T, sent bool, err error) {
	if !r.sent(c) {
		return obj, false, nil
	}
	obj, err = r.take(ctx, c)
	return obj, true, err
}

// sent tells whether the read was sent early and not taken yet.
func (r read[T]) sent(c *Cluster) bool {
	c.early.mu.Lock()
	defer c.early.mu.Unlock()
	_, ok := c.early.m[r.key]
	return ok
}

// peek is take that leaves the early read for the next take: for a check that a later step repeats with
// nothing written in between. Without one, it sends it first.
func (r read[T]) peek(ctx context.Context, c *Cluster) (T, error) {
	r.start(ctx, c)
	c.early.mu.Lock()
	p := c.early.m[r.key]
	c.early.mu.Unlock()
	if p == nil { // forgotten meanwhile
		return r.get(ctx)
	}
	return await[T](ctx, p)
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

// forgetReads drops every early read: they may predate another run's writes.
func (c *Cluster) forgetReads() {
	c.early.mu.Lock()
	defer c.early.mu.Unlock()
	c.early.m, c.early.batches = nil, nil
}

// The reads that can be sent early.

func (c *Cluster) secretRead(ns, name string) read[*corev1.Secret] {
	return read[*corev1.Secret]{"Secret/" + ns + "/" + name, func(ctx context.Context) (*corev1.Secret, error) {
		return c.Kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	}}
}

func (c *Cluster) namespaceRead(name string) read[*corev1.Namespace] {
	return read[*corev1.Namespace]{"Namespace/" + name, func(ctx context.Context) (*corev1.Namespace, error) {
		return c.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	}}
}

func (c *Cluster) objectRead(gvr schema.GroupVersionResource, ns, name string) read[*unstructured.Unstructured] {
	return read[*unstructured.Unstructured]{gvr.Resource + "/" + ns + "/" + name, func(ctx context.Context) (*unstructured.Unstructured, error) {
		return c.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	}}
}

func (c *Cluster) serviceAccountsRead(ns string) read[*corev1.ServiceAccountList] {
	return read[*corev1.ServiceAccountList]{"ServiceAccounts/" + ns, func(ctx context.Context) (*corev1.ServiceAccountList, error) {
		return c.Kube.CoreV1().ServiceAccounts(ns).List(ctx, metav1.ListOptions{})
	}}
}

// tenantCSRsRead lists the CSRs of a consumer's pairing identity: not a slice's (LabelSlice) nor an
// exchange credential's (LabelExchange), which belong to other issuances.
func (c *Cluster) tenantCSRsRead(consumerID string) read[*certv1.CertificateSigningRequestList] {
	return read[*certv1.CertificateSigningRequestList]{"CSRs/" + consumerID, func(ctx context.Context) (*certv1.CertificateSigningRequestList, error) {
		return c.Kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(TenantLabels(consumerID)).String() + ",!" + LabelSlice + ",!" + LabelExchange})
	}}
}

func (c *Cluster) namespacesOfRead(consumerID string, kinds ...string) read[[]corev1.Namespace] {
	return read[[]corev1.Namespace]{"Namespaces/" + consumerID + "/" + strings.Join(kinds, ","), func(ctx context.Context) ([]corev1.Namespace, error) {
		sel := labels.SelectorFromSet(TenantLabels(consumerID)).String() + "," + LabelNamespaceKind + " in (" + strings.Join(kinds, ",") + ")"
		l, err := c.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return nil, fmt.Errorf("listing the namespaces of consumer %q: %w", consumerID, err)
		}
		return l.Items, nil
	}}
}

// prefetchIssue sends at once every read a provider's issuance for the consumer will need.
func (c *Cluster) prefetchIssue(ctx context.Context, consumerID string) {
	if !c.firstBatch("issue/" + consumerID) {
		return
	}
	ns := TenantNamespace(consumerID)
	c.objectRead(v1alpha1.TenantGVR, ns, consumerID).start(ctx, c)
	c.secretRead(SystemNamespace, nonce.SecretName(consumerID)).start(ctx, c)
	c.namespaceRead(ns).start(ctx, c)
	c.serviceAccountsRead(ns).start(ctx, c)
	c.tenantCSRsRead(consumerID).start(ctx, c)
	c.namespacesOfRead(consumerID, KindExtra).start(ctx, c)
	// The tenant namespace's quota is the total less the grants: the ledger and the quota as it is.
	c.ledgerRead(consumerID).start(ctx, c)
	c.quotaRead(ns).start(ctx, c)
}

// prefetchImport sends at once the reads a consumer's import of the provider's identity will need.
func (c *Cluster) prefetchImport(ctx context.Context, providerID string) {
	if !c.firstBatch("import/" + providerID) {
		return
	}
	c.secretRead(SystemNamespace, KubeconfigSecretName(providerID)).start(ctx, c)
	c.secretRead(SystemNamespace, PendingKeySecretName(providerID)).start(ctx, c)
	c.objectRead(v1alpha1.IdentityGVR, SystemNamespace, IdentityName(providerID)).start(ctx, c)
}

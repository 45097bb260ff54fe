package handshake

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
)

// installGeneration is bumped whenever the CRDs, the default ClusterRole or the sandbox admission policy
// change; init re-applies them when the cluster's record is older.
const installGeneration = "3"

const (
	clusterIDKey      = "clusterID"
	installGenAnnot   = "federate.dev/install-generation"
	privateKeyDataKey = "ed25519.key"
	publicKeyDataKey  = "ed25519.pub"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// IDConflictError means a cluster ID was asked for that the cluster does not have. Side, when known, says
// which cluster of a pair ("consumer" or "provider"), so a command can name its own flag.
type IDConflictError struct {
	Side       string
	Want, Have string
}

func (e *IDConflictError) Error() string {
	who := "this cluster"
	if e.Side != "" {
		who = "the " + e.Side
	}
	return fmt.Sprintf("cluster ID %q: %s is initialized with cluster ID %q", e.Want, who, e.Have)
}

// ErrSameCluster means both sides of a pairing are one cluster.
var ErrSameCluster = errors.New("the consumer and the provider are one cluster")

// ErrNotInitialized means the cluster has no federate-system record yet.
var ErrNotInitialized = errors.New("this cluster is not initialized for kubectl federate")

// Cluster is one side of a handshake: the clients of one cluster and where its progress goes.
type Cluster struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	Report  Reporter
	Now     func() time.Time // nil: time.Now

	self       *Self                   // cached after Init or Load
	ensured    map[string]bool         // namespaces this process already ensured
	nonceCache map[string]*nonce.Nonce // nonces this process created or read, by consumer ID
}

// Self is this cluster's federation identity.
type Self struct {
	ClusterID  string
	PublicKey  ed25519.PublicKey
	privateKey ed25519.PrivateKey
}

func (c *Cluster) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Cluster) report() Reporter {
	if c.Report == nil {
		return Discard
	}
	return c.Report
}

func (c *Cluster) nonces() nonce.Store {
	return nonce.Store{Client: c.Kube, Namespace: SystemNamespace, Labels: TenantLabels, Now: c.Now}
}

// Load reads this cluster's ID and handshake key; ErrNotInitialized if init never ran.
func (c *Cluster) Load(ctx context.Context) (*Self, error) {
	if c.self != nil {
		return c.self, nil
	}
	cm, err := c.Kube.CoreV1().ConfigMaps(SystemNamespace).Get(ctx, ClusterConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w (no ConfigMap %s/%s): run kubectl federate init", ErrNotInitialized, SystemNamespace, ClusterConfigMap)
	}
	if err != nil {
		return nil, err
	}
	return c.loadKey(ctx, cm)
}

func (c *Cluster) loadKey(ctx context.Context, cm *corev1.ConfigMap) (*Self, error) {
	id := cm.Data[clusterIDKey]
	if err := ValidateClusterID("ConfigMap "+SystemNamespace+"/"+ClusterConfigMap+" data."+clusterIDKey, id); err != nil {
		return nil, err
	}
	sec, err := c.Kube.CoreV1().Secrets(SystemNamespace).Get(ctx, HandshakeKeySecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w (no Secret %s/%s): run kubectl federate init", ErrNotInitialized, SystemNamespace, HandshakeKeySecret)
	}
	if err != nil {
		return nil, err
	}
	key, err := parsePrivateKey(sec.Data[privateKeyDataKey])
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", SystemNamespace, HandshakeKeySecret, err)
	}
	c.self = &Self{ClusterID: id, PublicKey: key.Public().(ed25519.PublicKey), privateKey: key}
	return c.self, nil
}

func parsePrivateKey(data []byte) (ed25519.PrivateKey, error) {
	der, err := DecodePEM(privateKeyDataKey, data, "PRIVATE KEY")
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", privateKeyDataKey, err)
	}
	ed, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: is %T, want an Ed25519 key", privateKeyDataKey, k)
	}
	return ed, nil
}

// Init makes this cluster ready for kubectl federate, once: the federate-system namespace with the
// cluster ID and an Ed25519 handshake key, the Tenant and Identity CRDs, the default tenant ClusterRole
// and the sandbox admission policy with its binding. wantID may be empty (keep the existing ID, or derive a default from the kube-system
// namespace UID); a different explicit ID on an initialized cluster is an error. Safe to re-run.
func (c *Cluster) Init(ctx context.Context, wantID string) (*Self, error) {
	if c.self != nil && (wantID == "" || wantID == c.self.ClusterID) {
		return c.self, nil
	}
	r := c.report()
	cm, err := c.Kube.CoreV1().ConfigMaps(SystemNamespace).Get(ctx, ClusterConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		cm = nil
	case err != nil:
		return nil, err
	}
	if cm != nil {
		if have := cm.Data[clusterIDKey]; wantID != "" && have != wantID {
			return nil, &IDConflictError{Want: wantID, Have: have}
		}
		if cm.Annotations[installGenAnnot] == installGeneration {
			self, err := c.loadKey(ctx, cm)
			if err == nil {
				r.Info(fmt.Sprintf("Cluster %q already initialized", self.ClusterID))
			}
			return self, err
		}
	}
	var self *Self
	err = step(r, "Initializing the cluster", "Cluster initialized", func() error {
		var err error
		self, err = c.install(ctx, cm, wantID)
		return err
	})
	return self, err
}

func (c *Cluster) install(ctx context.Context, cm *corev1.ConfigMap, wantID string) (*Self, error) {
	labels := map[string]string{LabelManagedBy: ManagedBy}
	if err := c.ensureNamespace(ctx, SystemNamespace, labels); err != nil {
		return nil, err
	}
	// The cluster-scoped pieces do not depend on each other: all at once, each its own request.
	jobs := []func() error{
		func() error { return c.installCRDs(ctx) },
		func() error {
			if err := c.applyTyped(ctx, rbacv1.SchemeGroupVersion.WithResource("clusterroles"), "", defaultClusterRole()); err != nil {
				return fmt.Errorf("applying ClusterRole %s: %w", DefaultClusterRole, err)
			}
			return nil
		},
	}
	for _, res := range SandboxPolicyResources {
		jobs = append(jobs, func() error {
			if err := c.applyTyped(ctx, policyGVR, "", sandboxPolicy(res)); err != nil {
				return fmt.Errorf("applying ValidatingAdmissionPolicy %s-%s: %w", SandboxName, res, err)
			}
			if err := c.applyTyped(ctx, policyBindingGVR, "", sandboxPolicyBinding(res)); err != nil {
				return fmt.Errorf("applying ValidatingAdmissionPolicyBinding %s-%s: %w", SandboxName, res, err)
			}
			return nil
		})
	}
	if err := parallel(jobs...); err != nil {
		return nil, err
	}
	// The handshake key: created once, never replaced by init.
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	_, err = c.Kube.CoreV1().Secrets(SystemNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: HandshakeKeySecret, Namespace: SystemNamespace, Labels: labels},
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			privateKeyDataKey: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}),
			publicKeyDataKey:  pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}),
		},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating Secret %s/%s: %w", SystemNamespace, HandshakeKeySecret, err)
	}
	// The cluster ID record, last: its install-generation annotation says everything above is in place.
	cms := c.Kube.CoreV1().ConfigMaps(SystemNamespace)
	if cm == nil {
		id := wantID
		if id == "" {
			if id, err = c.defaultClusterID(ctx); err != nil {
				return nil, err
			}
		}
		cm, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ClusterConfigMap, Namespace: SystemNamespace, Labels: labels,
				Annotations: map[string]string{installGenAnnot: installGeneration}},
			Data: map[string]string{clusterIDKey: id},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) { // a concurrent init won
			if cm, err = cms.Get(ctx, ClusterConfigMap, metav1.GetOptions{}); err == nil && wantID != "" && cm.Data[clusterIDKey] != wantID {
				return nil, &IDConflictError{Want: wantID, Have: cm.Data[clusterIDKey]}
			}
		}
	} else {
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[installGenAnnot] = installGeneration
		cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("recording the cluster ID: %w", err)
	}
	return c.loadKey(ctx, cm)
}

// defaultClusterID derives a stable ID from the kube-system namespace's UID: "cluster-" and its first 8
// hex digits.
func (c *Cluster) defaultClusterID(ctx context.Context) (string, error) {
	ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("deriving a default cluster ID from the kube-system namespace: %w", err)
	}
	return "cluster-" + string(ns.UID)[:8], nil
}

// parallel runs the functions at once and joins their errors.
func parallel(fns ...func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// installCRDs applies the CRDs and waits, with a watch, until the API server serves them.
func (c *Cluster) installCRDs(ctx context.Context) error {
	crds, err := v1alpha1.CRDs()
	if err != nil {
		return err
	}
	for _, crd := range crds {
		out, err := c.Dynamic.Resource(crdGVR).Apply(ctx, crd.GetName(), crd, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		if err != nil {
			return fmt.Errorf("applying CRD %s: %w", crd.GetName(), err)
		}
		if established(out) {
			continue
		}
		if err := c.waitFor(ctx, c.Dynamic.Resource(crdGVR), crd.GetName(), out.GetResourceVersion(), func(ev watch.Event) (bool, error) {
			u, ok := ev.Object.(*unstructured.Unstructured)
			return ok && established(u), nil
		}); err != nil {
			return fmt.Errorf("waiting for CRD %s to be established: %w", crd.GetName(), err)
		}
	}
	return nil
}

func established(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// watcher is what waitFor needs of a client: namespaced or not, typed or dynamic.
type watcher interface {
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// waitFor watches the object called name from resourceVersion until done says so. A deletion of the
// object ends the wait if done accepts the Deleted event.
func (c *Cluster) waitFor(ctx context.Context, w watcher, name, resourceVersion string, done func(watch.Event) (bool, error)) error {
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

// ensureNamespace creates a namespace, or accepts an existing one; one that is being deleted (a previous
// unauthenticate) is waited out and created again.
func (c *Cluster) ensureNamespace(ctx context.Context, name string, labels map[string]string) error {
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
	if err := c.waitDeleted(ctx, nss, name, existing.ResourceVersion); err != nil {
		return fmt.Errorf("waiting for namespace %s to finish terminating: %w", name, err)
	}
	_, err = nss.Create(ctx, ns, metav1.CreateOptions{})
	return err
}

// waitDeleted waits until the named object is gone.
func (c *Cluster) waitDeleted(ctx context.Context, w watcher, name, resourceVersion string) error {
	return c.waitFor(ctx, w, name, resourceVersion, func(ev watch.Event) (bool, error) {
		return ev.Type == watch.Deleted, nil
	})
}

// applyTyped server-side-applies a typed object through the dynamic client.
func (c *Cluster) applyTyped(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj any) error {
	u, err := toUnstructured(obj)
	if err != nil {
		return err
	}
	_, err = c.Dynamic.Resource(gvr).Namespace(namespace).Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}

func toUnstructured(obj any) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &u.Object); err != nil {
		return nil, err
	}
	// Server-side apply refuses creationTimestamp: null and an empty status is noise.
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

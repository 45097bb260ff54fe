package handshake

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
)

// Init makes this cluster ready for kubectl federate, once: the federate-system namespace with the
// cluster ID and an Ed25519 handshake key, the Tenant and Identity CRDs, the default tenant ClusterRole
// and the sandbox admission policies with their bindings. wantID may be empty (keep the existing ID, or
// derive a default from the kube-system namespace UID); a different explicit ID on an initialized cluster
// is an error. Safe to re-run: on an initialized cluster it restores any sandbox policy, binding or the
// tenant role that was deleted or changed, and changes nothing else.
func (c *Cluster) Init(ctx context.Context, wantID string) (*Self, error) {
	return c.initialize(ctx, wantID, true)
}

// initialize is Init; without verify, an initialized cluster's objects are taken as they are (the
// consumer's side of a handshake, and what issues nothing, need not read the cluster-wide objects, which
// a consumer operator may not).
func (c *Cluster) initialize(ctx context.Context, wantID string, verify bool) (*Self, error) {
	self, _, err := c.initializeWith(ctx, wantID, verify, false)
	return self, err
}

// initializeAs is initialize for the manual flow's first step on each side, where the cluster's ID is
// named (by its administrator, or by the nonce the provider made): a never-initialized cluster is
// initialized with wantID, and created says so; one initialized under another ID is refused
// (IDConflictError) before anything is written. Without wantID, a never-initialized cluster is refused
// (ErrNoClusterID) instead of being given a derived ID, which the other side would not know it by.
func (c *Cluster) initializeAs(ctx context.Context, wantID string, verify bool) (self *Self, created bool, err error) {
	return c.initializeWith(ctx, wantID, verify, true)
}

// initializeWith is initialize; with named, an ID is never derived (see initializeAs). created tells
// whether this call initialized the cluster.
func (c *Cluster) initializeWith(ctx context.Context, wantID string, verify, named bool) (*Self, bool, error) {
	if c.self != nil && wantID != "" && wantID != c.self.ClusterID {
		return nil, false, &IDConflictError{Want: wantID, Have: c.self.ClusterID}
	}
	if c.self != nil {
		if verify {
			if err := c.ensureCurrent(ctx); err != nil {
				return nil, false, err
			}
		}
		return c.self, false, nil
	}
	r := c.report()
	rec := c.readRecord(ctx, verify)
	c.installed, c.installedErr = rec.installed, rec.installedErr
	cm := rec.cm
	switch {
	case apierrors.IsNotFound(rec.cmErr):
		cm = nil
	case rec.cmErr != nil:
		return nil, false, rec.cmErr
	}
	if cm == nil && named && wantID == "" {
		return nil, false, ErrNoClusterID
	}
	if cm != nil {
		if have := cm.Data[clusterIDKey]; wantID != "" && have != wantID {
			return nil, false, &IDConflictError{Want: wantID, Have: have}
		}
		if cm.Annotations[installGenAnnot] == installGeneration {
			self, err := c.loadKey(cm, rec.key, rec.keyErr)
			if err != nil {
				return nil, false, err
			}
			if verify {
				if err := c.ensureCurrent(ctx); err != nil {
					return nil, false, err
				}
			}
			r.Info(fmt.Sprintf("Cluster %q already initialized", self.ClusterID))
			return self, false, nil
		}
	}
	var self *Self
	err := step(r, "Initializing the cluster", "Cluster initialized", func() error {
		// Read with the record (verify), or not at all: then everything is applied, as on a new cluster,
		// rather than read first, which would cost a round trip.
		have, err := c.installed, c.installedErr
		c.installed, c.installedErr = nil, nil
		if err != nil {
			return err
		}
		self, err = c.install(ctx, cm, wantID, have)
		return err
	})
	return self, err == nil && cm == nil, err
}

// install creates or upgrades everything Init makes; have is what the cluster holds of the policies,
// bindings and tenant role (readInstalled), of which only what differs is written (nil: not read, all
// are applied).
func (c *Cluster) install(ctx context.Context, cm *corev1.ConfigMap, wantID string, have *installedObjects) (*Self, error) {
	labels := map[string]string{LabelManagedBy: ManagedBy}
	if err := c.ensureNamespace(ctx, SystemNamespace, labels); err != nil {
		return nil, err
	}
	// The cluster-scoped pieces do not depend on each other: all at once, each its own request.
	if err := parallel(
		func() error { return c.installCRDs(ctx) },
		func() error { return c.reconcileInstalled(ctx, have, false) },
	); err != nil {
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
	_, keyErr := c.Kube.CoreV1().Secrets(SystemNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: HandshakeKeySecret, Namespace: SystemNamespace, Labels: labels},
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			privateKeyDataKey: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}),
			publicKeyDataKey:  pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}),
		},
	}, metav1.CreateOptions{})
	if keyErr != nil && !apierrors.IsAlreadyExists(keyErr) {
		return nil, fmt.Errorf("creating Secret %s/%s: %w", SystemNamespace, HandshakeKeySecret, keyErr)
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
	if keyErr == nil { // the key this run created: no need to read it back
		if err := ValidateClusterID("ConfigMap "+SystemNamespace+"/"+ClusterConfigMap+" data."+clusterIDKey, cm.Data[clusterIDKey]); err != nil {
			return nil, err
		}
		c.self = &Self{ClusterID: cm.Data[clusterIDKey], PublicKey: pub, privateKey: priv}
		c.verified = true
		return c.self, nil
	}
	sec, err := c.Kube.CoreV1().Secrets(SystemNamespace).Get(ctx, HandshakeKeySecret, metav1.GetOptions{})
	self, err := c.loadKey(cm, sec, err)
	c.verified = err == nil
	return self, err
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

// installCRDs applies the CRDs, all at once, and waits, with a watch, until the API server serves them.
func (c *Cluster) installCRDs(ctx context.Context) error {
	crds, err := v1alpha1.CRDs()
	if err != nil {
		return err
	}
	jobs := make([]func() error, len(crds))
	for i, crd := range crds {
		jobs[i] = func() error {
			out, err := c.Dynamic.Resource(crdGVR).Apply(ctx, crd.GetName(), crd, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
			if err != nil {
				return fmt.Errorf("applying CRD %s: %w", crd.GetName(), err)
			}
			if established(out) {
				return nil
			}
			if err := c.waitFor(ctx, c.Dynamic.Resource(crdGVR), crd.GetName(), out.GetResourceVersion(), func(ev watch.Event) (bool, error) {
				u, ok := ev.Object.(*unstructured.Unstructured)
				return ok && established(u), nil
			}); err != nil {
				return fmt.Errorf("waiting for CRD %s to be established: %w", crd.GetName(), err)
			}
			return nil
		}
	}
	return parallel(jobs...)
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

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

package sandbox

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
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Init makes this cluster ready for kubectl federate, once: the federate-system namespace with the
// cluster ID and an Ed25519 handshake key, the Tenant and Identity CRDs, the default tenant ClusterRole
// and the sandbox admission policies with their bindings. wantID may be empty (keep the existing ID, or
// derive a default from the kube-system namespace UID); a different explicit ID on an initialized cluster
// is an error. Safe to re-run: on an initialized cluster it restores any sandbox policy, binding or the
// tenant role that was deleted or changed, and changes nothing else.
func Init(ctx context.Context, c *member.Cluster, wantID string) (*member.Self, error) {
	return Initialize(ctx, c, wantID, true)
}

// InitCreated is Init, telling whether this call initialized the cluster (the init command says which).
func InitCreated(ctx context.Context, c *member.Cluster, wantID string) (*member.Self, bool, error) {
	return initializeWith(ctx, c, wantID, true, false)
}

// Initialize is Init; without verify, an initialized cluster's objects are taken as they are (the
// consumer's side of a handshake, and what issues nothing, need not read the cluster-wide objects, which
// a consumer operator may not).
func Initialize(ctx context.Context, c *member.Cluster, wantID string, verify bool) (*member.Self, error) {
	self, _, err := initializeWith(ctx, c, wantID, verify, false)
	return self, err
}

// InitializeCreated is Initialize, telling whether this call initialized the cluster.
func InitializeCreated(ctx context.Context, c *member.Cluster, wantID string, verify bool) (*member.Self, bool, error) {
	return initializeWith(ctx, c, wantID, verify, false)
}

// InitializeAs is initialize for the manual flow's first step on each side, where the cluster's ID is
// named (by its administrator, or by the nonce the provider made): a never-initialized cluster is
// initialized with wantID, and created says so; one initialized under another ID is refused
// (IDConflictError) before anything is written. Without wantID, a never-initialized cluster is refused
// (ErrNoClusterID) instead of being given a derived ID, which the other side would not know it by.
func InitializeAs(ctx context.Context, c *member.Cluster, wantID string, verify bool) (self *member.Self, created bool, err error) {
	return initializeWith(ctx, c, wantID, verify, true)
}

// initializeWith is initialize; with named, an ID is never derived (see initializeAs). created tells
// whether this call initialized the cluster.
func initializeWith(ctx context.Context, c *member.Cluster, wantID string, verify, named bool) (*member.Self, bool, error) {
	if c.Self != nil && wantID != "" && wantID != c.Self.ClusterID {
		return nil, false, &member.IDConflictError{Want: wantID, Have: c.Self.ClusterID}
	}
	if c.Self != nil {
		if verify {
			if err := ensureCurrent(ctx, c); err != nil {
				return nil, false, err
			}
		}
		return c.Self, false, nil
	}
	r := c.Reporter()
	var readInstalled func(context.Context) (*member.InstalledObjects, error)
	if verify {
		readInstalled = readInstalledFunc(c)
	}
	rec := c.ReadRecord(ctx, readInstalled)
	c.Installed, c.InstalledErr = rec.Installed, rec.InstalledErr
	cm := rec.Cm
	switch {
	case apierrors.IsNotFound(rec.CmErr):
		cm = nil
	case rec.CmErr != nil:
		return nil, false, rec.CmErr
	}
	if cm == nil && named && wantID == "" {
		return nil, false, member.ErrNoClusterID
	}
	if cm != nil {
		if have := cm.Data[member.ClusterIDKey]; wantID != "" && have != wantID {
			return nil, false, &member.IDConflictError{Want: wantID, Have: have}
		}
		if cm.Annotations[member.InstallGenAnnot] == member.InstallGeneration {
			self, err := c.LoadKey(cm, rec.Key, rec.KeyErr)
			if err != nil {
				return nil, false, err
			}
			if verify {
				if err := ensureCurrent(ctx, c); err != nil {
					return nil, false, err
				}
			}
			// Said by init alone (InitCreated): on every other command it is noise.
			return self, false, nil
		}
	}
	var self *member.Self
	err := member.Step(r, "Initializing the cluster", "Cluster initialized", func() error {
		// Read with the record (verify), or not at all: then everything is applied, as on a new cluster,
		// rather than read first, which would cost a round trip.
		have, err := c.Installed, c.InstalledErr
		c.Installed, c.InstalledErr = nil, nil
		if err != nil {
			return err
		}
		self, err = install(ctx, c, cm, wantID, have)
		return err
	})
	return self, err == nil && cm == nil, err
}

// install creates or upgrades everything Init makes; have is what the cluster holds of the policies,
// bindings and tenant role (readInstalled), of which only what differs is written (nil: not read, all
// are applied).
func install(ctx context.Context, c *member.Cluster, cm *corev1.ConfigMap, wantID string, have *member.InstalledObjects) (*member.Self, error) {
	labels := map[string]string{member.LabelManagedBy: member.ManagedBy}
	// The cluster-scoped pieces depend neither on each other nor on the namespace: all at once, each its
	// own request, the admission policies from the first round trip on (the API server enforces a new one
	// only at its next refresh, up to a second later: see waitRefused).
	if err := parallel.All(
		func() error { return c.EnsureNamespace(ctx, member.SystemNamespace, labels) },
		func() error { return installCRDs(ctx, c) },
		func() error { return reconcileInstalled(ctx, c, have, false) },
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
	_, keyErr := c.Kube.CoreV1().Secrets(member.SystemNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: member.HandshakeKeySecret, Namespace: member.SystemNamespace, Labels: labels},
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			member.PrivateKeyDataKey: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}),
			member.PublicKeyDataKey:  pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}),
		},
	}, metav1.CreateOptions{})
	if keyErr != nil && !apierrors.IsAlreadyExists(keyErr) {
		return nil, fmt.Errorf("creating Secret %s/%s: %w", member.SystemNamespace, member.HandshakeKeySecret, keyErr)
	}
	// The cluster ID record, last: its install-generation annotation says everything above is in place.
	cms := c.Kube.CoreV1().ConfigMaps(member.SystemNamespace)
	if cm == nil {
		id := wantID
		if id == "" {
			if id, err = defaultClusterID(ctx, c); err != nil {
				return nil, err
			}
		}
		cm, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: member.ClusterConfigMap, Namespace: member.SystemNamespace, Labels: labels,
				Annotations: map[string]string{member.InstallGenAnnot: member.InstallGeneration}},
			Data: map[string]string{member.ClusterIDKey: id},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) { // a concurrent init won
			if cm, err = cms.Get(ctx, member.ClusterConfigMap, metav1.GetOptions{}); err == nil && wantID != "" && cm.Data[member.ClusterIDKey] != wantID {
				return nil, &member.IDConflictError{Want: wantID, Have: cm.Data[member.ClusterIDKey]}
			}
		}
	} else {
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[member.InstallGenAnnot] = member.InstallGeneration
		cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("recording the cluster ID: %w", err)
	}
	if keyErr == nil { // the key this run created: no need to read it back
		if err := member.ValidateClusterID("ConfigMap "+member.SystemNamespace+"/"+member.ClusterConfigMap+" data."+member.ClusterIDKey, cm.Data[member.ClusterIDKey]); err != nil {
			return nil, err
		}
		c.Self = &member.Self{ClusterID: cm.Data[member.ClusterIDKey], PublicKey: pub, PrivateKey: priv}
		c.Verified = true
		return c.Self, nil
	}
	sec, err := c.Kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, member.HandshakeKeySecret, metav1.GetOptions{})
	self, err := c.LoadKey(cm, sec, err)
	c.Verified = err == nil
	return self, err
}

// defaultClusterID derives a stable ID from the kube-system namespace's UID: "cluster-" and its first 8
// hex digits.
func defaultClusterID(ctx context.Context, c *member.Cluster) (string, error) {
	ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("deriving a default cluster ID from the kube-system namespace: %w", err)
	}
	return "cluster-" + string(ns.UID)[:8], nil
}

// installCRDs applies the CRDs, all at once, and waits, with a watch, until the API server serves them.
func installCRDs(ctx context.Context, c *member.Cluster) error {
	crds, err := v1alpha1.CRDs()
	if err != nil {
		return err
	}
	jobs := make([]func() error, len(crds))
	for i, crd := range crds {
		jobs[i] = func() error {
			out, err := c.Dynamic.Resource(crdGVR).Apply(ctx, crd.GetName(), crd, metav1.ApplyOptions{FieldManager: member.FieldManager, Force: true})
			if err != nil {
				return fmt.Errorf("applying CRD %s: %w", crd.GetName(), err)
			}
			if established(out) {
				return nil
			}
			if err := c.WaitFor(ctx, c.Dynamic.Resource(crdGVR), crd.GetName(), out.GetResourceVersion(), func(ev watch.Event) (bool, error) {
				u, ok := ev.Object.(*unstructured.Unstructured)
				return ok && established(u), nil
			}); err != nil {
				return fmt.Errorf("waiting for CRD %s to be established: %w", crd.GetName(), err)
			}
			return nil
		}
	}
	return parallel.All(jobs...)
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

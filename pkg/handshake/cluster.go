package handshake

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/nonce"
)

// installGeneration is bumped whenever the CRDs, the default ClusterRole or the sandbox admission policy
// change; init re-applies them when the cluster's record is older.
const installGeneration = "14"

const (
	clusterIDKey      = "clusterID"
	installGenAnnot   = "federate.dev/install-generation"
	privateKeyDataKey = "ed25519.key"
	publicKeyDataKey  = "ed25519.pub"
)

// Cluster is one side of a handshake: the clients of one cluster and where its progress goes.
type Cluster struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	Report  Reporter
	Now     func() time.Time // nil: time.Now
	Dial    DialFunc         // builds clients from a stored kubeconfig; nil: real clients
	// Config is the connection the clients were built from; the constrained-impersonation probe sends a
	// request with another credential to the same server. Nil: no probe can be sent.
	Config *rest.Config
	// Impersonation, if set, is what ConstrainedImpersonation answers without a probe (tests), and caches
	// the probe's answer for the rest of the process.
	Impersonation *ImpersonationSupport
	// DryRun says that writes to this cluster change nothing (the clients hold them back, or send them as
	// server-side dry runs): waits for their effects are skipped, and a step that needs what only a real
	// write yields (an issued certificate or token) ends the run with a DryRunStop.
	DryRun bool

	self    *Self             // cached after Init or Load
	staleCM *corev1.ConfigMap // Load found objects of an older installGeneration (see loadCurrent)
	// installed is the sandbox policies, bindings and tenant role, read with the cluster's record for
	// ensureCurrent (reconcile.go); verified says ensureCurrent ran in this process.
	installed    *installedObjects
	installedErr error
	verified     bool
	ensured      map[string]bool         // namespaces this process already ensured
	nonceCache   map[string]*nonce.Nonce // nonces this process created or read, by consumer ID

	operatorOnce sync.Once // operator: the user this process acts as, for audit Events
	operatorUser string

	early reads // reads sent ahead of the step that needs them (prefetch.go)
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
	return nonce.Store{Client: c.Kube, Namespace: SystemNamespace, Labels: TenantLabels, Now: c.Now,
		Read: func(ctx context.Context, name string) (*corev1.Secret, error) {
			return c.secretRead(SystemNamespace, name).take(ctx, c)
		}}
}

// Load reads this cluster's ID and handshake key; ErrNotInitialized if init never ran.
func (c *Cluster) Load(ctx context.Context) (*Self, error) {
	return c.load(ctx, false)
}

// load is Load; with installed, the objects ensureCurrent checks are read alongside the record.
func (c *Cluster) load(ctx context.Context, installed bool) (*Self, error) {
	if c.self != nil {
		return c.self, nil
	}
	rec := c.readRecord(ctx, installed)
	c.installed, c.installedErr = rec.installed, rec.installedErr
	if apierrors.IsNotFound(rec.cmErr) {
		return nil, fmt.Errorf("%w (no ConfigMap %s/%s)", ErrNotInitialized, SystemNamespace, ClusterConfigMap)
	}
	if rec.cmErr != nil {
		return nil, rec.cmErr
	}
	if rec.cm.Annotations[installGenAnnot] != installGeneration {
		c.staleCM = rec.cm
	}
	return c.loadKey(rec.cm, rec.key, rec.keyErr)
}

// record is the cluster's ID ConfigMap and handshake key Secret, as read together, and, when asked for,
// the installed objects (see readInstalled).
type record struct {
	cm            *corev1.ConfigMap
	key           *corev1.Secret
	cmErr, keyErr error
	installed     *installedObjects
	installedErr  error
}

// readRecord reads the ID ConfigMap and the handshake key Secret at once: both names are fixed, so the
// second read need not wait for the first (one round trip, not two, before anything else can start). With
// installed, the sandbox policies, bindings and tenant role are read in the same round trip.
func (c *Cluster) readRecord(ctx context.Context, installed bool) record {
	var rec record
	_ = parallel(func() error {
		if installed {
			rec.installed, rec.installedErr = c.readInstalled(ctx)
		}
		return nil
	}, func() error {
		rec.cm, rec.cmErr = c.Kube.CoreV1().ConfigMaps(SystemNamespace).Get(ctx, ClusterConfigMap, metav1.GetOptions{})
		return nil
	}, func() error {
		rec.key, rec.keyErr = c.Kube.CoreV1().Secrets(SystemNamespace).Get(ctx, HandshakeKeySecret, metav1.GetOptions{})
		return nil
	})
	return rec
}

// loadCurrent is Load for what issues or restricts credentials: when the cluster's admission policies,
// CRDs or tenant role come from an older kubectl federate (installGeneration), they are brought up to date
// first, so that nothing is issued under rules that do not yet know it (a token's ServiceAccount, a
// cordon). Read-only commands use Load, which never writes.
//
// It also restores any of the sandbox's admission policies, their bindings and the tenant role that was
// deleted or changed (ensureCurrent), reading them with the cluster's record: no extra round trip.
func (c *Cluster) loadCurrent(ctx context.Context) (*Self, error) {
	self, err := c.load(ctx, true)
	if err != nil {
		return nil, err
	}
	if err := c.ensureCurrent(ctx); err != nil {
		return nil, err
	}
	return self, nil
}

func (c *Cluster) loadKey(cm *corev1.ConfigMap, sec *corev1.Secret, secErr error) (*Self, error) {
	id := cm.Data[clusterIDKey]
	if err := ValidateClusterID("ConfigMap "+SystemNamespace+"/"+ClusterConfigMap+" data."+clusterIDKey, id); err != nil {
		return nil, err
	}
	if apierrors.IsNotFound(secErr) {
		return nil, fmt.Errorf("%w (no Secret %s/%s)", ErrNotInitialized, SystemNamespace, HandshakeKeySecret)
	}
	if secErr != nil {
		return nil, secErr
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

// said is the wording of a reported fact: what was done, or in a dry run what would be.
func (c *Cluster) said(did, would string) string {
	if c.DryRun {
		return would
	}
	return did
}

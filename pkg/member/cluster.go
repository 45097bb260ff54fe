package member

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/federate-dev/kubectl-federate/pkg/kube"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
)

// InstallGeneration is bumped whenever the CRDs, the default ClusterRole or the sandbox admission policy
// change; init re-applies them when the cluster's record is older.
const InstallGeneration = "19"

// Keys of the cluster's record: its ID, the version of what init installed, and the handshake key pair.
const (
	ClusterIDKey      = "clusterID"
	InstallGenAnnot   = "federate.dev/install-generation"
	PrivateKeyDataKey = "ed25519.key"
	PublicKeyDataKey  = "ed25519.pub"
)

// Cluster is one side of a handshake: the clients of one cluster and where its progress goes.
type Cluster struct {
	Kube    kube.Interface
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

	Self    *Self             // cached after Init or Load
	StaleCM *corev1.ConfigMap // Load found objects of an older installGeneration (see loadCurrent)
	// Installed is the sandbox policies, bindings and tenant role, read with the cluster's record for
	// ensureCurrent (reconcile.go); verified says ensureCurrent ran in this process.
	Installed    *InstalledObjects
	InstalledErr error
	Verified     bool
	ensured      map[string]bool         // namespaces this process already ensured
	NonceCache   map[string]*nonce.Nonce // nonces this process created or read, by consumer ID

	OperatorOnce sync.Once // operator: the user this process acts as, for audit Events
	OperatorUser string

	early reads // reads sent ahead of the step that needs them (prefetch.go)
}

// Self is this cluster's federation identity.
type Self struct {
	ClusterID  string
	PublicKey  ed25519.PublicKey
	PrivateKey ed25519.PrivateKey
}

// CurrentTime is the cluster's clock: Now, or time.Now when unset.
func (c *Cluster) CurrentTime() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Reporter is where progress goes: Report, or Discard when unset.
func (c *Cluster) Reporter() Reporter {
	if c.Report == nil {
		return Discard
	}
	return c.Report
}

// Nonces is the provider's nonce store in federate-system; its reads go through the early reads.
func (c *Cluster) Nonces() nonce.Store {
	return nonce.Store{Client: c.Kube, Namespace: SystemNamespace, Labels: TenantLabels, Now: c.Now,
		Read: func(ctx context.Context, name string) (*corev1.Secret, error) {
			return c.SecretRead(SystemNamespace, name).Take(ctx, c)
		}}
}

// Load reads this cluster's ID and handshake key; ErrNotInitialized if init never ran.
func (c *Cluster) Load(ctx context.Context) (*Self, error) {
	return c.LoadAlong(ctx, nil)
}

// LoadAlong is Load; with readInstalled, the objects ensureCurrent checks are read alongside the record.
func (c *Cluster) LoadAlong(ctx context.Context, readInstalled func(context.Context) (*InstalledObjects, error)) (*Self, error) {
	if c.Self != nil {
		return c.Self, nil
	}
	rec := c.ReadRecord(ctx, readInstalled)
	c.Installed, c.InstalledErr = rec.Installed, rec.InstalledErr
	if apierrors.IsNotFound(rec.CmErr) {
		return nil, fmt.Errorf("%w (no ConfigMap %s/%s)", ErrNotInitialized, SystemNamespace, ClusterConfigMap)
	}
	if rec.CmErr != nil {
		return nil, rec.CmErr
	}
	if rec.Cm.Annotations[InstallGenAnnot] != InstallGeneration {
		c.StaleCM = rec.Cm
	}
	return c.LoadKey(rec.Cm, rec.Key, rec.KeyErr)
}

// record is the cluster's ID ConfigMap and handshake key Secret, as read together, and, when asked for,
// the installed objects (see readInstalled).
type record struct {
	Cm            *corev1.ConfigMap
	Key           *corev1.Secret
	CmErr, KeyErr error
	Installed     *InstalledObjects
	InstalledErr  error
}

// ReadRecord reads the ID ConfigMap and the handshake key Secret at once: both names are fixed, so the
// second read need not wait for the first (one round trip, not two, before anything else can start). With
// readInstalled, the sandbox policies, bindings and tenant role are read in the same round trip.
func (c *Cluster) ReadRecord(ctx context.Context, readInstalled func(context.Context) (*InstalledObjects, error)) record {
	var rec record
	_ = parallel.All(func() error {
		if readInstalled != nil {
			rec.Installed, rec.InstalledErr = readInstalled(ctx)
		}
		return nil
	}, func() error {
		rec.Cm, rec.CmErr = c.Kube.CoreV1().ConfigMaps(SystemNamespace).Get(ctx, ClusterConfigMap, metav1.GetOptions{})
		return nil
	}, func() error {
		rec.Key, rec.KeyErr = c.Kube.CoreV1().Secrets(SystemNamespace).Get(ctx, HandshakeKeySecret, metav1.GetOptions{})
		return nil
	})
	return rec
}

// LoadKey checks the record's cluster ID and parses the handshake key, and caches both as Self.
func (c *Cluster) LoadKey(cm *corev1.ConfigMap, sec *corev1.Secret, secErr error) (*Self, error) {
	id := cm.Data[ClusterIDKey]
	if err := ValidateClusterID("ConfigMap "+SystemNamespace+"/"+ClusterConfigMap+" data."+ClusterIDKey, id); err != nil {
		return nil, err
	}
	if apierrors.IsNotFound(secErr) {
		return nil, fmt.Errorf("%w (no Secret %s/%s)", ErrNotInitialized, SystemNamespace, HandshakeKeySecret)
	}
	if secErr != nil {
		return nil, secErr
	}
	key, err := parsePrivateKey(sec.Data[PrivateKeyDataKey])
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", SystemNamespace, HandshakeKeySecret, err)
	}
	c.Self = &Self{ClusterID: id, PublicKey: key.Public().(ed25519.PublicKey), PrivateKey: key}
	return c.Self, nil
}

func parsePrivateKey(data []byte) (ed25519.PrivateKey, error) {
	der, err := DecodePEM(PrivateKeyDataKey, data, "PRIVATE KEY")
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", PrivateKeyDataKey, err)
	}
	ed, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: is %T, want an Ed25519 key", PrivateKeyDataKey, k)
	}
	return ed, nil
}

// Said is the wording of a reported fact: what was done, or in a dry run what would be.
func (c *Cluster) Said(did, would string) string {
	if c.DryRun {
		return would
	}
	return did
}

// DecodePEM returns the DER of the single PEM block of type typ in data; anything else (other blocks,
// trailing bytes, headers) is refused. field names the source in errors.
func DecodePEM(field string, data []byte, typ string) ([]byte, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%s: is empty", field)
	}
	if len(data) > MaxPEMSize {
		return nil, fmt.Errorf("%s: is %d bytes, more than the %d allowed", field, len(data), MaxPEMSize)
	}
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s: is not PEM", field)
	}
	if block.Type != typ {
		return nil, fmt.Errorf("%s: PEM block is %q, want %q", field, block.Type, typ)
	}
	if len(block.Headers) > 0 {
		return nil, fmt.Errorf("%s: PEM block has headers", field)
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("%s: has data after the %s block", field, typ)
	}
	return block.Bytes, nil
}

// DialFunc builds the clients of a kubeconfig. Tests replace it; nil means real clients.
type DialFunc func(kubeconfig []byte) (*Cluster, error)

// ImpersonationSupport is what the probe found.
type ImpersonationSupport struct {
	Constrained bool
	// Reason says how it was found: the server's version and the probe's answer.
	Reason string
}

// InstalledObjects is what the cluster holds of those objects.
type InstalledObjects struct {
	Policies map[string]*unstructured.Unstructured // by name
	Bindings map[string]*unstructured.Unstructured
	Role     *unstructured.Unstructured // nil: not there
}

// MaxPEMSize bounds any PEM document read from a Tenant or an Identity.
const MaxPEMSize = 16 << 10

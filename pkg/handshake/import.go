package handshake

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

const (
	// PrivateKeyKey is the data key of a client key.
	PrivateKeyKey = "tls.key"
	integrityKey  = "identity-integrity.key" // the nonce-derived key that verifies identity.yaml
	// UserAnnotation records, on the Secret of a client key or credential, the user it is for.
	UserAnnotation = "federate.dev/user"
	// KubeconfigKey is the data key of the consumer's kubeconfig Secret.
	KubeconfigKey = "kubeconfig"
)

// Imported is the result of ImportIdentity.
type Imported struct {
	Namespace        string
	KubeconfigSecret string // "" for a federated identity, which stores no credential
	User             string
	NotAfter         time.Time // zero for a federated identity, which does not expire
	AlreadyImported  bool
	// Federated is a federated identity: whose tokens the consumer mints, for which audience.
	Federated *v1alpha1.FederatedIdentity
	// Authenticator is a federated identity's entry for the provider's API server, when the run that
	// imported it issued it too (one shot).
	Authenticator *JWTAuthenticator
}

// ErrStaleIdentity is an identity that answers an earlier request of this cluster than the one pending: a
// new request was signed since, so its answer is the one to import.
var ErrStaleIdentity = errors.New("this identity answers an earlier request (a new one was signed since)")

// ImportIdentity (consumer) checks the provider's Identity against the client key waiting for it and
// against the integrity MACs keyed from the nonce of the request, then stores the kubeconfig Secret and the
// Identity in federate-system, and drops the pending key. Importing the same Identity again changes
// nothing.
func ImportIdentity(ctx context.Context, c *member.Cluster, id *v1alpha1.Identity) (*Imported, error) {
	return ImportIdentityHeld(ctx, c, id, nil, nil)
}

// heldKey is a client key a one-shot run keeps in memory instead of a pending-key Secret: nobody but this
// process will ever import the answer to its request.
type heldKey struct {
	keyPEM []byte // PKCS#8
	key    crypto.Signer
	user   string
	macKey []byte // the nonce-derived key of the identity's integrity MACs
	// findings are what a federated request's preflight found the provider's API server will lack.
	findings []string
	// ahead is the Identity IdentityAhead created while the provider bound its user, if it created one.
	ahead *unstructured.Unstructured
}

// Findings are what the preflight of a federated request found the provider's API server will lack of
// this cluster's issuer, seen from here; none for a certificate's request.
func (h *heldKey) Findings() []string {
	if h == nil {
		return nil
	}
	return h.findings
}

// ImportIdentityHeld is ImportIdentity for a request whose key this process holds (held), or whose key waits
// in the pending-key Secret (held nil). stored, if set, runs once the kubeconfig and the Identity are
// stored, alongside the Event.
func ImportIdentityHeld(ctx context.Context, c *member.Cluster, id *v1alpha1.Identity, held *heldKey, stored func()) (*Imported, error) {
	defer c.ForgetReads()
	if id != nil && member.ValidateClusterID("provider", id.Spec.ClusterID) == nil {
		PrefetchImport(ctx, c, id.Spec.ClusterID)
	}
	self, err := c.Load(ctx)
	if err != nil {
		return nil, err
	}
	cred, err := ValidateIdentity(id, self.ClusterID, c.CurrentTime())
	if err != nil {
		return nil, err
	}
	providerID := id.Spec.ClusterID
	res := &Imported{Namespace: member.SystemNamespace, KubeconfigSecret: member.KubeconfigSecretName(providerID), User: cred.User, NotAfter: cred.NotAfter}
	federated := id.Spec.Credential == v1alpha1.CredentialFederated
	if federated {
		res.KubeconfigSecret, res.Federated = "", id.Spec.Federated
	}
	secrets := c.Kube.CoreV1().Secrets(member.SystemNamespace)
	r := c.Reporter()
	var m *importMatch
	if err := member.Step(r, "Matching the credential with this cluster's request", "Credential answers this cluster's request; every field is as the provider issued it", func() error {
		var err error
		m, err = matchIdentity(ctx, c, id, cred, held, res)
		return err
	}); err != nil {
		return nil, err
	}
	kubeconfigYAML, macKey, pendingRead := m.kubeconfig, m.macKey, m.pendingRead
	if res.AlreadyImported {
		return res, nil
	}
	StartOperator(ctx, c) // for the Event, once the identity is known to be this cluster's
	// The request's waiting key goes once the kubeconfig that replaces it is stored; a held key's run may
	// find an older request's, which goes with the writes. Each exactly the Secret that was read.
	var stale *corev1.Secret
	if held != nil {
		stale, _, _ = c.SecretRead(member.SystemNamespace, member.PendingKeySecretName(providerID)).Taken(ctx, c)
	}
	drop := func(sec *corev1.Secret) error {
		if sec == nil || sec.Name == "" {
			return nil
		}
		opts := metav1.DeleteOptions{}
		if sec.UID != "" {
			opts.Preconditions = &metav1.Preconditions{UID: &sec.UID}
		}
		return objects.IgnoreNotFound(secrets.Delete(ctx, sec.Name, opts))
	}
	// The kubeconfig, the Identity and the Event (as the provider records its issuance: alongside) do not
	// depend on each other: all at once, and a one-shot run's lock on the pair goes with them (stored).
	if err := parallel.All(func() error {
		return storeCredential(ctx, c, id, res, kubeconfigYAML, macKey)
	}, func() error {
		return member.Step(r, "Recording the Identity", "Identity "+member.SystemNamespace+"/"+member.IdentityName(providerID)+" recorded", func() error {
			return applyIdentity(ctx, c, id, res, held != nil && held.ahead != nil)
		})
	}, func() error { return drop(stale) }, func() error {
		Audit(ctx, c, IdentityObject(providerID, member.IdentityName(providerID)), EventImported,
			"identity ("+OrCertificate(id.Spec.Credential)+") on provider "+providerID+" imported", cred)
		return nil
	}, func() error {
		if stored != nil {
			stored()
		}
		return nil
	}, func() error {
		// Every export of the pairing's credential follows it (a renewal, a re-run of authenticate): its
		// list goes with the writes, so a pairing without exports waits for nothing more. A federated
		// pairing's exports mint their own tokens: nothing in them follows an issuance.
		if !federated {
			RewriteExports(ctx, c, providerID, "", kubeconfigYAML)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	// Then the answered request's key, only once the kubeconfig that replaces it is stored.
	if err := drop(pendingRead); err != nil {
		return nil, err
	}
	return res, nil
}

// sameKubeconfigCredential tells whether the identity is the one already imported: the stored kubeconfig
// holds its certificate (or token), and its fields verify with the integrity key stored beside it.
func sameKubeconfigCredential(ctx context.Context, c *member.Cluster, providerID string, id *v1alpha1.Identity) (bool, error) {
	sec, err := c.Kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, member.KubeconfigSecretName(providerID), metav1.GetOptions{})
	if err != nil {
		return false, nil //nolint:nilerr // no kubeconfig: not imported, and the caller explains what is missing
	}
	if !kubeconfig.HoldsCredential(sec.Data[KubeconfigKey], id.Spec.Certificate, id.Spec.Token) {
		return false, nil
	}
	return true, credential.VerifyIdentity(sec.Data[integrityKey], &id.Spec)
}

// storeCredential stores the kubeconfig of an imported identity; a federated identity stores none (a
// token is minted whenever one is needed), and a kubeconfig an earlier identity of the pairing stored goes
// (its credential lost its rights with this issuance).
func storeCredential(ctx context.Context, c *member.Cluster, id *v1alpha1.Identity, res *Imported, kubeconfigYAML, macKey []byte) error {
	providerID := id.Spec.ClusterID
	if id.Spec.Credential == v1alpha1.CredentialFederated {
		return objects.IgnoreNotFound(c.Kube.CoreV1().Secrets(member.SystemNamespace).Delete(ctx, member.KubeconfigSecretName(providerID), metav1.DeleteOptions{}))
	}
	return member.Step(c.Reporter(), "Storing the kubeconfig", "Kubeconfig stored in Secret "+member.SystemNamespace+"/"+res.KubeconfigSecret, func() error {
		return storeKubeconfig(ctx, c, providerID, kubeconfigYAML, macKey)
	})
}

func storeKubeconfig(ctx context.Context, c *member.Cluster, providerID string, data, macKey []byte) error {
	secrets := c.Kube.CoreV1().Secrets(member.SystemNamespace)
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: member.KubeconfigSecretName(providerID), Namespace: member.SystemNamespace, Labels: member.IdentityLabels(providerID)},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{KubeconfigKey: data, integrityKey: macKey},
	}
	// Replaced if an early read found it (a renewal), else created; either guess, if wrong, falls back.
	existing, sent, err := c.SecretRead(member.SystemNamespace, sec.Name).Taken(ctx, c)
	if sent && err == nil && existing != nil {
		_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
		if !apierrors.IsNotFound(err) {
			return err
		}
	}
	_, err = secrets.Create(ctx, sec, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
	}
	return err
}

func applyIdentity(ctx context.Context, c *member.Cluster, id *v1alpha1.Identity, res *Imported, exists bool) error {
	providerID := id.Spec.ClusterID
	return applyIdentityNamed(ctx, c, member.IdentityName(providerID), member.IdentityLabels(providerID), id, res, exists)
}

// ApplyIdentityNamed records an Identity (spec, then status) under name in federate-system.
func ApplyIdentityNamed(ctx context.Context, c *member.Cluster, name string, labels map[string]string, id *v1alpha1.Identity, res *Imported) error {
	return applyIdentityNamed(ctx, c, name, labels, id, res, false)
}

// identityObject is the Identity recorded for id under name: its spec, without the token (the token is
// the credential: it lives in the kubeconfig Secret only, never in an object that a reader of
// Identities could see).
func identityObject(name string, labels map[string]string, id *v1alpha1.Identity) *v1alpha1.Identity {
	obj := &v1alpha1.Identity{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.IdentityKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: member.SystemNamespace, Labels: labels},
		Spec:       id.Spec,
	}
	obj.Spec.Token = ""
	return obj
}

// IdentityAhead (consumer) creates a first pairing's Identity, its spec alone, while the provider binds
// the new user (IssueOptions.Issued): the import then writes its status alongside the kubeconfig instead
// of one round trip after. Only where the import's early read found none, never in a dry run, and only
// for the identity this process asked for (held). It returns the Identity it created, if any, which
// RemoveIdentityAhead takes away again should the run end without importing.
func IdentityAhead(ctx context.Context, c *member.Cluster, id *v1alpha1.Identity, held *heldKey) (*unstructured.Unstructured, error) {
	if held == nil || c.DryRun || id == nil || id.Spec.Credential == v1alpha1.CredentialFederated {
		return nil, nil
	}
	providerID := id.Spec.ClusterID
	name := member.IdentityName(providerID)
	if _, err := c.ObjectRead(v1alpha1.IdentityGVR, member.SystemNamespace, name).Peek(ctx, c); !apierrors.IsNotFound(err) {
		return nil, nil //nolint:nilerr // there already (or unknown): the import records it as before
	}
	self, err := c.Load(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := ValidateIdentity(id, self.ClusterID, c.CurrentTime()); err != nil {
		return nil, err
	}
	u, err := objects.ToUnstructured(identityObject(name, member.IdentityLabels(providerID), id))
	if err != nil {
		return nil, err
	}
	unstructured.RemoveNestedField(u.Object, "status")
	created, err := c.Dynamic.Resource(v1alpha1.IdentityGVR).Namespace(member.SystemNamespace).Create(ctx, u, metav1.CreateOptions{FieldManager: member.FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil, nil // made meanwhile: not this run's, and the import records it as before
	}
	if err != nil {
		return nil, err
	}
	held.ahead = created
	return created, nil
}

// RemoveIdentityAhead removes the Identity IdentityAhead created (that very object), when the run ends
// without importing it; on a context of its own, since the run's may be ending.
func RemoveIdentityAhead(ctx context.Context, c *member.Cluster, created *unstructured.Unstructured) error {
	if created == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), member.CleanupTimeout)
	defer cancel()
	uid := created.GetUID()
	err := c.Dynamic.Resource(v1alpha1.IdentityGVR).Namespace(member.SystemNamespace).Delete(ctx, created.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// applyIdentityNamed is ApplyIdentityNamed; exists says this run made the Identity already (IdentityAhead),
// so that its status goes with its spec.
func applyIdentityNamed(ctx context.Context, c *member.Cluster, name string, labels map[string]string, id *v1alpha1.Identity, res *Imported, exists bool) error {
	obj := identityObject(name, labels, id)
	identities := c.Dynamic.Resource(v1alpha1.IdentityGVR).Namespace(member.SystemNamespace)
	u, err := objects.ToUnstructured(obj)
	if err != nil {
		return err
	}
	unstructured.RemoveNestedField(u.Object, "status")
	applySpec := func() error {
		_, err := identities.Apply(ctx, obj.Name, u, metav1.ApplyOptions{FieldManager: member.FieldManager, Force: true})
		return err
	}
	// The status can only be applied to an Identity that exists: with the spec when an early read found
	// it (a renewal), else after it.
	existing, sent, gerr := c.ObjectRead(v1alpha1.IdentityGVR, member.SystemNamespace, name).Taken(ctx, c)
	concurrent := sent && gerr == nil && existing != nil || exists
	if !concurrent {
		if err := applySpec(); err != nil {
			return err
		}
	}
	status := &v1alpha1.Identity{
		TypeMeta:   obj.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: obj.Name, Namespace: member.SystemNamespace},
		Status:     v1alpha1.IdentityStatus{User: res.User, KubeconfigSecret: res.KubeconfigSecret},
	}
	if !res.NotAfter.IsZero() {
		notAfter := metav1.NewTime(res.NotAfter)
		status.Status.NotAfter = &notAfter
	}
	applyStatus := func() error { return c.ApplyStatus(ctx, v1alpha1.IdentityGVR, status) }
	if !concurrent {
		return applyStatus()
	}
	if err := parallel.All(applySpec, applyStatus); !apierrors.IsNotFound(err) {
		return err
	}
	// Deleted since it was read: the spec makes it again, then the status.
	if err := applySpec(); err != nil {
		return err
	}
	return applyStatus()
}

// GetKubeconfig (consumer) returns the kubeconfig stored for a provider; for a federated identity, which
// stores none, one holding a token minted now (MintedKubeconfig). A provider this cluster holds no identity
// of is a *NotFoundError naming those it holds, the nearest first (a typo reads as one).
func GetKubeconfig(ctx context.Context, c *member.Cluster, providerID string) ([]byte, error) {
	data, fed, err := pairingKubeconfig(ctx, c, providerID)
	if fed != nil {
		data, _, err = MintedKubeconfig(ctx, c, fed)
	}
	return data, err
}

// pairingKubeconfig (consumer) reads the kubeconfig stored for a provider or, where none is stored, the
// pairing's Identity if it is federated (which stores none). A provider this cluster holds no identity of
// is a *NotFoundError.
func pairingKubeconfig(ctx context.Context, c *member.Cluster, providerID string) ([]byte, *v1alpha1.Identity, error) {
	data, err := storedKubeconfig(ctx, c, member.KubeconfigSecretName(providerID), fmt.Sprintf("provider %q", providerID), "import its identity first")
	if !errors.Is(err, errNoKubeconfig) {
		return data, nil, err
	}
	switch id, ferr := FederatedIdentity(ctx, c, providerID); {
	case ferr != nil:
		return nil, nil, ferr
	case id != nil:
		return nil, id, nil
	}
	known, lerr := ProviderIDs(ctx, c)
	if lerr != nil {
		return nil, nil, err
	}
	return nil, nil, NotFound("provider", providerID, "among the providers this cluster holds an identity of (import its identity first)", known)
}

// ProviderIDs lists the providers this cluster holds a pairing's identity of.
func ProviderIDs(ctx context.Context, c *member.Cluster) ([]string, error) {
	l, err := c.Dynamic.Resource(v1alpha1.IdentityGVR).Namespace(member.SystemNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: member.LabelRole + "=" + member.RoleConsumer})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, it := range l.Items {
		if id := it.GetLabels()[member.LabelRemoteClusterID]; id != "" && it.GetName() == member.IdentityName(id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// errNoKubeconfig marks a kubeconfig Secret not found.
var errNoKubeconfig = errors.New("no kubeconfig")

// GetSliceKubeconfig (consumer) returns the kubeconfig stored for a provider's resource slice.
func GetSliceKubeconfig(ctx context.Context, c *member.Cluster, providerID, slice string) ([]byte, error) {
	return storedKubeconfig(ctx, c, member.SliceKubeconfigSecretName(providerID, slice), fmt.Sprintf("resource slice %q of provider %q", slice, providerID), "import the slice first")
}

func storedKubeconfig(ctx context.Context, c *member.Cluster, name, what, hint string) ([]byte, error) {
	ns := member.SystemNamespace
	sec, err := c.Kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w for %s (Secret %s/%s not found): %s", errNoKubeconfig, what, ns, name, hint)
	}
	if err != nil {
		return nil, err
	}
	data := sec.Data[KubeconfigKey]
	if len(data) == 0 {
		return nil, fmt.Errorf("secret %s/%s has no %q key", ns, sec.Name, KubeconfigKey)
	}
	return data, nil
}

// PrefetchImport sends at once the reads a consumer's import of the provider's identity will need.
func PrefetchImport(ctx context.Context, c *member.Cluster, providerID string) {
	if !c.FirstBatch("import/" + providerID) {
		return
	}
	c.SecretRead(member.SystemNamespace, member.KubeconfigSecretName(providerID)).Start(ctx, c)
	c.SecretRead(member.SystemNamespace, member.PendingKeySecretName(providerID)).Start(ctx, c)
	c.ObjectRead(v1alpha1.IdentityGVR, member.SystemNamespace, member.IdentityName(providerID)).Start(ctx, c)
}

// OrCertificate is a recorded credential kind, Certificate when none is recorded (before tokens existed).
func OrCertificate(credential string) string {
	if credential == "" {
		return v1alpha1.CredentialCertificate
	}
	return credential
}

// importMatch is what matching an identity with this cluster's request found: the kubeconfig it makes,
// the MAC key of the request, and the pending-key Secret this run read, if any.
type importMatch struct {
	kubeconfig, macKey []byte
	pendingRead        *corev1.Secret
}

// matchIdentity ties the identity to this cluster's waiting request: its MACs verify with the request's
// nonce-derived key, and a certificate certifies the waiting client key as the user asked for. It builds
// the kubeconfig; an identity already imported sets res.AlreadyImported instead.
func matchIdentity(ctx context.Context, c *member.Cluster, id *v1alpha1.Identity, cred *Credential, held *heldKey, res *Imported) (*importMatch, error) {
	providerID := id.Spec.ClusterID
	m := &importMatch{}
	var err error
	pending := &corev1.Secret{}
	if held != nil {
		pending = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "(in memory)", Annotations: map[string]string{UserAnnotation: held.user}},
			Data:       map[string][]byte{PrivateKeyKey: held.keyPEM, integrityKey: held.macKey},
		}
	} else {
		pending, err = c.SecretRead(member.SystemNamespace, member.PendingKeySecretName(providerID)).Take(ctx, c)
		m.pendingRead = pending
	}
	if apierrors.IsNotFound(err) && id.Spec.Credential == v1alpha1.CredentialFederated {
		same, err := sameFederatedIdentity(ctx, c, id)
		if err != nil || same {
			res.AlreadyImported = same
			return m, err
		}
	}
	if apierrors.IsNotFound(err) {
		same, err := sameKubeconfigCredential(ctx, c, providerID, id)
		if err != nil || same {
			res.AlreadyImported = same
			return m, err
		}
		return nil, fmt.Errorf("no client key is waiting for a certificate from %q (Secret %s/%s): this identity answers a request this cluster did not make, or one already replaced; this cluster must make a new request (a new Tenant from a new nonce)",
			providerID, member.SystemNamespace, member.PendingKeySecretName(providerID))
	}
	if err != nil {
		return nil, err
	}
	// The MACs are keyed from the nonce of exactly the pending request: a token identity, which certifies
	// no key of ours, is tied to the request by them alone.
	m.macKey = pending.Data[integrityKey]
	if cred.Cert != nil {
		if want := pending.Annotations[UserAnnotation]; cred.User != want {
			return nil, fmt.Errorf("spec.certificate: is for user %q, the pending request is for %q: %w", cred.User, want, ErrStaleIdentity)
		}
	}
	if err := credential.VerifyIdentity(m.macKey, &id.Spec); err != nil {
		return nil, err
	}
	if f := id.Spec.Federated; f != nil {
		// No key to match: the identity answers the request whose nonce keyed its MACs, for the user that
		// nonce entitles this cluster to (under which the provider puts the ServiceAccount's name).
		if want := pending.Annotations[UserAnnotation]; !strings.HasPrefix(f.User, want+":") && !sameFederatedNaming(ctx, c, id) {
			return nil, fmt.Errorf("spec.federated.user: is %q, the pending request is for %q", member.Truncate(f.User), want)
		}
		return m, nil
	}
	params := kubeconfig.Params{Name: providerID, Server: id.Spec.APIServer, CA: id.Spec.CA, ProxyURL: id.Spec.ProxyURL, Namespace: id.Spec.Namespace}
	if cred.Cert == nil {
		params.Token = id.Spec.Token
	} else {
		key, err := ParseSigner(pending.Data[PrivateKeyKey])
		if err != nil {
			return nil, fmt.Errorf("secret %s/%s: %w", member.SystemNamespace, pending.Name, err)
		}
		if !credential.SamePublicKey(key.Public(), cred.Cert.PublicKey) {
			return nil, errors.New("spec.certificate: does not certify this cluster's pending client key")
		}
		params.CertPEM, params.KeyPEM = id.Spec.Certificate, pending.Data[PrivateKeyKey]
	}
	m.kubeconfig, err = kubeconfig.Build(params)
	return m, err
}

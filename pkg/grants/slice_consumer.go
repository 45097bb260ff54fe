package grants

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/kube"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// SliceRequestOptions are the consumer's choices for a ResourceSlice.
type SliceRequestOptions struct {
	ProviderID   string
	Name         string
	Class        string            // "" means the provider's default class
	Resources    map[string]string // cpu and memory required; pods, ephemeral-storage optional
	KeyAlgorithm string
}

// Validate checks the options without I/O.
func (o SliceRequestOptions) Validate() error {
	if err := member.ValidateClusterID("provider cluster ID", o.ProviderID); err != nil {
		return err
	}
	if err := member.ValidateSliceName("slice name", o.Name); err != nil {
		return err
	}
	if o.Class != "" {
		if err := member.ValidateSliceName("class", o.Class); err != nil {
			return err
		}
	}
	if _, err := ParseSliceResources("", o.Resources); err != nil {
		return err
	}
	return credential.ValidateKeyAlgorithm(o.KeyAlgorithm)
}

// RequestSlice (consumer) prepares a ResourceSlice for a provider this cluster is paired with: a fresh
// client key that never leaves this cluster (kept in federate-system until the certificate comes), a CSR
// for the user that key entitles, and the signature by the pinned handshake key over provider, consumer,
// slice, class, resources and CSR. It records the request in federate-system and returns it, ready for the
// provider's tenant namespace. Re-running it reuses the waiting key.
func RequestSlice(ctx context.Context, c *member.Cluster, o SliceRequestOptions) (*v1alpha1.ResourceSlice, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	self, err := c.Load(ctx)
	if err != nil {
		return nil, err
	}
	if o.ProviderID == self.ClusterID {
		return nil, fmt.Errorf("provider cluster ID %q: %w", o.ProviderID, member.ErrOwnID)
	}
	r := c.Reporter()
	var slice *v1alpha1.ResourceSlice
	err = member.Step(r, "Signing resource slice "+o.Name, "ResourceSlice "+o.Name+" signed (its client key stays in Secret "+member.SystemNamespace+"/"+member.SlicePendingKeySecretName(o.ProviderID, o.Name)+")", func() error {
		// Only a paired cluster has a pinned handshake key on the provider: without a pairing the request
		// could never verify, so refuse it here rather than there.
		if _, err := c.Kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, member.KubeconfigSecretName(o.ProviderID), metav1.GetOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("this cluster is not paired with provider %q (no Secret %s/%s): authenticate first", o.ProviderID, member.SystemNamespace, member.KubeconfigSecretName(o.ProviderID))
			}
			return err
		}
		key, user, err := ensureSliceKey(ctx, c, self.ClusterID, o)
		if err != nil {
			return err
		}
		csrPEM, err := credential.NewCSR(user, key.Signer)
		if err != nil {
			return err
		}
		block, _ := pem.Decode(csrPEM)
		spec := v1alpha1.ResourceSliceSpec{ClusterID: self.ClusterID, ProviderClusterID: o.ProviderID, Slice: o.Name,
			Class: o.Class, Resources: o.Resources, CSR: csrPEM}
		spec.Signature = credential.Sign(self.PrivateKey, credential.SliceMessage(o.ProviderID, self.ClusterID, o.Name, o.Class, o.Resources, block.Bytes))
		slice = &v1alpha1.ResourceSlice{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.ResourceSliceKind},
			ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: member.TenantNamespace(self.ClusterID)},
			Spec:       spec,
		}
		record := &v1alpha1.ResourceSlice{TypeMeta: slice.TypeMeta, Spec: slice.Spec}
		record.ObjectMeta = metav1.ObjectMeta{Name: member.SliceKey(o.ProviderID, o.Name), Namespace: member.SystemNamespace, Labels: member.SliceLabels(o.ProviderID, o.Name)}
		if err := c.ApplyTyped(ctx, v1alpha1.ResourceSliceGVR, member.SystemNamespace, record); err != nil {
			return fmt.Errorf("recording ResourceSlice %s/%s: %w", member.SystemNamespace, record.Name, err)
		}
		return applySliceStatus(ctx, c, member.SystemNamespace, record.Name, v1alpha1.ResourceSliceStatus{Phase: SlicePending})
	})
	return slice, err
}

// ensureSliceKey returns the slice's waiting client key and the user it entitles, creating the key if
// none waits.
func ensureSliceKey(ctx context.Context, c *member.Cluster, selfID string, o SliceRequestOptions) (*credential.ClientKey, string, error) {
	secrets := c.Kube.CoreV1().Secrets(member.SystemNamespace)
	name := member.SlicePendingKeySecretName(o.ProviderID, o.Name)
	existing, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		if key, err := handshake.ParseSigner(existing.Data[handshake.PrivateKeyKey]); err == nil {
			k, err := credential.ClientKeyFrom(key)
			if err == nil && existing.Annotations[handshake.UserAnnotation] == credential.SliceUser(selfID, o.Name, k.Spki) {
				return k, existing.Annotations[handshake.UserAnnotation], nil
			}
		}
		existing = existing.DeepCopy()
	case apierrors.IsNotFound(err):
		existing = nil
	default:
		return nil, "", err
	}
	signer, err := credential.NewClientKey(o.KeyAlgorithm)
	if err != nil {
		return nil, "", err
	}
	k, err := credential.ClientKeyFrom(signer)
	if err != nil {
		return nil, "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(signer)
	if err != nil {
		return nil, "", err
	}
	user := credential.SliceUser(selfID, o.Name, k.Spki)
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: member.SystemNamespace, Labels: member.SliceLabels(o.ProviderID, o.Name),
			Annotations: map[string]string{handshake.UserAnnotation: user}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{handshake.PrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})},
	}
	if existing == nil {
		_, err = secrets.Create(ctx, sec, metav1.CreateOptions{})
	} else {
		sec.ResourceVersion = existing.ResourceVersion
		_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
	}
	if err != nil {
		return nil, "", fmt.Errorf("storing the slice's client key in Secret %s/%s: %w", member.SystemNamespace, name, err)
	}
	return k, user, nil
}

// SubmitSlice (consumer) leaves the request in this cluster's tenant namespace on the provider, as seen
// through provider (the pairing's identity, or the provider's administrator in one shot). A request of the
// same name is replaced: it is this consumer's own, and a new request (a new key) is how a slice is renewed.
func SubmitSlice(ctx context.Context, c *member.Cluster, provider *member.Cluster, slice *v1alpha1.ResourceSlice) error {
	return member.Step(c.Reporter(), "Submitting resource slice "+slice.Name, "ResourceSlice "+slice.Name+" submitted to the provider", func() error {
		rs := provider.Dynamic.Resource(v1alpha1.ResourceSliceGVR).Namespace(slice.Namespace)
		u, err := objects.ToUnstructured(slice)
		if err != nil {
			return err
		}
		unstructured.RemoveNestedField(u.Object, "status")
		_, err = handshake.CreateCounted(ctx, c, provider, v1alpha1.ResourceSliceGVR, u)
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		existing, err := rs.Get(ctx, slice.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var have v1alpha1.ResourceSlice
		if err := objects.FromUnstructured(existing, &have); err != nil {
			return err
		}
		if bytes.Equal(have.Spec.Signature, slice.Spec.Signature) {
			return nil
		}
		u.SetResourceVersion(existing.GetResourceVersion())
		_, err = rs.Update(ctx, u, metav1.UpdateOptions{})
		return err
	})
}

// ImportSliceOptions say what to import and where the provider's answer comes from.
type ImportSliceOptions struct {
	ProviderID, Name string
	// Answer is the provider's ResourceSlice; nil reads it through Provider.
	Answer   *v1alpha1.ResourceSlice
	Provider *member.Cluster
	// FromFile marks an Answer read from a file: only what the import verifies itself is recorded (the
	// certificate, the namespace, the grant read back through the new credential), and a denial is shown,
	// not recorded.
	FromFile bool
}

// SliceImport is the result of ImportSlice.
type SliceImport struct {
	Slice            string
	Namespace        string
	KubeconfigSecret string
	User             string
	NotAfter         time.Time
	Granted          map[string]string
	AlreadyImported  bool
}

// ImportSlice (consumer) stores the credential the provider issued for a slice: answer is the provider's
// copy of the ResourceSlice (from a file, or read through provider when nil). The certificate must certify
// the client key waiting for it, as the user that key entitles, in the namespace that slice must have; the
// kubeconfig reaches the provider as the pairing's does. Before anything is stored, the new credential
// reads its own quota, which proves it works and records the grant as the provider's API server enforces it.
func ImportSlice(ctx context.Context, c *member.Cluster, o ImportSliceOptions) (*SliceImport, error) {
	self, err := c.Load(ctx)
	if err != nil {
		return nil, err
	}
	im := &sliceImport{c: c, r: c.Reporter(), o: o, self: self, secrets: c.Kube.CoreV1().Secrets(member.SystemNamespace)}
	if err := im.readAnswer(ctx); err != nil {
		return nil, err
	}
	if err := im.checkAnswer(ctx); err != nil {
		return nil, err
	}
	switch im.answer.Status.Credential {
	case v1alpha1.CredentialToken:
		err = im.tokenKubeconfig(ctx)
	case "", v1alpha1.CredentialCertificate:
		err = im.certificateKubeconfig(ctx)
	default:
		err = fmt.Errorf("status.credential %q: must be %s or %s", member.Truncate(im.answer.Status.Credential), v1alpha1.CredentialCertificate, v1alpha1.CredentialToken)
	}
	if err != nil {
		return nil, err
	}
	if im.res.AlreadyImported {
		im.res.Granted = im.answer.Status.Granted
		return im.res, nil
	}
	if err := im.checkCredential(ctx); err != nil {
		return nil, err
	}
	if err := im.store(ctx); err != nil {
		return nil, err
	}
	return im.res, im.finish(ctx)
}

// sliceImport is one run of ImportSlice; each method is one step, in the order ImportSlice calls them.
type sliceImport struct {
	c       *member.Cluster
	r       member.Reporter
	o       ImportSliceOptions
	self    *member.Self
	secrets kube.Collection[*corev1.Secret, *corev1.SecretList] // federate-system's
	answer  *v1alpha1.ResourceSlice
	res     *SliceImport
	kc      []byte // the slice's kubeconfig, once built from the answer and the waiting key
}

// readAnswer reads the provider's copy of the ResourceSlice through the provider, unless it was given.
func (im *sliceImport) readAnswer(ctx context.Context) error {
	o := im.o
	im.answer = o.Answer
	if im.answer != nil {
		return nil
	}
	if o.Provider == nil {
		return errors.New("no answer to import: give the provider's ResourceSlice, or a way to read it")
	}
	u, err := o.Provider.Dynamic.Resource(v1alpha1.ResourceSliceGVR).Namespace(member.TenantNamespace(im.self.ClusterID)).Get(ctx, o.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("provider %q holds no ResourceSlice %q from this cluster: create it first", o.ProviderID, o.Name)
	}
	if err != nil {
		return fmt.Errorf("reading ResourceSlice %s from provider %q: %w", o.Name, o.ProviderID, err)
	}
	im.answer = &v1alpha1.ResourceSlice{}
	return objects.FromUnstructured(u, im.answer)
}

// checkAnswer takes the answer for this cluster, provider and slice, accepted, in the slice's namespace;
// a denial the provider itself gave is recorded (a file proves none).
func (im *sliceImport) checkAnswer(ctx context.Context) error {
	o, answer, selfID := im.o, im.answer, im.self.ClusterID
	name, providerID := o.Name, o.ProviderID
	if err := checkSliceAnswer(answer, selfID, providerID, name); err != nil {
		return err
	}
	im.res = &SliceImport{Slice: name, Namespace: member.SliceNamespace(selfID, name), KubeconfigSecret: member.SliceKubeconfigSecretName(providerID, name)}
	switch slicePhase(answer) {
	case SliceDenied:
		if o.FromFile {
			return fmt.Errorf("resource slice %q %w by provider %q, according to the file (not recorded: a file proves no denial): %s", name, member.ErrDenied, providerID, answer.Status.Reason)
		}
		_ = applySliceStatus(ctx, im.c, member.SystemNamespace, member.SliceKey(providerID, name), v1alpha1.ResourceSliceStatus{Phase: SliceDenied, Reason: answer.Status.Reason})
		return fmt.Errorf("resource slice %q %w by provider %q: %s", name, member.ErrDenied, providerID, answer.Status.Reason)
	case SliceAccepted:
	default:
		return &member.SliceNotAcceptedError{Slice: name, ProviderID: providerID, ConsumerID: selfID}
	}
	if answer.Status.Namespace != im.res.Namespace {
		return fmt.Errorf("status.namespace %q: the slice's namespace is %q", member.Truncate(answer.Status.Namespace), im.res.Namespace)
	}
	return nil
}

// providerToken is the slice's token as it waits on the provider, when the answer does not carry it;
// "" with res.AlreadyImported when an earlier import collected that very token.
func (im *sliceImport) providerToken(ctx context.Context) (string, error) {
	c, o, answer, res := im.c, im.o, im.answer, im.res
	name, providerID, tns := o.Name, o.ProviderID, member.TenantNamespace(im.self.ClusterID)
	sec, err := o.Provider.Kube.CoreV1().Secrets(tns).Get(ctx, member.SliceTokenSecretName(name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if same, serr := sliceTokenUser(ctx, c, providerID, name); serr == nil && same == answer.Status.User && answer.Status.NotAfter != nil {
			res.User, res.NotAfter, res.AlreadyImported = same, answer.Status.NotAfter.Time, true
			return "", nil
		}
		return "", fmt.Errorf("resource slice %q: its token no longer waits on provider %q (Secret %s/%s): an earlier import collected it, or it was removed; ask for the slice again",
			name, providerID, tns, member.SliceTokenSecretName(name))
	case err != nil:
		return "", fmt.Errorf("reading the slice's token from provider %q: %w", providerID, err)
	}
	return string(sec.Data["token"]), nil
}

// tokenKubeconfig checks the slice's token (its ServiceAccount, unexpired) and builds the kubeconfig; a
// token certifies no key of ours: it answers this request if one is waiting, and proves itself later by
// reading the slice's quota.
func (im *sliceImport) tokenKubeconfig(ctx context.Context) error {
	c, o, answer, res := im.c, im.o, im.answer, im.res
	name, providerID := o.Name, o.ProviderID
	token := answer.Status.Token
	if token == "" && o.Provider != nil {
		var err error
		if token, err = im.providerToken(ctx); err != nil || res.AlreadyImported {
			return err
		}
	}
	if token == "" {
		return errors.New("status.token: the answer carries no token (a token slice's answer is the file accept printed, or the provider itself)")
	}
	user, notAfter, err := credential.TokenClaims("status.token", token)
	if err != nil {
		return err
	}
	if user != answer.Status.User || !credential.IsCredentialUser(user, res.Namespace) {
		return fmt.Errorf("status.token: is for %q, not the slice's credential ServiceAccount %q in %s", member.Truncate(user), member.Truncate(answer.Status.User), res.Namespace)
	}
	if !c.CurrentTime().Before(notAfter) {
		return fmt.Errorf("status.token: expired at %s", notAfter.UTC().Format(time.RFC3339))
	}
	res.User, res.NotAfter = user, notAfter
	return member.Step(im.r, "Checking the slice's token against the waiting request", "The slice's token answers the waiting request", func() error {
		_, err := im.secrets.Get(ctx, member.SlicePendingKeySecretName(providerID, name), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if same, err := sameSliceCredential(ctx, c, providerID, name, nil, token); err != nil || same {
				res.AlreadyImported = same
				return err
			}
			return fmt.Errorf("no request of this cluster waits for slice %q of provider %q (Secret %s/%s): the answer is for a request this cluster did not make, or one already replaced; the slice must be requested again",
				name, providerID, member.SystemNamespace, member.SlicePendingKeySecretName(providerID, name))
		}
		if err != nil {
			return err
		}
		im.kc, err = sliceKubeconfig(ctx, c, providerID, name, res.Namespace, kubeconfig.Params{Token: token})
		return err
	})
}

// certificateKubeconfig checks that the slice's certificate certifies the client key waiting for it, as
// the user that key entitles, for client authentication, unexpired, and builds the kubeconfig.
func (im *sliceImport) certificateKubeconfig(ctx context.Context) error {
	c, o, answer, res := im.c, im.o, im.answer, im.res
	name, providerID := o.Name, o.ProviderID
	cert, err := credential.ParseCertificate("status.certificate", answer.Status.Certificate)
	if err != nil {
		return err
	}
	res.User, res.NotAfter = cert.Subject.CommonName, cert.NotAfter
	if !c.CurrentTime().Before(cert.NotAfter) {
		return fmt.Errorf("status.certificate: expired at %s", cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return member.Step(im.r, "Matching the slice's certificate with its client key", "Certificate matches the slice's client key", func() error {
		pending, err := im.secrets.Get(ctx, member.SlicePendingKeySecretName(providerID, name), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if same, err := sameSliceCredential(ctx, c, providerID, name, answer.Status.Certificate, ""); err != nil || same {
				res.AlreadyImported = same
				return err
			}
			return fmt.Errorf("no client key is waiting for slice %q of provider %q (Secret %s/%s): the answer is for a request this cluster did not make, or one already replaced; the slice must be requested again",
				name, providerID, member.SystemNamespace, member.SlicePendingKeySecretName(providerID, name))
		}
		if err != nil {
			return err
		}
		if want := pending.Annotations[handshake.UserAnnotation]; cert.Subject.CommonName != want {
			return fmt.Errorf("status.certificate: is for user %q, the waiting key is for %q", member.Truncate(cert.Subject.CommonName), want)
		}
		key, err := handshake.ParseSigner(pending.Data[handshake.PrivateKeyKey])
		if err != nil {
			return fmt.Errorf("secret %s/%s: %w", member.SystemNamespace, pending.Name, err)
		}
		if !credential.SamePublicKey(key.Public(), cert.PublicKey) || !credential.ClientAuth(cert) {
			return errors.New("status.certificate: does not certify the slice's waiting client key for client authentication")
		}
		im.kc, err = sliceKubeconfig(ctx, c, providerID, name, res.Namespace, kubeconfig.Params{CertPEM: answer.Status.Certificate, KeyPEM: pending.Data[handshake.PrivateKeyKey]})
		return err
	})
}

// checkCredential proves the new credential works before anything is stored: it reads its own quota,
// which records the grant as the provider's API server enforces it.
func (im *sliceImport) checkCredential(ctx context.Context) error {
	res, r := im.res, im.r
	return member.Step(r, "Checking the slice's credential on the provider", "The slice's credential works in "+res.Namespace, func() error {
		granted, err := grantSeenBy(ctx, im.c, im.kc, res.Namespace)
		if err != nil {
			return err
		}
		if granted == nil {
			r.Warn("The slice's role cannot read its ResourceQuota: the grant recorded is the provider's answer, not checked")
			granted = im.answer.Status.Granted
		}
		res.Granted = granted
		return nil
	})
}

// store stores the slice's kubeconfig, rewrites its exports, and records its Identity and status.
func (im *sliceImport) store(ctx context.Context) error {
	c, o, answer, res := im.c, im.o, im.answer, im.res
	name, providerID := o.Name, o.ProviderID
	if err := member.Step(im.r, "Storing the slice's kubeconfig", "Kubeconfig stored in Secret "+member.SystemNamespace+"/"+res.KubeconfigSecret, func() error {
		sec := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: res.KubeconfigSecret, Namespace: member.SystemNamespace, Labels: member.SliceLabels(providerID, name)},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{handshake.KubeconfigKey: im.kc},
		}
		_, err := im.secrets.Create(ctx, sec, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			_, err = im.secrets.Update(ctx, sec, metav1.UpdateOptions{})
		}
		return err
	}); err != nil {
		return err
	}
	handshake.RewriteExports(ctx, c, providerID, name, im.kc) // the slice's exports follow its new credential
	return member.Step(im.r, "Recording the slice's Identity", "Identity "+member.SystemNamespace+"/"+member.SliceIdentityName(providerID, name)+" recorded", func() error {
		id := &v1alpha1.Identity{Spec: v1alpha1.IdentitySpec{ClusterID: providerID, ConsumerClusterID: im.self.ClusterID, Namespace: res.Namespace,
			Certificate: answer.Status.Certificate, Credential: answer.Status.Credential, Type: v1alpha1.IdentityResource, ResourceSlice: name}}
		var err error
		if id.Spec.APIServer, id.Spec.CA, id.Spec.ProxyURL, err = kubeconfig.Endpoint(im.kc); err != nil {
			return err
		}
		imp := &handshake.Imported{KubeconfigSecret: res.KubeconfigSecret, User: res.User, NotAfter: res.NotAfter}
		if err := handshake.ApplyIdentityNamed(ctx, c, member.SliceIdentityName(providerID, name), member.SliceLabels(providerID, name), id, imp); err != nil {
			return err
		}
		na := metav1.NewTime(res.NotAfter)
		st := v1alpha1.ResourceSliceStatus{Phase: SliceImported, Granted: res.Granted, Namespace: res.Namespace, User: res.User, NotAfter: &na,
			KubeconfigSecret: res.KubeconfigSecret}
		if !o.FromFile { // read from the provider itself, through the pairing or its administrator
			st.Reason, st.Class, st.ClusterRole, st.PodSecurity = answer.Status.Reason, answer.Status.Class, answer.Status.ClusterRole, answer.Status.PodSecurity
		}
		return applySliceStatus(ctx, c, member.SystemNamespace, member.SliceKey(providerID, name), st)
	})
}

// finish records the import in an audit Event, deletes the token's copy waiting on the provider (so that
// the token exists in one place) and the client key's pending Secret.
func (im *sliceImport) finish(ctx context.Context) error {
	c, o, answer, res := im.c, im.o, im.answer, im.res
	name, providerID, tns := o.Name, o.ProviderID, member.TenantNamespace(im.self.ClusterID)
	handshake.Audit(ctx, c, handshake.IdentityObject(providerID, member.SliceIdentityName(providerID, name)), handshake.EventImported,
		"resource slice "+name+" ("+handshake.OrCertificate(answer.Status.Credential)+") on provider "+providerID+" imported", &handshake.Credential{User: res.User, NotAfter: res.NotAfter})
	if answer.Status.Credential == v1alpha1.CredentialToken && o.Provider != nil {
		if err := objects.IgnoreNotFound(o.Provider.Kube.CoreV1().Secrets(tns).Delete(ctx, member.SliceTokenSecretName(name), metav1.DeleteOptions{})); err != nil {
			im.r.Warn(fmt.Sprintf("The slice's token stays in Secret %s/%s on the provider: %v", tns, member.SliceTokenSecretName(name), err))
		}
	}
	return objects.IgnoreNotFound(im.secrets.Delete(ctx, member.SlicePendingKeySecretName(providerID, name), metav1.DeleteOptions{}))
}

// sliceKubeconfig builds a slice's kubeconfig with the credential in p, reaching the provider as the
// pairing's kubeconfig does.
func sliceKubeconfig(ctx context.Context, c *member.Cluster, providerID, name, ns string, p kubeconfig.Params) ([]byte, error) {
	pairing, err := handshake.GetKubeconfig(ctx, c, providerID)
	if err != nil {
		return nil, err
	}
	server, ca, proxy, err := kubeconfig.Endpoint(pairing)
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig stored for provider %q: %w", providerID, err)
	}
	p.Name, p.Server, p.CA, p.ProxyURL, p.Namespace = member.SliceKey(providerID, name), server, ca, proxy, ns
	return kubeconfig.Build(p)
}

// sliceTokenUser returns the user of the token in a slice's stored kubeconfig ("" when it holds none).
func sliceTokenUser(ctx context.Context, c *member.Cluster, providerID, name string) (string, error) {
	sec, err := c.Kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, member.SliceKubeconfigSecretName(providerID, name), metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	token := kubeconfig.CurrentToken(sec.Data[handshake.KubeconfigKey])
	if token == "" {
		return "", nil
	}
	user, _, err := credential.TokenClaims("token", token)
	return user, err
}

// checkSliceAnswer checks that a provider's ResourceSlice answers this consumer's request for name.
func checkSliceAnswer(s *v1alpha1.ResourceSlice, selfID, providerID, name string) error {
	switch {
	case s.Spec.ClusterID != selfID:
		return fmt.Errorf("spec.clusterID %q: this slice was requested by another consumer (this cluster is %q)", member.Truncate(s.Spec.ClusterID), selfID)
	case s.Spec.ProviderClusterID != providerID:
		return fmt.Errorf("spec.providerClusterID %q: want %q", member.Truncate(s.Spec.ProviderClusterID), providerID)
	case s.Spec.Slice != name || (s.Name != "" && s.Name != name):
		return fmt.Errorf("spec.slice %q: want %q", member.Truncate(s.Spec.Slice), name)
	}
	return nil
}

// grantSeenBy reads the slice's quota through the slice's own credential and returns what it grants, in
// slice resource names; nil when the credential may not read quotas.
func grantSeenBy(ctx context.Context, c *member.Cluster, kc []byte, ns string) (map[string]string, error) {
	as, err := handshake.Dial(c, kc)
	if err != nil {
		return nil, err
	}
	u, err := as.Dynamic.Resource(sandbox.ResourceQuotaGVR).Namespace(ns).Get(ctx, sandbox.SandboxName, metav1.GetOptions{})
	if apierrors.IsForbidden(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the slice's credential cannot read ResourceQuota %s/%s: %w", ns, sandbox.SandboxName, err)
	}
	q := &corev1.ResourceQuota{}
	if err := objects.FromUnstructured(u, q); err != nil {
		return nil, err
	}
	return sliceGrant(q.Spec.Hard), nil
}

// sameSliceCredential tells whether the slice's stored kubeconfig already holds this certificate (or token).
func sameSliceCredential(ctx context.Context, c *member.Cluster, providerID, name string, certPEM []byte, token string) (bool, error) {
	sec, err := c.Kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, member.SliceKubeconfigSecretName(providerID, name), metav1.GetOptions{})
	if err != nil {
		return false, nil //nolint:nilerr // no kubeconfig: not imported, and the caller explains what is missing
	}
	return kubeconfig.HoldsCredential(sec.Data[handshake.KubeconfigKey], certPEM, token), nil
}

// applySliceStatus server-side applies a ResourceSlice's status.
func applySliceStatus(ctx context.Context, c *member.Cluster, ns, name string, st v1alpha1.ResourceSliceStatus) error {
	obj := &v1alpha1.ResourceSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.ResourceSliceKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Status:     st,
	}
	return c.ApplyStatus(ctx, v1alpha1.ResourceSliceGVR, obj)
}

// DeleteSliceLocal (consumer) forgets a slice: its Identity, kubeconfig, waiting key and record in
// federate-system, then, through provider (the pairing, or nil when unreachable), withdraws the request
// from the tenant namespace. The client key is gone with the Secret, so the certificate is useless to
// anyone; the provider's administrator removes the slice's namespace (delete resourceslice there), or
// it goes with the pairing.
func DeleteSliceLocal(ctx context.Context, c *member.Cluster, providerID, name string, provider *member.Cluster) error {
	self, err := c.Load(ctx)
	if err != nil {
		return err
	}
	return member.StepSaying(c.Reporter(), "Removing resource slice "+name+" of "+providerID, func() (string, error) {
		secrets := c.Kube.CoreV1().Secrets(member.SystemNamespace)
		// Each deletion tells whether it found its object, for the done line to name only what was there.
		type removal struct {
			what string
			del  func() error
		}
		removals := []removal{
			{"its Identity", func() error {
				return c.Dynamic.Resource(v1alpha1.IdentityGVR).Namespace(member.SystemNamespace).Delete(ctx, member.SliceIdentityName(providerID, name), metav1.DeleteOptions{})
			}},
			{"its kubeconfig", func() error {
				return secrets.Delete(ctx, member.SliceKubeconfigSecretName(providerID, name), metav1.DeleteOptions{})
			}},
			{"its waiting key", func() error {
				return secrets.Delete(ctx, member.SlicePendingKeySecretName(providerID, name), metav1.DeleteOptions{})
			}},
			{"its record", func() error {
				return c.Dynamic.Resource(v1alpha1.ResourceSliceGVR).Namespace(member.SystemNamespace).Delete(ctx, member.SliceKey(providerID, name), metav1.DeleteOptions{})
			}},
		}
		if provider != nil {
			removals = append(removals, removal{"the request on the provider", func() error {
				return provider.Dynamic.Resource(v1alpha1.ResourceSliceGVR).Namespace(member.TenantNamespace(self.ClusterID)).Delete(ctx, name, metav1.DeleteOptions{})
			}})
		}
		errs := []error{handshake.DeleteExports(ctx, c, providerID, name)}
		var removed []string
		for _, r := range removals {
			switch err := r.del(); {
			case err == nil:
				removed = append(removed, r.what)
			case !apierrors.IsNotFound(err):
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return "", err
		}
		done := "Resource slice " + name + " of " + providerID + " removed: " + strings.Join(removed, ", ")
		if len(removed) == 0 {
			done = "Resource slice " + name + " of " + providerID + ": nothing was left to remove"
		}
		return done, handshake.RecordRemoved(ctx, c, handshake.RemovedSlice, providerID, name)
	})
}

// HasSliceRecord (consumer) tells whether this cluster holds anything of a slice of providerID.
func HasSliceRecord(ctx context.Context, c *member.Cluster, providerID, name string) (bool, error) {
	l, err := c.Dynamic.Resource(v1alpha1.ResourceSliceGVR).Namespace(member.SystemNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(member.SliceLabels(providerID, name)).String()})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil || len(l.Items) > 0 {
		return err == nil, err
	}
	records, err := handshake.ExportRecords(ctx, c, providerID, name, false)
	return len(records) > 0, err
}

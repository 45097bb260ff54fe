package handshake

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
)

// Defaults of the provider's issuance.
const (
	DefaultNonceTTL   = time.Hour
	DefaultExpiration = 90 * 24 * time.Hour
	// MinExpiration is the shortest certificate the Kubernetes CSR API issues (expirationSeconds >= 600).
	MinExpiration = 10 * time.Minute
)

// CreateNonce (provider) returns an unexpired nonce for the consumer, creating one valid for ttl if there is
// none, and ensures the consumer's tenant namespace exists so its Tenant can be applied. The cluster is
// initialized first if it never was.
func (c *Cluster) CreateNonce(ctx context.Context, consumerID string, ttl time.Duration) (*nonce.Nonce, bool, error) {
	self, err := c.Init(ctx, "")
	if err != nil {
		return nil, false, err
	}
	if consumerID == self.ClusterID {
		return nil, false, fmt.Errorf("--remote-cluster-id %q: is this cluster's own ID", consumerID)
	}
	r := c.report()
	ns := TenantNamespace(consumerID)
	if err := step(r, "Ensuring tenant namespace "+ns, "Tenant namespace "+ns+" ensured", func() error {
		return c.ensureNamespace(ctx, ns, PairingLabels(consumerID))
	}); err != nil {
		return nil, false, err
	}
	var n *nonce.Nonce
	var created bool
	err = step(r, "Ensuring nonce", "Nonce ensured", func() error {
		n, created, err = c.nonces().Ensure(ctx, consumerID, ttl)
		c.rememberNonce(n)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	if !created {
		r.Info(fmt.Sprintf("An unused nonce for %q already exists; it expires at %s", consumerID, n.ExpiresAt.Format(time.RFC3339)))
	}
	return n, created, nil
}

// GetNonce (provider) returns the consumer's unexpired, unused nonce.
func (c *Cluster) GetNonce(ctx context.Context, consumerID string) (*nonce.Nonce, error) {
	return c.nonces().Get(ctx, consumerID)
}

// IssueOptions are the provider's choices for an issuance.
type IssueOptions struct {
	ConsumerID  string
	Tenant      *v1alpha1.Tenant // the consumer's request; nil reads the applied Tenant from the cluster
	APIServer   string           // what the consumer's kubeconfig points at
	CA          []byte           // PEM bundle verifying APIServer; may be empty
	Expiration  time.Duration    // requested certificate lifetime
	ClusterRole string           // bound in the tenant namespace; "" means DefaultClusterRole
}

// IssueIdentity (provider) verifies the consumer's Tenant against the stored nonce and, only if every
// check passes, consumes the nonce, has the CSR signed by the cluster's CSR API, binds the tenant role to
// the new user and returns the Identity for the consumer. Re-running it for a Tenant already issued
// returns the same Identity without issuing again.
func (c *Cluster) IssueIdentity(ctx context.Context, o IssueOptions) (*v1alpha1.Identity, error) {
	self, err := c.Load(ctx)
	if err != nil {
		return nil, err
	}
	if o.ClusterRole == "" {
		o.ClusterRole = DefaultClusterRole
	}
	if o.Expiration == 0 {
		o.Expiration = DefaultExpiration
	}
	r := c.report()
	ns := TenantNamespace(o.ConsumerID)
	tenants := c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(ns)

	// Everything up to the nonce's consumption only reads.
	var applied *v1alpha1.Tenant
	u, err := tenants.Get(ctx, o.ConsumerID, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading Tenant %s/%s: %w", ns, o.ConsumerID, err)
	default:
		applied = &v1alpha1.Tenant{}
		if err := fromUnstructured(u, applied); err != nil {
			return nil, fmt.Errorf("tenant %s/%s: %w", ns, o.ConsumerID, err)
		}
	}
	tenant := o.Tenant
	if tenant == nil {
		if applied == nil {
			return nil, fmt.Errorf("no Tenant %s in namespace %s: apply the consumer's tenant.yaml first, or pass it with -f", o.ConsumerID, ns)
		}
		tenant = applied
	}
	if err := ValidateTenant(tenant, o.ConsumerID, self.ClusterID); err != nil {
		return nil, err
	}
	csrDER, err := DecodePEM("spec.csr", tenant.Spec.CSR, "CERTIFICATE REQUEST")
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(csrDER)
	csrHash := hex.EncodeToString(sum[:])
	if applied != nil {
		st := applied.Status
		if len(st.PinnedPublicKey) > 0 && !bytes.Equal(st.PinnedPublicKey, tenant.Spec.PublicKey) {
			return nil, fmt.Errorf("spec.publicKey: consumer %q is pinned to handshake key %s, this request uses %s; "+
				"unauthenticate the consumer first if its key really changed",
				o.ConsumerID, Fingerprint(st.PinnedPublicKey), Fingerprint(tenant.Spec.PublicKey))
		}
		if c.alreadyIssued(st, tenant, csrHash) {
			r.Info("An identity was already issued for this request; returning it again")
			return c.identityFor(self.ClusterID, o, tenant, st.Certificate), nil
		}
	}
	var n *nonce.Nonce
	var csr *x509.CertificateRequest
	if err := step(r, "Verifying the tenant request", "Tenant request verified (nonce, signature, CSR)", func() error {
		if n = c.nonceCache[o.ConsumerID]; n == nil || !c.now().Before(n.ExpiresAt) {
			// Not created by this process (the manual flow): read it. A remembered one that was used or
			// replaced meanwhile fails at consumption, whose preconditions name the exact version.
			if n, err = c.nonces().Get(ctx, o.ConsumerID); err != nil {
				return err
			}
		}
		msg := Message(self.ClusterID, o.ConsumerID, n.Value, csrDER)
		if err := VerifySignature(tenant.Spec.PublicKey, msg, tenant.Spec.Signature); err != nil {
			return err
		}
		if csr, err = CheckCSR(tenant.Spec.CSR, ExpectedUser(o.ConsumerID, n.Value)); err != nil {
			return err
		}
		if samePublicKey(csr.PublicKey, self.PublicKey) || samePublicKey(csr.PublicKey, ed25519.PublicKey(tenant.Spec.PublicKey)) {
			return errors.New("spec.csr: the client key must not be the handshake key")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	user := csr.Subject.CommonName

	// From here on, the request is genuine: use the nonce up first, so it can never issue twice.
	if err := step(r, "Consuming the nonce", "Nonce consumed", func() error { return c.nonces().Consume(ctx, n) }); err != nil {
		if !errors.Is(err, nonce.ErrUsed) {
			return nil, err
		}
		// A concurrent run for the same nonce won. It issues for the same user and client key, so
		// wait for its certificate instead of failing.
		var cert []byte
		if err := step(r, "Waiting for the concurrent run that used the nonce", "Concurrent run's certificate received", func() error {
			cert, err = c.waitIssued(ctx, ns, o.ConsumerID, user)
			return err
		}); err != nil {
			return nil, err
		}
		return c.identityFor(self.ClusterID, o, tenant, cert), nil
	}
	if err := step(r, "Recording the Tenant", "Tenant "+ns+"/"+o.ConsumerID+" recorded", func() error {
		if err := c.ensureNamespace(ctx, ns, PairingLabels(o.ConsumerID)); err != nil {
			return err
		}
		if o.Tenant == nil {
			return nil // kubectl apply put it there already
		}
		t := &v1alpha1.Tenant{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.TenantKind},
			ObjectMeta: metav1.ObjectMeta{Name: o.ConsumerID, Namespace: ns, Labels: PairingLabels(o.ConsumerID)},
			Spec:       tenant.Spec,
		}
		return c.applyTyped(ctx, v1alpha1.TenantGVR, ns, t)
	}); err != nil {
		return nil, err
	}
	var certPEM []byte
	if err := step(r, "Issuing the client certificate through the CSR API", "Client certificate issued", func() error {
		certPEM, err = c.signCSR(ctx, o.ConsumerID, user, tenant.Spec.CSR, o.Expiration)
		return err
	}); err != nil {
		return nil, err
	}
	cert, err := parseCertificate("certificate", certPEM)
	if err != nil {
		return nil, err
	}
	// The signer backdates NotBefore by a few minutes; the lifetime is what it may have cut.
	if lifetime := cert.NotAfter.Sub(cert.NotBefore); lifetime < o.Expiration-time.Minute {
		r.Warn(fmt.Sprintf("The signer shortened the certificate to %s (requested %s): it expires at %s",
			lifetime.Round(time.Second), o.Expiration, cert.NotAfter.UTC().Format(time.RFC3339)))
	}
	if err := step(r, "Binding ClusterRole "+o.ClusterRole, "ClusterRole "+o.ClusterRole+" bound in "+ns, func() error {
		return c.bindRole(ctx, ns, user, o.ClusterRole, o.ConsumerID)
	}); err != nil {
		return nil, err
	}
	notAfter := metav1.NewTime(cert.NotAfter)
	if err := step(r, "Recording the issuance in the Tenant status", "Tenant status updated", func() error {
		status := &v1alpha1.Tenant{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.TenantKind},
			ObjectMeta: metav1.ObjectMeta{Name: o.ConsumerID, Namespace: ns},
			Status: v1alpha1.TenantStatus{Phase: "Active", PinnedPublicKey: tenant.Spec.PublicKey, User: user,
				CSRHash: csrHash, Certificate: certPEM, NotAfter: &notAfter, ClusterRole: o.ClusterRole},
		}
		u, err := toUnstructured(status)
		if err != nil {
			return err
		}
		unstructured.RemoveNestedField(u.Object, "spec")
		_, err = tenants.ApplyStatus(ctx, o.ConsumerID, u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		return err
	}); err != nil {
		return nil, err
	}
	return c.identityFor(self.ClusterID, o, tenant, certPEM), nil
}

func (c *Cluster) identityFor(providerID string, o IssueOptions, tenant *v1alpha1.Tenant, certPEM []byte) *v1alpha1.Identity {
	return &v1alpha1.Identity{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.IdentityKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      IdentityName(providerID),
			Namespace: TenantNamespace(providerID),
			Labels:    PairingLabels(providerID),
		},
		Spec: v1alpha1.IdentitySpec{
			ClusterID:         providerID,
			ConsumerClusterID: o.ConsumerID,
			Namespace:         TenantNamespace(o.ConsumerID),
			APIServer:         o.APIServer,
			CA:                o.CA,
			Certificate:       certPEM,
			ProxyURL:          tenant.Spec.ProxyURL,
		},
	}
}

// signCSR submits the CSR to the kube-apiserver-client signer, approves it, watches for the certificate
// and deletes the CSR object once the certificate is read.
func (c *Cluster) signCSR(ctx context.Context, consumerID, user string, csrPEM []byte, expiration time.Duration) ([]byte, error) {
	csrs := c.Kube.CertificatesV1().CertificateSigningRequests()
	name := "federate-" + consumerID + "-" + user[strings.LastIndex(user, ":")+1:]
	seconds := int32(min(expiration/time.Second, 1<<31-1)) //nolint:gosec // bounded just before
	// CSRs of this consumer left by an interrupted run would otherwise wait for the cluster's CSR cleaner.
	if err := csrs.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(PairingLabels(consumerID)).String(),
	}); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("removing stale CertificateSigningRequests: %w", err)
	}
	obj, err := csrs.Create(ctx, &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: PairingLabels(consumerID)},
		Spec: certv1.CertificateSigningRequestSpec{
			Request:           csrPEM,
			SignerName:        certv1.KubeAPIServerClientSignerName,
			ExpirationSeconds: &seconds,
			Usages:            []certv1.KeyUsage{certv1.UsageClientAuth, certv1.UsageDigitalSignature},
		},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		obj, err = csrs.Get(ctx, name, metav1.GetOptions{})
		if err == nil && !bytes.Equal(obj.Spec.Request, csrPEM) {
			return nil, fmt.Errorf("CertificateSigningRequest %s exists with another request", name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("creating CertificateSigningRequest %s: %w", name, err)
	}
	defer func() {
		// Best effort, also when issuance failed: a CSR object is never left behind. Use a fresh context so
		// an expired --timeout still cleans up.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		_ = csrs.Delete(dctx, name, metav1.DeleteOptions{})
	}()
	if !csrApproved(obj) {
		obj.Status.Conditions = append(obj.Status.Conditions, certv1.CertificateSigningRequestCondition{
			Type: certv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "KubectlFederateApproved",
			Message: "Verified by kubectl federate: nonce, signature and exact subject",
		})
		if obj, err = csrs.UpdateApproval(ctx, name, obj, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("approving CertificateSigningRequest %s: %w", name, err)
		}
	}
	if len(obj.Status.Certificate) > 0 {
		return obj.Status.Certificate, nil
	}
	var cert []byte
	err = c.waitFor(ctx, csrs, name, obj.ResourceVersion, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("CertificateSigningRequest %s was deleted before it was signed", name)
		}
		o, ok := ev.Object.(*certv1.CertificateSigningRequest)
		if !ok {
			return false, nil
		}
		for _, cond := range o.Status.Conditions {
			if cond.Type == certv1.CertificateDenied || cond.Type == certv1.CertificateFailed {
				return false, fmt.Errorf("CertificateSigningRequest %s: %s: %s", name, cond.Reason, cond.Message)
			}
		}
		cert = o.Status.Certificate
		return len(cert) > 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the certificate: %w", err)
	}
	return cert, nil
}

func csrApproved(obj *certv1.CertificateSigningRequest) bool {
	for _, c := range obj.Status.Conditions {
		if c.Type == certv1.CertificateApproved {
			return true
		}
	}
	return false
}

// bindRole makes the one RoleBinding of the tenant namespace name exactly the new user, so an earlier
// certificate of the same consumer loses its rights at once.
func (c *Cluster) bindRole(ctx context.Context, ns, user, clusterRole, consumerID string) error {
	rbs := c.Kube.RbacV1().RoleBindings(ns)
	want := roleBinding(ns, user, clusterRole, consumerID)
	existing, err := rbs.Get(ctx, RoleBindingName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = rbs.Create(ctx, want, metav1.CreateOptions{})
		return err
	case err != nil:
		return err
	case existing.RoleRef != want.RoleRef: // roleRef is immutable
		if err := rbs.Delete(ctx, RoleBindingName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &existing.UID}}); err != nil {
			return err
		}
		_, err = rbs.Create(ctx, want, metav1.CreateOptions{})
		return err
	}
	existing.Subjects = want.Subjects
	existing.Labels = want.Labels
	_, err = rbs.Update(ctx, existing, metav1.UpdateOptions{})
	return err
}

// waitIssued watches the Tenant until its status records a certificate for user.
func (c *Cluster) waitIssued(ctx context.Context, ns, name, user string) ([]byte, error) {
	var cert []byte
	err := c.waitFor(ctx, c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(ns), name, "", func(ev watch.Event) (bool, error) {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || ev.Type == watch.Deleted {
			return false, nil
		}
		var t v1alpha1.Tenant
		if err := fromUnstructured(u, &t); err != nil {
			return false, err
		}
		if t.Status.User == user && len(t.Status.Certificate) > 0 {
			cert = t.Status.Certificate
			return true, nil
		}
		return false, nil
	})
	return cert, err
}

func (c *Cluster) rememberNonce(n *nonce.Nonce) {
	if n == nil {
		return
	}
	if c.nonceCache == nil {
		c.nonceCache = map[string]*nonce.Nonce{}
	}
	c.nonceCache[n.ConsumerID] = n
}

// alreadyIssued tells whether the Tenant's current, unexpired certificate answers this request: the same
// CSR, or a CSR of the same user for the same client key from the same (pinned) handshake key, as a
// consumer that re-ran generate tenant with the same nonce sends. The certificate is public and useless
// without the consumer's private key, so returning it again grants nothing new.
func (c *Cluster) alreadyIssued(st v1alpha1.TenantStatus, tenant *v1alpha1.Tenant, csrHash string) bool {
	if len(st.Certificate) == 0 || st.NotAfter == nil || !c.now().Before(st.NotAfter.Time) {
		return false
	}
	if st.CSRHash == csrHash {
		return true
	}
	if !bytes.Equal(st.PinnedPublicKey, tenant.Spec.PublicKey) {
		return false
	}
	cert, err := parseCertificate("status.certificate", st.Certificate)
	if err != nil {
		return false
	}
	csr, err := CheckCSR(tenant.Spec.CSR, st.User)
	return err == nil && cert.Subject.CommonName == st.User && samePublicKey(cert.PublicKey, csr.PublicKey)
}

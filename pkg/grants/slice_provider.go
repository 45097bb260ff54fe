package grants

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// AcceptSliceOptions are the provider's choices when it accepts a slice.
type AcceptSliceOptions struct {
	ConsumerID string
	Name       string
	// Request is the consumer's ResourceSlice from a file; nil reads it from the tenant namespace.
	Request *v1alpha1.ResourceSlice
	// Grant lowers what the class would give (never raises it); nil grants all of it.
	Grant      corev1.ResourceList
	Expiration time.Duration // of the slice's credential; 0 means DefaultExpiration
	// Credential and SignerTimeout: as in IssueOptions.
	Credential    string
	SignerTimeout time.Duration
	// RequireAutoAccept is the unattended run (accept --pending): it grants only a request of a class with
	// auto-accept that the provider did not deny.
	RequireAutoAccept bool
	// KeepCurrent and Kept: as in handshake.IssueOptions (a renewal's overlap), for the user the slice
	// was granted to before, when it keeps its role.
	KeepCurrent bool
	Kept        func(user string)
}

// ActiveTenant reads a consumer's Tenant and requires an active identity with a pinned handshake key.
func ActiveTenant(ctx context.Context, c *member.Cluster, consumerID string) (*v1alpha1.Tenant, error) {
	ns := member.TenantNamespace(consumerID)
	u, err := c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(ns).Get(ctx, consumerID, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("consumer %q %w (no Tenant %s/%s): authenticate it first", consumerID, member.ErrNotActive, ns, consumerID)
	}
	if err != nil {
		return nil, fmt.Errorf("reading Tenant %s/%s: %w", ns, consumerID, err)
	}
	var t v1alpha1.Tenant
	if err := objects.FromUnstructured(u, &t); err != nil {
		return nil, err
	}
	if t.Status.Phase != handshake.PhaseActive || len(t.Status.PinnedPublicKey) == 0 || t.Status.User == "" {
		return nil, fmt.Errorf("consumer %q %w (Tenant phase %q): authenticate it again first", consumerID, member.ErrNotActive, t.Status.Phase)
	}
	return &t, nil
}

// ValidateSliceRequest checks a ResourceSlice's shape for this provider and consumer, before any
// cryptography, and returns its resources parsed.
func ValidateSliceRequest(s *v1alpha1.ResourceSlice, consumerID, providerID, name string) (corev1.ResourceList, error) {
	if err := member.ValidateClusterID("spec.clusterID", s.Spec.ClusterID); err != nil {
		return nil, err
	}
	if s.Spec.ClusterID != consumerID {
		return nil, fmt.Errorf("spec.clusterID %q: %w %q", s.Spec.ClusterID, member.ErrOtherConsumer, consumerID)
	}
	if s.Spec.ProviderClusterID != providerID {
		return nil, fmt.Errorf("spec.providerClusterID %q: this request was made for another provider (this cluster is %q)", member.Truncate(s.Spec.ProviderClusterID), providerID)
	}
	if err := member.ValidateSliceName("spec.slice", s.Spec.Slice); err != nil {
		return nil, err
	}
	if s.Spec.Slice != name {
		return nil, fmt.Errorf("spec.slice %q: must equal the slice's name %q", s.Spec.Slice, name)
	}
	if s.Name != "" && s.Name != name {
		return nil, fmt.Errorf("metadata.name %q: must equal the slice's name %q", member.Truncate(s.Name), name)
	}
	if ns := member.TenantNamespace(consumerID); s.Namespace != "" && s.Namespace != ns {
		return nil, fmt.Errorf("metadata.namespace %q: must be %q", member.Truncate(s.Namespace), ns)
	}
	if s.Spec.Class != "" {
		if err := member.ValidateSliceName("spec.class", s.Spec.Class); err != nil {
			return nil, err
		}
	}
	if len(s.Spec.Signature) == 0 {
		return nil, errors.New("spec.signature: is missing")
	}
	return ParseSliceResources("spec.resources.", s.Spec.Resources)
}

// AcceptSlice (provider) grants a consumer's ResourceSlice. Nothing is created unless every check
// passes: the consumer has an active pairing, the request verifies with the consumer's pinned handshake
// key for this provider, this consumer, this slice, its class, its resources and its exact CSR, and the
// CSR asks for exactly the user its key entitles. Then the class decides the grant (clamped to its
// maximum or denied, and lowered by Grant), a CSR is created, the slice's sandbox namespace is built with
// the grant as its quota, exactly that CSR is approved and its certificate checked, the class's role is
// bound to the slice's user there, and the grant is recorded in the slice's status, which the consumer
// reads. Re-running it for a request already granted returns the grant.
func AcceptSlice(ctx context.Context, c *member.Cluster, o AcceptSliceOptions) (*v1alpha1.ResourceSlice, error) {
	a, err := startAccept(ctx, c, o)
	if err != nil {
		return nil, err
	}
	if err := a.verify(ctx); err != nil {
		return nil, err
	}
	if err := a.checkDecisions(ctx); err != nil {
		return nil, err
	}
	a.keepCredential(ctx)
	if err := a.decide(ctx); err != nil {
		return nil, err
	}
	if err := a.reserve(ctx); err != nil {
		return nil, err
	}
	defer a.cancelUnlessGranted(ctx)
	defer func() {
		if a.req != nil {
			credential.DeleteCSR(ctx, c, a.req)
		}
	}()
	if err := a.certify(ctx); err != nil {
		return nil, err
	}
	if err := a.buildSandbox(ctx); err != nil {
		return nil, err
	}
	if err := a.issueToken(ctx); err != nil {
		return nil, err
	}
	if err := a.bind(ctx); err != nil {
		return nil, err
	}
	rs, err := a.record(ctx)
	if also := a.overlapUser(); err == nil && len(also) > 0 && o.Kept != nil {
		o.Kept(also[0])
	}
	return rs, err
}

// overlapUser is the user the slice was granted to before, which a renewal's overlap keeps bound beside
// the new one (KeepCurrent), or none.
func (a *acceptance) overlapUser() []string {
	if !a.o.KeepCurrent || a.stored == nil || a.stored.Status.User == "" || a.stored.Status.User == a.user || a.stored.Status.ClusterRole != a.cls.clusterRole {
		return nil
	}
	return []string{a.stored.Status.User}
}

// acceptance is one run of AcceptSlice: what was asked, what was read and decided, and what the run made
// so far. Each method is one step, in the order AcceptSlice calls them.
type acceptance struct {
	c          *member.Cluster
	r          member.Reporter
	o          AcceptSliceOptions
	self       *member.Self
	tns        string // the tenant namespace, where the request is stored
	ns         string // the slice's own namespace
	tenant     *v1alpha1.Tenant
	state      handshake.GrantState    // what the grant compares once it has bound
	stored     *v1alpha1.ResourceSlice // as submitted; nil for a request from a file not stored yet
	slice      *v1alpha1.ResourceSlice // the request decided on
	asked      corev1.ResourceList
	csr        *x509.CertificateRequest
	user       string // the slice's user: its key's, or a token's ServiceAccount's
	keyUser    string // the user the request's key entitles, recorded on the namespace
	deniedName bool

	cls   *sliceClass
	note  string
	sb    sandbox.Options
	mode  string
	owner sandbox.NsOwner
	held  *sandbox.Reservation
	// shrunk waits for the tenant namespace to give the slice's share up.
	shrunk    func() error
	grantedOK bool

	kept     bool // the same request, granted and still valid, keeps its credential
	req      *certv1.CertificateSigningRequest
	certPEM  []byte
	token    string
	notAfter time.Time
	credKind string
}

// startAccept checks the options, the pairing and the request's shape, and decodes its CSR.
func startAccept(ctx context.Context, c *member.Cluster, o AcceptSliceOptions) (*acceptance, error) {
	self, err := sandbox.LoadCurrent(ctx, c)
	if err != nil {
		return nil, err
	}
	if err := member.ValidateClusterID("consumer cluster ID", o.ConsumerID); err != nil {
		return nil, err
	}
	if err := member.ValidateSliceName("slice name", o.Name); err != nil {
		return nil, err
	}
	if o.Expiration == 0 {
		o.Expiration = handshake.DefaultExpiration
	}
	a := &acceptance{c: c, r: c.Reporter(), o: o, self: self, tns: member.TenantNamespace(o.ConsumerID), ns: member.SliceNamespace(o.ConsumerID, o.Name)}
	if a.tenant, a.state, err = activeTenantState(ctx, c, o.ConsumerID); err != nil {
		return nil, err
	}
	a.stored, err = getSlice(ctx, c, o.ConsumerID, o.Name)
	switch {
	case apierrors.IsNotFound(err) && o.Request != nil:
		a.stored = nil // the request comes from a file
	case apierrors.IsNotFound(err):
		return nil, &member.SliceNotRequestedError{ConsumerID: o.ConsumerID, Slice: o.Name, Namespace: a.tns}
	case err != nil:
		return nil, err
	}
	a.slice = o.Request
	if a.slice == nil {
		a.slice = a.stored
	}
	if a.asked, err = ValidateSliceRequest(a.slice, o.ConsumerID, self.ClusterID, o.Name); err != nil {
		return nil, err
	}
	if a.csr, err = credential.ParseCSR(a.slice.Spec.CSR); err != nil {
		return nil, err
	}
	return a, nil
}

// verify proves the request the consumer's: signed with its pinned handshake key for this provider,
// slice, class, resources and CSR, a CSR for the user its key entitles, and a key that is not a handshake
// key.
func (a *acceptance) verify(context.Context) error {
	o, slice, csr := a.o, a.slice, a.csr
	if err := member.Step(a.r, "Verifying resource slice "+o.Name, "ResourceSlice "+o.Name+" verified (pinned key, signature, CSR)", func() error {
		msg := credential.SliceMessage(a.self.ClusterID, o.ConsumerID, o.Name, slice.Spec.Class, slice.Spec.Resources, csr.Raw)
		if err := credential.VerifySignature(a.tenant.Status.PinnedPublicKey, msg, slice.Spec.Signature); err != nil {
			return fmt.Errorf("spec.signature: does not verify with consumer %q's pinned handshake key for this provider, slice, class, resources and CSR (the request was altered, or is not the consumer's)", o.ConsumerID)
		}
		if err := credential.CheckCSRSubject(csr, credential.SliceUser(o.ConsumerID, o.Name, csr.RawSubjectPublicKeyInfo)); err != nil {
			return err
		}
		if credential.SamePublicKey(csr.PublicKey, a.self.PublicKey) || credential.SamePublicKey(csr.PublicKey, ed25519.PublicKey(a.tenant.Status.PinnedPublicKey)) {
			return errors.New("spec.csr: the client key must not be a handshake key")
		}
		return nil
	}); err != nil {
		return err
	}
	a.user, a.keyUser = csr.Subject.CommonName, csr.Subject.CommonName
	return nil
}

// checkDecisions holds the provider's decisions whatever the tenant does to its requests: a key whose
// slice was deleted is never granted again (the consumer asks anew, with a new key), and the unattended
// pending run grants neither a request the provider denied nor one of a class without auto-accept.
func (a *acceptance) checkDecisions(ctx context.Context) error {
	c, o := a.c, a.o
	decisions, err := sliceDecisions(ctx, c, o.ConsumerID)
	if err != nil {
		return err
	}
	if when, revoked := decisions[revokedKey(a.user)]; revoked {
		return fmt.Errorf("resource slice %q: this request's key was revoked (its slice was deleted %s); the consumer must ask again, which makes a new key", o.Name, when)
	}
	// The revocation record outlives the pairing: a key revoked before unauthenticate stays revoked after
	// a new pairing.
	if err := handshake.CheckNotRevoked(ctx, c, o.ConsumerID, a.user); err != nil {
		return fmt.Errorf("resource slice %q: this request's key was revoked: %w", o.Name, err)
	}
	_, deniedRequest := decisions[deniedKey(requestHash(a.slice))]
	_, a.deniedName = decisions[deniedNameKey(o.Name)]
	if (deniedRequest || a.deniedName) && o.RequireAutoAccept {
		return fmt.Errorf("resource slice %q %w earlier by the provider: only an explicit accept grants it", o.Name, member.ErrDenied)
	}
	if a.cls, err = getSliceClass(ctx, c, a.slice.Spec.Class); err != nil {
		return err
	}
	if o.RequireAutoAccept && !a.cls.autoAccept {
		return fmt.Errorf("resource slice %q: class %q does not accept slices without a decision (no auto-accept)", o.Name, a.cls.name)
	}
	return nil
}

// keepCredential keeps the credential of the same request, already granted and still valid; everything
// else (the class's sandbox, the grant, the binding) converges to this run's decision.
func (a *acceptance) keepCredential(ctx context.Context) {
	stored := a.stored
	if stored == nil || stored.Status.Answers != requestHash(a.slice) || stored.Status.NotAfter == nil || !a.c.CurrentTime().Before(stored.Status.NotAfter.Time) {
		return
	}
	switch {
	case stored.Status.Credential == v1alpha1.CredentialToken:
		_, saName, serr := credential.SplitServiceAccountUser(stored.Status.User)
		if serr == nil && credential.IsCredentialUser(stored.Status.User, a.ns) {
			if _, gerr := a.c.Kube.CoreV1().ServiceAccounts(a.ns).Get(ctx, saName, metav1.GetOptions{}); gerr == nil {
				a.kept, a.user, a.notAfter = true, stored.Status.User, stored.Status.NotAfter.Time
			}
		}
	case stored.Status.User == a.user:
		if cert, err := credential.ParseCertificate("status.certificate", stored.Status.Certificate); err == nil && credential.SamePublicKey(cert.PublicKey, a.csr.PublicKey) {
			a.kept, a.certPEM, a.notAfter = true, stored.Status.Certificate, cert.NotAfter
		}
	}
}

// decide lets the class decide the grant (clamped to its maximum or denied, and lowered by Grant); a
// denial is recorded in the request's status, unless the slice is granted already.
func (a *acceptance) decide(ctx context.Context) error {
	o := a.o
	granted, note, err := a.cls.grant(a.asked, o.Grant)
	if errors.Is(err, member.ErrDenied) {
		if a.kept {
			return fmt.Errorf("resource slice %q: %w; it is already granted: delete it to take it away", o.Name, err)
		}
		if serr := applySliceStatus(ctx, a.c, a.tns, o.Name, v1alpha1.ResourceSliceStatus{Phase: SliceDenied, Reason: err.Error(), Answers: requestHash(a.slice), Class: a.cls.name}); serr != nil {
			return errors.Join(err, serr)
		}
		return fmt.Errorf("resource slice %q: %w", o.Name, err)
	}
	if err != nil {
		return err
	}
	a.note = note
	if note != "" {
		a.r.Warn("Resource slice " + o.Name + ": " + note)
	}
	if a.sb, err = sliceSandbox(granted, a.cls); err != nil {
		return err
	}
	a.sb.Cordoned = a.tenant.Status.Cordoned // a slice accepted while cordoned starts cordoned
	a.mode = o.Credential
	if a.mode == "" {
		a.mode = credential.CredentialCertificate
	}
	a.owner = sandbox.NsOwner{ConsumerID: o.ConsumerID, Kind: member.KindSlice, Slice: o.Name}
	return nil
}

// reserve holds the slice's share of the consumer's total (and its place among the consumer's slices) in
// the ledger before anything of it exists; the tenant namespace gives that share up while the certificate
// is issued, and before the slice's namespace gets its quota.
func (a *acceptance) reserve(ctx context.Context) error {
	c, o := a.c, a.o
	total, err := sandbox.RecordedTotal(a.tenant)
	if err != nil {
		return err
	}
	held, err := sandbox.ReserveGrant(ctx, c, o.ConsumerID, sandbox.SliceGrantKey(o.Name), fmt.Sprintf("resource slice %q", o.Name), a.sb.Quota, total)
	if err != nil {
		return err
	}
	a.held, a.sb.Quota = held, held.Want
	a.shrunk = parallel.Background(func() error { return sandbox.ShrinkTenant(ctx, c, held) })
	return nil
}

// cancelUnlessGranted gives the reservation back when the run did not grant the slice.
func (a *acceptance) cancelUnlessGranted(ctx context.Context) {
	if !a.grantedOK {
		_ = a.shrunk()
		sandbox.CancelGrant(ctx, a.c, a.held, a.ns, a.owner)
	}
}

// certify issues the certificate first, so that a signer that issues nothing leaves nothing behind; it
// is authorized for nothing until the binding, which comes after the sandbox. In auto mode, no
// certificate means a token.
func (a *acceptance) certify(ctx context.Context) error {
	c, o := a.c, a.o
	if a.kept {
		a.r.Info("Resource slice " + o.Name + " was already granted for this request: its credential is kept, the rest converges")
		return nil
	}
	if a.mode == credential.CredentialToken {
		return nil
	}
	csrLabels := member.TenantLabels(o.ConsumerID)
	csrLabels[member.LabelSlice] = o.Name
	var req *certv1.CertificateSigningRequest
	if err := parallel.All(func() error {
		var err error
		req, err = credential.CreateCSR(ctx, c, o.ConsumerID, csrLabels, a.slice.Spec.CSR, o.Expiration)
		return err
	}, func() error { return sandbox.CheckOwnNamespace(ctx, c, a.ns, a.owner) }); err != nil {
		if req != nil {
			credential.DeleteCSR(ctx, c, req)
		}
		return err
	}
	a.req = req
	issued, err := credential.Issue(ctx, c, credential.Issuance{CSR: req, Request: a.csr, Mode: a.mode,
		Expiration: o.Expiration, SignerTimeout: o.SignerTimeout, Noun: "certificate for the slice",
		Begin: "Issuing the slice's certificate through the CSR API", Done: "Slice certificate issued"})
	a.certPEM, a.notAfter = issued.Certificate, issued.NotAfter
	switch {
	case err == nil:
		return nil
	case errors.Is(err, credential.ErrNoCertificate) && a.mode == credential.CredentialAuto:
		// Issue deleted the CSR already, so that a late signer has nothing left to sign.
		a.mode, a.certPEM = credential.CredentialToken, nil
		return nil
	default:
		return err
	}
}

// buildSandbox stores a request that came as a file, then builds the slice's sandbox with the grant as
// its quota once the tenant namespace gave it up, and settles the ledger.
func (a *acceptance) buildSandbox(ctx context.Context) error {
	c, o, ns := a.c, a.o, a.ns
	if o.Request != nil {
		// A request from a file, now verified and decided on, is stored where a submitted one would be, so
		// its status can carry the grant; one of the same name is replaced (the consumer's newer request).
		rs := c.Dynamic.Resource(v1alpha1.ResourceSliceGVR).Namespace(a.tns)
		if err := storeSliceRequest(ctx, c, rs, o.Request, a.stored); err != nil {
			return err
		}
	}
	if err := a.shrunk(); err != nil {
		return err
	}
	if err := member.Step(a.r, "Building the slice's sandbox "+ns, "Sandbox "+ns+" ready (quota "+sandbox.FormatResourceList(sliceGrant(a.sb.Quota))+", Pod Security "+a.cls.podSecurity+")", func() error {
		return sandbox.EnsureSandbox(ctx, c, ns, a.owner, a.sb)
	}); err != nil {
		return err
	}
	return sandbox.SettleGrant(ctx, c, a.held)
}

// issueToken issues the slice's ServiceAccount token, now that its namespace holds, when a token was
// asked for or no certificate came; a kept token stays.
func (a *acceptance) issueToken(ctx context.Context) error {
	a.credKind = v1alpha1.CredentialCertificate
	if (a.kept && a.stored.Status.Credential == v1alpha1.CredentialToken) || (!a.kept && a.mode == credential.CredentialToken) {
		a.credKind = v1alpha1.CredentialToken
	}
	if a.kept || a.credKind != v1alpha1.CredentialToken {
		return nil
	}
	labels := member.TenantLabels(a.o.ConsumerID)
	labels[member.LabelSlice] = a.o.Name
	tok, err := credential.Issue(ctx, a.c, credential.Issuance{Mode: a.mode, Expiration: a.o.Expiration, Namespace: a.ns, Labels: labels,
		Begin: "Issuing the slice's ServiceAccount token", Done: "Token of a new " + credential.CredentialServiceAccount + "-* ServiceAccount in " + a.ns + " issued"})
	if err != nil {
		return err
	}
	a.token, a.user, a.notAfter = tok.Token, tok.User, tok.NotAfter
	return nil
}

// bind binds the class's role to the slice's user in its namespace and records there the user of the
// request's key, which the slice's deletion marks revoked: on the namespace, which no namespaced role lets
// a tenant change. Credential ServiceAccounts but the slice's own go.
func (a *acceptance) bind(ctx context.Context) error {
	c, o, ns, cls := a.c, a.o, a.ns, a.cls
	return member.Step(a.r, "Binding ClusterRole "+cls.clusterRole, "ClusterRole "+cls.clusterRole+" bound in "+ns+" to the slice's user", func() error {
		keyPatch := []byte(`{"metadata":{"annotations":{"` + AnnotationKeyUser + `":"` + a.keyUser + `"}}}`)
		if err := parallel.All(
			func() error {
				return sandbox.BindRole(ctx, c, ns, a.user, cls.clusterRole, o.ConsumerID, a.overlapUser()...)
			},
			func() error {
				_, err := c.Kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, keyPatch, metav1.PatchOptions{FieldManager: member.FieldManager})
				return err
			},
		); err != nil {
			return err
		}
		keep := ""
		if a.credKind == v1alpha1.CredentialToken {
			keep = a.user
		}
		if err := credential.DeleteCredentialAccounts(ctx, c, ns, keep, a.overlapUser()...); err != nil {
			return err
		}
		bound := []handshake.BoundUser{handshake.BoundIn(a.user, ns)}
		if a.keyUser != a.user {
			bound = append(bound, handshake.BoundIn(a.keyUser, ns))
		}
		return afterBind(ctx, c, o.ConsumerID, fmt.Sprintf("resource slice %q", o.Name), a.state, a.sb.Cordoned, ns, bound)
	})
}

// record stores a new token where the consumer collects it, records the grant in the slice's status
// (which the consumer reads) and in an audit Event, and forgets an earlier denial of the name that this
// explicit accept overrides.
func (a *acceptance) record(ctx context.Context) (*v1alpha1.ResourceSlice, error) {
	c, o, ns, cls := a.c, a.o, a.ns, a.cls
	if a.token != "" && o.Request == nil {
		// The consumer collects the token through the pairing (import resourceslice), which deletes it. A
		// request that came as a file is answered as a file (the printed answer carries the token).
		if err := storeSliceToken(ctx, c, o.ConsumerID, o.Name, a.token); err != nil {
			return nil, err
		}
	}
	na := metav1.NewTime(a.notAfter)
	st := v1alpha1.ResourceSliceStatus{Phase: SliceAccepted, Reason: a.note, Answers: requestHash(a.slice), Class: cls.name, Granted: sliceGrant(a.sb.Quota), Namespace: ns,
		User: a.user, Certificate: a.certPEM, Credential: a.credKind, NotAfter: &na, ClusterRole: cls.clusterRole, PodSecurity: cls.podSecurity,
		Lifetime: handshake.DurationPtr(o.Expiration)}
	if err := applySliceStatus(ctx, c, a.tns, o.Name, st); err != nil {
		return nil, fmt.Errorf("recording the grant in ResourceSlice %s/%s: %w", a.tns, o.Name, err)
	}
	handshake.Audit(ctx, c, handshake.TenantObject(o.ConsumerID), handshake.EventGranted, "resource slice "+o.Name+" granted ("+sandbox.FormatResourceList(st.Granted)+", "+a.credKind+") in "+ns,
		&handshake.Credential{User: a.user, NotAfter: a.notAfter})
	if a.deniedName && !o.RequireAutoAccept {
		if err := forgetSliceDecision(ctx, c, o.ConsumerID, deniedNameKey(o.Name)); err != nil {
			return nil, err
		}
	}
	a.grantedOK = true
	st.Token = a.token
	slice := a.slice
	slice.Status = st
	slice.Namespace, slice.Name = a.tns, o.Name
	return slice, nil
}

// AnnotationKeyUser (on a slice's namespace) is the user its request's key entitles, which the slice's
// deletion records as revoked, whatever the credential.
const AnnotationKeyUser = "federate.dev/key-user"

// storeSliceToken leaves a slice's token for the consumer in its tenant namespace.
func storeSliceToken(ctx context.Context, c *member.Cluster, consumerID, slice, token string) error {
	labels := member.TenantLabels(consumerID)
	labels[member.LabelSlice] = slice
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: member.SliceTokenSecretName(slice), Namespace: member.TenantNamespace(consumerID), Labels: labels},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{"token": token},
	}
	secrets := c.Kube.CoreV1().Secrets(sec.Namespace)
	_, err := secrets.Create(ctx, sec, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("leaving the slice's token in Secret %s/%s: %w", sec.Namespace, sec.Name, err)
	}
	return nil
}

// storeSliceRequest creates or replaces the consumer's request in its tenant namespace.
func storeSliceRequest(ctx context.Context, c *member.Cluster, rs interface {
	Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
	Update(context.Context, *unstructured.Unstructured, metav1.UpdateOptions, ...string) (*unstructured.Unstructured, error)
}, req, stored *v1alpha1.ResourceSlice) error {
	obj := &v1alpha1.ResourceSlice{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.ResourceSliceKind},
		ObjectMeta: metav1.ObjectMeta{Name: req.Spec.Slice, Namespace: member.TenantNamespace(req.Spec.ClusterID)}, Spec: req.Spec}
	u, err := objects.ToUnstructured(obj)
	if err != nil {
		return err
	}
	unstructured.RemoveNestedField(u.Object, "status")
	if stored == nil {
		_, err = handshake.CreateCounted(ctx, c, c, v1alpha1.ResourceSliceGVR, u)
	} else if !bytes.Equal(stored.Spec.Signature, req.Spec.Signature) {
		u.SetResourceVersion(stored.ResourceVersion)
		_, err = rs.Update(ctx, u, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("storing ResourceSlice %s/%s: %w", obj.Namespace, obj.Name, err)
	}
	return nil
}

// getSlice reads a consumer's ResourceSlice from its tenant namespace.
func getSlice(ctx context.Context, c *member.Cluster, consumerID, name string) (*v1alpha1.ResourceSlice, error) {
	u, err := c.Dynamic.Resource(v1alpha1.ResourceSliceGVR).Namespace(member.TenantNamespace(consumerID)).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	s := &v1alpha1.ResourceSlice{}
	return s, objects.FromUnstructured(u, s)
}

// DenySlice (provider) answers a pending slice with a refusal the consumer's import shows. A slice already
// accepted is not denied: delete it to take its identity away.
func DenySlice(ctx context.Context, c *member.Cluster, consumerID, name, reason string) error {
	s, err := getSlice(ctx, c, consumerID, name)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("consumer %q has left no ResourceSlice %q in %s", consumerID, name, member.TenantNamespace(consumerID))
	}
	if err != nil {
		return err
	}
	granted, err := HasSliceNamespace(ctx, c, consumerID, name)
	if err != nil {
		return err
	}
	if granted || slicePhase(s) == SliceAccepted {
		return fmt.Errorf("resource slice %q of consumer %q is already granted: delete it to take its identity and namespace away", name, consumerID)
	}
	return member.Step(c.Reporter(), "Denying resource slice "+name, "ResourceSlice "+name+" of "+consumerID+" denied", func() error {
		if err := recordSliceDecision(ctx, c, consumerID, deniedKey(requestHash(s)), reason); err != nil {
			return err
		}
		// The consumer may withdraw and ask again with a new key: the unattended run refuses the name too.
		if err := recordSliceDecision(ctx, c, consumerID, deniedNameKey(name), reason); err != nil {
			return err
		}
		return applySliceStatus(ctx, c, member.TenantNamespace(consumerID), name, v1alpha1.ResourceSliceStatus{Phase: SliceDenied, Reason: reason, Answers: requestHash(s), Class: s.Spec.Class})
	})
}

// SliceInfo summarizes a slice for listings.
type SliceInfo struct {
	ConsumerID string            `json:"consumerID,omitempty"`
	ProviderID string            `json:"providerID,omitempty"`
	Name       string            `json:"name"`
	Class      string            `json:"class,omitempty"`
	Phase      string            `json:"phase"`
	Reason     string            `json:"reason,omitempty"`
	Requested  map[string]string `json:"requested"`
	Granted    map[string]string `json:"granted,omitempty"`
	Namespace  string            `json:"namespace,omitempty"`
	User       string            `json:"user,omitempty"`
	NotAfter   *time.Time        `json:"notAfter,omitempty"`
	// Lifetime is what the slice's credential was asked with; its renewal asks for it again.
	Lifetime   time.Duration `json:"lifetime,omitempty"`
	AutoAccept bool          `json:"autoAccept,omitempty"`
}

// requestHash names a slice request by its signature, which covers every field the provider acts on.
func requestHash(s *v1alpha1.ResourceSlice) string {
	sum := sha256.Sum256(s.Spec.Signature)
	return hex.EncodeToString(sum[:])
}

// slicePhase is a slice's phase for the request it holds now: an answer to an earlier request (the
// consumer asked again since) leaves the current one pending.
func slicePhase(s *v1alpha1.ResourceSlice) string {
	if s.Status.Phase == "" || (s.Status.Answers != "" && s.Status.Answers != requestHash(s)) {
		return SlicePending
	}
	return s.Status.Phase
}

func sliceInfo(s *v1alpha1.ResourceSlice) SliceInfo {
	phase := slicePhase(s)
	class := s.Spec.Class
	if phase != SlicePending && s.Status.Class != "" {
		class = s.Status.Class // what the grant was made under, not what the request says now
	}
	return SliceInfo{ConsumerID: s.Spec.ClusterID, ProviderID: s.Spec.ProviderClusterID, Name: s.Spec.Slice, Class: class, Phase: phase,
		Reason: s.Status.Reason, Requested: s.Spec.Resources, Granted: s.Status.Granted, Namespace: s.Status.Namespace, User: s.Status.User,
		NotAfter: handshake.TimeOf(s.Status.NotAfter), Lifetime: durationOf(s.Status.Lifetime)}
}

func durationOf(d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}

// ProviderSlices (provider) lists the slices consumers left in their tenant namespaces (consumerID ""
// means every consumer), with whether their class accepts them without a decision per slice.
func ProviderSlices(ctx context.Context, c *member.Cluster, consumerID string) ([]SliceInfo, error) {
	rs := c.Dynamic.Resource(v1alpha1.ResourceSliceGVR)
	var l *unstructured.UnstructuredList
	var err error
	if consumerID != "" {
		l, err = rs.Namespace(member.TenantNamespace(consumerID)).List(ctx, metav1.ListOptions{})
	} else {
		l, err = rs.List(ctx, metav1.ListOptions{})
	}
	if err != nil {
		return nil, objects.IgnoreNotFound(err)
	}
	classes := map[string]*sliceClass{}
	out := []SliceInfo{}
	for i := range l.Items {
		var s v1alpha1.ResourceSlice
		if err := objects.FromUnstructured(&l.Items[i], &s); err != nil || s.Namespace != member.TenantNamespace(s.Spec.ClusterID) || s.Name != s.Spec.Slice {
			continue // only a consumer's own tenant namespace holds its requests, each under its slice's name
		}
		info := sliceInfo(&s)
		cls, ok := classes[s.Spec.Class]
		if !ok {
			cls, _ = getSliceClass(ctx, c, s.Spec.Class)
			classes[s.Spec.Class] = cls
		}
		info.AutoAccept = cls != nil && cls.autoAccept
		out = append(out, info)
	}
	// A granted slice whose request the consumer withdrew is still granted: its namespace says so.
	sel := map[string]string{member.LabelManagedBy: member.ManagedBy, member.LabelRole: member.RoleProvider, member.LabelNamespaceKind: member.KindSlice}
	if consumerID != "" {
		sel[member.LabelRemoteClusterID] = consumerID
	}
	nss, err := c.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
	if err != nil {
		return nil, err
	}
	listed := map[string]bool{}
	for _, s := range out {
		listed[member.SliceNamespace(s.ConsumerID, s.Name)] = true
	}
	for _, ns := range nss.Items {
		if !listed[ns.Name] {
			out = append(out, SliceInfo{ConsumerID: ns.Labels[member.LabelRemoteClusterID], Name: ns.Labels[member.LabelSlice], Phase: SliceAccepted,
				Reason: "granted; the consumer withdrew its request", Namespace: ns.Name})
		}
	}
	slices.SortFunc(out, func(a, b SliceInfo) int {
		return cmpStrings(a.ConsumerID+"/"+a.Name, b.ConsumerID+"/"+b.Name)
	})
	return out, nil
}

func cmpStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ConsumerSlices (consumer) lists this cluster's slices of a provider ("" for every provider) from its
// records in federate-system.
func ConsumerSlices(ctx context.Context, c *member.Cluster, providerID string) ([]SliceInfo, error) {
	sel := map[string]string{member.LabelManagedBy: member.ManagedBy, member.LabelRole: member.RoleConsumer}
	if providerID != "" {
		sel[member.LabelRemoteClusterID] = providerID
	}
	l, err := c.Dynamic.Resource(v1alpha1.ResourceSliceGVR).Namespace(member.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
	if err != nil {
		return nil, objects.IgnoreNotFound(err)
	}
	out := []SliceInfo{}
	for i := range l.Items {
		var s v1alpha1.ResourceSlice
		if err := objects.FromUnstructured(&l.Items[i], &s); err == nil {
			out = append(out, sliceInfo(&s))
		}
	}
	return out, nil
}

// DeleteSliceProvider (provider) takes a slice away: its RoleBinding first (its certificate is then
// authorized for nothing), then what runs in its namespace, the namespace itself (waiting until it is
// gone), the consumer's request and the slice's CSRs. Only a namespace created for exactly this slice is
// touched. It succeeds when there is nothing left to remove, and its done line names what it removed.
func DeleteSliceProvider(ctx context.Context, c *member.Cluster, consumerID, name string) error {
	ns := member.SliceNamespace(consumerID, name)
	owner := sandbox.NsOwner{ConsumerID: consumerID, Kind: member.KindSlice, Slice: name}
	return member.StepSaying(c.Reporter(), "Revoking and removing resource slice "+name+" of "+consumerID, func() (string, error) {
		// The user bound there is never granted again, whatever the tenant re-submits.
		// The key's user is on the namespace (a token's slice binds another user); before it was
		// recorded there, the RoleBinding's certificate user was that user.
		keyUser, granted, hadNamespace := "", false, false
		if live, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil && owner.Owns(live.Labels) {
			keyUser, granted, hadNamespace = live.Annotations[AnnotationKeyUser], live.DeletionTimestamp == nil, true
		} else if err != nil && !apierrors.IsNotFound(err) {
			return "", err
		}
		if keyUser == "" {
			if rb, err := c.Kube.RbacV1().RoleBindings(ns).Get(ctx, member.RoleBindingName, metav1.GetOptions{}); err == nil && len(rb.Subjects) == 1 && rb.Subjects[0].Kind == rbacv1.UserKind {
				keyUser = rb.Subjects[0].Name
			} else if err != nil && !apierrors.IsNotFound(err) {
				return "", err
			}
		}
		if keyUser != "" {
			if err := handshake.RecordRevoked(ctx, c, consumerID, []handshake.RevokedUser{{User: keyUser}}); err != nil {
				return "", err
			}
		}
		unbound, err := revokeNamespace(ctx, c, ns, owner)
		if err != nil {
			return "", err
		}
		// Recorded once the binding is gone, from when the slice's identity can act no more; a re-run that
		// finds nothing granted records nothing.
		if granted {
			var cred *handshake.Credential
			if keyUser != "" {
				cred = &handshake.Credential{User: keyUser}
			}
			handshake.Audit(ctx, c, handshake.TenantObject(consumerID), handshake.EventRevoked, "resource slice "+name+" of consumer "+consumerID+" revoked and removed with namespace "+ns, cred)
		}
		sel := labels.SelectorFromSet(map[string]string{member.LabelManagedBy: member.ManagedBy, member.LabelRemoteClusterID: consumerID, member.LabelSlice: name}).String()
		// The request and the CSRs go whatever the namespace's deletion does. The slice's share of the
		// consumer's total goes back to the tenant namespace only once the namespace (and its quota) is gone.
		withdrawn := false
		if err := parallel.All(
			func() error {
				if err := DeleteNamespace(ctx, c, ns, consumerID); err != nil {
					return err
				}
				return sandbox.ReleaseGrant(ctx, c, consumerID, sandbox.SliceGrantKey(name))
			},
			func() error {
				err := c.Dynamic.Resource(v1alpha1.ResourceSliceGVR).Namespace(member.TenantNamespace(consumerID)).Delete(ctx, name, metav1.DeleteOptions{})
				withdrawn = err == nil
				return objects.IgnoreNotFound(err)
			},
			func() error {
				return objects.IgnoreNotFound(c.Kube.CertificatesV1().CertificateSigningRequests().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel}))
			},
			func() error { // a token the consumer never collected
				return objects.IgnoreNotFound(c.Kube.CoreV1().Secrets(member.TenantNamespace(consumerID)).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel}))
			},
		); err != nil {
			return "", err
		}
		return sliceRemovedLine(name, consumerID, ns, unbound, hadNamespace, withdrawn), handshake.RecordRemoved(ctx, c, handshake.RemovedSlice, consumerID, name)
	})
}

// sliceRemovedLine says what a provider's removal of a slice found and removed: a slice that was only
// requested had no binding, workloads or namespace to remove, and its line does not claim them.
func sliceRemovedLine(name, consumerID, ns string, unbound, hadNamespace, withdrawn bool) string {
	var parts []string
	if unbound {
		parts = append(parts, "its binding")
	}
	if hadNamespace {
		parts = append(parts, "namespace "+ns+" with all it held")
	}
	if withdrawn {
		parts = append(parts, "the consumer's request")
	}
	head := "Resource slice " + name + " of " + consumerID
	switch {
	case len(parts) == 0:
		return head + ": nothing was left to remove"
	case unbound:
		return head + " revoked and removed: " + strings.Join(parts, ", ")
	default:
		return head + " removed: " + strings.Join(parts, ", ")
	}
}

// SliceGone (either side) answers a deletion of a slice this cluster holds nothing of, with remoteID:
// Already if it was deleted here before, else a *NotFoundError naming the slices it holds with remoteID.
func SliceGone(ctx context.Context, c *member.Cluster, remoteID, name string) (handshake.Outcome, error) {
	removed, _, err := handshake.Removed(ctx, c, handshake.RemovedSlice, remoteID, name)
	if err != nil || removed {
		return handshake.Already, err
	}
	var known []string
	provided, err := ProviderSlices(ctx, c, remoteID)
	if err != nil {
		return handshake.Done, err
	}
	for _, s := range provided {
		known = append(known, s.Name)
	}
	held, err := c.Dynamic.Resource(v1alpha1.ResourceSliceGVR).Namespace(member.SystemNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(member.IdentityLabels(remoteID)).String()})
	if err != nil && !apierrors.IsNotFound(err) {
		return handshake.Done, err
	}
	if held != nil {
		for _, it := range held.Items {
			known = append(known, it.GetLabels()[member.LabelSlice])
		}
	}
	return handshake.Done, handshake.NotFound("resource slice", name, "shared with "+remoteID+" on this cluster", known)
}

// HasSliceNamespace (provider) tells whether a namespace exists for the consumer's slice.
func HasSliceNamespace(ctx context.Context, c *member.Cluster, consumerID, name string) (bool, error) {
	ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, member.SliceNamespace(consumerID, name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return sandbox.NsOwner{ConsumerID: consumerID, Kind: member.KindSlice, Slice: name}.Owns(ns.Labels), nil
}

// A provider's decisions on a consumer's slices live where only the provider writes: a ConfigMap of
// federate-system, one per consumer, removed with the pairing.

// SliceDecisionsName is the ConfigMap of a consumer's slice decisions.
func SliceDecisionsName(consumerID string) string { return "slice-decisions-" + consumerID }

// revokedKey and deniedKey name a decision: a slice user whose slice was deleted, a request denied.
func revokedKey(user string) string {
	sum := sha256.Sum256([]byte(user))
	return "revoked." + hex.EncodeToString(sum[:16])
}

func deniedKey(reqHash string) string { return "denied." + reqHash[:32] }

// deniedNameKey names a slice name the provider denied; an explicit accept of that name lifts it.
func deniedNameKey(slice string) string { return "denied-name." + slice }

// sliceDecisions reads the provider's decisions on a consumer's slices.
func sliceDecisions(ctx context.Context, c *member.Cluster, consumerID string) (map[string]string, error) {
	cm, err := c.Kube.CoreV1().ConfigMaps(member.SystemNamespace).Get(ctx, SliceDecisionsName(consumerID), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the provider's decisions on consumer %q's slices: %w", consumerID, err)
	}
	return cm.Data, nil
}

// recordSliceDecision adds a decision, under the ConfigMap's resourceVersion so none is lost.
func recordSliceDecision(ctx context.Context, c *member.Cluster, consumerID, key, value string) error {
	cms := c.Kube.CoreV1().ConfigMaps(member.SystemNamespace)
	for {
		cm, err := cms.Get(ctx, SliceDecisionsName(consumerID), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = cms.Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: SliceDecisionsName(consumerID), Namespace: member.SystemNamespace, Labels: member.TenantLabels(consumerID)},
				Data:       map[string]string{key: value},
			}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			return err
		}
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[key] = value
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		return err
	}
}

// forgetSliceDecision removes a decision (an explicit accept lifts a denial of the slice's name).
func forgetSliceDecision(ctx context.Context, c *member.Cluster, consumerID, key string) error {
	cms := c.Kube.CoreV1().ConfigMaps(member.SystemNamespace)
	for {
		cm, err := cms.Get(ctx, SliceDecisionsName(consumerID), metav1.GetOptions{})
		if err != nil {
			return objects.IgnoreNotFound(err)
		}
		if _, ok := cm.Data[key]; !ok {
			return nil
		}
		delete(cm.Data, key)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

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
	"sync/atomic"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// Defaults of the provider's issuance.
const (
	DefaultNonceTTL   = time.Hour
	DefaultExpiration = 90 * 24 * time.Hour
	// MinExpiration is the shortest certificate the Kubernetes CSR API issues (expirationSeconds >= 600).
	MinExpiration = 10 * time.Minute
	// MaxExpiration bounds what may be asked: the CSR API sets no maximum and a signer caps at its own
	// --cluster-signing-duration (one year by default), so this only catches a typo of units.
	MaxExpiration = 10 * 365 * 24 * time.Hour
)

// IssueOptions are the provider's choices for an issuance.
type IssueOptions struct {
	ConsumerID  string
	Tenant      *v1alpha1.Tenant // the consumer's request, decoded from exactly one document
	APIServer   string           // what the consumer's kubeconfig points at
	CA          []byte           // PEM bundle verifying APIServer; may be empty
	Expiration  time.Duration    // requested certificate lifetime
	ClusterRole string           // bound in the tenant namespace; "" means DefaultClusterRole
	Sandbox     sandbox.Options  // the guardrails of the tenant namespace
	// Credential is CredentialCertificate (""), CredentialToken or CredentialAuto.
	Credential string
	// SignerTimeout bounds the wait for a certificate once the CSR is approved (0: DefaultSignerTimeout).
	SignerTimeout time.Duration
	// MaxExpiration, if set, caps the lifetime any issuance of this pairing asks for, now and later.
	MaxExpiration time.Duration
	// Given names the settings chosen explicitly; on a renewal the others keep their recorded values
	// (settings.go), and Sandbox holds only what was given, not yet merged over the defaults.
	Given Given
	// bound, if set, gets the Identity as soon as its user is bound, before the Tenant records it.
	Bound func(*v1alpha1.Identity)
	// Issued, if set, gets the Identity once its credential is issued, while its user is bound (where a
	// round trip binds it, never in a dry run): the consumer may record it meanwhile (IdentityAhead). A
	// credential issued does not mean a pairing made: only Bound does.
	Issued func(*v1alpha1.Identity)
	// KeepCurrent (a renewal's overlap) leaves the current, active user bound beside the new one, with
	// the same role, instead of unbinding it: clients that hold its credential keep working until they
	// read the new one. Kept gets that user once both are bound; the caller takes it out (Retire) when
	// the overlap ends. Without the same role there is no overlap: the current user never holds a role
	// it was not given.
	KeepCurrent bool
	Kept        func(user string)
	// Ahead is a one-shot run's certificate request, its CSR created before the run knew it could use it:
	// adopted when it is exactly the request verified, with the lifetime asked; else left to the caller to
	// delete.
	Ahead *AheadRequest
}

// Keys of the record a consumed nonce leaves behind.
const (
	recordIntegrityKey = "identity-integrity.key"
	recordUser         = "user"
)

// IssueIdentity (provider) verifies the consumer's Tenant against the stored nonce and, only if every
// check passes, requests the certificate through the cluster's CSR API, consumes the nonce, builds the
// consumer's sandbox, approves exactly the CSR it created, checks the certificate the signer returns,
// binds the tenant role to the new user and returns the Identity for the consumer, its fields sealed with
// MACs keyed from the nonce. Re-running it for a Tenant already issued returns the same Identity.
func IssueIdentity(ctx context.Context, c *member.Cluster, o IssueOptions) (*v1alpha1.Identity, error) {
	// Everything this issuance reads, sent now, alongside the cluster's own record; forgotten at the end,
	// so a later run in this process reads afresh.
	defer c.ForgetReads()
	is, err := startIssue(ctx, c, o)
	if err != nil {
		return nil, err
	}
	// Everything up to the CSR only reads.
	if id, err := is.readRecorded(ctx); id != nil || err != nil {
		return id, err
	}
	is.o = capLifetime(is.o, is.r)
	if err := is.verify(ctx); err != nil {
		return nil, err
	}
	if err := is.checkBeforeWriting(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if is.req != nil {
			credential.DeleteCSR(ctx, c, is.req)
		}
	}()
	if id, done, err := is.requestAndConsume(ctx); done {
		return id, err
	}
	is.startEarlyWork(ctx)
	if err := is.certify(ctx); err != nil {
		return nil, is.undo(ctx, err)
	}
	if err := is.finishSandbox(ctx); err != nil {
		return nil, is.undo(ctx, err)
	}
	if err := is.issueToken(ctx); err != nil {
		return nil, is.undo(ctx, err)
	}
	return is.bindAndRecord(ctx)
}

// issuance is one run of IssueIdentity: what was asked, what was read, and what the run made so far.
// Each method is one step, in the order IssueIdentity calls them.
type issuance struct {
	c           *member.Cluster
	r           member.Reporter
	o           IssueOptions
	raw         *sandbox.Options // the sandbox as given; a renewal lays it over what was recorded
	self        *member.Self
	tenant      *v1alpha1.Tenant
	csr         *x509.CertificateRequest // decoded once; every step works on this value
	csrHash, ns string
	changes     []Change

	renewal, tenantFound       bool
	recordedUser, recordedRole string     // a renewal's current, active user and its role
	state                      GrantState // read before anything is bound, compared once it is (recheck)

	n            *nonce.Nonce
	user         string
	integrityKey []byte
	mode         string

	sandboxEarly bool // the sandbox is there already: it converges while the certificate is issued
	// A first pairing's new sandbox begun alongside the CSR (newEarly): its namespace and ledger where
	// this run created them, removed again if the run fails before it binds (removeNew).
	newEarly          bool
	newNS             *corev1.Namespace
	ledger, newLedger *sandbox.GrantLedger
	req               *certv1.CertificateSigningRequest // the CSR this run created, until deleted
	prebind           bool                              // the new user is bound beside the current one before the certificate
	sandboxDone       func() error
	staleDone         func() error
	listedEarly       bool
	consumed          func() error // the nonce's consumption, when it runs beside the approval (a CSR made ahead)

	certPEM  []byte
	token    string
	notAfter time.Time
	credKind string

	federated *credential.FederatedNaming // a federated issuance's naming (prefix and audience)
	recorded  *v1alpha1.Tenant            // the Tenant as recorded before this issuance, if any

	// The records' second look (recheck) goes with the records instead of after them when nothing they
	// write can grant (see recordAndLook): the Tenant's status write is conditional on tenantRV, the
	// resourceVersion this run's own write of the Tenant's spec returned ("": none, or a dry run), and
	// a renewal's binding of the new user alone is a patch of exactly the binding rbUID names.
	tenantRV  string
	rbUID     types.UID
	specEarly bool        // a Tenant there already got its spec with the approval (restoreSpec undoes it)
	lookAfter atomic.Bool // a records' write could grant, or met a change: the second look comes after
}

// startIssue checks the options and the request's shape and decodes its CSR, after sending the reads the
// issuance will need.
func startIssue(ctx context.Context, c *member.Cluster, o IssueOptions) (*issuance, error) {
	if member.ValidateClusterID("consumer", o.ConsumerID) == nil {
		PrefetchIssue(ctx, c, o.ConsumerID)
		StartOperator(ctx, c)
	}
	self, err := sandbox.LoadCurrent(ctx, c)
	if err != nil {
		return nil, err
	}
	if o.Tenant == nil {
		return nil, errors.New("no Tenant: the consumer's request must be given")
	}
	if o.ClusterRole == "" {
		o.ClusterRole = member.DefaultClusterRole
	}
	if o.Expiration == 0 {
		o.Expiration = DefaultExpiration
	}
	is := &issuance{c: c, r: c.Reporter(), self: self, tenant: o.Tenant, ns: member.TenantNamespace(o.ConsumerID),
		sandboxDone: func() error { return nil }, staleDone: func() error { return nil }}
	raw := o.Sandbox
	is.raw = &raw
	if o.Sandbox, err = o.Sandbox.Validate(); err != nil {
		return nil, err
	}
	is.o = o
	if err := ValidateTenant(is.tenant, o.ConsumerID, self.ClusterID); err != nil {
		return nil, err
	}
	if is.tenant.Spec.Federated != nil {
		// No CSR: the request is its signature, which covers every field and the nonce.
		sum := sha256.Sum256(is.tenant.Spec.Signature)
		is.csrHash = hex.EncodeToString(sum[:])
		return is, nil
	}
	if is.csr, err = credential.ParseCSR(is.tenant.Spec.CSR); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(is.csr.Raw)
	is.csrHash = hex.EncodeToString(sum[:])
	return is, nil
}

// readRecorded reads the consumer's Tenant: a renewal keeps its recorded settings, a pinned key must
// match, and a request already issued is answered again (returned, non-nil) or refused.
func (is *issuance) readRecorded(ctx context.Context) (*v1alpha1.Identity, error) {
	c, o, tenant, ns := is.c, is.o, is.tenant, is.ns
	u, err := c.ObjectRead(v1alpha1.TenantGVR, ns, o.ConsumerID).Take(ctx, c)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading Tenant %s/%s: %w", ns, o.ConsumerID, err)
	}
	is.tenantFound = true
	var recorded v1alpha1.Tenant
	if err := objects.FromUnstructured(u, &recorded); err != nil {
		return nil, fmt.Errorf("tenant %s/%s: %w", ns, o.ConsumerID, err)
	}
	is.recorded = &recorded
	st := recorded.Status
	is.renewal = st.User != ""
	if st.Phase == PhaseActive { // a revoked user is never bound again, not even for a moment
		is.recordedUser, is.recordedRole = st.User, st.ClusterRole
	}
	if is.renewal {
		o.Sandbox = *is.raw
		if o, is.changes, err = keepRecorded(o, &recorded); err != nil {
			return nil, err
		}
		if o.Sandbox, err = o.Sandbox.Validate(); err != nil {
			return nil, fmt.Errorf("the sandbox of Tenant %s/%s with the changes asked: %w", ns, o.ConsumerID, err)
		}
		is.o = o
	}
	if len(st.PinnedPublicKey) > 0 && !bytes.Equal(st.PinnedPublicKey, tenant.Spec.PublicKey) {
		return nil, fmt.Errorf("spec.publicKey: consumer %q is pinned to handshake key %s, this request uses %s; "+
			"unauthenticate the consumer first if its key really changed",
			o.ConsumerID, credential.Fingerprint(st.PinnedPublicKey), credential.Fingerprint(tenant.Spec.PublicKey))
	}
	if !alreadyIssued(c, st, tenant, is.csr, is.csrHash) {
		return nil, nil
	}
	return is.issuedAgain(ctx, &recorded)
}

// issuedAgain answers a request whose identity was already issued: the same certificate again, never a
// revoked one nor a token (a bearer credential is handed out once only).
func (is *issuance) issuedAgain(ctx context.Context, recorded *v1alpha1.Tenant) (*v1alpha1.Identity, error) {
	c, o, tenant, st := is.c, is.o, is.tenant, recorded.Status
	if st.Phase == PhaseRevoked {
		return nil, fmt.Errorf("consumer %q %w: its identity for this request was revoked; a new identity needs a new nonce and a new Tenant", o.ConsumerID, member.ErrRevoked)
	}
	if st.Credential == v1alpha1.CredentialToken {
		// A token is a bearer credential and tenant.yaml is public: a copy of the request must never
		// fetch it again. The consumer asks anew (a new nonce), which makes a new ServiceAccount.
		return nil, fmt.Errorf("consumer %q: a token was already issued for this request, and a token is handed out once only; for a new one, create a new nonce and have the consumer generate a new Tenant", o.ConsumerID)
	}
	if st.Credential == v1alpha1.CredentialFederated {
		return is.federatedAgain(ctx, recorded)
	}
	// The answer repeats what was verified at issuance: a copy of the request (it is public) cannot
	// have another proxy URL sealed into it. The certificate itself is useless without the key.
	if recorded.Spec.ProxyURL != tenant.Spec.ProxyURL {
		return nil, fmt.Errorf("spec.proxyURL %q: this request's certificate was already issued with proxy URL %q; have the consumer generate a new Tenant from a new nonce to change it",
			member.Truncate(tenant.Spec.ProxyURL), recorded.Spec.ProxyURL)
	}
	rec, err := c.Nonces().Record(ctx, o.ConsumerID)
	if err != nil || string(rec[recordUser]) != st.User || len(rec[recordIntegrityKey]) == 0 {
		return nil, fmt.Errorf("an identity was already issued for this request, but its integrity key is gone (a new nonce replaced it): have the consumer generate a new Tenant from a new nonce")
	}
	is.r.Info("An identity was already issued for this request; returning it again")
	return identityFor(c, is.self.ClusterID, o, tenant, st.Certificate, "", rec[recordIntegrityKey]), nil
}

// verify proves the request genuine: the nonce it was made for, the consumer's signature over it, a CSR
// for the user that nonce entitles, and a client key that is not a handshake key.
func (is *issuance) verify(ctx context.Context) error {
	c, o, tenant, csr := is.c, is.o, is.tenant, is.csr
	verified := "Tenant request verified (nonce, signature, CSR)"
	if tenant.Spec.Federated != nil {
		verified = "Tenant request verified (nonce, signature; federated: issuer " + tenant.Spec.Federated.Issuer + ", ServiceAccount " +
			tenant.Spec.Federated.ServiceAccount.Namespace + "/" + tenant.Spec.Federated.ServiceAccount.Name + ")"
	}
	if err := member.Step(is.r, "Verifying the tenant request", verified, func() error {
		var err error
		if is.n = c.NonceCache[o.ConsumerID]; is.n == nil || !c.CurrentTime().Before(is.n.ExpiresAt) {
			// Not created by this process (the manual flow): read it. A remembered one that was used or
			// replaced meanwhile fails at consumption, whose precondition names the exact version.
			if is.n, err = c.Nonces().Get(ctx, o.ConsumerID); err != nil {
				return err
			}
		}
		if tenant.Spec.Federated != nil {
			msg := credential.FederatedMessage(is.self.ClusterID, o.ConsumerID, is.n.Value, tenant.Spec.Federated, tenant.Spec.ProxyURL)
			return credential.VerifySignature(tenant.Spec.PublicKey, msg, tenant.Spec.Signature)
		}
		msg := credential.Message(is.self.ClusterID, o.ConsumerID, is.n.Value, csr.Raw, tenant.Spec.ProxyURL)
		if err := credential.VerifySignature(tenant.Spec.PublicKey, msg, tenant.Spec.Signature); err != nil {
			return err
		}
		if err := credential.CheckCSRSubject(csr, credential.ExpectedUser(o.ConsumerID, is.n.Value)); err != nil {
			return err
		}
		if credential.SamePublicKey(csr.PublicKey, is.self.PublicKey) || credential.SamePublicKey(csr.PublicKey, ed25519.PublicKey(tenant.Spec.PublicKey)) {
			return errors.New("spec.csr: the client key must not be the handshake key")
		}
		return nil
	}); err != nil {
		return err
	}
	is.integrityKey = credential.IntegrityKey(is.n.Value)
	if tenant.Spec.Federated != nil {
		return is.verifyFederated(ctx)
	}
	if o.Credential == credential.CredentialFederated {
		return errors.New("spec.csr: the provider chose a federated identity, but the consumer's request names no ServiceAccount (spec.federated); the consumer must ask for one")
	}
	is.user = csr.Subject.CommonName
	is.mode = o.Credential
	if is.mode == "" {
		is.mode = credential.CredentialCertificate
	}
	return nil
}

// checkBeforeWriting refuses, before anything is written, a tenant namespace that is not ours and a total
// smaller than what the consumer's grants hold.
func (is *issuance) checkBeforeWriting(ctx context.Context) error {
	c, o := is.c, is.o
	if err := sandbox.CheckOwnNamespace(ctx, c, is.ns, sandbox.TenantOwner(o.ConsumerID)); err != nil {
		return err
	}
	var err error
	if is.state, err = GrantStateRead(c, o.ConsumerID).Take(ctx, c); err != nil {
		return err
	}
	ledger, err := sandbox.LedgerRead(c, o.ConsumerID).Peek(ctx, c)
	if err != nil {
		return err
	}
	if err := sandbox.CheckTotal(o.ConsumerID, o.Sandbox.Quota, ledger.Granted("")); err != nil {
		if ledger.Cm != nil {
			return err
		}
		// Grants from before totals were tracked (no ledger yet): the renewal goes on, and the tenant
		// namespace keeps none of what they overdraw.
		is.r.Warn(err.Error() + " (grants made before kubectl federate tracked totals: the tenant namespace gets none of those resources until some are removed)")
	}
	return nil
}

// requestAndConsume creates the CSR and uses up the nonce, both at once (so it can never issue twice;
// nothing is approved or bound before). done says the run ends here: with an error, or with the identity
// a concurrent run for the same nonce issued.
func (is *issuance) requestAndConsume(ctx context.Context) (id *v1alpha1.Identity, done bool, err error) {
	c, o, r := is.c, is.o, is.r
	ownNS, _ := c.NamespaceRead(is.ns).Peek(ctx, c)
	is.sandboxEarly = is.tenantFound && ownNS != nil && ownNS.DeletionTimestamp == nil
	record := map[string][]byte{recordIntegrityKey: is.integrityKey, recordUser: []byte(is.user)}
	is.newEarly = !is.sandboxEarly && !c.DryRun && is.n.Prepared() && (is.mode == credential.CredentialCertificate || is.mode == credential.CredentialAuto)
	if is.n.Prepared() && (is.mode == credential.CredentialCertificate || is.mode == credential.CredentialAuto) && o.Ahead.For(is.n.Value) {
		if is.req = o.Ahead.adopt(is.tenant.Spec.CSR, o.Expiration); is.req != nil {
			_ = member.Step(r, "Requesting the client certificate", "CertificateSigningRequest created", func() error { return nil })
		}
	}
	aheadSandbox := false
	if is.req != nil && is.newEarly {
		if ns, ledger := o.Ahead.adoptSandbox(o.Sandbox); ns != nil {
			is.newNS, is.ledger, is.newLedger, aheadSandbox = ns, ledger, ledger, true
		}
	}
	if !aheadSandbox {
		if err := o.Ahead.release(ctx, c); err != nil {
			return nil, true, err
		}
	}
	if is.req != nil && (is.sandboxEarly || aheadSandbox) {
		// A CSR made ahead for a nonce that never left this process, for a sandbox that is there or was
		// begun ahead: the nonce is used up while the CSR is approved, not before. Nobody else knows the
		// nonce, so nobody else's request can be issued for it; the run joins the consumption before it
		// binds anything new, and should it fail, the run fails and takes back what it made and bound
		// meanwhile (certify, undo).
		is.consumed = parallel.Background(func() error {
			return member.Step(r, "Consuming the nonce", "Nonce consumed", func() error {
				return c.Nonces().Consume(ctx, is.n, record)
			})
		})
		return nil, false, nil
	}
	var consumeErr, csrErr, newErr error
	_ = parallel.All(func() error {
		if is.newEarly {
			newErr = is.beginNewSandbox(ctx)
		}
		return nil
	}, func() error {
		if is.req == nil && (is.mode == credential.CredentialCertificate || is.mode == credential.CredentialAuto) {
			csrErr = member.Step(r, "Requesting the client certificate", "CertificateSigningRequest created", func() error {
				var err error
				is.req, err = credential.CreateCSR(ctx, c, o.ConsumerID, member.TenantLabels(o.ConsumerID), is.tenant.Spec.CSR, o.Expiration)
				return err
			})
		}
		return nil
	}, func() error {
		if is.mode == credential.CredentialFederated && is.n.Prepared() {
			// A one-shot run's nonce never left this process: nothing could use it again, and storing
			// its record would be the one Secret a federated pairing writes.
			return nil
		}
		consumeErr = member.Step(r, "Consuming the nonce", "Nonce consumed", func() error {
			return c.Nonces().Consume(ctx, is.n, record)
		})
		return nil
	})
	// A nonce only this process knew (a one-shot run's, stored by its consumption) was used by nobody
	// else's request: there is no concurrent run to wait for.
	if csrErr != nil || newErr != nil || consumeErr != nil && (!errors.Is(consumeErr, nonce.ErrUsed) || is.req == nil || is.n.Prepared()) {
		err := errors.Join(csrErr, newErr, consumeErr)
		if consumeErr == nil {
			// The nonce is ours and nothing was issued: put it back for a re-run.
			err = errors.Join(err, c.Nonces().Restore(ctx, is.n))
		}
		return nil, true, is.removeNew(ctx, err)
	}
	if consumeErr != nil {
		id, err := is.concurrentAnswer(ctx)
		return id, true, err
	}
	return nil, false, nil
}

// concurrentAnswer waits for the certificate of the concurrent run that used the nonce: it issues for the
// same user and client key, so its answer is this request's, if it is for this very key.
func (is *issuance) concurrentAnswer(ctx context.Context) (*v1alpha1.Identity, error) {
	c, o := is.c, is.o
	var cert []byte
	if err := member.Step(is.r, "Waiting for the concurrent run that used the nonce", "Concurrent run's certificate received", func() error {
		var err error
		if cert, err = waitIssued(ctx, c, is.ns, o.ConsumerID, is.user); err != nil {
			return err
		}
		// Only a certificate for this very request's key answers it; anything else means the nonce was
		// used for another request (the same user, another key): refuse as used.
		if issued, perr := credential.ParseCertificate("status.certificate", cert); perr != nil || !credential.SamePublicKey(issued.PublicKey, is.csr.PublicKey) {
			return fmt.Errorf("%w for consumer %q by another request (another client key)", nonce.ErrUsed, o.ConsumerID)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return identityFor(c, is.self.ClusterID, o, is.tenant, cert, "", is.integrityKey), nil
}

// beginNewSandbox makes a first pairing's tenant namespace and its ledger alongside the CSR, one round
// trip ahead of the certificate, so that the sandbox's objects go with the approval (newEarly). Only for a
// one-shot run's nonce, which nobody else knew: no concurrent run for it can be using that namespace. What
// this run creates here it removes again should it fail before binding, a signer that issues nothing
// above all (removeNew): the run ends as if it had never begun.
func (is *issuance) beginNewSandbox(ctx context.Context) error {
	c, o := is.c, is.o
	before, err := sandbox.LedgerRead(c, o.ConsumerID).Peek(ctx, c)
	if err != nil {
		return err
	}
	return parallel.All(func() error {
		var err error
		is.newNS, err = sandbox.CreateSandboxNamespace(ctx, c, is.ns, sandbox.TenantOwner(o.ConsumerID), o.Sandbox)
		return err
	}, func() error {
		var err error
		if is.ledger, err = sandbox.RecordTotal(ctx, c, o.ConsumerID, o.Sandbox.Quota); err == nil && before.Cm == nil {
			is.newLedger = is.ledger
		}
		return err
	})
}

// undo ends a run that fails before it binds: what beginNewSandbox created is removed (removeNew) and
// a request recorded early in a Tenant that was there already is taken back (restoreSpec).
func (is *issuance) undo(ctx context.Context, err error) error {
	return is.restoreSpec(ctx, is.removeNew(ctx, err))
}

// restoreSpec puts back the consumer's request the Tenant recorded before this run, which wrote its own
// with the approval (specEarly), once the sandbox's writes are done; err is returned with whatever the
// restore could not do.
func (is *issuance) restoreSpec(ctx context.Context, err error) error {
	if !is.specEarly || is.recorded == nil {
		return err
	}
	_ = is.sandboxDone() // the early write, done before it is undone
	is.specEarly = false
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), member.CleanupTimeout)
	defer cancel()
	if _, rerr := applyTenantSpec(cctx, is.c, is.ns, is.o.ConsumerID, is.recorded); rerr != nil {
		return errors.Join(err, fmt.Errorf("putting back the request Tenant %s/%s recorded: %w", is.ns, is.o.ConsumerID, rerr))
	}
	return err
}

// removeNew removes what beginNewSandbox created, once the sandbox's objects are no longer being
// written, and returns err with whatever the removal could not do.
func (is *issuance) removeNew(ctx context.Context, err error) error {
	if !is.newEarly {
		return err
	}
	_ = is.sandboxDone() // its error is err's cause, or beside it
	var errs []error
	if is.newNS != nil {
		rerr := sandbox.RemoveCreatedNamespace(ctx, is.c, is.newNS)
		if rerr == nil {
			is.r.Info("Namespace " + is.ns + " removed: this run made it, and issued nothing into it")
		}
		errs = append(errs, rerr)
		is.newNS = nil
	}
	if is.newLedger != nil {
		errs = append(errs, sandbox.RemoveCreatedLedger(ctx, is.c, is.newLedger))
		is.newLedger = nil
	}
	return errors.Join(append([]error{err}, errs...)...)
}

// startEarlyWork starts what runs while the certificate is issued: a sandbox that is already there
// converges, a new one begun alongside the CSR gets its objects, a renewal's new user is bound beside the
// current one, and stale CSRs are cleared.
//
// A renewal's new user is known from its CSR before the certificate exists, so it is bound beside the
// current, active one meanwhile: it gets nothing that user does not hold this moment, its certificate
// works the moment it is issued, and the current user goes with the records (two round trips fewer
// through a slow link than binding after the sandbox and the certificate). Only for the same role, so
// that the current user never holds a role it was not given; a token's user exists only once issued.
func (is *issuance) startEarlyWork(ctx context.Context) {
	c, o, ns, user := is.c, is.o, is.ns, is.user
	is.prebind = is.sandboxEarly && is.req != nil && is.recordedUser != "" && is.recordedUser != user && is.recordedRole == o.ClusterRole
	if is.sandboxEarly {
		// The Tenant's spec (the consumer's request) goes now too, so that the records can write its status
		// on the condition that nothing changed the Tenant since (recordAndLook); restoreSpec puts the
		// recorded request back should the run fail before it binds.
		is.specEarly = true
		tenant := is.tenant
		is.sandboxDone = parallel.Background(func() error {
			return parallel.All(func() error { return buildSandbox(ctx, c, ns, o, nil, nil, nil) }, func() error {
				var err error
				is.tenantRV, err = applyTenantSpec(ctx, c, ns, o.ConsumerID, tenant)
				return err
			}, func() error {
				if !is.prebind {
					return nil
				}
				return parallel.All(
					func() error {
						rb, err := sandbox.BindRoleObject(ctx, c, ns, user, o.ClusterRole, o.ConsumerID, is.recordedUser)
						if err == nil && !c.DryRun {
							is.rbUID = rb.UID
						}
						return err
					},
					func() error {
						n, err := rebindExtra(ctx, c, o.ConsumerID, user, o.ClusterRole, is.recordedUser)
						if n > 0 {
							is.lookAfter.Store(true) // the records bind there again, creating
						}
						return err
					},
				)
			})
		})
	}
	if is.newEarly {
		tenant, ledger := is.tenant, is.ledger
		is.sandboxDone = parallel.Background(func() error { return buildSandbox(ctx, c, ns, o, tenant, ledger, &is.tenantRV) })
	}
	if req := is.req; req != nil {
		consumed := is.joinConsumed
		is.staleDone = parallel.Background(func() error {
			if consumed() != nil {
				return nil // not this run's nonce after all: no CSR is stale to it
			}
			return credential.RemoveStaleCSRs(ctx, c, o.ConsumerID, req)
		})
	}
}

// joinConsumed waits for the nonce's consumption when it runs beside the approval, and returns its error.
func (is *issuance) joinConsumed() error {
	if is.consumed == nil {
		return nil
	}
	return is.consumed()
}

// unbind takes the new user back out of the bindings when the run fails: the current one alone. Also
// when the run ran out of time, so on a context of its own.
func (is *issuance) unbind(ctx context.Context) error {
	if !is.prebind {
		return nil
	}
	c, o, ns := is.c, is.o, is.ns
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), member.CleanupTimeout)
	defer cancel()
	return parallel.All(
		func() error { return sandbox.BindRole(cctx, c, ns, is.recordedUser, o.ClusterRole, o.ConsumerID) },
		func() error { _, err := rebindExtra(cctx, c, o.ConsumerID, is.recordedUser, o.ClusterRole); return err },
	)
}

// certify issues the certificate, before a new sandbox, so that a signer that issues nothing leaves
// nothing behind: the nonce is put back and no namespace was made. It is authorized for nothing until the
// RoleBinding names its user, which happens only once the sandbox holds. In auto mode, no certificate
// means a token.
func (is *issuance) certify(ctx context.Context) error {
	if is.req == nil {
		return nil
	}
	c, o := is.c, is.o
	issued, err := credential.Issue(ctx, c, credential.Issuance{CSR: is.req, Request: is.csr, Mode: is.mode,
		Expiration: o.Expiration, SignerTimeout: o.SignerTimeout, Noun: "client certificate",
		Begin: "Issuing the client certificate through the CSR API", Done: "Client certificate issued"})
	is.certPEM, is.notAfter = issued.Certificate, issued.NotAfter
	if cerr := is.joinConsumed(); cerr != nil {
		// The nonce could not be used up beside the approval: nothing of this run may stand.
		credential.DeleteCSR(ctx, c, is.req)
		return errors.Join(cerr, is.staleDone(), is.sandboxDone(), is.unbind(ctx))
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, credential.ErrNoCertificate) && is.mode == credential.CredentialAuto:
		// Issue deleted the CSR already, so that a late signer has nothing left to sign.
		is.mode, is.certPEM = credential.CredentialToken, nil
		return nil
	case errors.Is(err, credential.ErrNoCertificate):
		credential.DeleteCSR(ctx, c, is.req)
		err = errors.Join(err, is.staleDone(), is.sandboxDone(), is.unbind(ctx))
		if rerr := c.Nonces().Restore(ctx, is.n); rerr != nil {
			return errors.Join(err, fmt.Errorf("the nonce stays used, so the consumer needs a new one: %w", rerr))
		}
		return err
	default:
		return errors.Join(err, is.staleDone(), is.sandboxDone(), is.unbind(ctx))
	}
}

// finishSandbox makes a new sandbox now that the certificate exists, or waits for the one converging:
// a new sandbox's user is bound only once the sandbox holds, so that a sandbox that is not enforced never
// gets a binding, not even for a moment (one round trip kept on purpose).
func (is *issuance) finishSandbox(ctx context.Context) error {
	// Lists read early may miss an extra namespace granted or a ServiceAccount made since: read afresh
	// after the bindings, alongside the record.
	is.listedEarly = is.c.NamespacesOfRead(is.o.ConsumerID, member.KindExtra).Sent(is.c) || is.c.ServiceAccountsRead(is.ns).Sent(is.c)
	if !is.sandboxEarly && !is.newEarly {
		c, o, ns, tenant := is.c, is.o, is.ns, is.tenant
		is.sandboxDone = parallel.Background(func() error { return buildSandbox(ctx, c, ns, o, tenant, nil, &is.tenantRV) })
	}
	if err := errors.Join(is.sandboxDone(), is.staleDone()); err != nil {
		return errors.Join(err, is.unbind(ctx))
	}
	return nil
}

// issueToken issues a ServiceAccount token, once the sandbox (its namespace) holds, when a token was
// asked for or no certificate came.
func (is *issuance) issueToken(ctx context.Context) error {
	is.credKind = v1alpha1.CredentialCertificate
	if is.mode == credential.CredentialFederated {
		is.credKind = v1alpha1.CredentialFederated
		return nil
	}
	if is.mode != credential.CredentialToken {
		return nil
	}
	is.credKind = v1alpha1.CredentialToken
	tok, err := credential.Issue(ctx, is.c, credential.Issuance{Mode: is.mode, Expiration: is.o.Expiration,
		Namespace: is.ns, Labels: member.TenantLabels(is.o.ConsumerID),
		Begin: "Issuing a ServiceAccount token", Done: "Token of a new " + credential.CredentialServiceAccount + "-* ServiceAccount in " + is.ns + " issued"})
	if err != nil {
		return err
	}
	is.token, is.user, is.notAfter = tok.Token, tok.User, tok.NotAfter
	return nil
}

// overlapUser is the current user a renewal keeps bound beside the new one (KeepCurrent), or none.
func (is *issuance) overlapUser() []string {
	if !is.o.KeepCurrent || is.recordedUser == "" || is.recordedUser == is.user || is.recordedRole != is.o.ClusterRole {
		return nil
	}
	return []string{is.recordedUser}
}

// keepUser is the user whose credential ServiceAccount stays: a token's user is its ServiceAccount.
func (is *issuance) keepUser() string {
	if is.mode == credential.CredentialToken {
		return is.user
	}
	return ""
}

// bindAll binds the new user in the tenant namespace and every extra namespace, no older one anywhere
// (but the current one a renewal's overlap keeps): bound to nothing from now on, the tokens of earlier
// issuances die with their ServiceAccounts.
//
// With the records (a renewal's prebind, rbUID known), the tenant namespace's binding is a patch of
// exactly the binding the prebind wrote, which cannot make one again after a revocation deleted it; a
// binding that had to be made (there, or in an extra namespace) means the second look comes after.
func (is *issuance) bindAll(ctx context.Context) error {
	c, o, ns, keep, also := is.c, is.o, is.ns, is.keepUser(), is.overlapUser()
	return member.Step(is.r, "Binding ClusterRole "+o.ClusterRole, "ClusterRole "+o.ClusterRole+" bound in "+ns+" and the consumer's extra namespaces", func() error {
		return parallel.All(
			func() error {
				if is.rbUID != "" {
					users := append([]string{is.user}, also...)
					if sandbox.RebindSubjects(ctx, c, ns, is.rbUID, users...) == nil {
						return nil
					}
					is.lookAfter.Store(true) // not the binding the prebind wrote: made as before, looked at after
				}
				return sandbox.BindRole(ctx, c, ns, is.user, o.ClusterRole, o.ConsumerID, also...)
			},
			func() error {
				n, err := rebindExtra(ctx, c, o.ConsumerID, is.user, o.ClusterRole, also...)
				if n > 0 {
					is.lookAfter.Store(true)
				}
				return err
			},
			func() error { return credential.DeleteCredentialAccounts(ctx, c, ns, keep, also...) },
		)
	})
}

// bindAndRecord binds, then records. The bindings come before the records: the Tenant records the
// issuance only once they hold, so that a re-run of the same request that finds it recorded (and returns
// it again, reading only) never misses a binding. Bound beside the current user already (prebind), the
// new one holds: the current one goes with the records.
func (is *issuance) bindAndRecord(ctx context.Context) (*v1alpha1.Identity, error) {
	c, o := is.c, is.o
	id := identityFor(c, is.self.ClusterID, o, is.tenant, is.certPEM, is.token, is.integrityKey)
	if is.federated != nil {
		id = federatedIdentityFor(c, is.self.ClusterID, o, is.tenant, is.user, is.federated.Audience, is.integrityKey)
	}
	if !is.prebind {
		if o.Issued != nil && is.federated == nil && !c.DryRun {
			o.Issued(id)
		}
		if err := is.bindAll(ctx); err != nil {
			return nil, err
		}
	}
	if o.Bound != nil {
		o.Bound(id) // the consumer may store it while the provider records it
	}
	// Then, all at once: the Tenant's record, the Event, the CSR's deletion (it is done with), the second
	// look at the lists and, where the records cannot grant, the second look at the consumer.
	withRecords := is.tenantRV != "" && !c.DryRun
	var now Rechecked
	var nowErr error
	if err := parallel.All(func() error {
		return is.record(ctx)
	}, func() error {
		if withRecords {
			now, nowErr = recheck(ctx, c, o.ConsumerID, is.state, true, is.user)
		}
		return nil
	}, func() error {
		reason := EventIssued
		if is.renewal {
			reason = EventRenewed
		}
		Audit(ctx, c, TenantObject(o.ConsumerID), reason, "identity ("+is.credKind+") issued to consumer "+o.ConsumerID+" in "+is.ns,
			&Credential{User: is.user, NotAfter: is.notAfter})
		return nil
	}, func() error {
		if is.req != nil {
			credential.DeleteCSR(ctx, c, is.req)
			is.req = nil
		}
		return nil
	}, func() error {
		return is.rebindAfresh(ctx)
	}); err != nil {
		return nil, err
	}
	if !withRecords || is.lookAfter.Load() {
		now, nowErr = Rechecked{}, nil
		if !c.DryRun {
			now, nowErr = Recheck(ctx, c, o.ConsumerID, is.state, is.user)
		}
	}
	if err := is.takeBackIfRevoked(ctx, now, nowErr); err != nil {
		return nil, err
	}
	ReportChanges(is.r, is.changes)
	if also := is.overlapUser(); len(also) > 0 && o.Kept != nil {
		o.Kept(also[0])
	}
	return id, nil
}

// takeBackIfRevoked acts on the issuance's second look at the consumer (now, or the error reading it):
// revoked while it was issued (revocation is final), the new user is taken back out of every binding and
// recorded revoked, the Tenant is marked Revoked again, and the issuance fails.
//
// The look is sent once the bindings hold, and either with the records or after them. With them only when
// none of the records' writes can grant or revive what a revocation takes: the Tenant's status is written
// on the condition that the Tenant is as this run last wrote it (a revocation marking it Revoked fails
// that), and a renewal's binding of the new user alone patches exactly the binding it wrote (a revocation
// deleting it fails that); anything else (lookAfter) and the look waits for the records. Sent with them,
// the look either sees a revocation counted before it (taken back), or the revocation comes after the
// bindings were made, deletes them, and marks a Tenant that the records can no longer make Active again.
func (is *issuance) takeBackIfRevoked(ctx context.Context, now Rechecked, err error) error {
	c, consumerID := is.c, is.o.ConsumerID
	if err != nil || !now.Revoked {
		return err
	}
	taken := &RevokedMeanwhileError{ConsumerID: consumerID, What: "its identity"}
	bound := []BoundUser{BoundIn(is.user, is.ns)}
	extra, err := c.NamespacesOfRead(consumerID, member.KindExtra).Get(ctx)
	for _, ns := range extra {
		bound = append(bound, BoundIn(is.user, ns.Name))
	}
	err = errors.Join(err, TakeBack(ctx, c, consumerID, bound))
	if err == nil {
		_, err = c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(is.ns).Patch(ctx, consumerID, types.MergePatchType,
			[]byte(`{"status":{"phase":"`+PhaseRevoked+`"}}`), metav1.PatchOptions{FieldManager: member.FieldManager}, "status")
	}
	if err != nil {
		return errors.Join(taken, fmt.Errorf("taking it back: %w", err))
	}
	return taken
}

// record writes the issuance into the Tenant: its spec, when the sandbox was there already (only now is
// the request known to issue), and its status.
func (is *issuance) record(ctx context.Context) error {
	c, o, tenant := is.c, is.o, is.tenant
	var na *metav1.Time
	if !is.notAfter.IsZero() {
		t := metav1.NewTime(is.notAfter)
		na = &t
	}
	audience := ""
	if is.federated != nil {
		audience = is.federated.Audience
	}
	st := v1alpha1.TenantStatus{Phase: PhaseActive, PinnedPublicKey: tenant.Spec.PublicKey, User: is.user,
		CSRHash: is.csrHash, Certificate: is.certPEM, NotAfter: na, Credential: is.credKind, Audience: audience, ClusterRole: o.ClusterRole, Sandbox: o.Sandbox.Status(),
		APIServer: o.APIServer, CA: o.CA, Lifetime: DurationPtr(o.Expiration), MaxLifetime: DurationPtr(o.MaxExpiration)}
	return member.Step(is.r, "Recording the issuance in the Tenant", "Tenant updated", func() error {
		return parallel.All(func() error {
			if is.sandboxEarly && !is.specEarly {
				_, err := applyTenantSpec(ctx, c, is.ns, o.ConsumerID, tenant)
				return err
			}
			return nil
		}, func() error {
			if is.tenantRV != "" && !c.DryRun {
				err := applyTenantStatus(ctx, c, o.ConsumerID, st, is.tenantRV)
				if !apierrors.IsConflict(err) {
					return err
				}
				// Changed since this run wrote it (a cordon, a revocation marking it): written all the
				// same, and the second look comes after.
				is.lookAfter.Store(true)
			}
			return applyTenantStatus(ctx, c, o.ConsumerID, st, "")
		})
	})
}

// rebindAfresh is the second look at the lists read early: an extra namespace granted or a credential
// ServiceAccount made since the bindings is bound or deleted too.
func (is *issuance) rebindAfresh(ctx context.Context) error {
	c, o, ns := is.c, is.o, is.ns
	if is.prebind {
		// Here after the pre-binding, both lists are read afresh: the early one of the extra namespaces
		// was the pre-binding's, and the early ServiceAccounts are dropped unread.
		_, _, _ = c.ServiceAccountsRead(ns).Taken(ctx, c)
		return is.bindAll(ctx)
	}
	if !is.listedEarly {
		return nil
	}
	also := is.overlapUser()
	return parallel.All(
		func() error {
			n, err := rebindExtra(ctx, c, o.ConsumerID, is.user, o.ClusterRole, also...)
			if n > 0 {
				is.lookAfter.Store(true) // a binding made with the records: the second look comes after
			}
			return err
		},
		func() error { return credential.DeleteCredentialAccounts(ctx, c, ns, is.keepUser(), also...) },
	)
}

// Tenant phases.
const (
	PhaseActive  = "Active"
	PhaseRevoked = "Revoked"
)

// applyTenantStatus server-side applies the Tenant's status; with rv, only to exactly that version of the
// Tenant (a Conflict otherwise, and nothing written).
func applyTenantStatus(ctx context.Context, c *member.Cluster, consumerID string, st v1alpha1.TenantStatus, rv string) error {
	status := &v1alpha1.Tenant{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{Name: consumerID, Namespace: member.TenantNamespace(consumerID), ResourceVersion: rv},
		Status:     st,
	}
	return c.ApplyStatus(ctx, v1alpha1.TenantGVR, status)
}

func identityFor(c *member.Cluster, providerID string, o IssueOptions, tenant *v1alpha1.Tenant, certPEM []byte, token string, integrityKey []byte) *v1alpha1.Identity {
	id := &v1alpha1.Identity{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.IdentityKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      member.IdentityName(providerID),
			Namespace: member.SystemNamespace,
			Labels:    member.IdentityLabels(providerID),
		},
		Spec: v1alpha1.IdentitySpec{
			ClusterID:         providerID,
			ConsumerClusterID: o.ConsumerID,
			Namespace:         member.TenantNamespace(o.ConsumerID),
			APIServer:         o.APIServer,
			CA:                o.CA,
			Certificate:       certPEM,
			ProxyURL:          tenant.Spec.ProxyURL,
		},
	}
	if token != "" {
		id.Spec.Credential, id.Spec.Token = v1alpha1.CredentialToken, token
	}
	credential.SealIdentity(integrityKey, &id.Spec)
	return id
}

// waitIssued watches the Tenant until its status records a certificate for user.
func waitIssued(ctx context.Context, c *member.Cluster, ns, name, user string) ([]byte, error) {
	if c.DryRun {
		return nil, &member.DryRunStop{At: "the certificate of the concurrent run that used the nonce", Why: "a dry run does not wait for another run's certificate"}
	}
	var cert []byte
	err := c.WaitFor(ctx, c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(ns), name, "", func(ev watch.Event) (bool, error) {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || ev.Type == watch.Deleted {
			return false, nil
		}
		var t v1alpha1.Tenant
		if err := objects.FromUnstructured(u, &t); err != nil {
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

// alreadyIssued tells whether the Tenant's current, unexpired certificate answers this request: the same
// CSR, or a CSR of the same user for the same client key from the same (pinned) handshake key, as a
// consumer that re-ran generate tenant with the same nonce sends. The certificate is public and useless
// without the consumer's private key, so returning it again grants nothing new.
func alreadyIssued(c *member.Cluster, st v1alpha1.TenantStatus, tenant *v1alpha1.Tenant, csr *x509.CertificateRequest, csrHash string) bool {
	if st.Credential == v1alpha1.CredentialFederated || tenant.Spec.Federated != nil {
		// Nothing expires: a federated identity answers exactly the request it was issued for.
		return st.Credential == v1alpha1.CredentialFederated && tenant.Spec.Federated != nil && st.CSRHash == csrHash
	}
	if st.NotAfter == nil || !c.CurrentTime().Before(st.NotAfter.Time) {
		return false
	}
	if st.Credential == v1alpha1.CredentialToken {
		// A token answers exactly the request it was issued for.
		return st.CSRHash == csrHash
	}
	if len(st.Certificate) == 0 {
		return false
	}
	if st.CSRHash == csrHash {
		return true
	}
	if !bytes.Equal(st.PinnedPublicKey, tenant.Spec.PublicKey) {
		return false
	}
	cert, err := credential.ParseCertificate("status.certificate", st.Certificate)
	if err != nil {
		return false
	}
	return credential.CheckCSRSubject(csr, st.User) == nil && cert.Subject.CommonName == st.User && credential.SamePublicKey(cert.PublicKey, csr.PublicKey)
}

// buildSandbox converges the consumer's tenant namespace and, when tenant is given, records its request in
// the Tenant. The sandbox's quota is the consumer's total (o.Sandbox.Quota, recorded in the ledger while
// the namespace is made) less what its grants hold.
func buildSandbox(ctx context.Context, c *member.Cluster, ns string, o IssueOptions, tenant *v1alpha1.Tenant, recordedLedger *sandbox.GrantLedger, tenantRV *string) error {
	return member.Step(c.Reporter(), "Building the sandbox "+ns, "Sandbox "+ns+" ready (Pod Security "+o.Sandbox.PodSecurity+", quota, limits, network policy)", func() error {
		var also []func() error
		if tenant != nil {
			also = append(also, func() error {
				rv, err := applyTenantSpec(ctx, c, ns, o.ConsumerID, tenant)
				*tenantRV = rv
				return err
			})
		}
		sb := o.Sandbox
		if recordedLedger != nil {
			// Namespace and ledger were made alongside the CSR (beginNewSandbox).
			sb.Share = func() (*sandbox.GrantLedger, error) { return recordedLedger, nil }
			return sandbox.EnsureSandboxIn(ctx, c, ns, sandbox.TenantOwner(o.ConsumerID), sb, also...)
		}
		var ledger *sandbox.GrantLedger
		recorded := parallel.Background(func() error {
			var err error
			ledger, err = sandbox.RecordTotal(ctx, c, o.ConsumerID, sb.Quota)
			return err
		})
		sb.Share = func() (*sandbox.GrantLedger, error) {
			err := recorded()
			return ledger, err
		}
		err := sandbox.EnsureSandbox(ctx, c, ns, sandbox.TenantOwner(o.ConsumerID), sb, also...)
		if rerr := recorded(); err == nil {
			err = rerr // not read by the sandbox (its namespace failed first)
		}
		return err
	})
}

// applyTenantSpec records the consumer's request in its Tenant, and returns the Tenant's resourceVersion
// as written ("" in a dry run, where nothing is).
func applyTenantSpec(ctx context.Context, c *member.Cluster, ns, consumerID string, tenant *v1alpha1.Tenant) (string, error) {
	t := &v1alpha1.Tenant{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{Name: consumerID, Namespace: ns, Labels: member.TenantLabels(consumerID)},
		Spec:       tenant.Spec,
	}
	u, err := c.ApplyTypedObject(ctx, v1alpha1.TenantGVR, ns, t)
	if err != nil || c.DryRun {
		return "", err
	}
	return u.GetResourceVersion(), nil
}

// PrefetchIssue sends at once every read a provider's issuance for the consumer will need.
func PrefetchIssue(ctx context.Context, c *member.Cluster, consumerID string) {
	if !c.FirstBatch("issue/" + consumerID) {
		return
	}
	ns := member.TenantNamespace(consumerID)
	c.ObjectRead(v1alpha1.TenantGVR, ns, consumerID).Start(ctx, c)
	c.SecretRead(member.SystemNamespace, nonce.SecretName(consumerID)).Start(ctx, c)
	c.NamespaceRead(ns).Start(ctx, c)
	c.ServiceAccountsRead(ns).Start(ctx, c)
	credential.TenantCSRsRead(c, consumerID).Start(ctx, c)
	c.NamespacesOfRead(consumerID, member.KindExtra).Start(ctx, c)
	// The tenant namespace's quota is the total less the grants: the ledger and the quota as it is.
	sandbox.LedgerRead(c, consumerID).Start(ctx, c)
	sandbox.QuotaRead(c, ns).Start(ctx, c)
	// The revocation count the issuance compares once it has bound (recheck).
	GrantStateRead(c, consumerID).Start(ctx, c)
	// The pod address ranges the sandbox's NetworkPolicy excepts: a chain of reads of its own.
	sandbox.StartPodRanges(ctx, c)
}

// rebindExtra binds the pairing's new user in every extra namespace of the consumer (renewal), with also
// beside it (see bindRole).
// It returns how many namespaces it bound in.
func rebindExtra(ctx context.Context, c *member.Cluster, consumerID, user, clusterRole string, also ...string) (int, error) {
	extra, err := NamespacesOf(ctx, c, consumerID, member.KindExtra)
	if err != nil {
		return 0, err
	}
	var jobs []func() error
	for _, ns := range extra {
		if ns.DeletionTimestamp == nil {
			jobs = append(jobs, func() error { return sandbox.BindRole(ctx, c, ns.Name, user, clusterRole, consumerID, also...) })
		}
	}
	return len(jobs), parallel.All(jobs...)
}

// NamespacesOf lists a consumer's namespaces of the given kinds.
func NamespacesOf(ctx context.Context, c *member.Cluster, consumerID string, kinds ...string) ([]corev1.Namespace, error) {
	return c.NamespacesOfRead(consumerID, kinds...).Take(ctx, c)
}

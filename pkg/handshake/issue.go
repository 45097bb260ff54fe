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
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
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
	raw := o.Sandbox // what was given; a renewal lays it over what was recorded
	if o.Sandbox, err = o.Sandbox.Validate(); err != nil {
		return nil, err
	}
	var changes []Change
	tenant := o.Tenant
	if err := ValidateTenant(tenant, o.ConsumerID, self.ClusterID); err != nil {
		return nil, err
	}
	// The CSR is decoded once; everything below works on this value.
	csr, err := credential.ParseCSR(tenant.Spec.CSR)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(csr.Raw)
	csrHash := hex.EncodeToString(sum[:])
	r := c.Reporter()
	ns := member.TenantNamespace(o.ConsumerID)

	// Everything up to the CSR only reads.
	renewal, tenantFound := false, false
	var recordedUser, recordedRole string // a renewal's current user and its role
	u, err := c.ObjectRead(v1alpha1.TenantGVR, ns, o.ConsumerID).Take(ctx, c)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading Tenant %s/%s: %w", ns, o.ConsumerID, err)
	default:
		tenantFound = true
		var recorded v1alpha1.Tenant
		if err := member.FromUnstructured(u, &recorded); err != nil {
			return nil, fmt.Errorf("tenant %s/%s: %w", ns, o.ConsumerID, err)
		}
		st := recorded.Status
		renewal = st.User != ""
		if st.Phase == PhaseActive { // a revoked user is never bound again, not even for a moment
			recordedUser, recordedRole = st.User, st.ClusterRole
		}
		if renewal {
			o.Sandbox = raw
			if o, changes, err = keepRecorded(o, &recorded); err != nil {
				return nil, err
			}
			if o.Sandbox, err = o.Sandbox.Validate(); err != nil {
				return nil, fmt.Errorf("the sandbox of Tenant %s/%s with the changes asked: %w", ns, o.ConsumerID, err)
			}
		}
		if len(st.PinnedPublicKey) > 0 && !bytes.Equal(st.PinnedPublicKey, tenant.Spec.PublicKey) {
			return nil, fmt.Errorf("spec.publicKey: consumer %q is pinned to handshake key %s, this request uses %s; "+
				"unauthenticate the consumer first if its key really changed",
				o.ConsumerID, credential.Fingerprint(st.PinnedPublicKey), credential.Fingerprint(tenant.Spec.PublicKey))
		}
		if alreadyIssued(c, st, tenant, csr, csrHash) {
			if st.Phase == PhaseRevoked {
				return nil, fmt.Errorf("consumer %q %w: its identity for this request was revoked; a new identity needs a new nonce and a new Tenant", o.ConsumerID, member.ErrRevoked)
			}
			if st.Credential == v1alpha1.CredentialToken {
				// A token is a bearer credential and tenant.yaml is public: a copy of the request must never
				// fetch it again. The consumer asks anew (a new nonce), which makes a new ServiceAccount.
				return nil, fmt.Errorf("consumer %q: a token was already issued for this request, and a token is handed out once only; for a new one, create a new nonce and have the consumer generate a new Tenant", o.ConsumerID)
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
			r.Info("An identity was already issued for this request; returning it again")
			return identityFor(c, self.ClusterID, o, tenant, st.Certificate, "", rec[recordIntegrityKey]), nil
		}
	}
	o = capLifetime(o, r)
	var n *nonce.Nonce
	if err := member.Step(r, "Verifying the tenant request", "Tenant request verified (nonce, signature, CSR)", func() error {
		if n = c.NonceCache[o.ConsumerID]; n == nil || !c.CurrentTime().Before(n.ExpiresAt) {
			// Not created by this process (the manual flow): read it. A remembered one that was used or
			// replaced meanwhile fails at consumption, whose precondition names the exact version.
			if n, err = c.Nonces().Get(ctx, o.ConsumerID); err != nil {
				return err
			}
		}
		msg := credential.Message(self.ClusterID, o.ConsumerID, n.Value, csr.Raw, tenant.Spec.ProxyURL)
		if err := credential.VerifySignature(tenant.Spec.PublicKey, msg, tenant.Spec.Signature); err != nil {
			return err
		}
		if err := credential.CheckCSRSubject(csr, credential.ExpectedUser(o.ConsumerID, n.Value)); err != nil {
			return err
		}
		if credential.SamePublicKey(csr.PublicKey, self.PublicKey) || credential.SamePublicKey(csr.PublicKey, ed25519.PublicKey(tenant.Spec.PublicKey)) {
			return errors.New("spec.csr: the client key must not be the handshake key")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	user := csr.Subject.CommonName
	integrityKey := credential.IntegrityKey(n.Value)
	mode := o.Credential
	if mode == "" {
		mode = credential.CredentialCertificate
	}

	// The request is genuine. A tenant namespace that is not ours, or a total smaller than what the
	// consumer's grants hold, is refused before anything is written.
	if err := sandbox.CheckOwnNamespace(ctx, c, ns, sandbox.TenantOwner(o.ConsumerID)); err != nil {
		return nil, err
	}
	ledger, err := sandbox.LedgerRead(c, o.ConsumerID).Peek(ctx, c)
	if err != nil {
		return nil, err
	}
	if err := sandbox.CheckTotal(o.ConsumerID, o.Sandbox.Quota, ledger.Granted("")); err != nil {
		if ledger.Cm != nil {
			return nil, err
		}
		// Grants from before totals were tracked (no ledger yet): the renewal goes on, and the tenant
		// namespace keeps none of what they overdraw.
		r.Warn(err.Error() + " (grants made before kubectl federate tracked totals: the tenant namespace gets none of those resources until some are removed)")
	}
	// Then, both at once: the CSR is created, and the nonce is used up (so it can never issue twice;
	// nothing is approved or bound before). A sandbox that is already there (a renewal) then converges
	// while the certificate is issued; a new one waits for the certificate, so that a signer that issues
	// nothing leaves nothing behind.
	ownNS, _ := c.NamespaceRead(ns).Peek(ctx, c)
	sandboxEarly := tenantFound && ownNS != nil && ownNS.DeletionTimestamp == nil
	record := map[string][]byte{recordIntegrityKey: integrityKey, recordUser: []byte(user)}
	var req *certv1.CertificateSigningRequest
	var consumeErr, csrErr error
	sandboxDone := func() error { return nil }
	_ = member.Parallel(func() error {
		if mode != credential.CredentialToken {
			csrErr = member.Step(r, "Requesting the client certificate", "CertificateSigningRequest created", func() error {
				req, err = credential.CreateCSR(ctx, c, o.ConsumerID, member.TenantLabels(o.ConsumerID), tenant.Spec.CSR, o.Expiration)
				return err
			})
		}
		return nil
	}, func() error {
		consumeErr = member.Step(r, "Consuming the nonce", "Nonce consumed", func() error {
			return c.Nonces().Consume(ctx, n, record)
		})
		return nil
	})
	defer func() {
		if req != nil {
			credential.DeleteCSR(ctx, c, req)
		}
	}()
	// A nonce only this process knew (a one-shot run's, stored by its consumption) was used by nobody
	// else's request: there is no concurrent run to wait for.
	if csrErr != nil || consumeErr != nil && (!errors.Is(consumeErr, nonce.ErrUsed) || req == nil || n.Prepared()) {
		err := errors.Join(csrErr, consumeErr)
		if consumeErr == nil {
			// The nonce is ours and nothing was issued: put it back for a re-run.
			err = errors.Join(err, c.Nonces().Restore(ctx, n))
		}
		return nil, err
	}
	if consumeErr != nil {
		// A concurrent run for the same nonce won. It issues for the same user and client key, so
		// wait for its certificate instead of failing.
		var cert []byte
		if err := member.Step(r, "Waiting for the concurrent run that used the nonce", "Concurrent run's certificate received", func() error {
			if cert, err = waitIssued(ctx, c, ns, o.ConsumerID, user); err != nil {
				return err
			}
			// Only a certificate for this very request's key answers it; anything else means the nonce was
			// used for another request (the same user, another key): refuse as used.
			if issued, perr := credential.ParseCertificate("status.certificate", cert); perr != nil || !credential.SamePublicKey(issued.PublicKey, csr.PublicKey) {
				return fmt.Errorf("%w for consumer %q by another request (another client key)", nonce.ErrUsed, o.ConsumerID)
			}
			return nil
		}); err != nil {
			return nil, err
		}
		return identityFor(c, self.ClusterID, o, tenant, cert, "", integrityKey), nil
	}
	// The nonce is ours: a sandbox that is already there converges while the certificate is issued. A
	// renewal's new user is known from its CSR before the certificate exists, so it is bound beside the
	// current, active one meanwhile: it gets nothing that user does not hold this moment, its certificate
	// works the moment it is issued, and the current user goes with the records (two round trips fewer
	// through a slow link than binding after the sandbox and the certificate). Only for the same role, so
	// that the current user never holds a role it was not given; a token's user exists only once issued.
	prebind := sandboxEarly && req != nil && recordedUser != "" && recordedUser != user && recordedRole == o.ClusterRole
	if sandboxEarly {
		sandboxDone = member.Background(func() error {
			return member.Parallel(func() error { return buildSandbox(ctx, c, ns, o, nil) }, func() error {
				if !prebind {
					return nil
				}
				return member.Parallel(
					func() error { return sandbox.BindRole(ctx, c, ns, user, o.ClusterRole, o.ConsumerID, recordedUser) },
					func() error { return rebindExtra(ctx, c, o.ConsumerID, user, o.ClusterRole, recordedUser) },
				)
			})
		})
	}
	// unbind takes the new user back out of the bindings when the run fails: the current one alone. Also
	// when the run ran out of time, so on a context of its own.
	unbind := func() error {
		if !prebind {
			return nil
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), member.CleanupTimeout)
		defer cancel()
		return member.Parallel(
			func() error { return sandbox.BindRole(cctx, c, ns, recordedUser, o.ClusterRole, o.ConsumerID) },
			func() error { return rebindExtra(cctx, c, o.ConsumerID, recordedUser, o.ClusterRole) },
		)
	}

	// Stale CSRs are cleared meanwhile.
	staleDone := func() error { return nil }
	if req != nil {
		staleDone = member.Background(func() error { return credential.RemoveStaleCSRs(ctx, c, o.ConsumerID, req) })
	}
	// The certificate comes before a new sandbox, so that a signer that issues nothing leaves nothing
	// behind: the nonce is put back and no namespace was made. It is authorized for nothing until the
	// RoleBinding names its user, which happens only once the sandbox holds.
	var certPEM []byte
	var notAfter time.Time
	if req != nil {
		err := member.Step(r, "Issuing the client certificate through the CSR API", "Client certificate issued", func() error {
			if certPEM, err = credential.ApproveAndWait(ctx, c, req, o.SignerTimeout); err != nil {
				if errors.Is(err, credential.ErrNoCertificate) && mode == credential.CredentialAuto {
					return &member.FallbackError{Err: err, Msg: "The signer issued no client certificate in time (no controller seems to sign " +
						certv1.KubeAPIServerClientSignerName + " here): falling back to a ServiceAccount token"}
				}
				return err
			}
			cert, err := credential.CheckIssued(certPEM, csr, c.CurrentTime().Add(o.Expiration+credential.IssuedSlack))
			if err != nil {
				return err
			}
			// The signer backdates NotBefore by a few minutes; the lifetime is what it may have cut.
			notAfter = cert.NotAfter
			if w := credential.ShortenedWarning("certificate", "The signer", cert.NotAfter.Sub(cert.NotBefore), o.Expiration, cert.NotAfter); w != "" {
				r.Warn(w)
			}
			return nil
		})
		switch {
		case err == nil:
		case errors.Is(err, credential.ErrNoCertificate) && mode == credential.CredentialAuto:
			// Gone before anything else happens, so that a late signer has nothing left to sign.
			credential.DeleteCSR(ctx, c, req)
			mode, certPEM = credential.CredentialToken, nil
		case errors.Is(err, credential.ErrNoCertificate):
			credential.DeleteCSR(ctx, c, req)
			err = errors.Join(err, staleDone(), sandboxDone(), unbind())
			if rerr := c.Nonces().Restore(ctx, n); rerr != nil {
				return nil, errors.Join(err, fmt.Errorf("the nonce stays used, so the consumer needs a new one: %w", rerr))
			}
			return nil, err
		default:
			return nil, errors.Join(err, staleDone(), sandboxDone(), unbind())
		}
	}
	// The bindings come before the records: the Tenant records the issuance only once they hold, so that a
	// re-run of the same request that finds it recorded (and returns it again, reading only) never misses a
	// binding. Lists read early may miss an extra namespace granted or a ServiceAccount made since: read
	// afresh after the bindings, alongside the record.
	listedEarly := c.NamespacesOfRead(o.ConsumerID, member.KindExtra).Sent(c) || c.ServiceAccountsRead(ns).Sent(c)
	keepUser := func() string { // a token's user is its ServiceAccount, which stays
		if mode == credential.CredentialToken {
			return user
		}
		return ""
	}
	bindAll := func() error {
		keep := keepUser()
		return member.Step(r, "Binding ClusterRole "+o.ClusterRole, "ClusterRole "+o.ClusterRole+" bound in "+ns+" and the consumer's extra namespaces", func() error {
			// The tenant namespace and every extra namespace: the new user everywhere, no older one anywhere.
			// Bound to nothing from now on, the tokens of earlier issuances die with their ServiceAccounts.
			return member.Parallel(
				func() error { return sandbox.BindRole(ctx, c, ns, user, o.ClusterRole, o.ConsumerID) },
				func() error { return rebindExtra(ctx, c, o.ConsumerID, user, o.ClusterRole) },
				func() error { return credential.DeleteCredentialAccounts(ctx, c, ns, keep) },
			)
		})
	}
	// A new sandbox's user is bound only once the sandbox holds: a sandbox that is not enforced never
	// gets a binding, not even for a moment (one round trip kept on purpose).
	if !sandboxEarly {
		sandboxDone = member.Background(func() error { return buildSandbox(ctx, c, ns, o, tenant) })
	}
	if err := errors.Join(sandboxDone(), staleDone()); err != nil {
		return nil, errors.Join(err, unbind())
	}
	var token string
	credKind := v1alpha1.CredentialCertificate
	if mode == credential.CredentialToken {
		credKind = v1alpha1.CredentialToken
		if err := member.Step(r, "Issuing a ServiceAccount token", "Token of a new "+credential.CredentialServiceAccount+"-* ServiceAccount in "+ns+" issued", func() error {
			tok, err := credential.IssueToken(ctx, c, ns, member.TenantLabels(o.ConsumerID), o.Expiration)
			if err != nil {
				return err
			}
			token, user, notAfter = tok.Token, tok.User, tok.NotAfter
			if w := credential.ShortenedWarning("token", "The API server", time.Until(tok.NotAfter).Round(time.Minute), o.Expiration, tok.NotAfter); w != "" {
				r.Warn(w)
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	na := metav1.NewTime(notAfter)
	reason := EventIssued
	if renewal {
		reason = EventRenewed
	}
	// Bound beside the current user already (prebind), the new one holds: the current one goes with the
	// records. Else the bindings come first.
	if !prebind {
		if err := bindAll(); err != nil {
			return nil, err
		}
	}
	id := identityFor(c, self.ClusterID, o, tenant, certPEM, token, integrityKey)
	if o.Bound != nil {
		o.Bound(id) // the consumer may store it while the provider records it
	}
	// Then, all at once: the Tenant's record, the Event, the CSR's deletion (it is done with), and the
	// second look at the lists.
	if err := member.Parallel(func() error {
		return member.Step(r, "Recording the issuance in the Tenant", "Tenant updated", func() error {
			return member.Parallel(func() error {
				if sandboxEarly { // not recorded with the sandbox (the Tenant exists): only now is the request known to issue
					return applyTenantSpec(ctx, c, ns, o.ConsumerID, tenant)
				}
				return nil
			}, func() error {
				return applyTenantStatus(ctx, c, o.ConsumerID, v1alpha1.TenantStatus{Phase: PhaseActive, PinnedPublicKey: tenant.Spec.PublicKey, User: user,
					CSRHash: csrHash, Certificate: certPEM, NotAfter: &na, Credential: credKind, ClusterRole: o.ClusterRole, Sandbox: o.Sandbox.Status(),
					APIServer: o.APIServer, CA: o.CA, Lifetime: DurationPtr(o.Expiration), MaxLifetime: DurationPtr(o.MaxExpiration)})
			})
		})
	}, func() error {
		Audit(ctx, c, TenantObject(o.ConsumerID), reason, "identity ("+credKind+") issued to consumer "+o.ConsumerID+" in "+ns,
			&Credential{User: user, NotAfter: notAfter})
		return nil
	}, func() error {
		if req != nil {
			credential.DeleteCSR(ctx, c, req)
			req = nil
		}
		return nil
	}, func() error {
		if prebind {
			// Here after the pre-binding, both lists are read afresh: the early one of the extra namespaces
			// was the pre-binding's, and the early ServiceAccounts are dropped unread.
			_, _, _ = c.ServiceAccountsRead(ns).Taken(ctx, c)
			return bindAll()
		}
		if !listedEarly {
			return nil
		}
		return member.Parallel(
			func() error { return rebindExtra(ctx, c, o.ConsumerID, user, o.ClusterRole) },
			func() error { return credential.DeleteCredentialAccounts(ctx, c, ns, keepUser()) },
		)
	}); err != nil {
		return nil, err
	}
	ReportChanges(r, changes)
	return id, nil
}

// Tenant phases.
const (
	PhaseActive  = "Active"
	PhaseRevoked = "Revoked"
)

// applyTenantStatus server-side applies the Tenant's status.
func applyTenantStatus(ctx context.Context, c *member.Cluster, consumerID string, st v1alpha1.TenantStatus) error {
	status := &v1alpha1.Tenant{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{Name: consumerID, Namespace: member.TenantNamespace(consumerID)},
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
		if err := member.FromUnstructured(u, &t); err != nil {
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
func buildSandbox(ctx context.Context, c *member.Cluster, ns string, o IssueOptions, tenant *v1alpha1.Tenant) error {
	return member.Step(c.Reporter(), "Building the sandbox "+ns, "Sandbox "+ns+" ready (Pod Security "+o.Sandbox.PodSecurity+", quota, limits, network policy)", func() error {
		var also []func() error
		if tenant != nil {
			also = append(also, func() error { return applyTenantSpec(ctx, c, ns, o.ConsumerID, tenant) })
		}
		sb := o.Sandbox
		var ledger *sandbox.GrantLedger
		recorded := member.Background(func() error {
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

// applyTenantSpec records the consumer's request in its Tenant.
func applyTenantSpec(ctx context.Context, c *member.Cluster, ns, consumerID string, tenant *v1alpha1.Tenant) error {
	t := &v1alpha1.Tenant{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{Name: consumerID, Namespace: ns, Labels: member.TenantLabels(consumerID)},
		Spec:       tenant.Spec,
	}
	return c.ApplyTyped(ctx, v1alpha1.TenantGVR, ns, t)
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
}

// rebindExtra binds the pairing's new user in every extra namespace of the consumer (renewal), with also
// beside it (see bindRole).
func rebindExtra(ctx context.Context, c *member.Cluster, consumerID, user, clusterRole string, also ...string) error {
	extra, err := NamespacesOf(ctx, c, consumerID, member.KindExtra)
	if err != nil {
		return err
	}
	jobs := make([]func() error, len(extra))
	for i, ns := range extra {
		jobs[i] = func() error {
			if ns.DeletionTimestamp != nil {
				return nil
			}
			return sandbox.BindRole(ctx, c, ns.Name, user, clusterRole, consumerID, also...)
		}
	}
	return member.Parallel(jobs...)
}

// NamespacesOf lists a consumer's namespaces of the given kinds.
func NamespacesOf(ctx context.Context, c *member.Cluster, consumerID string, kinds ...string) ([]corev1.Namespace, error) {
	return c.NamespacesOfRead(consumerID, kinds...).Take(ctx, c)
}

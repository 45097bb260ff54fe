package exchange

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// AllowExchangeOptions say which of a consumer's requests the provider answers, and what it accepts.
type AllowExchangeOptions struct {
	ConsumerID string
	// Names are the requests to answer, as listed: nothing else is answered.
	Names []string
	// AllowReach names the requests whose reach (ScopeReach, or with an unconstrained grant the target's
	// TargetReach) the administrator accepts; any other request with a reach is refused.
	AllowReach []string
	// AllowUnconstrained accepts the legacy impersonate grant on a provider without constrained
	// impersonation: the credential may then do everything its target may.
	AllowUnconstrained bool
	// Expiration is the lifetime asked for the certificates; 0 keeps the one the grant (rule, target,
	// scope) was last issued with, or ExchangeExpiration for a grant never issued. Either way the
	// pairing's recorded maximum lifetime caps it.
	Expiration time.Duration
}

// ReachError says that a request's grant reaches beyond a namespaced share and was not accepted.
type ReachError struct {
	Name  string
	Reach []string
	Mode  string
}

func (e *ReachError) Error() string {
	what := "its scope holds"
	if e.Mode == sandbox.ModeUnconstrained {
		what = "without constrained impersonation its target may do all it may, which holds"
	}
	return fmt.Sprintf("ExchangeRequest %s was not answered: %s %s; answer it only if you accept that, explicitly, for this request", e.Name, what, strings.Join(e.Reach, ", "))
}

// UnconstrainedError says that the provider cannot bound the credential to its scope.
type UnconstrainedError struct {
	Name   string
	Reason string
}

func (e *UnconstrainedError) Error() string {
	return fmt.Sprintf("ExchangeRequest %s was not answered: %s, so a credential could not be held to its scope; the fallback (the legacy impersonate verb: everything the target may do, after a check of its reach) must be accepted explicitly", e.Name, e.Reason)
}

// boundMargin is added to a certificate's asked end for its Bound: the signer's clock and rounding.
const boundMargin = time.Hour

// AllowExchange (provider) issues the credentials of the named requests, each after every check passed
// (ValidateExchangeRequest, no earlier refusal or revocation of it in the provider's records, an active
// pairing, a user never revoked, the reach accepted): it prints the exact RBAC it will grant, records the
// decision with a bound on the certificate's end, issues the certificate through the CSR API (exactly the
// CSR this run created, checked once issued), records it, applies the RBAC (constrained:
// impersonate:user-info on the target, impersonate-on on the scope; or, only when accepted, the legacy
// impersonate verb on the target), then writes the answer into the request's status for the consumer. A
// request that fails its checks is answered Refused with nothing created. A request already issued keeps
// its certificate and converges to the grant recorded, never a wider one. It returns what it answered.
func AllowExchange(ctx context.Context, c *member.Cluster, o AllowExchangeOptions) ([]Info, error) {
	if len(o.Names) == 0 {
		return nil, errors.New("no request named: give the names of the requests to answer, as listed")
	}
	if _, err := c.Load(ctx); err != nil {
		return nil, err
	}
	// The revocation count is read before the Tenant is seen active: a revoke that begins after this is
	// seen by the look again once a grant is bound (stillActive).
	before, err := handshake.ReadGrantState(ctx, c, o.ConsumerID)
	if err != nil {
		return nil, err
	}
	tenant, err := grants.ActiveTenant(ctx, c, o.ConsumerID)
	if err != nil {
		return nil, err
	}
	v, err := readView(ctx, c, o.ConsumerID)
	if err != nil {
		return nil, err
	}
	var chosen []*v1alpha1.ExchangeRequest
	nf := &NotFoundError{ConsumerID: o.ConsumerID}
	for _, name := range slices.Compact(slices.Sorted(slices.Values(o.Names))) {
		if r := v.request(name); r != nil {
			chosen = append(chosen, r)
		} else {
			nf.Missing = append(nf.Missing, name)
		}
	}
	if len(nf.Missing) > 0 {
		for _, r := range v.requests {
			nf.Existing = append(nf.Existing, r.Name)
		}
		return nil, nf
	}
	support, err := sandbox.ConstrainedImpersonation(ctx, c)
	if err != nil {
		return nil, err
	}
	decisions := slices.Collect(maps.Values(v.decisions))
	rr := NewReader(c)
	answered := make([]Info, 0, len(chosen))
	var errs []error
	for _, r := range chosen {
		ro := o
		if !v.decisions[r.Name].issuedUntil(c.CurrentTime()) { // a certificate kept keeps its lifetime: nothing to say
			ro.Expiration = Lifetime(c.Reporter(), o.Expiration, r, decisions, tenant)
		}
		a := &answer{c: c, o: ro, support: support, r: r, d: v.decisions[r.Name], rr: rr, before: before}
		info, err := a.run(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("ExchangeRequest %s/%s: %w", member.TenantNamespace(o.ConsumerID), r.Name, err))
		}
		answered = append(answered, info)
	}
	if err := pruneWithdrawn(ctx, c, v); err != nil {
		errs = append(errs, err)
	}
	return answered, errors.Join(errs...)
}

// answer is the answer to one request, in steps: check, show, certify, bind, tell.
type answer struct {
	c       *member.Cluster
	o       AllowExchangeOptions
	support member.ImpersonationSupport
	r       *v1alpha1.ExchangeRequest
	d       *Decision // the provider's record of an earlier answer, nil when none
	rr      *Reader
	before  handshake.GrantState // the consumer as read before anything was bound

	info     Info
	t        Target
	s        Scope
	hash     string
	user     string
	mode     string
	reach    []string
	target   []string // what the target itself reaches (TargetReach), recorded for verify
	issued   bool     // a certificate recorded is kept
	cert     []byte
	notAfter time.Time
}

func (a *answer) run(ctx context.Context) (Info, error) {
	a.info = requestInfo(a.o.ConsumerID, a.r)
	if err := ValidateExchangeRequest(a.r, a.o.ConsumerID); err != nil {
		a.info.Phase, a.info.Reason = ExchangeRefused, err.Error()
		// Not a decision of the administrator's (nothing is recorded): the consumer is told why.
		if serr := applyExchangeStatus(ctx, a.c, member.TenantNamespace(a.o.ConsumerID), a.r.Name, v1alpha1.ExchangeRequestStatus{Phase: ExchangeRefused, Reason: err.Error()}); serr != nil {
			return a.info, errors.Join(err, serr)
		}
		return a.info, err
	}
	if err := a.check(ctx); err != nil {
		return a.info, err
	}
	roles, bindings := grantRBAC(a.o.ConsumerID, a.r.Name, a.user, a.t, a.s, a.mode)
	for _, line := range describeRBAC(a.r.Name, roles, bindings) {
		a.c.Reporter().Info(line)
	}
	if err := a.certify(ctx); err != nil {
		return a.info, err
	}
	if err := member.Step(a.c.Reporter(), "Letting "+a.user+" act as "+a.t.User, exchangeGrantNote(RBACName(a.o.ConsumerID, a.r.Name), a.mode, a.t, a.s), func() error {
		if err := applyRBAC(ctx, a.c, roles, bindings); err != nil {
			return err
		}
		return pruneStaleRBAC(ctx, a.c, a.o.ConsumerID, hashOf(a.r.Name), roles, bindings)
	}); err != nil {
		return a.info, err
	}
	// A revoke that ran while this run answered may have read the grants before it bound: the consumer is
	// read again now that the grant exists, and if it was cut meanwhile the grant is taken back before the
	// consumer is told anything.
	if err := stillActive(ctx, a.c, a.o.ConsumerID, a.before, a.user); err != nil {
		return a.info, errors.Join(err, a.takeBack(ctx, err))
	}
	return a.info, a.tell(ctx)
}

// stillActive looks at the consumer again once a grant is bound (handshake.Recheck): revoked since the
// first look (the record counts one more revocation, the Tenant is no longer Active, its own RoleBinding is
// gone) or the user recorded revoked, and the grant must be taken back. Revoke counts a revocation before it deletes any binding, and
// looks at the consumer's bindings once more after it marks the Tenant, so no order of the two leaves a
// grant behind.
func stillActive(ctx context.Context, c *member.Cluster, consumerID string, before handshake.GrantState, user string) error {
	if c.DryRun {
		return nil // nothing was bound
	}
	var rc handshake.Rechecked
	var rb *rbacv1.RoleBinding
	err := parallel.All(
		func() (err error) { rc, err = handshake.Recheck(ctx, c, consumerID, before, user); return err },
		// Revoke deletes the consumer's own RoleBinding right after it counts the revocation, long before it
		// marks the Tenant: a grant made while it runs sees that too, and is taken back before the consumer
		// is told anything.
		func() (err error) {
			rb, err = grants.OurRoleBinding(ctx, c, member.TenantNamespace(consumerID), consumerID)
			return err
		},
	)
	if err != nil {
		return err
	}
	if rc.Revoked || rb == nil {
		return &handshake.RevokedMeanwhileError{ConsumerID: consumerID, What: "the exchange grant"}
	}
	return nil
}

// takeBack undoes a grant bound while its consumer was being revoked: its user recorded as revoked, its
// RBAC deleted, its decision Revoked. The consumer was never told.
func (a *answer) takeBack(ctx context.Context, why error) error {
	v, err := readView(ctx, a.c, a.o.ConsumerID)
	if err != nil {
		return err
	}
	bindings := bindingsOf(v.bindings, hashOf(a.r.Name))
	if err := handshake.RecordRevoked(ctx, a.c, a.o.ConsumerID, []handshake.RevokedUser{{User: a.user, NotAfter: a.d.revokeUntil(a.c.CurrentTime())}}); err != nil {
		return err
	}
	if err := deleteExchangeRBAC(ctx, a.c, a.o.ConsumerID, bindings); err != nil {
		return err
	}
	return markRevoked(ctx, a.c, a.o.ConsumerID, v.decisions[a.r.Name], nil, a.r.Name, "taken back: "+why.Error())
}

// check refuses what was decided against before, a user revoked, a mode or reach not accepted, a scope
// naming a namespace that does not exist; it sets the grant's mode and reach.
func (a *answer) check(ctx context.Context) error {
	rep := a.c.Reporter()
	if a.d != nil {
		switch a.d.Phase {
		case ExchangeRevoked:
			a.info = decisionInfo(a.d)
			return fmt.Errorf("was revoked (%s) and is never answered again: the consumer asks anew, with a new key", a.d.Reason)
		case ExchangeRefused:
			a.info = decisionInfo(a.d)
			return fmt.Errorf("was refused (%s) and is never answered again: the consumer asks anew", a.d.Reason)
		}
	}
	a.t = FromExchangeTarget(a.r.Spec.Target)
	a.s = exchangeScope(a.r.Spec.Scope).Canonical()
	a.hash = hashOf(a.r.Name)
	a.user = User(a.o.ConsumerID, a.hash)
	if err := handshake.CheckNotRevoked(ctx, a.c, a.o.ConsumerID, a.user); err != nil {
		return err
	}
	a.issued = a.d.issuedUntil(a.c.CurrentTime())
	// The mode is decided anew on every run, from what the provider supports and what its administrator
	// accepts now, never from a record: where constrained impersonation is honoured no grant is ever
	// unconstrained, and the fallback needs --allow-unconstrained each time it is applied.
	a.mode = sandbox.ModeConstrained
	switch {
	case a.support.Constrained:
	case !a.o.AllowUnconstrained:
		return &UnconstrainedError{Name: a.r.Name, Reason: a.support.Reason}
	default:
		a.mode = sandbox.ModeUnconstrained
	}
	var err error
	var forbidden bool
	if a.mode == sandbox.ModeUnconstrained {
		if a.reach, err = TargetReach(ctx, a.rr, a.t); err == nil {
			a.target = a.reach
			forbidden, err = targetWritesDecisions(ctx, a.c, a.t)
		}
	} else {
		// The scope bounds the credential; what the target itself reaches is recorded all the same, so that
		// rights it gains after the consent are seen (verify).
		err = parallel.All(
			func() (err error) { a.reach, err = ScopeReach(ctx, a.rr, a.s); return err },
			func() (err error) { a.target, err = TargetReach(ctx, a.rr, a.t); return err },
		)
		forbidden = a.s.WritesDecisions()
	}
	if err != nil {
		return err
	}
	if forbidden {
		return fmt.Errorf("was not answered: its grant %w", ErrWritesDecisions)
	}
	// Accepted before: the same mode and the same reach, as recorded when the administrator accepted them.
	accepted := a.issued && a.d.Mode == a.mode && slices.Equal(a.d.Reach, a.reach)
	if len(a.reach) > 0 && !accepted && !slices.Contains(a.o.AllowReach, a.r.Name) {
		return &ReachError{Name: a.r.Name, Reach: a.reach, Mode: a.mode}
	}
	if len(a.reach) > 0 && !accepted {
		rep.Warn(fmt.Sprintf("ExchangeRequest %s reaches beyond a namespaced share, accepted as asked: %s", a.r.Name, strings.Join(a.reach, ", ")))
	}
	if a.mode == sandbox.ModeUnconstrained {
		rep.Warn(fmt.Sprintf("ExchangeRequest %s is answered without constrained impersonation (%s): its credential may do everything %s%s may do on this cluster, now and later",
			a.r.Name, a.support.Reason, a.t.User, groupsNote(a.t.Groups)))
	}
	return checkScopeNamespaces(ctx, a.c, a.s)
}

// certify keeps the certificate recorded, or records the decision with the bound of the certificate about
// to be issued, issues it, and records it.
func (a *answer) certify(ctx context.Context) error {
	if a.issued {
		a.c.Reporter().Info("ExchangeRequest " + a.r.Name + " was already issued: its certificate is kept, the rest converges")
		a.cert, a.notAfter = a.d.Certificate, *a.d.NotAfter
		if a.d.Mode == a.mode && slices.Equal(a.d.Reach, a.reach) && a.d.TargetReach != nil {
			return nil
		}
		// The record says otherwise than what is granted now (a narrower mode, or a record someone else
		// wrote), or predates the record of the target's reach: it is made to say what is granted.
		a.d.Mode, a.d.Reach = a.mode, a.reach
		if a.d.TargetReach == nil {
			a.d.TargetReach = nonNil(a.target)
		}
		return writeDecision(ctx, a.c, a.d)
	}
	d := a.d
	if d == nil {
		d = newDecision(a.o.ConsumerID, &a.info)
	}
	d.Phase, d.Mode, d.Reach, d.TargetReach, d.User, d.Reason = ExchangeIssuing, a.mode, a.reach, nonNil(a.target), a.user, ""
	d.Certificate, d.NotAfter, d.Lifetime = nil, nil, metav1.Duration{Duration: a.o.Expiration}
	d.Bound = laterOf(d.Bound, a.c.CurrentTime().Add(a.o.Expiration+boundMargin))
	if err := writeDecision(ctx, a.c, d); err != nil {
		return err
	}
	a.d = d
	var err error
	if a.cert, a.notAfter, err = exchangeCertificate(ctx, a.c, a.o, a.r, a.user); err != nil {
		return err
	}
	d.Phase, d.Certificate, d.NotAfter = ExchangeIssued, a.cert, &a.notAfter
	return writeDecision(ctx, a.c, d)
}

// nonNil records an empty reach as an empty list, not as none recorded.
func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// tell writes the answer into the request's status, the consumer's copy, and audits it.
func (a *answer) tell(ctx context.Context) error {
	na := metav1.NewTime(a.notAfter)
	if err := applyExchangeStatus(ctx, a.c, member.TenantNamespace(a.o.ConsumerID), a.r.Name, v1alpha1.ExchangeRequestStatus{Phase: ExchangeIssued,
		Mode: a.mode, Reach: a.reach, User: a.user, Certificate: a.cert, NotAfter: &na, Lifetime: &a.d.Lifetime}); err != nil {
		return fmt.Errorf("recording the answer: %w", err)
	}
	handshake.Audit(ctx, a.c, handshake.TenantObject(a.o.ConsumerID), handshake.EventGranted, "exchange credential "+a.r.Name+" (rule "+a.r.Spec.Rule+", "+
		strings.ToLower(a.mode)+") may act as "+a.t.User+groupsNote(a.t.Groups)+" for "+a.s.String(), &handshake.Credential{User: a.user, NotAfter: a.notAfter})
	a.info = decisionInfo(a.d)
	return nil
}

func exchangeGrantNote(name, mode string, t Target, s Scope) string {
	if mode == sandbox.ModeUnconstrained {
		return "ClusterRole and ClusterRoleBinding " + name + ": impersonate user " + t.User + groupsNote(t.Groups) + " (unconstrained)"
	}
	return "RBAC " + name + ": act as " + t.User + groupsNote(t.Groups) + " only for " + s.String()
}

// exchangeCertificate issues the request's certificate through the CSR API.
func exchangeCertificate(ctx context.Context, c *member.Cluster, o AllowExchangeOptions, r *v1alpha1.ExchangeRequest, user string) ([]byte, time.Time, error) {
	csr, err := credential.ParseCSR(r.Spec.CSR)
	if err != nil {
		return nil, time.Time{}, err
	}
	req, err := credential.CreateCSR(ctx, c, o.ConsumerID, exchangeProviderLabels(o.ConsumerID, hashOf(r.Name)), r.Spec.CSR, o.Expiration)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer credential.DeleteCSR(ctx, c, req)
	cert, err := credential.Issue(ctx, c, credential.Issuance{CSR: req, Request: csr, Mode: credential.CredentialCertificate,
		Expiration: o.Expiration, Noun: "exchange certificate",
		Begin: "Issuing the exchange credential " + r.Name + " through the CSR API", Done: "Exchange credential " + r.Name + " issued to " + user})
	return cert.Certificate, cert.NotAfter, err
}

// checkScopeNamespaces refuses a scope naming a namespace this cluster does not have, before anything is
// issued: its RoleBinding could not be made.
func checkScopeNamespaces(ctx context.Context, c *member.Cluster, s Scope) error {
	jobs := make([]func() error, len(s.Namespaces))
	for i, ns := range s.Namespaces {
		jobs[i] = func() error {
			_, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("spec.scope.namespaces: namespace %q does not exist on this cluster", ns)
			}
			return err
		}
	}
	return parallel.All(jobs...)
}

package exchange

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// A provider answers exactly what its administrator saw. A request's name is a hash of everything it asks
// (rule, target, scope and the credential's public key) and its spec cannot change once created (the CRD
// refuses updates), so the name the administrator reads in a listing can only ever be answered with what
// the listing showed. Answers are given by name, never by rule: a rule name is the tenant's to choose, and
// a request the tenant adds under it later has not been seen.

// Info is a consumer's exchange request as the provider sees it.
type Info struct {
	ConsumerID string   `json:"consumerID"`
	Name       string   `json:"name"`
	Rule       string   `json:"rule"`
	User       string   `json:"user"`
	Groups     []string `json:"groups,omitempty"`
	UID        string   `json:"uid,omitempty"`
	Scope      Scope    `json:"scope"`
	// ClusterWide is true when the scope names no namespace.
	ClusterWide bool `json:"clusterWide"`
	// Reach lists what the scope holds beyond a namespaced share: each needs an explicit override.
	Reach []string `json:"reach,omitempty"`
	// TargetAccess is what the target itself may do within the scope (access reviews), for pending requests.
	TargetAccess *ScopeAccess `json:"targetAccess,omitempty"`
	// TargetReach is what the target itself may do beyond a namespaced share of this cluster (access
	// reviews), for pending requests: what an unconstrained grant would hand out.
	TargetReach []string `json:"targetReach,omitempty"`
	// KeySHA256 is the fingerprint of the credential's public key, as the consumer's side shows it.
	KeySHA256  string     `json:"keySHA256,omitempty"`
	Phase      string     `json:"phase"`
	Mode       string     `json:"mode,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	Credential string     `json:"credential,omitempty"` // the user of the issued certificate
	NotAfter   *time.Time `json:"notAfter,omitempty"`
}

// exchangePhase is a request's phase: its spec never changes, so its status answers it.
func exchangePhase(r *v1alpha1.ExchangeRequest) string {
	switch r.Status.Phase {
	case ExchangeRefused, ExchangeRevoked, ExchangeIssued:
		return r.Status.Phase
	}
	return ExchangePending
}

func exchangeScope(s v1alpha1.ExchangeScope) Scope {
	return Scope{Verbs: s.Verbs, Resources: s.Resources, Namespaces: s.Namespaces}
}

// ToExchangeScope is a scope as a request records it, in canonical order.
func ToExchangeScope(s Scope) v1alpha1.ExchangeScope {
	s = s.Canonical()
	return v1alpha1.ExchangeScope{Verbs: s.Verbs, Resources: s.Resources, Namespaces: s.Namespaces}
}

// infoOf is what a listing shows of a request.
func infoOf(consumerID string, r *v1alpha1.ExchangeRequest) Info {
	s := exchangeScope(r.Spec.Scope)
	info := Info{ConsumerID: consumerID, Name: r.Name, Rule: r.Spec.Rule, User: r.Spec.Target.User, Groups: r.Spec.Target.Groups,
		UID: r.Spec.Target.UID, Scope: s.Canonical(), ClusterWide: s.ClusterWide(), Reach: s.Reach(), Phase: exchangePhase(r),
		Reason: r.Status.Reason, Mode: r.Status.Mode}
	if csr, err := credential.ParseCSR(r.Spec.CSR); err == nil {
		if der, err := x509.MarshalPKIXPublicKey(csr.PublicKey); err == nil {
			sum := sha256.Sum256(der)
			info.KeySHA256 = hex.EncodeToString(sum[:])
		}
	}
	if info.Phase == ExchangeIssued {
		info.Credential = r.Status.User
		info.NotAfter = handshake.TimeOf(r.Status.NotAfter)
		info.Reach = r.Status.Reach
	}
	return info
}

// listExchangeRequests reads a consumer's requests, sorted by name.
func listExchangeRequests(ctx context.Context, c *member.Cluster, consumerID string) ([]v1alpha1.ExchangeRequest, error) {
	l, err := c.Dynamic.Resource(v1alpha1.ExchangeRequestGVR).Namespace(member.TenantNamespace(consumerID)).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]v1alpha1.ExchangeRequest, 0, len(l.Items))
	for i := range l.Items {
		var r v1alpha1.ExchangeRequest
		if objects.FromUnstructured(&l.Items[i], &r) == nil {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.ExchangeRequest) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Requests (provider) lists a consumer's exchange requests with what each would hand out: the
// scope, its reach, and, for a pending one, what the target itself may do within the scope.
func Requests(ctx context.Context, c *member.Cluster, consumerID string) ([]Info, error) {
	reqs, err := listExchangeRequests(ctx, c, consumerID)
	if err != nil {
		return nil, err
	}
	out := make([]Info, len(reqs))
	jobs := make([]func() error, len(reqs))
	reach := map[string][]string{} // by target: several requests often share one
	var mu sync.Mutex
	for i := range reqs {
		out[i] = infoOf(consumerID, &reqs[i])
		jobs[i] = func() error {
			if out[i].Phase != ExchangePending || ValidateExchangeRequest(&reqs[i], consumerID) != nil {
				return nil
			}
			t := FromExchangeTarget(reqs[i].Spec.Target)
			var err error
			if out[i].TargetAccess, err = TargetAccess(ctx, c, t, out[i].Scope); err != nil {
				return err
			}
			key := GrantHash("", t, Scope{})
			mu.Lock()
			r, ok := reach[key]
			mu.Unlock()
			if !ok {
				if r, err = TargetReach(ctx, c, t); err != nil {
					return err
				}
				mu.Lock()
				reach[key] = r
				mu.Unlock()
			}
			out[i].TargetReach = r
			return nil
		}
	}
	return out, parallel.All(jobs...)
}

// ValidateExchangeRequest checks a consumer's ExchangeRequest before anything is created: its name is its
// rule, target, scope and key's, the target is a plain identity (never in system: or kubectl-federate:),
// the scope is well formed, and the CSR asks for exactly the credential's user, with nothing else in it.
func ValidateExchangeRequest(r *v1alpha1.ExchangeRequest, consumerID string) error {
	if r.Spec.Rule == "" || len(r.Spec.Rule) > MaxRuleNameLength || member.ValidateSliceName("spec.rule", r.Spec.Rule) != nil {
		return fmt.Errorf("spec.rule %q: must be a DNS label of at most %d characters", member.Truncate(r.Spec.Rule), MaxRuleNameLength)
	}
	t := FromExchangeTarget(r.Spec.Target)
	if err := ValidateTarget("spec.target", t); err != nil {
		return err
	}
	s := exchangeScope(r.Spec.Scope)
	if err := ValidateScope("spec.scope", s); err != nil {
		return err
	}
	if len(s.Verbs) == 0 || len(s.Resources) == 0 {
		return errors.New("spec.scope: must name its verbs and resources")
	}
	csr, err := credential.ParseCSR(r.Spec.CSR)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKIXPublicKey(csr.PublicKey)
	if err != nil {
		return fmt.Errorf("spec.csr: %w", err)
	}
	hash := RequestHash(r.Spec.Rule, t, s, der)
	if want := RequestName(r.Spec.Rule, hash); r.Name != want {
		return fmt.Errorf("metadata.name %q: must be %q, the name of this rule, target, scope and key", member.Truncate(r.Name), want)
	}
	if want := User(consumerID, hash); csr.Subject.CommonName != want {
		return fmt.Errorf("spec.csr: subject CN %q is not the user of this request (%q)", member.Truncate(csr.Subject.CommonName), want)
	}
	return credential.CheckCSRSubject(csr, csr.Subject.CommonName)
}

// AllowExchangeOptions say which of a consumer's requests the provider answers, and what it accepts.
type AllowExchangeOptions struct {
	ConsumerID string
	// Names are the requests to answer, as listed: nothing else is answered.
	Names []string
	// AllowReach names the requests whose reach (Scope.Reach, or with an unconstrained grant the
	// target's TargetReach) the administrator accepts; any other request with a reach is refused.
	AllowReach []string
	// AllowUnconstrained accepts the legacy impersonate grant on a provider without constrained
	// impersonation: the credential may then do everything its target may.
	AllowUnconstrained bool
	// Expiration is the lifetime asked for the certificates; 0 keeps the one the grant (rule, target,
	// scope) was last issued with, or ExchangeExpiration for a grant never issued. Either way the
	// pairing's recorded maximum lifetime caps it.
	Expiration time.Duration
}

// NotFoundError names requests that the consumer has not left (any more), and those it has.
type NotFoundError struct {
	ConsumerID string
	Missing    []string
	Existing   []string
}

func (e *NotFoundError) Error() string {
	have := "it has left none"
	if len(e.Existing) > 0 {
		have = "it has left " + strings.Join(e.Existing, ", ")
	}
	return fmt.Sprintf("ExchangeRequest %q of consumer %q not found in %s (%s)", strings.Join(e.Missing, `", "`), e.ConsumerID, member.TenantNamespace(e.ConsumerID), have)
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

// AllowExchange (provider) issues the credentials of the named requests, each after every check passed
// (ValidateExchangeRequest, an active pairing, a user never revoked, the reach accepted): the certificate
// through the CSR API (exactly the CSR this run created, checked once issued), then the RBAC of the grant
// (constrained: impersonate:user-info on the target, impersonate-on on the scope; or, only when accepted,
// the legacy impersonate verb on the target), then the answer in the request's status. A request that fails
// its checks is answered Refused with nothing created. A request already issued keeps its certificate and
// converges to the same grant; one revoked is never answered again. It returns what it answered.
func AllowExchange(ctx context.Context, c *member.Cluster, o AllowExchangeOptions) ([]Info, error) {
	if len(o.Names) == 0 {
		return nil, errors.New("no request named: give the names of the requests to answer, as listed")
	}
	if _, err := c.Load(ctx); err != nil {
		return nil, err
	}
	tenant, err := grants.ActiveTenant(ctx, c, o.ConsumerID)
	if err != nil {
		return nil, err
	}
	reqs, err := listExchangeRequests(ctx, c, o.ConsumerID)
	if err != nil {
		return nil, err
	}
	var chosen []*v1alpha1.ExchangeRequest
	nf := &NotFoundError{ConsumerID: o.ConsumerID}
	for _, name := range slices.Compact(slices.Sorted(slices.Values(o.Names))) {
		i := slices.IndexFunc(reqs, func(r v1alpha1.ExchangeRequest) bool { return r.Name == name })
		if i < 0 {
			nf.Missing = append(nf.Missing, name)
			continue
		}
		chosen = append(chosen, &reqs[i])
	}
	if len(nf.Missing) > 0 {
		for _, r := range reqs {
			nf.Existing = append(nf.Existing, r.Name)
		}
		return nil, nf
	}
	support, err := sandbox.ConstrainedImpersonation(ctx, c)
	if err != nil {
		return nil, err
	}
	answered := make([]Info, 0, len(chosen))
	var errs []error
	for _, r := range chosen {
		ro := o
		ro.Expiration = Lifetime(c.Reporter(), o.Expiration, r, reqs, tenant)
		info, err := allowExchange(ctx, c, ro, support, r)
		if err != nil {
			errs = append(errs, fmt.Errorf("ExchangeRequest %s/%s: %w", member.TenantNamespace(o.ConsumerID), r.Name, err))
		}
		if info != nil {
			answered = append(answered, *info)
		}
	}
	if err := pruneExchangeRBAC(ctx, c, o.ConsumerID, reqs); err != nil {
		errs = append(errs, err)
	}
	return answered, errors.Join(errs...)
}

func allowExchange(ctx context.Context, c *member.Cluster, o AllowExchangeOptions, support member.ImpersonationSupport, r *v1alpha1.ExchangeRequest) (*Info, error) {
	rep := c.Reporter()
	tns := member.TenantNamespace(o.ConsumerID)
	info := infoOf(o.ConsumerID, r)
	if err := ValidateExchangeRequest(r, o.ConsumerID); err != nil {
		info.Phase, info.Reason = ExchangeRefused, err.Error()
		if serr := applyExchangeStatus(ctx, c, tns, r.Name, v1alpha1.ExchangeRequestStatus{Phase: ExchangeRefused, Reason: err.Error()}); serr != nil {
			return &info, errors.Join(err, serr)
		}
		return &info, err
	}
	switch r.Status.Phase {
	case ExchangeRevoked:
		return &info, fmt.Errorf("was revoked (%s) and is never answered again: the consumer asks anew, with a new key", r.Status.Reason)
	case ExchangeRefused:
		return &info, fmt.Errorf("was refused (%s)", r.Status.Reason)
	}
	t := FromExchangeTarget(r.Spec.Target)
	s := exchangeScope(r.Spec.Scope).Canonical()
	hash := strings.TrimPrefix(r.Name, r.Spec.Rule+"-")
	user := User(o.ConsumerID, hash)
	if err := handshake.CheckNotRevoked(ctx, c, o.ConsumerID, user); err != nil {
		return &info, err
	}
	issued := r.Status.Phase == ExchangeIssued && r.Status.NotAfter != nil && c.CurrentTime().Before(r.Status.NotAfter.Time)
	mode := sandbox.ModeConstrained
	switch {
	case issued && r.Status.Mode != "":
		mode = r.Status.Mode // an answer given is kept as it was given
	case !support.Constrained && !o.AllowUnconstrained:
		return &info, &UnconstrainedError{Name: r.Name, Reason: support.Reason}
	case !support.Constrained:
		mode = sandbox.ModeUnconstrained
	}
	reach := s.Reach()
	if mode == sandbox.ModeUnconstrained {
		var err error
		if reach, err = TargetReach(ctx, c, t); err != nil {
			return &info, err
		}
	}
	accepted := issued && slices.Equal(r.Status.Reach, reach)
	if len(reach) > 0 && !accepted && !slices.Contains(o.AllowReach, r.Name) {
		return &info, &ReachError{Name: r.Name, Reach: reach, Mode: mode}
	}
	if len(reach) > 0 && !accepted {
		rep.Warn(fmt.Sprintf("ExchangeRequest %s reaches beyond a namespaced share, accepted as asked: %s", r.Name, strings.Join(reach, ", ")))
	}
	if mode == sandbox.ModeUnconstrained {
		rep.Warn(fmt.Sprintf("ExchangeRequest %s is answered without constrained impersonation (%s): its credential may do everything %s%s may do on this cluster, now and later",
			r.Name, support.Reason, t.User, groupsNote(t.Groups)))
	}
	if err := checkScopeNamespaces(ctx, c, s); err != nil {
		return &info, err
	}
	certPEM, notAfter, err := exchangeCertificate(ctx, c, o, r, user, issued)
	if err != nil {
		return &info, err
	}
	name := RBACName(o.ConsumerID, r.Name)
	if err := member.Step(rep, "Letting "+user+" act as "+t.User, exchangeGrantNote(name, mode, t, s), func() error {
		return applyExchangeRBAC(ctx, c, o.ConsumerID, hash, name, user, t, s, mode)
	}); err != nil {
		return &info, err
	}
	na := metav1.NewTime(notAfter)
	lifetime := &metav1.Duration{Duration: o.Expiration}
	if issued && r.Status.Lifetime != nil {
		lifetime = r.Status.Lifetime // the certificate kept was asked with that one
	}
	if err := applyExchangeStatus(ctx, c, tns, r.Name, v1alpha1.ExchangeRequestStatus{Phase: ExchangeIssued, Mode: mode, Reach: reach, User: user,
		Certificate: certPEM, NotAfter: &na, Lifetime: lifetime}); err != nil {
		return &info, fmt.Errorf("recording the answer: %w", err)
	}
	handshake.Audit(ctx, c, handshake.TenantObject(o.ConsumerID), handshake.EventGranted, "exchange credential "+r.Name+" (rule "+r.Spec.Rule+", "+strings.ToLower(mode)+") may act as "+t.User+
		groupsNote(t.Groups)+" for "+s.String(), &handshake.Credential{User: user, NotAfter: notAfter})
	info.Phase, info.Mode, info.Reach, info.Credential, info.NotAfter, info.TargetAccess = ExchangeIssued, mode, reach, user, &notAfter, nil
	return &info, nil
}

// Lifetime is the lifetime asked for r's certificate: the one given, else the one the latest
// issued request of the same grant (rule, target, scope) was asked with, else ExchangeExpiration; capped
// at the pairing's recorded maximum. A given lifetime that differs from the recorded one is said, as a
// warning when it is longer (issue 29: a renewal changes nothing unless asked, and says what it changes).
func Lifetime(r member.Reporter, given time.Duration, req *v1alpha1.ExchangeRequest, all []v1alpha1.ExchangeRequest, tenant *v1alpha1.Tenant) time.Duration {
	grant := GrantHash(req.Spec.Rule, FromExchangeTarget(req.Spec.Target), exchangeScope(req.Spec.Scope))
	var recorded time.Duration
	var latest time.Time
	for i := range all {
		o := &all[i]
		if o.Status.Lifetime == nil || o.Status.NotAfter == nil || o.Spec.Rule != req.Spec.Rule ||
			GrantHash(o.Spec.Rule, FromExchangeTarget(o.Spec.Target), exchangeScope(o.Spec.Scope)) != grant {
			continue
		}
		if o.Status.NotAfter.After(latest) {
			latest, recorded = o.Status.NotAfter.Time, o.Status.Lifetime.Duration
		}
	}
	lifetime := given
	switch {
	case given == 0 && recorded > 0:
		lifetime = recorded
	case given == 0:
		lifetime = ExchangeExpiration
	case recorded > 0 && given != recorded:
		handshake.ReportChanges(r, []handshake.Change{{Setting: "ExchangeRequest " + req.Name + " " + handshake.SettingLifetime,
			Old: handshake.DurationText(recorded), New: handshake.DurationText(given), Widens: given > recorded}})
	}
	if max := tenant.Status.MaxLifetime; max != nil && max.Duration > 0 && lifetime > max.Duration {
		r.Info(fmt.Sprintf("ExchangeRequest %s lifetime: %s asked, capped at the pairing's maximum %s", req.Name, handshake.DurationText(lifetime), handshake.DurationText(max.Duration)))
		lifetime = max.Duration
	}
	return lifetime
}

func exchangeGrantNote(name, mode string, t Target, s Scope) string {
	if mode == sandbox.ModeUnconstrained {
		return "ClusterRole and ClusterRoleBinding " + name + ": impersonate user " + t.User + groupsNote(t.Groups) + " (unconstrained)"
	}
	return "RBAC " + name + ": act as " + t.User + groupsNote(t.Groups) + " only for " + s.String()
}

// exchangeCertificate returns the request's certificate: the one already issued for its key, or a new one
// through the CSR API.
func exchangeCertificate(ctx context.Context, c *member.Cluster, o AllowExchangeOptions, r *v1alpha1.ExchangeRequest, user string, issued bool) ([]byte, time.Time, error) {
	if issued && len(r.Status.Certificate) > 0 {
		c.Reporter().Info("ExchangeRequest " + r.Name + " was already issued: its certificate is kept, the rest converges")
		return r.Status.Certificate, r.Status.NotAfter.Time, nil
	}
	csr, err := credential.ParseCSR(r.Spec.CSR)
	if err != nil {
		return nil, time.Time{}, err
	}
	req, err := credential.CreateCSR(ctx, c, o.ConsumerID, exchangeProviderLabels(o.ConsumerID, strings.TrimPrefix(r.Name, r.Spec.Rule+"-")), r.Spec.CSR, o.Expiration)
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

// RBACName names a credential's RBAC objects: a hash of the consumer and the request, so that no
// two consumers' names can meet, whatever '-' their IDs and rules hold.
func RBACName(consumerID, request string) string {
	sum := sha256.Sum256([]byte(consumerID + "\n" + request))
	return "federate-exchange-" + hex.EncodeToString(sum[:16])
}

// applyExchangeRBAC applies a credential's grant, roles before bindings. Constrained: a ClusterRole with
// impersonate:user-info on the target and the always-allowed reads (and, for a cluster-wide scope, the
// scope's impersonate-on rules), bound cluster-wide; for a namespaced scope a ClusterRole <name>-on with
// the scope's impersonate-on rules, bound by a RoleBinding in each scope namespace. Unconstrained: a
// ClusterRole with the legacy impersonate verb on the target, bound cluster-wide.
func applyExchangeRBAC(ctx context.Context, c *member.Cluster, consumerID, hash, name, user string, t Target, s Scope, mode string) error {
	labels := exchangeProviderLabels(consumerID, hash)
	meta := func(n, ns string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: n, Namespace: ns, Labels: labels} }
	// Bindings say whom they let their user act as, so that revoke can prove that over.
	bmeta := func(n, ns string) metav1.ObjectMeta {
		m := meta(n, ns)
		m.Annotations = map[string]string{annotationExchangeTarget: t.User}
		return m
	}
	roleRef := func(n string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: n}
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	tm := func(kind string) metav1.TypeMeta {
		return metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: kind}
	}

	rules := TargetRules(t, mode == sandbox.ModeConstrained)
	var roles []*rbacv1.ClusterRole
	var bindings []func() error
	if mode == sandbox.ModeConstrained {
		rules = append(rules, sandbox.AlwaysOn()...)
		if s.ClusterWide() {
			rules = append(rules, ScopeRules(s)...)
		} else {
			on := name + "-on"
			roles = append(roles, &rbacv1.ClusterRole{TypeMeta: tm("ClusterRole"), ObjectMeta: meta(on, ""), Rules: ScopeRules(s)})
			for _, ns := range s.Namespaces {
				rb := &rbacv1.RoleBinding{TypeMeta: tm("RoleBinding"), ObjectMeta: bmeta(name, ns), Subjects: subjects, RoleRef: roleRef(on)}
				bindings = append(bindings, func() error {
					return sandbox.WrapApply("RoleBinding "+name, ns, c.ApplyTyped(ctx, RoleBindingGVR, ns, rb))
				})
			}
		}
	}
	roles = append(roles, &rbacv1.ClusterRole{TypeMeta: tm("ClusterRole"), ObjectMeta: meta(name, ""), Rules: rules})
	crb := &rbacv1.ClusterRoleBinding{TypeMeta: tm("ClusterRoleBinding"), ObjectMeta: bmeta(name, ""), Subjects: subjects, RoleRef: roleRef(name)}
	bindings = append(bindings, func() error {
		if err := c.ApplyTyped(ctx, crbGVR, "", crb); err != nil {
			return fmt.Errorf("applying ClusterRoleBinding %s: %w", name, err)
		}
		return nil
	})
	roleJobs := make([]func() error, len(roles))
	for i, role := range roles {
		roleJobs[i] = func() error {
			if err := c.ApplyTyped(ctx, crGVR, "", role); err != nil {
				return fmt.Errorf("applying ClusterRole %s: %w", role.Name, err)
			}
			return nil
		}
	}
	if err := parallel.All(roleJobs...); err != nil {
		return err
	}
	return parallel.All(bindings...)
}

// pruneExchangeRBAC deletes the exchange RBAC of a consumer whose request is no longer issued (withdrawn
// by the consumer, replaced by a new key, refused or revoked), and records its user as revoked: a
// credential whose request is gone keeps no rights.
func pruneExchangeRBAC(ctx context.Context, c *member.Cluster, consumerID string, reqs []v1alpha1.ExchangeRequest) error {
	live := map[string]bool{}
	for _, r := range reqs {
		if r.Status.Phase == ExchangeIssued {
			live[strings.TrimPrefix(r.Name, r.Spec.Rule+"-")] = true
		}
	}
	// The requests were listed before this run answered some: read again what is live now.
	now, err := listExchangeRequests(ctx, c, consumerID)
	if err != nil {
		return err
	}
	for _, r := range now {
		if r.Status.Phase == ExchangeIssued {
			live[strings.TrimPrefix(r.Name, r.Spec.Rule+"-")] = true
		}
	}
	stale, err := Bindings(ctx, c, consumerID, func(hash string) bool { return !live[hash] })
	if err != nil {
		return err
	}
	if len(stale) == 0 {
		return nil
	}
	var users []handshake.RevokedUser
	for _, b := range Cut(stale) {
		users = append(users, handshake.RevokedUser{User: b.User})
	}
	if err := handshake.RecordRevoked(ctx, c, consumerID, users); err != nil {
		return err
	}
	return deleteExchangeRBAC(ctx, c, consumerID, stale)
}

func groupsNote(groups []string) string {
	if len(groups) == 0 {
		return ""
	}
	return fmt.Sprintf(", groups %v", groups)
}

// applyExchangeStatus server-side applies an ExchangeRequest's status.
func applyExchangeStatus(ctx context.Context, c *member.Cluster, ns, name string, st v1alpha1.ExchangeRequestStatus) error {
	obj := &v1alpha1.ExchangeRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.ExchangeRequestKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Status:     st,
	}
	return c.ApplyStatus(ctx, v1alpha1.ExchangeRequestGVR, obj)
}

// DenyExchange (provider) refuses a consumer's exchange request by name. A pending one is answered Refused
// with the reason, and nothing is issued. An issued one loses its rights: its user is recorded as revoked,
// its bindings and roles are deleted, the API server is confirmed to refuse it (and its impersonation cache
// waited out), and it is marked Revoked. A request refused or revoked before is Already; a name this
// cluster has no record of is a *NotFoundError naming the consumer's requests.
func DenyExchange(ctx context.Context, c *member.Cluster, consumerID, name, reason string) (handshake.Outcome, error) {
	tns := member.TenantNamespace(consumerID)
	reqs, err := listExchangeRequests(ctx, c, consumerID)
	if err != nil {
		return handshake.Done, err
	}
	i := slices.IndexFunc(reqs, func(r v1alpha1.ExchangeRequest) bool { return r.Name == name })
	if i < 0 {
		removed, _, err := handshake.Removed(ctx, c, handshake.RemovedExchange, consumerID, name)
		if err != nil || removed {
			return handshake.Already, err
		}
		var known []string
		for _, r := range reqs {
			known = append(known, r.Name)
		}
		return handshake.Done, handshake.NotFound("exchange request", name, "of consumer "+consumerID+" on this cluster (in "+tns+")", known)
	}
	r := reqs[i]
	switch r.Status.Phase {
	case ExchangeRefused, ExchangeRevoked:
		return handshake.Already, nil
	case ExchangeIssued:
		hash := strings.TrimPrefix(r.Name, r.Spec.Rule+"-")
		bindings, err := Bindings(ctx, c, consumerID, func(h string) bool { return h == hash })
		if err != nil {
			return handshake.Done, err
		}
		cut := Cut(bindings)
		users := []handshake.RevokedUser{{User: User(consumerID, hash), NotAfter: timeOrZero(r.Status.NotAfter)}}
		if err := handshake.RecordRevoked(ctx, c, consumerID, users); err != nil {
			return handshake.Done, err
		}
		unbound := time.Now()
		if err := deleteExchangeRBAC(ctx, c, consumerID, bindings); err != nil {
			return handshake.Done, err
		}
		if err := handshake.ConfirmRefused(ctx, c, cut); err != nil {
			return handshake.Done, err
		}
		if err := applyExchangeStatus(ctx, c, tns, r.Name, v1alpha1.ExchangeRequestStatus{Phase: ExchangeRevoked, Mode: r.Status.Mode, User: r.Status.User,
			Reason: "revoked by the provider: " + reason}); err != nil {
			return handshake.Done, err
		}
		handshake.Audit(ctx, c, handshake.TenantObject(consumerID), handshake.EventRevoked, "exchange credential "+r.Name+" revoked: "+reason, &handshake.Credential{User: User(consumerID, hash)})
		if len(cut) > 0 && !c.DryRun {
			if err := handshake.WaitUntil(ctx, unbound.Add(handshake.ImpersonationCacheTTL)); err != nil {
				return handshake.Done, err
			}
		}
		return handshake.Done, nil
	}
	if err := applyExchangeStatus(ctx, c, tns, r.Name, v1alpha1.ExchangeRequestStatus{Phase: ExchangeRefused, Reason: "refused by the provider: " + reason}); err != nil {
		return handshake.Done, err
	}
	handshake.Audit(ctx, c, handshake.TenantObject(consumerID), handshake.EventDenied, "exchange request "+r.Name+" refused: "+reason, nil)
	return handshake.Done, nil
}

func timeOrZero(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// RequestNames lists a consumer's exchange requests on this provider, for completion.
func RequestNames(ctx context.Context, c *member.Cluster, consumerID string) ([]string, error) {
	reqs, err := listExchangeRequests(ctx, c, consumerID)
	out := make([]string, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, r.Name)
	}
	return out, err
}

package exchange

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// A provider answers exactly what its administrator saw. A request's name is a hash of everything it asks
// (rule, target, scope and the credential's public key) and its spec cannot change once created (the CRD
// refuses updates), so the name the administrator reads in a listing can only ever be answered with what
// the listing showed. Answers are given by name, never by rule: a rule name is the tenant's to choose, and
// a request the tenant adds under it later has not been seen. What was answered is the provider's own
// record (decisions.go), never the request's status: a listing shows what the records and the RBAC hold,
// so a grant stays in sight (and deny takes it back) whatever the tenant does to its request.

// Info is a consumer's exchange request, or a grant, as the provider sees it.
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
	// Reach lists what the scope holds beyond a namespaced share (ScopeReach): each needs an explicit
	// override. For a decision, the reach its administrator accepted.
	Reach []string `json:"reach,omitempty"`
	// TargetAccess is what the target itself may do within the scope (access reviews), for pending requests.
	TargetAccess *ScopeAccess `json:"targetAccess,omitempty"`
	// TargetReach is what the target itself may do beyond a namespaced share of this cluster (access
	// reviews), for pending requests: what an unconstrained grant would hand out.
	TargetReach []string `json:"targetReach,omitempty"`
	// KeySHA256 is the fingerprint of the credential's public key, as the consumer's side shows it.
	KeySHA256 string `json:"keySHA256,omitempty"`
	Phase     string `json:"phase"`
	Mode      string `json:"mode,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// RequestGone says that the consumer no longer has a request under this name: what is shown is the
	// provider's record of it.
	RequestGone bool       `json:"requestGone,omitempty"`
	Credential  string     `json:"credential,omitempty"` // the user of the issued certificate
	NotAfter    *time.Time `json:"notAfter,omitempty"`
}

func exchangeScope(s v1alpha1.ExchangeScope) Scope {
	return Scope{Verbs: s.Verbs, Resources: s.Resources, Namespaces: s.Namespaces}
}

// ToExchangeScope is a scope as a request records it, in canonical order.
func ToExchangeScope(s Scope) v1alpha1.ExchangeScope {
	s = s.Canonical()
	return v1alpha1.ExchangeScope{Verbs: s.Verbs, Resources: s.Resources, Namespaces: s.Namespaces}
}

// requestInfo is what a request asks: its spec, never its status.
func requestInfo(consumerID string, r *v1alpha1.ExchangeRequest) Info {
	s := exchangeScope(r.Spec.Scope)
	info := Info{ConsumerID: consumerID, Name: r.Name, Rule: r.Spec.Rule, User: r.Spec.Target.User, Groups: r.Spec.Target.Groups,
		UID: r.Spec.Target.UID, Scope: s.Canonical(), ClusterWide: s.ClusterWide(), Reach: s.Reach(), Phase: ExchangePending}
	if csr, err := credential.ParseCSR(r.Spec.CSR); err == nil {
		if der, err := x509.MarshalPKIXPublicKey(csr.PublicKey); err == nil {
			sum := sha256.Sum256(der)
			info.KeySHA256 = hex.EncodeToString(sum[:])
		}
	}
	return info
}

// decisionInfo is what a decision answered.
func decisionInfo(d *Decision) Info {
	info := Info{ConsumerID: d.ConsumerID, Name: d.Request, Rule: d.Rule, User: d.Target.User, Groups: d.Target.Groups, UID: d.Target.UID,
		Scope: d.Scope, ClusterWide: d.Scope.ClusterWide(), Reach: d.Reach, KeySHA256: d.KeySHA256, Phase: d.Phase, Mode: d.Mode, Reason: d.Reason}
	if d.Phase == ExchangeIssued || d.Phase == ExchangeRevoked {
		info.Credential, info.NotAfter = d.User, d.NotAfter
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

// providerView is what a provider holds of one consumer's exchange: the requests the tenant left, the
// decisions the administrator took, and the RBAC the grants made.
type providerView struct {
	consumerID string
	requests   []v1alpha1.ExchangeRequest
	decisions  map[string]*Decision
	bindings   []Binding
}

// readView reads the three at once.
func readView(ctx context.Context, c *member.Cluster, consumerID string) (*providerView, error) {
	v := &providerView{consumerID: consumerID}
	err := parallel.All(
		func() (err error) { v.requests, err = listExchangeRequests(ctx, c, consumerID); return err },
		func() (err error) { v.decisions, err = consumerDecisions(ctx, c, consumerID); return err },
		func() (err error) {
			v.bindings, err = Bindings(ctx, c, consumerID, func(string) bool { return true })
			return err
		},
	)
	return v, err
}

// request is the consumer's request of that name, nil when it has none.
func (v *providerView) request(name string) *v1alpha1.ExchangeRequest {
	if i := slices.IndexFunc(v.requests, func(r v1alpha1.ExchangeRequest) bool { return r.Name == name }); i >= 0 {
		return &v.requests[i]
	}
	return nil
}

// boundHashes are the request hashes the consumer's exchange RBAC names.
func (v *providerView) boundHashes() map[string]bool {
	out := map[string]bool{}
	for _, b := range v.bindings {
		out[b.hash] = true
	}
	return out
}

// hashOf is a request name's hash: what follows its rule (a DNS label, which may hold '-').
func hashOf(name string) string { return name[strings.LastIndex(name, "-")+1:] }

// legacyReason marks a grant the RBAC shows with no decision recorded: made before decisions were kept,
// or not by kubectl federate.
const legacyReason = "its RBAC exists with no decision recorded: deny it to take it back"

// infos is what the provider holds of the consumer's exchange, one row per name, sorted: each request with
// the decision on it (what was answered, not what the request now says), each grant whose request the
// consumer deleted, and each grant the RBAC shows with neither.
func (v *providerView) infos() []Info {
	bound := v.boundHashes()
	seen := map[string]bool{}
	var out []Info
	for i := range v.requests {
		r := &v.requests[i]
		verr := ValidateExchangeRequest(r, v.consumerID)
		if d := v.decisions[r.Name]; d != nil {
			seen[d.Hash()] = true // what was answered, in the provider's own words
			info := decisionInfo(d)
			if verr != nil {
				info.Reason = joinReason(info.Reason, "the request now left under this name is not what was answered: "+verr.Error())
			}
			out = append(out, info)
			continue
		}
		info := requestInfo(v.consumerID, r)
		switch {
		case verr != nil:
			// Not what its name says: it stands for no grant (a grant the RBAC shows under its hash is
			// listed from the bindings, below).
			info.Reason = "invalid: " + verr.Error()
		case bound[hashOf(r.Name)]:
			seen[hashOf(r.Name)] = true
			info.Phase, info.Reason = ExchangeIssued, legacyReason
		default:
			seen[hashOf(r.Name)] = true
		}
		out = append(out, info)
	}
	for _, d := range v.decisions {
		// A grant stays in sight whatever became of its request; a refusal or revocation whose request is
		// gone is history, kept for the next time the request appears, not a row.
		if v.request(d.Request) == nil && d.granted() {
			seen[d.Hash()] = true
			info := decisionInfo(d)
			info.RequestGone = true
			out = append(out, info)
		}
	}
	for _, b := range v.bindings {
		if !seen[b.hash] {
			seen[b.hash] = true
			out = append(out, Info{ConsumerID: v.consumerID, Name: b.hash, User: b.target, Phase: ExchangeIssued, Credential: b.user, RequestGone: true, Reason: legacyReason})
		}
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// Requests (provider) lists a consumer's exchange requests and grants with what each hands out: for an
// answered one, what its decision recorded; for a pending one, the scope, its reach, and what the target
// itself may do within the scope and beyond it.
func Requests(ctx context.Context, c *member.Cluster, consumerID string) ([]Info, error) {
	v, err := readView(ctx, c, consumerID)
	if err != nil {
		return nil, err
	}
	out := v.infos()
	rr := NewReader(c)
	reach := map[string][]string{} // by target: several requests often share one
	var mu sync.Mutex
	jobs := make([]func() error, 0, len(out))
	for i := range out {
		r := v.request(out[i].Name)
		if out[i].Phase != ExchangePending || r == nil || ValidateExchangeRequest(r, consumerID) != nil {
			continue
		}
		jobs = append(jobs, func() error {
			t := FromExchangeTarget(r.Spec.Target)
			var err error
			if out[i].Reach, err = ScopeReach(ctx, rr, out[i].Scope); err != nil {
				return err
			}
			if out[i].TargetAccess, err = TargetAccess(ctx, c, t, out[i].Scope); err != nil {
				return err
			}
			key := GrantHash("", t, Scope{})
			mu.Lock()
			tr, ok := reach[key]
			mu.Unlock()
			if !ok {
				if tr, err = TargetReach(ctx, rr, t); err != nil {
					return err
				}
				mu.Lock()
				reach[key] = tr
				mu.Unlock()
			}
			out[i].TargetReach = tr
			return nil
		})
	}
	return out, parallel.All(jobs...)
}

// ValidateExchangeRequest checks a consumer's ExchangeRequest before anything is created: its name is its
// rule, target, scope and key's, the target is a plain identity (printable, never in system: or
// kubectl-federate:), the scope is well formed, and the CSR asks for exactly the credential's user, with
// nothing else in it.
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

// Lifetime is the lifetime asked for r's certificate: the one given, else the one the latest issued
// decision of the same grant (rule, target, scope) was asked with, else ExchangeExpiration; capped at the
// pairing's recorded maximum. A given lifetime that differs from the recorded one is said, as a warning
// when it is longer (issue 29: a renewal changes nothing unless asked, and says what it changes). Only
// the provider's records count: a request's status is the tenant's to rewrite.
func Lifetime(r member.Reporter, given time.Duration, req *v1alpha1.ExchangeRequest, decisions []*Decision, tenant *v1alpha1.Tenant) time.Duration {
	grant := GrantHash(req.Spec.Rule, FromExchangeTarget(req.Spec.Target), exchangeScope(req.Spec.Scope))
	var recorded time.Duration
	var latest time.Time
	for _, d := range decisions {
		if d.Lifetime.Duration == 0 || d.NotAfter == nil || d.Rule != req.Spec.Rule || GrantHash(d.Rule, d.Target, d.Scope) != grant {
			continue
		}
		if d.NotAfter.After(latest) {
			latest, recorded = *d.NotAfter, d.Lifetime.Duration
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

// RBACName names a credential's RBAC objects: a hash of the consumer and the request, so that no
// two consumers' names can meet, whatever '-' their IDs and rules hold.
func RBACName(consumerID, request string) string {
	sum := sha256.Sum256([]byte(consumerID + "\n" + request))
	return "federate-exchange-" + hex.EncodeToString(sum[:16])
}

func groupsNote(groups []string) string {
	if len(groups) == 0 {
		return ""
	}
	return fmt.Sprintf(", groups %v", groups)
}

// applyExchangeStatus server-side applies an ExchangeRequest's status: the consumer's copy of the answer.
func applyExchangeStatus(ctx context.Context, c *member.Cluster, ns, name string, st v1alpha1.ExchangeRequestStatus) error {
	obj := &v1alpha1.ExchangeRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.ExchangeRequestKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Status:     st,
	}
	return c.ApplyStatus(ctx, v1alpha1.ExchangeRequestGVR, obj)
}

// RequestNames lists the names a provider's administrator may answer or deny for a consumer: its requests
// and the grants recorded for it, for completion.
func RequestNames(ctx context.Context, c *member.Cluster, consumerID string) ([]string, error) {
	v, err := readView(ctx, c, consumerID)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, i := range v.infos() {
		names[i.Name] = true
	}
	return slices.Sorted(maps.Keys(names)), nil
}

// Granted (provider) lists the exchange credentials this cluster issued, to every consumer, for status: the
// grants its decisions record (whatever became of their requests), those the RBAC shows with no decision,
// and the ones revoked while their requests are still there (as the listing shows them).
func Granted(ctx context.Context, c *member.Cluster) ([]Info, error) {
	var decisions map[string]*Decision
	var bindings []Binding
	requests := map[string]bool{}
	err := parallel.All(
		func() (err error) { decisions, err = readDecisions(ctx, c, ""); return err },
		func() (err error) { bindings, err = allBindings(ctx, c); return err },
		func() error {
			l, err := c.Dynamic.Resource(v1alpha1.ExchangeRequestGVR).List(ctx, metav1.ListOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("listing ExchangeRequests: %w", err)
			}
			for _, it := range l.Items {
				if consumerID, ok := strings.CutPrefix(it.GetNamespace(), member.TenantNamespacePrefix); ok {
					requests[consumerID+"/"+it.GetName()] = true
				}
			}
			return nil
		},
	)
	if err != nil {
		return nil, err
	}
	var out []Info
	shown := map[string]bool{}
	for key, d := range decisions {
		if d.Phase == ExchangeIssued || (d.Phase == ExchangeRevoked && requests[key]) {
			shown[d.ConsumerID+"/"+d.Hash()] = true
			out = append(out, decisionInfo(d))
		}
	}
	for _, b := range bindings {
		if key := b.consumerID + "/" + b.hash; !shown[key] {
			shown[key] = true
			out = append(out, Info{ConsumerID: b.consumerID, Name: b.hash, User: b.target, Phase: ExchangeIssued, Credential: b.user, Reason: legacyReason})
		}
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.ConsumerID+"/"+a.Name, b.ConsumerID+"/"+b.Name) })
	return out, nil
}

package exchange

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// A provider remembers its own decisions where no tenant writes. A request lives in the tenant's
// namespace, where the tenant may delete it, create it again without an answer, or (through a consented
// scope) rewrite its status; so nothing the provider decided is ever read back from a request. Each
// answer the administrator gives (issued, refused, revoked) is a ConfigMap of federate-system, named from
// the consumer and the request (so no two consumers' records meet), holding what was granted, to which
// user, in which mode, with which reach accepted, until when. allow, deny, status, revoke and
// unauthenticate read grants from these records and from the RBAC they made; the request's status is only
// the consumer's copy of the answer.

// LabelDecisionOf marks a provider's record of its decision on one exchange request of a consumer. It
// carries no pairing labels, so nothing that removes a pairing's objects by label takes it: a denial, and
// the bound of every certificate issued, outlive unauthenticate and a new pairing.
const LabelDecisionOf = "federate.dev/exchange-decision-of"

// decisionKey holds the record, as JSON.
const decisionKey = "decision.json"

// ExchangeIssuing is a decision taken whose certificate is being (or was, in a run cut short) issued: no
// certificate is recorded yet, but Bound holds for any that exists.
const ExchangeIssuing = "Issuing"

// decisionRetention is how long a refusal is remembered, and a grant whose certificate's end is unknown:
// longer than any certificate or token lives.
const decisionRetention = 400 * 24 * time.Hour

// Decision is the provider's answer to one exchange request of one consumer, as its administrator gave it.
type Decision struct {
	ConsumerID string `json:"consumerID"`
	Request    string `json:"request"`
	Rule       string `json:"rule"`
	Target     Target `json:"target"`
	Scope      Scope  `json:"scope"`
	KeySHA256  string `json:"keySHA256,omitempty"`
	// Phase is Issuing, Issued, Refused or Revoked.
	Phase string `json:"phase"`
	// Mode and Reach are the grant's bound and the reach the administrator accepted, as given.
	Mode  string   `json:"mode,omitempty"`
	Reach []string `json:"reach,omitempty"`
	// TargetReach is what the target itself reached beyond a namespaced share when the grant was consented
	// (TargetReach): what verify compares the target's rights with, so that rights it gains since are
	// seen. Nil in a record from before it was kept.
	TargetReach []string   `json:"targetReach"`
	User        string     `json:"user,omitempty"`
	Certificate []byte     `json:"certificate,omitempty"`
	NotAfter    *time.Time `json:"notAfter,omitempty"`
	// Lifetime is what the certificate was asked with; the next key of the same grant gets it too.
	Lifetime metav1.Duration `json:"lifetime,omitempty"`
	// Bound is when the last certificate that can ever have been issued for this request's key ends: it is
	// written before each CSR is created, so that a run cut short after the signer answered still leaves
	// a bound a revocation can keep its record until.
	Bound  *time.Time `json:"bound,omitempty"`
	Reason string     `json:"reason,omitempty"`
	Time   time.Time  `json:"time"`

	resourceVersion string
	stored          bool // read from, or written to, the cluster: the next write updates it
}

// Hash is the request's hash: its name after the rule.
func (d *Decision) Hash() string { return strings.TrimPrefix(d.Request, d.Rule+"-") }

// granted says whether the decision lets (or may have let) a credential act: a certificate issued or
// being issued.
func (d *Decision) granted() bool {
	return d != nil && (d.Phase == ExchangeIssued || d.Phase == ExchangeIssuing)
}

// issuedUntil says whether the decision holds a certificate that is valid at now.
func (d *Decision) issuedUntil(now time.Time) bool {
	return d != nil && d.Phase == ExchangeIssued && len(d.Certificate) > 0 && d.NotAfter != nil && now.Before(*d.NotAfter)
}

// revokeUntil is how long the decision's user must stay in the revocation record: its bound, or, not
// known, the retention that outlasts any credential.
func (d *Decision) revokeUntil(now time.Time) time.Time {
	if d != nil && d.Bound != nil && d.Bound.After(now) {
		return *d.Bound
	}
	return now.Add(decisionRetention)
}

// DecisionName names the record of a consumer's request: the same hash as its RBAC (RBACName), in
// federate-system, where no ClusterRole name can meet it.
func DecisionName(consumerID, request string) string { return RBACName(consumerID, request) }

// decisionOf reads a record; nil when the ConfigMap is not one.
func decisionOf(cm *corev1.ConfigMap) *Decision {
	var d Decision
	if json.Unmarshal([]byte(cm.Data[decisionKey]), &d) != nil || d.Request == "" || d.ConsumerID != cm.Labels[LabelDecisionOf] ||
		cm.Name != DecisionName(d.ConsumerID, d.Request) {
		return nil // not written by allow or deny: its name does not say what it holds
	}
	d.resourceVersion, d.stored = cm.ResourceVersion, true
	return &d
}

// readDecisions reads a consumer's records, by request name; every consumer's with consumerID "".
func readDecisions(ctx context.Context, c *member.Cluster, consumerID string) (map[string]*Decision, error) {
	sel := LabelDecisionOf
	if consumerID != "" {
		sel += "=" + consumerID
	}
	l, err := c.Kube.CoreV1().ConfigMaps(member.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if apierrors.IsNotFound(err) {
		return map[string]*Decision{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the exchange decisions in %s: %w", member.SystemNamespace, err)
	}
	out := make(map[string]*Decision, len(l.Items))
	for i := range l.Items {
		if d := decisionOf(&l.Items[i]); d != nil {
			out[d.ConsumerID+"/"+d.Request] = d
		}
	}
	return out, nil
}

// consumerDecisions is readDecisions for one consumer, keyed by request name.
func consumerDecisions(ctx context.Context, c *member.Cluster, consumerID string) (map[string]*Decision, error) {
	all, err := readDecisions(ctx, c, consumerID)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Decision, len(all))
	for _, d := range all {
		out[d.Request] = d
	}
	return out, nil
}

// Decisions (provider) are the provider's records of its answers to every consumer's requests (consumerID
// "": all), sorted by consumer and request.
func Decisions(ctx context.Context, c *member.Cluster, consumerID string) ([]*Decision, error) {
	all, err := readDecisions(ctx, c, consumerID)
	if err != nil {
		return nil, err
	}
	out := slices.Collect(maps.Values(all))
	slices.SortFunc(out, func(a, b *Decision) int {
		return strings.Compare(a.ConsumerID+"/"+a.Request, b.ConsumerID+"/"+b.Request)
	})
	return out, nil
}

// Issued says whether the decision holds a certificate valid at now: a credential that acts.
func (d *Decision) Issued(now time.Time) bool { return d.issuedUntil(now) }

// ErrDecidedConcurrently says that another run answered the same request at the same time.
var ErrDecidedConcurrently = fmt.Errorf("was answered by another run at the same time")

// writeDecision stores d: created if it was never stored, else updated from the version read or written,
// so that of two runs answering one request only one proceeds (the other gets ErrDecidedConcurrently).
func writeDecision(ctx context.Context, c *member.Cluster, d *Decision) error {
	d.Time = c.CurrentTime().UTC().Truncate(time.Second)
	data, err := json.Marshal(d)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: DecisionName(d.ConsumerID, d.Request), Namespace: member.SystemNamespace, ResourceVersion: d.resourceVersion,
			Labels:      map[string]string{member.LabelManagedBy: member.ManagedBy, LabelDecisionOf: d.ConsumerID},
			Annotations: map[string]string{AnnotationExchangeRequest: d.Request}},
		Data: map[string]string{decisionKey: string(data)},
	}
	cms := c.Kube.CoreV1().ConfigMaps(member.SystemNamespace)
	var out *corev1.ConfigMap
	if !d.stored {
		out, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	} else {
		out, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	switch {
	case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
		return fmt.Errorf("ExchangeRequest %s %w: run the command again", d.Request, ErrDecidedConcurrently)
	case err != nil:
		return fmt.Errorf("recording the decision on ExchangeRequest %s in %s/%s: %w", d.Request, member.SystemNamespace, cm.Name, err)
	}
	d.stored = true
	if out != nil {
		d.resourceVersion = out.ResourceVersion
	}
	return nil
}

// newDecision is the record of a request about to be answered: what it asks, as validated.
func newDecision(consumerID string, info *Info) *Decision {
	return &Decision{ConsumerID: consumerID, Request: info.Name, Rule: info.Rule, Target: Target{User: info.User, Groups: slices.Clone(info.Groups), UID: info.UID},
		Scope: info.Scope, KeySHA256: info.KeySHA256}
}

// laterOf is the later of a (possibly nil) time and t.
func laterOf(a *time.Time, t time.Time) *time.Time {
	if a != nil && a.After(t) {
		return a
	}
	return &t
}

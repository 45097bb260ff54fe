package exchange

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Taking a grant back reads what was granted from the provider's records and the RBAC, never from the
// request: a grant whose request the tenant deleted, or replaced without its answer, is still found and
// still taken back. A revoked user stays in the revocation record until the last certificate its key
// could ever have been issued ends (the decision's Bound), not only the one the record last saw.

// DenyExchange (provider) refuses a consumer's exchange request, or takes back its grant, by name. A grant
// (a decision that issued, or was issuing, a certificate, or RBAC made for the name) loses its rights: its
// user is recorded as revoked until its Bound, its bindings and roles are deleted, the API server is
// confirmed to refuse it (and its impersonation cache waited out), and its decision becomes Revoked. A
// pending request is refused: the decision, keyed by the request's name (its content's hash), is recorded,
// so the same request is never answered again however the tenant re-creates it. A name refused or revoked
// before is Already; a name this cluster has no record of is a NotFound error.
func DenyExchange(ctx context.Context, c *member.Cluster, consumerID, name, reason string) (handshake.Outcome, error) {
	v, err := readView(ctx, c, consumerID)
	if err != nil {
		return handshake.Done, err
	}
	d, r := v.decisions[name], v.request(name)
	bound := bindingsOf(v.bindings, hashOf(name))
	switch {
	case d == nil && r == nil && len(bound) == 0:
		removed, _, err := handshake.Removed(ctx, c, handshake.RemovedExchange, consumerID, name)
		if err != nil || removed {
			return handshake.Already, err
		}
		var known []string
		for _, i := range v.infos() {
			known = append(known, i.Name)
		}
		return handshake.Done, handshake.NotFound("exchange request", name, "of consumer "+consumerID+" on this cluster (in "+member.TenantNamespace(consumerID)+")", known)
	case d.granted() || len(bound) > 0:
		return handshake.Done, revokeGrant(ctx, c, v, name, "revoked by the provider: "+reason)
	case d != nil:
		// Refused or revoked before; a request the tenant made again under the name is told so again.
		if r != nil && r.Status.Phase != d.Phase {
			if err := applyExchangeStatus(ctx, c, member.TenantNamespace(consumerID), name, v1alpha1.ExchangeRequestStatus{Phase: d.Phase, Reason: d.Reason}); err != nil {
				return handshake.Done, err
			}
		}
		return handshake.Already, nil
	}
	info := requestInfo(consumerID, r)
	d = newDecision(consumerID, &info)
	d.Phase, d.Reason = ExchangeRefused, "refused by the provider: "+reason
	if err := writeDecision(ctx, c, d); err != nil {
		return handshake.Done, err
	}
	if err := applyExchangeStatus(ctx, c, member.TenantNamespace(consumerID), name, v1alpha1.ExchangeRequestStatus{Phase: ExchangeRefused, Reason: d.Reason}); err != nil {
		return handshake.Done, err
	}
	handshake.Audit(ctx, c, handshake.TenantObject(consumerID), handshake.EventDenied, "exchange request "+name+" refused: "+reason, nil)
	return handshake.Done, nil
}

// bindingsOf are the bindings of one request hash.
func bindingsOf(all []Binding, hash string) []Binding {
	var out []Binding
	for _, b := range all {
		if b.hash == hash {
			out = append(out, b)
		}
	}
	return out
}

// revokeGrant takes one grant back: the user recorded as revoked (before anything is deleted, until the
// decision's bound), its RBAC deleted and confirmed refused, its decision Revoked, the request told, the
// impersonation cache waited out.
func revokeGrant(ctx context.Context, c *member.Cluster, v *providerView, name, reason string) error {
	hash := hashOf(name)
	d, r := v.decisions[name], v.request(name)
	user := User(v.consumerID, hash)
	bindings := bindingsOf(v.bindings, hash)
	cut := Cut(bindings)
	if err := handshake.RecordRevoked(ctx, c, v.consumerID, []handshake.RevokedUser{{User: user, NotAfter: d.revokeUntil(c.CurrentTime())}}); err != nil {
		return err
	}
	unbound := time.Now()
	if err := deleteExchangeRBAC(ctx, c, v.consumerID, bindings); err != nil {
		return err
	}
	if err := handshake.ConfirmRefused(ctx, c, cut); err != nil {
		return err
	}
	if err := markRevoked(ctx, c, v.consumerID, d, r, name, reason); err != nil {
		return err
	}
	handshake.Audit(ctx, c, handshake.TenantObject(v.consumerID), handshake.EventRevoked, "exchange credential "+name+" "+reason, &handshake.Credential{User: user})
	if len(cut) > 0 && !c.DryRun {
		return handshake.WaitUntil(ctx, unbound.Add(handshake.ImpersonationCacheTTL))
	}
	return nil
}

// markRevoked records a grant's decision as Revoked (a grant the RBAC alone showed gets a record now, from
// its request when there is one) and tells the request, when there is one.
func markRevoked(ctx context.Context, c *member.Cluster, consumerID string, d *Decision, r *v1alpha1.ExchangeRequest, name, reason string) error {
	if d == nil {
		if r != nil {
			info := requestInfo(consumerID, r)
			d = newDecision(consumerID, &info)
		} else {
			d = &Decision{ConsumerID: consumerID, Request: name}
		}
		d.User = User(consumerID, hashOf(name))
	}
	d.Phase, d.Reason = ExchangeRevoked, reason
	if d.Bound == nil {
		until := c.CurrentTime().Add(decisionRetention)
		d.Bound = &until
	}
	if err := writeDecision(ctx, c, d); err != nil {
		return err
	}
	if r == nil {
		return nil
	}
	return objects.IgnoreNotFound(applyExchangeStatus(ctx, c, member.TenantNamespace(consumerID), name,
		v1alpha1.ExchangeRequestStatus{Phase: ExchangeRevoked, Mode: d.Mode, User: d.User, Reason: reason}))
}

// pruneWithdrawn takes back, after an allow, the grants whose request the consumer withdrew (deleted:
// the consumer does so with a credential's older keys once it holds a newer one), and RBAC that no
// decision or request accounts for. Their users are recorded as revoked first. The requests are read
// again, since this run answered some.
func pruneWithdrawn(ctx context.Context, c *member.Cluster, v *providerView) error {
	now, err := listExchangeRequests(ctx, c, v.consumerID)
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for i := range now {
		if ValidateExchangeRequest(&now[i], v.consumerID) == nil { // only a request that is what its name says keeps a grant
			live[hashOf(now[i].Name)] = true
		}
	}
	decided := map[string]*Decision{}
	for _, d := range v.decisions {
		decided[d.Hash()] = d
	}
	var users []handshake.RevokedUser
	var stale []Binding
	var withdrawn []*Decision
	for _, d := range v.decisions {
		if d.granted() && !live[d.Hash()] {
			withdrawn = append(withdrawn, d)
			users = append(users, handshake.RevokedUser{User: User(v.consumerID, d.Hash()), NotAfter: d.revokeUntil(c.CurrentTime())})
		}
	}
	for _, b := range v.bindings {
		if d := decided[b.hash]; !live[b.hash] || (d != nil && !d.granted()) {
			stale = append(stale, b)
			users = append(users, handshake.RevokedUser{User: User(v.consumerID, b.hash)})
		}
	}
	if len(users) == 0 {
		return nil
	}
	if err := handshake.RecordRevoked(ctx, c, v.consumerID, users); err != nil {
		return err
	}
	if err := deleteExchangeRBAC(ctx, c, v.consumerID, stale); err != nil {
		return err
	}
	var errs []error
	for _, d := range withdrawn {
		errs = append(errs, markRevoked(ctx, c, v.consumerID, d, nil, d.Request, "withdrawn by the consumer (its request was deleted)"))
	}
	return errors.Join(errs...)
}

// RemoveExchanges (provider) takes back every exchange grant of a consumer (revoke, unauthenticate): the
// users of its decisions are recorded as revoked until their bounds (the caller recorded the users its
// bindings name), every exchange binding and role goes, the bindings first, and every grant's decision
// becomes Revoked (the requests are told, so that the consumer asks anew, with a new key, rather than
// hand out a stored, dead kubeconfig). No later allow answers them again.
func RemoveExchanges(ctx context.Context, c *member.Cluster, consumerID string, bindings []Binding) error {
	decisions, err := consumerDecisions(ctx, c, consumerID)
	if err != nil {
		return err
	}
	var users []handshake.RevokedUser
	for _, d := range decisions {
		if d.granted() {
			users = append(users, handshake.RevokedUser{User: User(consumerID, d.Hash()), NotAfter: d.revokeUntil(c.CurrentTime())})
		}
	}
	if err := handshake.RecordRevoked(ctx, c, consumerID, users); err != nil {
		return err
	}
	if err := deleteExchangeRBAC(ctx, c, consumerID, bindings); err != nil {
		return err
	}
	// Roles left without a binding (a run interrupted between them) go too.
	if err := objects.IgnoreNotFound(c.Dynamic.Resource(crGVR).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: exchangeSelector(consumerID)})); err != nil {
		return fmt.Errorf("removing the exchange ClusterRoles of consumer %q: %w", consumerID, err)
	}
	reqs, err := listExchangeRequests(ctx, c, consumerID)
	if err != nil {
		return objects.IgnoreNotFound(err)
	}
	v := &providerView{consumerID: consumerID, requests: reqs, decisions: decisions}
	var errs []error
	recorded := map[string]bool{}
	for _, d := range decisions {
		recorded[d.Hash()] = true
		if d.granted() {
			errs = append(errs, markRevoked(ctx, c, consumerID, d, v.request(d.Request), d.Request, "the consumer was revoked"))
		}
	}
	// Grants the RBAC alone showed: recorded as revoked now, under their request's name when it is there.
	for _, b := range bindings {
		if recorded[b.hash] {
			continue
		}
		recorded[b.hash] = true
		name := b.hash
		for _, r := range reqs {
			if hashOf(r.Name) == b.hash {
				name = r.Name
			}
		}
		errs = append(errs, markRevoked(ctx, c, consumerID, nil, v.request(name), name, "the consumer was revoked"))
	}
	return errors.Join(errs...)
}

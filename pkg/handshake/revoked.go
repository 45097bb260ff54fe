package handshake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// Nothing revoked ever regains rights. A certificate cannot be taken back: it authenticates until it
// expires, and only the absence of any binding for its user makes it powerless. Most users are unique to
// their issuance (the pairing's derives from its nonce, a token's ServiceAccount has a random name), but a
// slice's and an exchange credential's user derive from their key, and the same request can be answered
// again: a re-run of accept or allow after revoke, or after unauthenticate and a new pairing. So a
// provider keeps, per consumer, the users it revoked until their credentials expire, in a ConfigMap of
// federate-system that unauthenticate leaves in place, and refuses to bind any of them again.

// LabelRevocations marks a consumer's revocation record; it carries no pairing labels, so that nothing that
// removes a pairing's objects by label takes it.
const LabelRevocations = "federate.dev/revocations-of"

// revokedRetention is how long a user is kept when its credential's expiry is unknown: longer than any
// client certificate the kube-apiserver-client signer issues by default (a year) or a token lives.
const revokedRetention = 400 * 24 * time.Hour

// ErrRevokedUser is returned when a credential would be issued to a user revoked before.
var ErrRevokedUser = errors.New("was revoked on this cluster and is never bound again")

func revokedRecordName(consumerID string) string { return "federate-revoked-" + consumerID }

// revokedEntryKey is a user's key in the record: a hash, since user names hold ':' and a ConfigMap key
// may not.
func revokedEntryKey(user string) string {
	sum := sha256.Sum256([]byte(user))
	return "u-" + hex.EncodeToString(sum[:16])
}

// RevokedUser is a user to record, with when its credential expires (zero: unknown).
type RevokedUser struct {
	User     string
	NotAfter time.Time
}

// revocationsKey counts a consumer's revocations (revoke, and unauthenticate, which revokes first), in its
// record: a grant that read one count before it bound and finds another after knows the consumer was
// revoked meanwhile, and takes back what it bound.
const revocationsKey = "revocations"

// RecordRevoked adds users to a consumer's revocation record, dropping entries whose credential has
// expired; concurrent writers are serialized by the record's resourceVersion.
func RecordRevoked(ctx context.Context, c *member.Cluster, consumerID string, users []RevokedUser) error {
	if len(users) == 0 {
		return nil
	}
	return recordRevoked(ctx, c, consumerID, users, false)
}

// RecordRevocation records a revocation of the consumer: its users, as RecordRevoked does, and one more
// revocation in the count that grants compare (Revocations), in the same write.
func RecordRevocation(ctx context.Context, c *member.Cluster, consumerID string, users []RevokedUser) error {
	return recordRevoked(ctx, c, consumerID, users, true)
}

// Revocations reads how many times the consumer was revoked on this cluster, as its record counts them
// (0 with no record).
func Revocations(ctx context.Context, c *member.Cluster, consumerID string) (int64, error) {
	cm, err := c.Kube.CoreV1().ConfigMaps(member.SystemNamespace).Get(ctx, revokedRecordName(consumerID), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the revocation record %s/%s: %w", member.SystemNamespace, revokedRecordName(consumerID), err)
	}
	n, _ := strconv.ParseInt(cm.Data[revocationsKey], 10, 64)
	return n, nil
}

func recordRevoked(ctx context.Context, c *member.Cluster, consumerID string, users []RevokedUser, revocation bool) error {
	cms := c.Kube.CoreV1().ConfigMaps(member.SystemNamespace)
	name := revokedRecordName(consumerID)
	now := c.CurrentTime()
	for {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		create := apierrors.IsNotFound(err)
		if err != nil && !create {
			return fmt.Errorf("reading the revocation record %s/%s: %w", member.SystemNamespace, name, err)
		}
		if create {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: member.SystemNamespace,
				Labels: map[string]string{member.LabelManagedBy: member.ManagedBy, LabelRevocations: consumerID}}}
		}
		data := map[string]string{}
		for k, v := range cm.Data {
			if until, _, ok := parseRevokedEntry(v); ok && now.Before(until) {
				data[k] = v
			}
		}
		if n, err := strconv.ParseInt(cm.Data[revocationsKey], 10, 64); err == nil || revocation {
			data[revocationsKey] = strconv.FormatInt(n+map[bool]int64{true: 1}[revocation], 10)
		}
		for _, u := range users {
			until := u.NotAfter
			if until.IsZero() || until.Before(now) {
				until = now.Add(revokedRetention)
			}
			key := revokedEntryKey(u.User)
			if have, _, ok := parseRevokedEntry(data[key]); ok && have.After(until) {
				until = have
			}
			data[key] = until.UTC().Format(time.RFC3339) + " " + u.User
		}
		if !create && maps.Equal(data, cm.Data) {
			return nil
		}
		cm.Data = data
		if create {
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				continue
			}
		} else {
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("recording the revoked users of consumer %q in %s/%s: %w", consumerID, member.SystemNamespace, name, err)
		}
		return nil
	}
}

func parseRevokedEntry(v string) (time.Time, string, bool) {
	when, user, ok := strings.Cut(v, " ")
	if !ok {
		return time.Time{}, "", false
	}
	t, err := time.Parse(time.RFC3339, when)
	return t, user, err == nil
}

// RevokedUntil reads a consumer's revocation record: the users never to bind again, with when that ends.
func RevokedUntil(ctx context.Context, c *member.Cluster, consumerID string) (map[string]time.Time, error) {
	cm, err := c.Kube.CoreV1().ConfigMaps(member.SystemNamespace).Get(ctx, revokedRecordName(consumerID), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return map[string]time.Time{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the revocation record %s/%s: %w", member.SystemNamespace, revokedRecordName(consumerID), err)
	}
	out := map[string]time.Time{}
	now := c.CurrentTime()
	for _, v := range cm.Data {
		if until, user, ok := parseRevokedEntry(v); ok && now.Before(until) {
			out[user] = until
		}
	}
	return out, nil
}

// CheckNotRevoked refuses a user found in the consumer's revocation record.
func CheckNotRevoked(ctx context.Context, c *member.Cluster, consumerID, user string) error {
	revoked, err := RevokedUntil(ctx, c, consumerID)
	if err != nil {
		return err
	}
	if until, ok := revoked[user]; ok {
		return fmt.Errorf("user %q %w (until its credential expires, %s): ask again with a new key", user, ErrRevokedUser, until.UTC().Format(time.RFC3339))
	}
	return nil
}

// BoundUser is a user a binding named, and what the access review that proves it refused asks.
type BoundUser struct {
	User   string
	Groups []string
	// Namespace, for a RoleBinding's user: it must no longer create pods there. Empty for an exchange
	// credential, which must no longer impersonate Target.
	Namespace string
	Target    string
}

// ConfirmRefused asks the API server, with an access review per user, until each is refused what its
// binding gave: creating pods in its namespace, or impersonating its target. The authorizer sees RBAC
// through an informer, so a deleted binding may still allow for a moment; there is nothing to watch, so
// each review repeats with a growing pause, bounded by policyTimeout.
func ConfirmRefused(ctx context.Context, c *member.Cluster, cut []BoundUser) error {
	if c.DryRun {
		return nil // no binding was deleted: the users are still allowed, as they should be
	}
	jobs := make([]func() error, len(cut))
	for i, b := range cut {
		jobs[i] = func() error {
			attrs := []authzv1.ResourceAttributes{{Namespace: b.Namespace, Verb: "create", Resource: "pods"}}
			if b.Target != "" {
				attrs = []authzv1.ResourceAttributes{
					{Verb: "impersonate", Resource: "users", Name: b.Target},
					{Verb: "impersonate:user-info", Group: "authentication.k8s.io", Resource: "users", Name: b.Target},
				}
			}
			for _, a := range attrs {
				if err := waitDenied(ctx, c, b.User, b.Groups, a); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return parallel.All(jobs...)
}

// WaitUntil returns at t, or when ctx ends.
func WaitUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// ImpersonationCacheTTL is how long the API server keeps a successful constrained impersonation for the
// same request (k8s.io/apiserver's impersonation cache, 10 s, like its token cache), with a margin: an
// exchange credential that made a request in the 10 s before its bindings went can repeat that request
// until then. There is nothing to watch for its end, so revoke waits it out before saying the credentials
// are refused.
var ImpersonationCacheTTL = 10*time.Second + 500*time.Millisecond

// waitDenied repeats a SubjectAccessReview until it is denied.
func waitDenied(ctx context.Context, c *member.Cluster, user string, groups []string, a authzv1.ResourceAttributes) error {
	deadline := time.Now().Add(sandbox.PolicyTimeout)
	pause := 50 * time.Millisecond
	for {
		allowed, err := sandbox.AccessReview(ctx, c, user, groups, a)
		if err != nil {
			return fmt.Errorf("confirming that %s may no longer %s %s: %w", user, a.Verb, a.Resource, err)
		}
		if !allowed {
			return nil
		}
		if time.Now().After(deadline) {
			return &member.StillAllowedError{User: user, What: fmt.Sprintf("%s %s%s %s", a.Verb, a.Resource, nsNoteOf(a.Namespace), a.Name), After: sandbox.PolicyTimeout}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 500*time.Millisecond)
	}
}

func nsNoteOf(ns string) string {
	if ns == "" {
		return ""
	}
	return " in " + ns
}

// Revocation is final against a grant made at the same moment. Revoke counts the revocation in the record
// (RecordRevocation) before it deletes any binding, marks the Tenant Revoked, and then looks at every
// namespace of the consumer once more. A grant (an extra namespace, a slice, an issuance) reads the count
// before it binds, and once its binding holds looks again (Recheck): either it sees the revocation and
// takes back what it bound (TakeBack), or its binding was in place before revoke's last look, which
// removes it. No order of the two leaves a binding behind.

// GrantState is what a grant reads of its consumer before it binds.
type GrantState struct {
	Revocations int64 // the record's count
}

// ReadGrantState reads the revocation count a grant compares after it binds.
func ReadGrantState(ctx context.Context, c *member.Cluster, consumerID string) (GrantState, error) {
	n, err := Revocations(ctx, c, consumerID)
	return GrantState{Revocations: n}, err
}

// GrantStateRead is ReadGrantState as an early read: an issuance sends it with its first batch.
func GrantStateRead(c *member.Cluster, consumerID string) member.Read[GrantState] {
	return member.NewRead[GrantState]("GrantState/"+consumerID, func(ctx context.Context) (GrantState, error) {
		return ReadGrantState(ctx, c, consumerID)
	})
}

// Rechecked is a grant's second look at its consumer, once its binding holds.
type Rechecked struct {
	Revoked  bool // revoked since the grant's first look, or one of its users is recorded revoked
	Cordoned bool // the Tenant says cordoned now
}

// Recheck reads the revocation record and the Tenant, at once: the consumer was revoked meanwhile if the
// record counts a revocation more than before, names one of users, or the Tenant is not Active (or gone).
func Recheck(ctx context.Context, c *member.Cluster, consumerID string, before GrantState, users ...string) (Rechecked, error) {
	return recheck(ctx, c, consumerID, before, false, users...)
}

// recheck is Recheck; with recording, the look goes with the grant's own record of an Active Tenant (an
// issuance's records, written on the condition that the Tenant did not change since the run wrote it),
// which it may read before they land: the Tenant's phase says nothing then (not Active yet; Revoked until
// a re-admission's record lands), and a revocation is the count, a user recorded, or the Tenant gone.
func recheck(ctx context.Context, c *member.Cluster, consumerID string, before GrantState, recording bool, users ...string) (Rechecked, error) {
	var out Rechecked
	var cm *corev1.ConfigMap
	var cmErr, tErr error
	var phase string
	var cordoned bool
	_ = parallel.All(func() error {
		cm, cmErr = c.Kube.CoreV1().ConfigMaps(member.SystemNamespace).Get(ctx, revokedRecordName(consumerID), metav1.GetOptions{})
		return nil
	}, func() error {
		var u *unstructured.Unstructured
		u, tErr = c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(member.TenantNamespace(consumerID)).Get(ctx, consumerID, metav1.GetOptions{})
		if tErr == nil {
			phase, _, _ = unstructured.NestedString(u.Object, "status", "phase")
			cordoned, _, _ = unstructured.NestedBool(u.Object, "status", "cordoned")
		}
		return nil
	})
	switch {
	case cmErr != nil && !apierrors.IsNotFound(cmErr):
		return out, fmt.Errorf("reading the revocation record %s/%s: %w", member.SystemNamespace, revokedRecordName(consumerID), cmErr)
	case tErr != nil && !apierrors.IsNotFound(tErr):
		return out, fmt.Errorf("reading Tenant %s/%s: %w", member.TenantNamespace(consumerID), consumerID, tErr)
	}
	out.Cordoned = cordoned
	out.Revoked = tErr != nil || phase != PhaseActive && !recording
	if cmErr == nil {
		n, _ := strconv.ParseInt(cm.Data[revocationsKey], 10, 64)
		out.Revoked = out.Revoked || n != before.Revocations
		now := c.CurrentTime()
		for _, v := range cm.Data {
			if until, user, ok := parseRevokedEntry(v); ok && now.Before(until) && slices.Contains(users, user) {
				out.Revoked = true
			}
		}
	}
	return out, nil
}

// TakeBack undoes what a grant bound for a consumer revoked meanwhile: its users are recorded revoked,
// kubectl federate's RoleBinding of each namespace is deleted, the API server is seen to refuse them, and
// what runs in those namespaces is stopped. It works on a context of its own: the grant's may be ending.
func TakeBack(ctx context.Context, c *member.Cluster, consumerID string, bound []BoundUser) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), member.CleanupTimeout)
	defer cancel()
	users := make([]RevokedUser, len(bound))
	for i, b := range bound {
		users[i] = RevokedUser{User: b.User}
	}
	if err := RecordRevoked(ctx, c, consumerID, users); err != nil {
		return err
	}
	var namespaces []string
	for _, b := range bound {
		if b.Namespace != "" && !slices.Contains(namespaces, b.Namespace) {
			namespaces = append(namespaces, b.Namespace)
		}
	}
	unbind := make([]func() error, len(namespaces))
	for i, ns := range namespaces {
		unbind[i] = func() error {
			rbs := c.Kube.RbacV1().RoleBindings(ns)
			rb, err := rbs.Get(ctx, member.RoleBindingName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) || err == nil && (rb.Labels[member.LabelManagedBy] != member.ManagedBy || rb.Labels[member.LabelRemoteClusterID] != consumerID) {
				return nil // gone already, or not ours to touch
			}
			if err != nil {
				return err
			}
			err = rbs.Delete(ctx, member.RoleBindingName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &rb.UID}})
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				return nil
			}
			return err
		}
	}
	if err := parallel.All(unbind...); err != nil {
		return err
	}
	if err := ConfirmRefused(ctx, c, bound); err != nil {
		return err
	}
	stop := make([]func() error, len(namespaces))
	for i, ns := range namespaces {
		stop[i] = func() error { return objects.IgnoreNotFound(sandbox.StopTenant(ctx, c, ns)) }
	}
	return parallel.All(stop...)
}

// RevokedMeanwhileError is a grant taken back because its consumer was revoked while it was made.
type RevokedMeanwhileError struct {
	ConsumerID, What string
}

func (e *RevokedMeanwhileError) Error() string {
	return fmt.Sprintf("consumer %q %s while %s was made: what it bound was taken back", e.ConsumerID, member.ErrRevoked, e.What)
}

func (e *RevokedMeanwhileError) Unwrap() error { return member.ErrRevoked }

// BoundIn is a user bound in ns, with the groups it authenticates with: a certificate's tenant group, a
// ServiceAccount's own.
func BoundIn(user, ns string) BoundUser {
	if saNS, _, err := credential.SplitServiceAccountUser(user); err == nil {
		return BoundUser{User: user, Namespace: ns, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + saNS, "system:authenticated"}}
	}
	return BoundUser{User: user, Namespace: ns, Groups: []string{member.TenantGroup, "system:authenticated"}}
}

package handshake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// RecordRevoked adds users to a consumer's revocation record, dropping entries whose credential has
// expired; concurrent writers are serialized by the record's resourceVersion.
func RecordRevoked(ctx context.Context, c *member.Cluster, consumerID string, users []RevokedUser) error {
	if len(users) == 0 {
		return nil
	}
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

// RevokedUsers (provider) lists the users recorded as revoked for a consumer, sorted.
func RevokedUsers(ctx context.Context, c *member.Cluster, consumerID string) ([]string, error) {
	m, err := RevokedUntil(ctx, c, consumerID)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(m)), nil
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

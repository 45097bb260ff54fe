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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/member"
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

// recordRevoked adds users to a consumer's revocation record, dropping entries whose credential has
// expired; concurrent writers are serialized by the record's resourceVersion.
func recordRevoked(ctx context.Context, c *member.Cluster, consumerID string, users []RevokedUser) error {
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

// revokedUsers reads a consumer's revocation record: the users never to bind again, with when that ends.
func revokedUsers(ctx context.Context, c *member.Cluster, consumerID string) (map[string]time.Time, error) {
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

// checkNotRevoked refuses a user found in the consumer's revocation record.
func checkNotRevoked(ctx context.Context, c *member.Cluster, consumerID, user string) error {
	revoked, err := revokedUsers(ctx, c, consumerID)
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
	m, err := revokedUsers(ctx, c, consumerID)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(m)), nil
}

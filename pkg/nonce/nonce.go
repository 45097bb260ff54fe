// Package nonce creates, stores, expires and consumes the single-use nonces a provider hands to a
// consumer out of band. A nonce is 32 random bytes, written as unpadded base64url (43 characters), and is
// kept in a Secret in the provider's federate-system namespace, which no issued identity can read.
//
// Consuming a nonce replaces it, in the same Secret and with an optimistic-concurrency precondition, by
// the record of what it was used for (the caller's data, such as a key derived from it): the nonce value
// itself is gone, and a second consumption of the same version fails. Times are the caller's clock, which
// the CLI sets to the API server's (measured from its Date headers), so a wrong clock on the
// administrator's machine cannot stretch or cut a nonce's life.
package nonce

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/federate-dev/kubectl-federate/pkg/kube"
)

// Size is the number of random bytes in a nonce.
const Size = 32

// encoding is the nonce's text form: URL-safe so it survives shells, URLs and YAML unquoted.
var encoding = base64.RawURLEncoding

// EncodedLen is the length of a nonce string.
var EncodedLen = encoding.EncodedLen(Size)

// Data keys and annotations of the nonce Secret.
const (
	dataKey        = "nonce"
	expiresAtAnnot = "federate.dev/expires-at"
	secretPrefix   = "nonce-"
	timeFormat     = time.RFC3339
	nonceLabel     = "federate.dev/nonce"
	labelUnused    = "true" // nonceLabel's value while the Secret holds an unused nonce
	labelUsed      = "used" // ... and once it holds the record of its use
	usedAtAnnot    = "federate.dev/used-at"
)

// Errors a caller can test for.
var (
	ErrNotFound = errors.New("no nonce")
	ErrExpired  = errors.New("nonce expired")
	ErrUsed     = errors.New("nonce already used")
)

// New returns a fresh nonce read from r (crypto/rand when r is nil).
func New(r io.Reader) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	b := make([]byte, Size)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("reading randomness: %w", err)
	}
	return encoding.EncodeToString(b), nil
}

// Parse checks that s is a well-formed nonce and returns it. Leading and trailing white space (a newline
// from a file or a terminal) is not accepted silently: the caller trims what it reads.
func Parse(s string) (string, error) {
	if s == "" {
		return "", errors.New("nonce is empty")
	}
	if len(s) != EncodedLen {
		return "", fmt.Errorf("nonce must be %d characters of base64url, got %d", EncodedLen, len(s))
	}
	b, err := encoding.DecodeString(s)
	if err != nil || len(b) != Size {
		return "", errors.New("nonce is not valid base64url")
	}
	return s, nil
}

// Nonce is a stored nonce.
type Nonce struct {
	ConsumerID string
	Value      string
	ExpiresAt  time.Time
	uid        types.UID
	rv         string
	consumed   bool   // by this process
	consumedRV string // the version of the record it left
	unstored   bool   // made by Prepare: stored only when consumed
	replaces   bool   // ... over the Secret of version rv (an expired or used nonce), else a new one
}

// Store keeps nonces as Secrets in one namespace.
type Store struct {
	Client    kube.Interface
	Namespace string
	Labels    func(consumerID string) map[string]string // labels of a consumer's nonce Secret
	Now       func() time.Time                          // nil: time.Now
	Rand      io.Reader                                 // nil: crypto/rand
	// Read, if set, reads a nonce Secret by name instead of a GET of its own: a caller that already sent
	// the read (to overlap it with others) answers it from there.
	Read func(ctx context.Context, name string) (*corev1.Secret, error)
}

func (s Store) read(ctx context.Context, name string) (*corev1.Secret, error) {
	if s.Read != nil {
		return s.Read(ctx, name)
	}
	return s.Client.CoreV1().Secrets(s.Namespace).Get(ctx, name, metav1.GetOptions{})
}

func (s Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// SecretName is the name of the Secret holding the nonce for a consumer.
func SecretName(consumerID string) string { return secretPrefix + consumerID }

func (s Store) fromSecret(consumerID string, sec *corev1.Secret) (*Nonce, error) {
	if _, ok := sec.Data[dataKey]; !ok {
		return nil, fmt.Errorf("%w for consumer %q: it was already used", ErrNotFound, consumerID)
	}
	exp, err := time.Parse(timeFormat, sec.Annotations[expiresAtAnnot])
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: annotation %s: %w", sec.Namespace, sec.Name, expiresAtAnnot, err)
	}
	v, err := Parse(string(sec.Data[dataKey]))
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", sec.Namespace, sec.Name, err)
	}
	return &Nonce{ConsumerID: consumerID, Value: v, ExpiresAt: exp, uid: sec.UID, rv: sec.ResourceVersion}, nil
}

// Prepared tells whether the nonce was made by Prepare and stored by nobody before its consumption: no
// other request can have been made for it.
func (n *Nonce) Prepared() bool { return n.unstored }

// Ensure returns the consumer's unexpired nonce, or creates a new one valid for ttl (replacing an expired
// one). created tells which.
func (s Store) Ensure(ctx context.Context, consumerID string, ttl time.Duration) (n *Nonce, created bool, err error) {
	n, created, err = s.Prepare(ctx, consumerID, ttl)
	if err != nil || !created {
		return n, false, err
	}
	secrets := s.Client.CoreV1().Secrets(s.Namespace)
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:        SecretName(consumerID),
			Namespace:   s.Namespace,
			Labels:      s.labels(consumerID, labelUnused),
			Annotations: map[string]string{expiresAtAnnot: n.ExpiresAt.Format(timeFormat)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{dataKey: []byte(n.Value)},
	}
	var out *corev1.Secret
	if !n.replaces {
		out, err = secrets.Create(ctx, sec, metav1.CreateOptions{})
	} else {
		sec.ResourceVersion = n.rv // replace the expired or used one, unless someone raced us
		out, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		// A concurrent run stored a nonce first: use theirs.
		n, err := s.Get(ctx, consumerID)
		return n, false, err
	}
	if err != nil {
		return nil, false, err
	}
	n, err = s.fromSecret(consumerID, out)
	return n, err == nil, err
}

// Prepare returns the consumer's unexpired unused nonce (created false), or a new one valid for ttl that
// is not stored yet (created true): Consume stores it, already used, in one write that replaces exactly
// the Secret found here (an expired or used nonce), or creates it if there was none. It is for a caller
// that uses the nonce itself at once (a one-shot handshake), which saves the round trip of storing a nonce
// nobody else will ever read; a concurrent writer makes Consume fail as ErrUsed, as with a stored nonce.
func (s Store) Prepare(ctx context.Context, consumerID string, ttl time.Duration) (n *Nonce, created bool, err error) {
	return s.PrepareValue(ctx, consumerID, ttl, "")
}

// PrepareValue is Prepare with the new nonce's value chosen by the caller ("": a random one), which must
// be a value New made: a one-shot run makes its request for that value before it knows whether an unused
// nonce is there already.
func (s Store) PrepareValue(ctx context.Context, consumerID string, ttl time.Duration, value string) (n *Nonce, created bool, err error) {
	existing, err := s.read(ctx, SecretName(consumerID))
	switch {
	case apierrors.IsNotFound(err):
		existing = nil
	case err != nil:
		return nil, false, err
	default:
		if n, perr := s.fromSecret(consumerID, existing); perr == nil && s.now().Before(n.ExpiresAt) {
			return n, false, nil
		}
	}
	if value == "" {
		if value, err = New(s.Rand); err != nil {
			return nil, false, err
		}
	} else if _, err := Parse(value); err != nil {
		return nil, false, err
	}
	n = &Nonce{ConsumerID: consumerID, Value: value, ExpiresAt: s.now().Add(ttl).UTC().Truncate(time.Second), unstored: true}
	if existing != nil {
		n.uid, n.rv, n.replaces = existing.UID, existing.ResourceVersion, true
	}
	return n, true, nil
}

func (s Store) labels(consumerID, state string) map[string]string {
	l := map[string]string{}
	if s.Labels != nil {
		for k, v := range s.Labels(consumerID) {
			l[k] = v
		}
	}
	l[nonceLabel] = state
	return l
}

// Get returns the consumer's nonce; ErrNotFound if there is none (never created, or used), ErrExpired if
// its time is up.
func (s Store) Get(ctx context.Context, consumerID string) (*Nonce, error) {
	sec, err := s.read(ctx, SecretName(consumerID))
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w for consumer %q: it was never created, or it was already used", ErrNotFound, consumerID)
	}
	if err != nil {
		return nil, err
	}
	n, err := s.fromSecret(consumerID, sec)
	if err != nil {
		return nil, err
	}
	if !s.now().Before(n.ExpiresAt) {
		return nil, fmt.Errorf("%w at %s for consumer %q", ErrExpired, n.ExpiresAt.Format(timeFormat), consumerID)
	}
	return n, nil
}

// Consume replaces the nonce, exactly the version that was read, by record (the nonce value is dropped):
// if another run used or replaced it in the meantime, ErrUsed.
func (s Store) Consume(ctx context.Context, n *Nonce, record map[string][]byte) error {
	secrets := s.Client.CoreV1().Secrets(s.Namespace)
	var out *corev1.Secret
	var err error
	if n.unstored && !n.replaces {
		out, err = secrets.Create(ctx, s.record(n, "", record), metav1.CreateOptions{})
	} else {
		out, err = secrets.Update(ctx, s.record(n, n.rv, record), metav1.UpdateOptions{})
	}
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("%w for consumer %q (another run consumed or replaced it)", ErrUsed, n.ConsumerID)
	}
	if err != nil {
		return err
	}
	n.consumed, n.consumedRV, n.uid = true, out.ResourceVersion, out.UID
	return nil
}

// record is the Secret of a used nonce, replacing exactly version rv.
func (s Store) record(n *Nonce, rv string, record map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:            SecretName(n.ConsumerID),
			Namespace:       s.Namespace,
			UID:             n.uid,
			ResourceVersion: rv,
			Labels:          s.labels(n.ConsumerID, labelUsed),
			Annotations:     map[string]string{usedAtAnnot: s.now().UTC().Format(timeFormat)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: record,
	}
}

// Restore puts back a nonce this process consumed, as it was, when nothing was issued for it after all
// (the signer issued no certificate): the same request can then be answered another way. It applies only
// to exactly the record Consume wrote; if anything changed it since, the nonce stays used.
func (s Store) Restore(ctx context.Context, n *Nonce) error {
	if !n.consumed {
		return fmt.Errorf("the nonce of consumer %q was not consumed by this run", n.ConsumerID)
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:            SecretName(n.ConsumerID),
			Namespace:       s.Namespace,
			UID:             n.uid,
			ResourceVersion: n.consumedRV,
			Labels:          s.labels(n.ConsumerID, labelUnused),
			Annotations:     map[string]string{expiresAtAnnot: n.ExpiresAt.UTC().Format(timeFormat)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{dataKey: []byte(n.Value)},
	}
	out, err := s.Client.CoreV1().Secrets(s.Namespace).Update(ctx, sec, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("restoring the nonce of consumer %q: %w", n.ConsumerID, err)
	}
	n.rv, n.consumed, n.consumedRV, n.unstored = out.ResourceVersion, false, "", false
	return nil
}

// Record returns what Consume stored for the consumer's last used nonce; ErrNotFound if the Secret holds
// none (never used, replaced by a new nonce, or removed).
func (s Store) Record(ctx context.Context, consumerID string) (map[string][]byte, error) {
	sec, err := s.read(ctx, SecretName(consumerID))
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w for consumer %q", ErrNotFound, consumerID)
	}
	if err != nil {
		return nil, err
	}
	if sec.Labels[nonceLabel] != labelUsed {
		return nil, fmt.Errorf("%w: the nonce of consumer %q was not used yet, or was replaced", ErrNotFound, consumerID)
	}
	return sec.Data, nil
}

// PruneExpired removes every unused nonce whose time is up, each exactly the version it read, except those
// of the consumers in keep (whose nonce the caller is about to replace), and returns the consumer IDs whose
// nonces it removed.
func (s Store) PruneExpired(ctx context.Context, keep ...string) ([]string, error) {
	secrets := s.Client.CoreV1().Secrets(s.Namespace)
	list, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: nonceLabel + "=" + labelUnused})
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for i := range list.Items {
		sec := &list.Items[i]
		exp, err := time.Parse(timeFormat, sec.Annotations[expiresAtAnnot])
		if err == nil && s.now().Before(exp) || slices.Contains(keep, strings.TrimPrefix(sec.Name, secretPrefix)) {
			continue
		}
		err = secrets.Delete(ctx, sec.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &sec.UID, ResourceVersion: &sec.ResourceVersion}})
		switch {
		case err == nil:
			removed = append(removed, strings.TrimPrefix(sec.Name, secretPrefix))
		case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// Delete removes the consumer's nonce if there is one.
func (s Store) Delete(ctx context.Context, consumerID string) error {
	err := s.Client.CoreV1().Secrets(s.Namespace).Delete(ctx, SecretName(consumerID), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Unused is a nonce waiting to be used.
type Unused struct {
	ConsumerID string
	Created    time.Time
	ExpiresAt  time.Time
}

// ListUnused lists the nonces waiting to be used (expired ones included, with their expiry).
func (s Store) ListUnused(ctx context.Context) ([]Unused, error) {
	list, err := s.Client.CoreV1().Secrets(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: nonceLabel + "=" + labelUnused})
	if err != nil {
		return nil, err
	}
	out := make([]Unused, 0, len(list.Items))
	for _, sec := range list.Items {
		exp, _ := time.Parse(timeFormat, sec.Annotations[expiresAtAnnot])
		out = append(out, Unused{ConsumerID: strings.TrimPrefix(sec.Name, secretPrefix), Created: sec.CreationTimestamp.Time, ExpiresAt: exp})
	}
	return out, nil
}

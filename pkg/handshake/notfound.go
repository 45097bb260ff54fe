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

// What a removal prints is what happened. A name this cluster has no record of (a typo in an incident) is
// NotFound, never a success; a name that existed and is already removed is "already", a success, so that
// re-runs stay safe. A removal therefore leaves a tombstone: which kind of thing, of which remote cluster,
// was removed when.

// ErrNotFound is matched by every *NotFoundError.
var ErrNotFound = errors.New("not found")

// NotFoundError says that this cluster has no record of a name, live or removed, and which it has.
type NotFoundError struct {
	Kind  string   // what the name was taken for: "consumer", "provider", "resource slice", ...
	Name  string   // the name given
	Where string   // where it was looked for, for the reader
	Known []string // the names of that kind this cluster has, closest first
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("%s %q not found", e.Kind, e.Name)
	if e.Where != "" {
		msg += " " + e.Where
	}
	switch {
	case len(e.Known) == 0:
		msg += "; there is none"
	case nearby(e.Name, e.Known[0]):
		msg += fmt.Sprintf("; did you mean %q? (known: %s)", e.Known[0], strings.Join(e.Known, ", "))
	default:
		msg += "; known: " + strings.Join(e.Known, ", ")
	}
	return msg
}

// Nearby says whether the closest known name is near enough to the one given to be what was meant.
func (e *NotFoundError) Nearby() bool { return len(e.Known) > 0 && nearby(e.Name, e.Known[0]) }

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// NotFound builds a NotFoundError with the known names sorted closest first.
func NotFound(kind, name, where string, known []string) *NotFoundError {
	known = slices.Compact(slices.Sorted(slices.Values(known)))
	slices.SortStableFunc(known, func(a, b string) int { return distance(name, a) - distance(name, b) })
	return &NotFoundError{Kind: kind, Name: name, Where: where, Known: known}
}

// nearby says whether a known name is near enough to be what was meant: a few edits apart.
func nearby(name, known string) bool {
	return distance(name, known) <= max(2, len(name)/4)
}

// distance is the Levenshtein distance between two short names.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Outcome is what a removal did.
type Outcome int

// Outcomes of a removal.
const (
	// Done: the removal changed the cluster.
	Done Outcome = iota
	// Already: the name existed and was already removed (or revoked, cordoned): nothing to change.
	Already
)

// Kinds of tombstones.
const (
	RemovedConsumer  = "consumer"       // a provider's tenant, revoked or unauthenticated
	RemovedProvider  = "provider"       // a consumer's pairing, unauthenticated
	RemovedSlice     = "resource slice" // a slice, on either side
	RemovedNamespace = "namespace"      // an extra namespace, revoked
	RemovedExchange  = "exchange request"
)

const (
	tombstonesConfigMap = "federate-removed"
	// tombstoneRetention is how long a removal is remembered; tombstoneCap bounds the record.
	tombstoneRetention = 90 * 24 * time.Hour
	tombstoneCap       = 2000
)

func tombstoneKey(kind, remote, name string) string {
	sum := sha256.Sum256([]byte(kind + "\n" + remote + "\n" + name))
	return "t-" + hex.EncodeToString(sum[:12])
}

// tombstone is one remembered removal.
type tombstone struct {
	when               time.Time
	kind, remote, name string
}

func (t tombstone) encode() string {
	return t.when.UTC().Format(time.RFC3339) + "\t" + t.kind + "\t" + t.remote + "\t" + t.name
}

func decodeTombstone(v string) (tombstone, bool) {
	f := strings.Split(v, "\t")
	if len(f) != 4 {
		return tombstone{}, false
	}
	when, err := time.Parse(time.RFC3339, f[0])
	return tombstone{when: when, kind: f[1], remote: f[2], name: f[3]}, err == nil
}

// RecordRemoved remembers removals in federate-system, dropping the oldest beyond the retention and the
// cap; concurrent writers are serialized by the record's resourceVersion. It is called only after
// something was removed, so a failure here loses a convenience (a later "already"), never a right.
func RecordRemoved(ctx context.Context, c *member.Cluster, kind, remote string, names ...string) error {
	cms := c.Kube.CoreV1().ConfigMaps(member.SystemNamespace)
	now := c.CurrentTime()
	for {
		cm, err := cms.Get(ctx, tombstonesConfigMap, metav1.GetOptions{})
		create := apierrors.IsNotFound(err)
		if err != nil && !create {
			return err
		}
		if create {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tombstonesConfigMap, Namespace: member.SystemNamespace,
				Labels: map[string]string{member.LabelManagedBy: member.ManagedBy}}}
		}
		var kept []tombstone
		for _, v := range cm.Data {
			if t, ok := decodeTombstone(v); ok && now.Sub(t.when) < tombstoneRetention {
				kept = append(kept, t)
			}
		}
		slices.SortFunc(kept, func(a, b tombstone) int { return b.when.Compare(a.when) })
		if len(kept) > tombstoneCap-len(names) {
			kept = kept[:max(0, tombstoneCap-len(names))]
		}
		data := map[string]string{}
		for _, t := range kept {
			data[tombstoneKey(t.kind, t.remote, t.name)] = t.encode()
		}
		for _, n := range names {
			data[tombstoneKey(kind, remote, n)] = tombstone{when: now, kind: kind, remote: remote, name: n}.encode()
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
		return err
	}
}

// Removed tells whether a removal of that name is remembered, and lists the names of that kind removed for
// that remote cluster (for a NotFoundError's known names).
func Removed(ctx context.Context, c *member.Cluster, kind, remote, name string) (bool, []string, error) {
	cm, err := c.Kube.CoreV1().ConfigMaps(member.SystemNamespace).Get(ctx, tombstonesConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	var names []string
	for _, v := range cm.Data {
		if t, ok := decodeTombstone(v); ok && t.kind == kind && t.remote == remote {
			names = append(names, t.name)
		}
	}
	_, found := cm.Data[tombstoneKey(kind, remote, name)]
	return found, names, nil
}

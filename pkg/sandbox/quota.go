package sandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// A consumer's namespaces on a provider share one total: the quota chosen at pairing, recorded in the
// Tenant's status.sandbox.quota. Every grant (a slice, an extra namespace) is carved out of it with a quota
// of its own, and the tenant namespace's quota is the total less everything granted, so the hard limits of
// all of a tenant's namespaces never add up to more than its total. Quotas are per namespace and nothing
// runs on the provider to add them up, so the grants are counted in a ledger: a ConfigMap of
// federate-system, which no tenant reads or writes, changed only under its resourceVersion. A grant is
// held there before anything of it exists, so two concurrent grants cannot both take the last of the total
// or the last slice; the loser reads the ledger again and is refused. The tenant namespace's quota records
// the ledger generation it was computed from and is only ever replaced by a newer one, so writers that
// race never leave it larger than the ledger allows.

// GrantsLedgerName is the ConfigMap of federate-system that holds a consumer's total and its grants.
func GrantsLedgerName(consumerID string) string { return "federate-grants-" + consumerID }

// AnnotationGrantsGeneration is the generation of the ledger a tenant namespace's ResourceQuota was
// computed from, on that quota.
const AnnotationGrantsGeneration = "federate.dev/grants-generation"

// Keys of the ledger's data: the total, the generation (one more at every write), and one entry per grant.
const (
	ledgerTotal      = "total"
	ledgerGeneration = "generation"
	ledgerSlice      = "slice."
	ledgerNamespace  = "namespace."
)

// SliceGrantKey and NamespaceGrantKey are the ledger's keys of a slice's and an extra namespace's grant.
func SliceGrantKey(slice string) string { return ledgerSlice + slice }

// NamespaceGrantKey is the ledger key of an extra namespace's grant.
func NamespaceGrantKey(ns string) string { return ledgerNamespace + ns }

// DefaultGrantQuota is what a grant gets of a resource nobody chose for it: an extra namespace's quota
// where the provider sets none, and a slice's allowance of what it did not or cannot ask for (capped by
// its class). It is modest because it is carved out of the tenant's total (DefaultQuota): about a fifth of
// it, so a few grants fit and the tenant namespace keeps the rest. A grant never gets any of the request
// kinds: only requests in the tenant namespace are ever read, so anywhere else they would only fill etcd.
func DefaultGrantQuota() corev1.ResourceList {
	return MustResources(map[string]string{
		"pods": "4", "requests.cpu": "1", "limits.cpu": "2", "requests.memory": "2Gi", "limits.memory": "4Gi",
		"requests.storage": "2Gi", "persistentvolumeclaims": "2", "requests.ephemeral-storage": "2Gi",
		"services": "2", "services.nodeports": "0", "services.loadbalancers": "0", "secrets": "4", "configmaps": "4",
		"count/pods": "5", "count/deployments.apps": "2", "count/statefulsets.apps": "1", "count/replicasets.apps": "4",
		"count/controllerrevisions.apps": "3", "count/jobs.batch": "2", "count/cronjobs.batch": "1",
		"count/endpointslices.discovery.k8s.io": "2", "count/resourceslices.federate.dev": "0", "count/namespacerequests.federate.dev": "0",
		"count/exchangerequests.federate.dev": "0",
	})
}

// The arithmetic of totals. Only the resources the total names are carved: one it leaves out is unbounded
// for the tenant anyway.

// SumQuotas adds resource lists.
func SumQuotas(lists ...corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, l := range lists {
		for name, q := range l {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}

// TenantShare is what the tenant namespace keeps of the total once the grants are carved out of it: each
// resource of the total less what the grants hold of it, never below zero.
func TenantShare(total, granted corev1.ResourceList) corev1.ResourceList {
	return RemainingOf(total, granted, nil)
}

// RemainingOf is what one more grant may take of each resource of the total: the total less what the other
// grants hold and what the tenant namespace already uses, never below zero.
func RemainingOf(total, granted, used corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, t := range total {
		left := t.DeepCopy()
		if g, ok := granted[name]; ok {
			left.Sub(g)
		}
		if u, ok := used[name]; ok {
			left.Sub(u)
		}
		if left.Sign() < 0 {
			left = *resource.NewQuantity(0, t.Format)
		}
		out[name] = left
	}
	return out
}

// OverRemaining lists, sorted, the resources a grant needs more of than remains.
func OverRemaining(want, remaining corev1.ResourceList) []corev1.ResourceName {
	var over []corev1.ResourceName
	for name, left := range remaining {
		if q, ok := want[name]; ok && q.Cmp(left) > 0 {
			over = append(over, name)
		}
	}
	slices.Sort(over)
	return over
}

// NeedsMore is what a grant needs more of than remains, leaving out what it holds already (held, nil for
// a new grant): a grant that converges takes nothing new in a resource it does not raise, so it is never
// refused for it, even where earlier grants hold more than the total (made before the total was tracked).
func NeedsMore(want, held, remaining corev1.ResourceList) corev1.ResourceList {
	needs := corev1.ResourceList{}
	for _, name := range OverRemaining(want, remaining) {
		q := want[name]
		if h, ok := held[name]; ok && q.Cmp(h) <= 0 {
			continue
		}
		needs[name] = q
	}
	return needs
}

// CompleteGrant makes a grant's quota name every resource of the total, at zero where it names none: a
// resource a namespace's quota leaves out is unbounded there, which would escape the total.
func CompleteGrant(q, total corev1.ResourceList) corev1.ResourceList {
	out := q.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for name, t := range total {
		if _, ok := out[name]; !ok {
			out[name] = *resource.NewQuantity(0, t.Format)
		}
	}
	return out
}

// MaxQuota is the larger of two lists, resource by resource.
func MaxQuota(a, b corev1.ResourceList) corev1.ResourceList {
	out := a.DeepCopy()
	for name, q := range b {
		if have, ok := out[name]; !ok || q.Cmp(have) > 0 {
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// SameQuota tells whether two lists name the same resources in the same amounts.
func SameQuota(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if o, ok := b[name]; !ok || q.Cmp(o) != 0 {
			return false
		}
	}
	return true
}

// ErrOverTotal means a grant needs more than remains of its consumer's total.
var ErrOverTotal = errors.New("more than remains of the consumer's total")

// ErrBelowGranted means a total is smaller than what the consumer's grants already hold.
var ErrBelowGranted = errors.New("less than the consumer's grants already hold")

// ErrTooManySlices means a consumer holds MaxSlicesPerConsumer slices already.
var ErrTooManySlices = errors.New("the most resource slices one consumer may hold")

// RemainingError is a grant refused because it needs more than remains of its consumer's total. Remaining
// lists what is left of each resource of the total.
type RemainingError struct {
	ConsumerID string
	Grant      string              // what was asked: a slice or a namespace, named
	Needs      corev1.ResourceList // the resources it needs more of than remains, with what it needs
	Remaining  corev1.ResourceList
}

// Error names only the resources that do not fit, each with what remains of it (the whole list of what
// remains is two dozen resources and hides the one that matters), and what can be done.
func (e *RemainingError) Error() string {
	parts := make([]string, 0, len(e.Needs))
	for _, name := range slices.Sorted(maps.Keys(e.Needs)) {
		need, left := e.Needs[name], e.Remaining[name]
		parts = append(parts, fmt.Sprintf("%s %s (%s remains)", name, need.String(), left.String()))
	}
	return fmt.Sprintf("%s needs more than remains of consumer %q's total: %s; free some (delete a slice, revoke a namespace, stop workloads in the tenant namespace), ask for less, or raise the consumer's total",
		e.Grant, e.ConsumerID, strings.Join(parts, ", "))
}

func (e *RemainingError) Unwrap() error { return ErrOverTotal }

// CheckTotal refuses a total smaller, in any resource, than what the consumer's grants already hold: the
// tenant namespace would need less than nothing.
func CheckTotal(consumerID string, total, granted corev1.ResourceList) error {
	var short []string
	for _, name := range slices.Sorted(maps.Keys(total)) {
		t, g := total[name], granted[name]
		if g.Cmp(t) > 0 {
			short = append(short, fmt.Sprintf("%s %s (granted: %s)", name, t.String(), g.String()))
		}
	}
	if len(short) == 0 {
		return nil
	}
	return fmt.Errorf("the quota of consumer %q is %w: %s; revoke namespaces or delete slices of it first, or give it more",
		consumerID, ErrBelowGranted, strings.Join(short, ", "))
}

// GrantLedger is a consumer's ledger as read.
type GrantLedger struct {
	Cm         *corev1.ConfigMap   // as stored; nil where there is none yet
	Total      corev1.ResourceList // nil where none is recorded yet
	Generation int64
	Grants     map[string]corev1.ResourceList // by key: slice.<name>, namespace.<name>
}

// ParseLedger reads a consumer's ledger from its ConfigMap, refusing one whose amounts do not parse.
func ParseLedger(cm *corev1.ConfigMap) (*GrantLedger, error) {
	l := &GrantLedger{Cm: cm, Grants: map[string]corev1.ResourceList{}}
	for key, v := range cm.Data {
		var err error
		switch {
		case key == ledgerTotal:
			l.Total, err = ParseResourceList(key, v)
		case key == ledgerGeneration:
			l.Generation, err = strconv.ParseInt(v, 10, 64)
		case strings.HasPrefix(key, ledgerSlice), strings.HasPrefix(key, ledgerNamespace):
			l.Grants[key], err = ParseResourceList(key, v)
		}
		if err != nil {
			return nil, fmt.Errorf("the grants recorded in ConfigMap %s/%s: %s: %w", cm.Namespace, cm.Name, key, err)
		}
	}
	return l, nil
}

func (l *GrantLedger) clone() *GrantLedger {
	out := &GrantLedger{Cm: l.Cm, Total: l.Total.DeepCopy(), Generation: l.Generation, Grants: map[string]corev1.ResourceList{}}
	for k, v := range l.Grants {
		out.Grants[k] = v.DeepCopy()
	}
	return out
}

// Granted is what the grants hold, all but except.
func (l *GrantLedger) Granted(except string) corev1.ResourceList {
	var lists []corev1.ResourceList
	for key, q := range l.Grants {
		if key != except {
			lists = append(lists, q)
		}
	}
	return SumQuotas(lists...)
}

// Slices counts the slices held.
func (l *GrantLedger) Slices() int {
	n := 0
	for key := range l.Grants {
		if strings.HasPrefix(key, ledgerSlice) {
			n++
		}
	}
	return n
}

// ConfigMap is the ledger as the ConfigMap that records it for consumerID.
func (l *GrantLedger) ConfigMap(consumerID string) *corev1.ConfigMap {
	data := map[string]string{ledgerGeneration: strconv.FormatInt(l.Generation, 10)}
	if l.Total != nil {
		data[ledgerTotal] = FormatResourceList(FormatResources(l.Total))
	}
	for key, q := range l.Grants {
		data[key] = FormatResourceList(FormatResources(q))
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: GrantsLedgerName(consumerID), Namespace: member.SystemNamespace,
		Labels: member.TenantLabels(consumerID)}, Data: data}
	if l.Cm != nil {
		cm.ResourceVersion = l.Cm.ResourceVersion
	}
	return cm
}

// LedgerRead reads a consumer's ledger; prefetchIssue sends it early.
func LedgerRead(c *member.Cluster, consumerID string) member.Read[*GrantLedger] {
	return member.NewRead[*GrantLedger]("Ledger/"+consumerID, func(ctx context.Context) (*GrantLedger, error) {
		return ReadLedger(ctx, c, consumerID)
	})
}

// QuotaRead reads a sandbox namespace's ResourceQuota.
func QuotaRead(c *member.Cluster, ns string) member.Read[*corev1.ResourceQuota] {
	return member.NewRead[*corev1.ResourceQuota]("ResourceQuota/"+ns, func(ctx context.Context) (*corev1.ResourceQuota, error) {
		u, err := c.Dynamic.Resource(ResourceQuotaGVR).Namespace(ns).Get(ctx, SandboxName, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		q := &corev1.ResourceQuota{}
		return q, objects.FromUnstructured(u, q)
	})
}

// ReadLedger reads a consumer's ledger. Where there is none (a pairing from before the ledger, or one
// whose namespaces unauthenticate kept), it is made up from the quotas of the consumer's slice and extra
// namespaces, with no total yet; the list is sent with the read, so a first pairing waits for no more.
func ReadLedger(ctx context.Context, c *member.Cluster, consumerID string) (*GrantLedger, error) {
	var cm *corev1.ConfigMap
	var nss []corev1.Namespace
	var cmErr, nsErr error
	_ = parallel.All(func() error {
		cm, cmErr = c.Kube.CoreV1().ConfigMaps(member.SystemNamespace).Get(ctx, GrantsLedgerName(consumerID), metav1.GetOptions{})
		return nil
	}, func() error {
		nss, nsErr = c.NamespacesOfRead(consumerID, member.KindSlice, member.KindExtra).Get(ctx)
		return nil
	})
	if cmErr == nil {
		return ParseLedger(cm)
	}
	if !apierrors.IsNotFound(cmErr) {
		return nil, fmt.Errorf("reading the grants of consumer %q: %w", consumerID, cmErr)
	}
	if nsErr != nil {
		return nil, nsErr
	}
	l := &GrantLedger{Grants: map[string]corev1.ResourceList{}}
	quotas := make([]*corev1.ResourceQuota, len(nss))
	jobs := make([]func() error, len(nss))
	for i, ns := range nss {
		jobs[i] = func() error {
			q, err := QuotaRead(c, ns.Name).Get(ctx)
			if apierrors.IsNotFound(err) {
				return nil // no quota (a namespace half made): nothing held
			}
			quotas[i] = q
			return err
		}
	}
	if err := parallel.All(jobs...); err != nil {
		return nil, fmt.Errorf("reading the quotas of consumer %q's grants: %w", consumerID, err)
	}
	for i, ns := range nss {
		if quotas[i] == nil {
			continue
		}
		key := NamespaceGrantKey(ns.Name)
		if o := OwnerOf(ns.Labels); o.Kind == member.KindSlice {
			key = SliceGrantKey(o.Slice)
		}
		l.Grants[key] = quotas[i].Spec.Hard
	}
	return l, nil
}

// QuotaGeneration is the ledger generation a tenant quota was computed from (0: none recorded).
func QuotaGeneration(q *corev1.ResourceQuota) int64 {
	if q == nil {
		return 0
	}
	g, err := strconv.ParseInt(q.Annotations[AnnotationGrantsGeneration], 10, 64)
	if err != nil {
		return 0
	}
	return g
}

// maxLedgerWrites bounds the rounds a ledger change makes against concurrent writers.
const maxLedgerWrites = 100

// updateLedger changes a consumer's ledger under its resourceVersion: change sees the ledger as stored,
// may change it, and says whether to write it; when another writer came first, the ledger is read again
// and change decides anew. A ledger made for the first time starts above the generation the tenant
// quota carries (unauthenticate may have removed a ledger and kept that quota).
func updateLedger(ctx context.Context, c *member.Cluster, consumerID string, l *GrantLedger, tenantQuota *corev1.ResourceQuota,
	change func(*GrantLedger) (bool, error)) (*GrantLedger, error) {
	cms := c.Kube.CoreV1().ConfigMaps(member.SystemNamespace)
	for range maxLedgerWrites {
		next := l.clone()
		write, err := change(next)
		if err != nil || !write {
			return next, err
		}
		if l.Cm == nil {
			next.Generation = max(l.Generation, QuotaGeneration(tenantQuota)) + 1
		} else {
			next.Generation = l.Generation + 1
		}
		var stored *corev1.ConfigMap
		if l.Cm == nil {
			stored, err = cms.Create(ctx, next.ConfigMap(consumerID), metav1.CreateOptions{})
		} else {
			stored, err = cms.Update(ctx, next.ConfigMap(consumerID), metav1.UpdateOptions{})
		}
		if err == nil {
			next.Cm = stored
			return next, nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("recording the grants of consumer %q: %w", consumerID, err)
		}
		if l, err = ReadLedger(ctx, c, consumerID); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("recording the grants of consumer %q: %d concurrent changes in a row; try again", consumerID, maxLedgerWrites)
}

// ApplyTenantQuota makes the tenant namespace's quota the ledger's total less everything it grants, unless
// a newer ledger generation is there already. With read, cur is that quota as read earlier (nil: there is
// none); without, it is read now. With
// wait, it returns only once the quota controller enforces it (admission reads the quota's status, not its
// spec): a quota lowered for a new grant must hold before the grant's own namespace gets its quota. The
// watch for that starts with the write, so the controller's answer is seen one round trip after it.
func ApplyTenantQuota(ctx context.Context, c *member.Cluster, consumerID string, l *GrantLedger, cur *corev1.ResourceQuota, read, wait bool) error {
	ns := member.TenantNamespace(consumerID)
	want := TenantShare(l.Total, l.Granted(""))
	done := func(q *corev1.ResourceQuota) bool {
		g := QuotaGeneration(q)
		return g > l.Generation || g == l.Generation && SameQuota(q.Spec.Hard, want)
	}
	enforced := func(q *corev1.ResourceQuota) bool { return done(q) && SameQuota(q.Spec.Hard, q.Status.Hard) }
	if cur != nil && enforced(cur) {
		return nil
	}
	watched := func() error { return nil }
	if wait {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		watched = parallel.Background(func() error {
			return c.WaitFor(wctx, c.Kube.CoreV1().ResourceQuotas(ns), SandboxName, "", func(ev watch.Event) (bool, error) {
				q, ok := ev.Object.(*corev1.ResourceQuota)
				return ok && ev.Type != watch.Deleted && enforced(q), nil
			})
		})
		defer func() {
			cancel()
			_ = watched()
		}()
	}
	cur, err := writeTenantQuota(ctx, c, consumerID, want, l.Generation, cur, read, done)
	if err != nil || cur == nil || !wait || enforced(cur) {
		return err
	}
	if err := watched(); err != nil {
		return fmt.Errorf("waiting for the quota controller to enforce ResourceQuota %s/%s: %w", ns, SandboxName, err)
	}
	return nil
}

// writeTenantQuota writes want, for ledger generation gen, as the tenant namespace's quota unless done says
// the quota is there already; cur and read are as for applyTenantQuota. It is server-side applied, as every sandbox object is (so a kubectl federate
// of another version converges the same fields), with the quota's resourceVersion as a precondition: a
// concurrent writer makes it read again. A quota that is missing is applied without one; only an issuance
// creates the tenant namespace's quota, before any grant can exist. It returns the quota as it now is; nil
// when there is no tenant namespace (being removed).
func writeTenantQuota(ctx context.Context, c *member.Cluster, consumerID string, want corev1.ResourceList, gen int64, cur *corev1.ResourceQuota,
	read bool, done func(*corev1.ResourceQuota) bool) (*corev1.ResourceQuota, error) {
	ns := member.TenantNamespace(consumerID)
	for attempt := range maxLedgerWrites {
		if !read || attempt > 0 {
			q, err := QuotaRead(c, ns).Get(ctx)
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("reading ResourceQuota %s/%s: %w", ns, SandboxName, err)
			}
			cur = q
		}
		if cur != nil && done(cur) {
			return cur, nil
		}
		next := sandboxQuota(ns, consumerID, Options{Quota: want})
		next.Annotations = map[string]string{AnnotationGrantsGeneration: strconv.FormatInt(gen, 10)}
		if cur != nil {
			next.ResourceVersion = cur.ResourceVersion
		}
		applied, err := applyQuota(ctx, c, ns, next)
		switch {
		case apierrors.IsNotFound(err) && cur == nil:
			return nil, nil // no tenant namespace: nothing to give back to
		case apierrors.IsConflict(err), apierrors.IsNotFound(err):
			continue // another writer came first: read again
		case err != nil:
			return nil, fmt.Errorf("writing ResourceQuota %s/%s: %w", ns, SandboxName, err)
		}
		return applied, nil
	}
	return nil, fmt.Errorf("writing ResourceQuota %s/%s: %d concurrent changes in a row; try again", ns, SandboxName, maxLedgerWrites)
}

// applySandboxQuota writes a sandbox's quota: a grant's is its own, server-side applied; the tenant
// namespace's is its share of the total (applyTenantQuota).
func applySandboxQuota(ctx context.Context, c *member.Cluster, ns string, owner NsOwner, o Options) error {
	if o.Share == nil || owner.Kind != member.KindTenant {
		return applyEnforcedQuota(ctx, c, ns, sandboxQuota(ns, owner.ConsumerID, o))
	}
	l, err := o.Share()
	if err != nil {
		return err
	}
	cur, err := QuotaRead(c, ns).Take(ctx, c)
	if apierrors.IsNotFound(err) {
		cur, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("reading ResourceQuota %s/%s: %w", ns, SandboxName, err)
	}
	return ApplyTenantQuota(ctx, c, owner.ConsumerID, l, cur, true, true)
}

// RecordTotal makes the ledger hold total, an issuance's choice, as the consumer's total; a total smaller
// than what is granted is refused. A ledger that holds it already is not written.
func RecordTotal(ctx context.Context, c *member.Cluster, consumerID string, total corev1.ResourceList) (*GrantLedger, error) {
	l, err := LedgerRead(c, consumerID).Take(ctx, c)
	if err != nil {
		return nil, err
	}
	quota, _ := QuotaRead(c, member.TenantNamespace(consumerID)).Peek(ctx, c) // only for a new ledger's generation
	return updateLedger(ctx, c, consumerID, l, quota, func(l *GrantLedger) (bool, error) {
		if l.Cm != nil && l.Total != nil && SameQuota(l.Total, total) {
			return false, nil
		}
		// A ledger that exists has carved every grant out of its total. Where there is none yet, the grants
		// were made before totals were tracked and may hold more: the issuance warned, the tenant
		// namespace keeps none of what they overdraw.
		if err := CheckTotal(consumerID, total, l.Granted("")); err != nil && l.Cm != nil {
			return false, err
		}
		l.Total = total.DeepCopy()
		return true, nil
	})
}

// Reservation holds a grant's quota in its consumer's ledger while the grant is made.
type Reservation struct {
	consumerID, key string
	Want            corev1.ResourceList   // the grant's quota, naming every resource of the total
	held            corev1.ResourceList   // what the ledger holds for it: want, or more while a grant shrinks
	ledger          *GrantLedger          // as written
	tenantQuota     *corev1.ResourceQuota // the tenant namespace's quota as read (nil: none)
}

// ShrinkTenant lowers the tenant namespace's quota by what the reservation holds, and waits until the
// quota controller enforces it.
func ShrinkTenant(ctx context.Context, c *member.Cluster, r *Reservation) error {
	return ApplyTenantQuota(ctx, c, r.consumerID, r.ledger, r.tenantQuota, true, true)
}

// ReserveGrant holds want for the grant key in the consumer's ledger before anything of the grant exists.
// It is refused, with nothing written, for a new slice when the consumer holds MaxSlicesPerConsumer, and
// when the grant needs more of a resource than remains: the total, less the other grants and what the
// tenant namespace uses. A grant converging to a smaller quota keeps its larger one held until its
// namespace has the new one (settleGrant). fallbackTotal is the total where the ledger records none yet.
// what names the grant in errors.
func ReserveGrant(ctx context.Context, c *member.Cluster, consumerID, key, what string, want, fallbackTotal corev1.ResourceList) (*Reservation, error) {
	var l *GrantLedger
	var quota *corev1.ResourceQuota
	if err := parallel.All(func() error {
		var err error
		l, err = ReadLedger(ctx, c, consumerID)
		return err
	}, func() error {
		var err error
		if quota, err = QuotaRead(c, member.TenantNamespace(consumerID)).Get(ctx); apierrors.IsNotFound(err) {
			quota, err = nil, nil
		}
		return err
	}); err != nil {
		return nil, err
	}
	var used corev1.ResourceList
	if quota != nil {
		used = quota.Status.Used
	}
	r := &Reservation{consumerID: consumerID, key: key}
	l, err := updateLedger(ctx, c, consumerID, l, quota, func(l *GrantLedger) (bool, error) {
		write := l.Cm == nil
		if l.Total == nil {
			l.Total, write = fallbackTotal.DeepCopy(), true
		}
		r.Want = CompleteGrant(want, l.Total)
		prev, had := l.Grants[key]
		if !had && strings.HasPrefix(key, ledgerSlice) && l.Slices() >= MaxSlicesPerConsumer {
			return false, fmt.Errorf("consumer %q already holds %d resource slices, %w: delete one first", consumerID, l.Slices(), ErrTooManySlices)
		}
		remaining := RemainingOf(l.Total, l.Granted(key), used)
		if needs := NeedsMore(r.Want, prev, remaining); len(needs) > 0 {
			return false, &RemainingError{ConsumerID: consumerID, Grant: what, Needs: needs, Remaining: remaining}
		}
		r.held = r.Want
		if had {
			r.held = MaxQuota(prev, r.Want)
			write = write || !SameQuota(prev, r.held)
		} else {
			write = true
		}
		l.Grants[key] = r.held
		return write, nil
	})
	if err != nil {
		return nil, err
	}
	r.ledger, r.tenantQuota = l, quota
	return r, nil
}

// SettleGrant lowers what the ledger holds for a grant to the quota its namespace now has, and gives the
// difference back to the tenant namespace.
func SettleGrant(ctx context.Context, c *member.Cluster, r *Reservation) error {
	if SameQuota(r.held, r.Want) {
		return nil
	}
	l, err := updateLedger(ctx, c, r.consumerID, r.ledger, nil, func(l *GrantLedger) (bool, error) {
		if _, ok := l.Grants[r.key]; !ok {
			return false, nil // given back meanwhile (the grant was removed)
		}
		l.Grants[r.key] = r.Want
		return true, nil
	})
	if err != nil {
		return err
	}
	return ApplyTenantQuota(ctx, c, r.consumerID, l, nil, false, false)
}

// ReleaseGrant gives a grant's share back to the tenant namespace, once the grant's namespace is gone.
func ReleaseGrant(ctx context.Context, c *member.Cluster, consumerID, key string) error {
	l, err := ReadLedger(ctx, c, consumerID)
	if err != nil {
		return err
	}
	if l.Cm == nil {
		return nil // no ledger: nothing was held (a pairing from before it, or one being removed)
	}
	l, err = updateLedger(ctx, c, consumerID, l, nil, func(l *GrantLedger) (bool, error) {
		_, ok := l.Grants[key]
		delete(l.Grants, key)
		return ok, nil
	})
	if err != nil || l.Total == nil {
		return err
	}
	return ApplyTenantQuota(ctx, c, consumerID, l, nil, false, false)
}

// CancelGrant gives a reservation back after its grant failed, unless its namespace exists (then what it
// holds may be in force: a re-run converges it, a deletion gives it back). It is best effort, with a
// deadline of its own, since the failure may have been the run's own deadline.
func CancelGrant(ctx context.Context, c *member.Cluster, r *Reservation, ns string, owner NsOwner) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	live, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err == nil && owner.Owns(live.Labels) {
		return
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return
	}
	if err := ReleaseGrant(ctx, c, r.consumerID, r.key); err != nil {
		c.Reporter().Warn(fmt.Sprintf("The share reserved for %s is still held in ConfigMap %s/%s: %v", owner, member.SystemNamespace, GrantsLedgerName(r.consumerID), err))
	}
}

// RecordedTotal is the total a Tenant's status records, over the defaults: what a grant is carved from
// where the ledger records no total yet (a pairing from before the ledger).
func RecordedTotal(t *v1alpha1.Tenant) (corev1.ResourceList, error) {
	sb, err := FromStatus(t.Status.Sandbox)
	if err == nil {
		sb, err = sb.Validate()
	}
	if err != nil {
		return nil, fmt.Errorf("the sandbox recorded in Tenant %s/%s: %w", t.Namespace, t.Name, err)
	}
	return sb.Quota, nil
}

// MaxSlicesPerConsumer bounds the slices one consumer holds on a provider, whatever happens to its
// requests (which the tenant may withdraw after they are granted); the ledger counts them (quota.go).
const MaxSlicesPerConsumer = 10

// CreateLedger creates a consumer's ledger recording total, where there is none and no tenant namespace
// (whose quota would carry a generation): nil, and nothing written, when one is there already.
func CreateLedger(ctx context.Context, c *member.Cluster, consumerID string, total corev1.ResourceList) (*GrantLedger, error) {
	l := &GrantLedger{Total: total.DeepCopy(), Generation: 1, Grants: map[string]corev1.ResourceList{}}
	cm, err := c.Kube.CoreV1().ConfigMaps(member.SystemNamespace).Create(ctx, l.ConfigMap(consumerID), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("recording the grants of consumer %q: %w", consumerID, err)
	}
	l.Cm = cm
	return l, nil
}

// RemoveCreatedLedger deletes a ledger a run created (that very one: by its UID), on a context of its own.
// Only a first pairing makes one, and no grant can be made for a consumer before its first pairing.
func RemoveCreatedLedger(ctx context.Context, c *member.Cluster, l *GrantLedger) error {
	if l == nil || l.Cm == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), member.CleanupTimeout)
	defer cancel()
	err := c.Kube.CoreV1().ConfigMaps(member.SystemNamespace).Delete(ctx, l.Cm.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &l.Cm.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("removing the grants record %s/%s: %w", member.SystemNamespace, l.Cm.Name, err)
	}
	return nil
}

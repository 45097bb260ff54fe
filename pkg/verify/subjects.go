package verify

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// What is verified comes from the provider's own records, never from what a namespace's labels say now
// (an administrator may have changed those): the Tenants (the pairing's user, its role and sandbox),
// the granted ResourceSlices (a slice's user, role and level), and the grants ledger (every extra
// namespace and what each grant holds of the total).

// identity is a credential a tenant works with, and where the sandbox binds it.
type identity struct {
	consumer string
	name     string // "pairing", or "slice NAME"
	user     string
	groups   []string
	role     string   // the ClusterRole its RoleBindings bind
	bound    []string // the namespaces where the sandbox binds it
}

// target is one sandbox namespace and what init and issuance make of it.
type target struct {
	consumer, ns, kind, slice string
	who                       *identity
	want                      sandbox.Options // Quota is the quota the ledger gives it (nil: not recorded)
	owner                     sandbox.NsOwner
	ledger                    *sandbox.GrantLedger // the tenant namespace's: its share is the total less the grants
}

// plan is one tenant: its identities and namespaces.
type plan struct {
	consumer   string
	tenant     *v1alpha1.Tenant
	skipped    string // why nothing of it is checked
	identities []*identity
	targets    []*target
}

// Scope narrows verify: one consumer, and of it one slice or one extra namespace.
type Scope struct {
	ConsumerID string
	Slice      string
	Namespace  string
}

// plans builds, from the records, the tenants to verify (the scope's, or all).
func plans(w *world, s Scope) ([]*plan, error) {
	var out []*plan
	var known []string
	for i := range w.tenants {
		t := &w.tenants[i]
		known = append(known, t.Spec.ClusterID)
		if s.ConsumerID != "" && t.Spec.ClusterID != s.ConsumerID {
			continue
		}
		p, err := planOf(w, t)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if s.ConsumerID != "" && len(out) == 0 {
		return nil, handshake.NotFound("consumer", s.ConsumerID, "on this provider (no Tenant)", known)
	}
	if s.Slice != "" || s.Namespace != "" {
		return narrow(out[0], s)
	}
	slices.SortFunc(out, func(a, b *plan) int { return strings.Compare(a.consumer, b.consumer) })
	return out, nil
}

// narrow keeps, of one tenant, one slice or one extra namespace, and the identity that works there.
func narrow(p *plan, s Scope) ([]*plan, error) {
	var known []string
	for _, t := range p.targets {
		name := t.ns
		if s.Slice != "" {
			name = t.slice
		}
		if (s.Slice != "" && t.kind != member.KindSlice) || (s.Namespace != "" && t.kind != member.KindExtra) {
			continue
		}
		known = append(known, name)
		if name == s.Slice || name == s.Namespace {
			p.targets, p.identities = []*target{t}, []*identity{t.who}
			return []*plan{p}, nil
		}
	}
	if s.Slice != "" {
		return nil, handshake.NotFound("resource slice", s.Slice, fmt.Sprintf("granted to consumer %q", p.consumer), known)
	}
	return nil, handshake.NotFound("extra namespace", s.Namespace, fmt.Sprintf("of consumer %q", p.consumer), known)
}

func planOf(w *world, t *v1alpha1.Tenant) (*plan, error) {
	consumer := t.Spec.ClusterID
	p := &plan{consumer: consumer, tenant: t}
	if t.Status.Phase != handshake.PhaseActive || t.Status.User == "" {
		p.skipped = "the pairing is " + strings.ToLower(orNone(t.Status.Phase)) + ": nothing is bound to check"
		return p, nil
	}
	o, err := recordedOptions(t)
	if err != nil {
		return nil, err
	}
	ledger := w.ledgers[consumer]
	pairing := newIdentity(consumer, "pairing", t.Status.User, t.Status.ClusterRole, member.TenantNamespace(consumer))
	p.identities = append(p.identities, pairing)
	tenantNS := &target{consumer: consumer, ns: member.TenantNamespace(consumer), kind: member.KindTenant, who: pairing, want: o,
		owner: sandbox.TenantOwner(consumer), ledger: ledger}
	if ledger != nil && ledger.Total != nil {
		tenantNS.want.Quota = sandbox.TenantShare(ledger.Total, ledger.Granted(""))
	}
	p.targets = append(p.targets, tenantNS)
	for _, ns := range extraNamespaces(w, consumer, ledger) {
		pairing.bound = append(pairing.bound, ns)
		p.targets = append(p.targets, &target{consumer: consumer, ns: ns, kind: member.KindExtra, who: pairing,
			want: extraOptions(w.namespaces[ns], w.limits[ns], o, grantOf(ledger, sandbox.NamespaceGrantKey(ns))), owner: sandbox.NsOwner{ConsumerID: consumer, Kind: member.KindExtra}})
	}
	for i := range w.slices {
		s := &w.slices[i]
		if s.Namespace != member.TenantNamespace(consumer) || s.Spec.ClusterID != consumer {
			continue
		}
		p.addSlice(s, ledger, t.Status.Cordoned)
	}
	return p, nil
}

// addSlice adds a granted slice: its identity, bound in its own namespace only, and that namespace.
func (p *plan) addSlice(s *v1alpha1.ResourceSlice, ledger *sandbox.GrantLedger, cordoned bool) {
	who := newIdentity(p.consumer, "slice "+s.Spec.Slice, s.Status.User, s.Status.ClusterRole, s.Status.Namespace)
	p.identities = append(p.identities, who)
	quota := grantOf(ledger, sandbox.SliceGrantKey(s.Spec.Slice))
	o, _ := sandbox.Options{PodSecurity: s.Status.PodSecurity}.Validate()
	o.Quota, o.Cordoned = quota, cordoned
	if quota != nil {
		o.DefaultRequests, o.DefaultLimits = grants.SliceContainerDefaults(quota)
	}
	p.targets = append(p.targets, &target{consumer: p.consumer, ns: s.Status.Namespace, kind: member.KindSlice, slice: s.Spec.Slice, who: who, want: o,
		owner: sandbox.NsOwner{ConsumerID: p.consumer, Kind: member.KindSlice, Slice: s.Spec.Slice}})
}

func newIdentity(consumer, name, user, role, ns string) *identity {
	if role == "" {
		role = member.DefaultClusterRole
	}
	return &identity{consumer: consumer, name: name, user: user, groups: handshake.BoundIn(user, ns).Groups, role: role, bound: []string{ns}}
}

func orNone(s string) string {
	if s == "" {
		return "not issued"
	}
	return s
}

// recordedOptions is the sandbox a Tenant records (its last issuance's choices), with the defaults filled in.
func recordedOptions(t *v1alpha1.Tenant) (sandbox.Options, error) {
	o, err := sandbox.FromStatus(t.Status.Sandbox)
	if err == nil {
		o, err = o.Validate()
	}
	if err != nil {
		return o, fmt.Errorf("the sandbox recorded in Tenant %s/%s: %w", t.Namespace, t.Name, err)
	}
	o.Cordoned = t.Status.Cordoned
	return o, nil
}

// extraNamespaces are a consumer's extra namespaces: the ledger's grants, and namespaces labelled as
// such (granted before the ledger).
func extraNamespaces(w *world, consumer string, ledger *sandbox.GrantLedger) []string {
	var out []string
	if ledger != nil {
		for key := range ledger.Grants {
			if ns, ok := strings.CutPrefix(key, sandbox.NamespaceGrantKey("")); ok {
				out = append(out, ns)
			}
		}
	}
	for name, ns := range w.namespaces {
		if o := sandbox.OwnerOf(ns.Labels); o.Kind == member.KindExtra && o.ConsumerID == consumer && (sandbox.NsOwner{ConsumerID: consumer, Kind: member.KindExtra}).Owns(ns.Labels) {
			out = append(out, name)
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(out)))
}

func grantOf(l *sandbox.GrantLedger, key string) corev1.ResourceList {
	if l == nil {
		return nil
	}
	return l.Grants[key]
}

// extraOptions is what an extra namespace was granted. Its level, lists and container defaults are the
// tenant namespace's unless `grant namespace` was given others, which are recorded only on the namespace
// itself: so the level its warn and audit labels agree on, the allowed lists its annotations hold, and
// the defaults of its LimitRange, where those are there.
func extraOptions(ns *corev1.Namespace, lr *corev1.LimitRange, tenant sandbox.Options, quota corev1.ResourceList) sandbox.Options {
	o := tenant
	o.Quota = quota
	if ns == nil {
		return o
	}
	warn, audit := ns.Labels[sandbox.PsaPrefix+"warn"], ns.Labels[sandbox.PsaPrefix+"audit"]
	if warn == audit && slices.Contains(sandbox.PodSecurityLevels, warn) {
		o.PodSecurity = warn
	}
	lists := map[string]*[]string{sandbox.AnnotationPriorityClasses: &o.PriorityClasses, sandbox.AnnotationStorageClasses: &o.StorageClasses,
		sandbox.AnnotationTolerations: &o.Tolerations, sandbox.AnnotationRuntimeClasses: &o.RuntimeClasses, sandbox.AnnotationSchedulers: &o.Schedulers,
		sandbox.AnnotationCSIDrivers: &o.CSIDrivers, sandbox.AnnotationImageVolumes: &o.ImageVolumes}
	for key, list := range lists {
		if v, ok := ns.Annotations[key]; ok {
			*list = splitList(v)
		}
	}
	if lr != nil && len(lr.Spec.Limits) == 1 && lr.Spec.Limits[0].Type == corev1.LimitTypeContainer {
		o.DefaultRequests, o.DefaultLimits = lr.Spec.Limits[0].DefaultRequest, lr.Spec.Limits[0].Default
	}
	return o
}

func splitList(v string) []string {
	if v == "" {
		return nil
	}
	return sandbox.SortedSet(strings.Split(v, ","))
}

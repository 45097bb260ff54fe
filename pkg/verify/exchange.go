package verify

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/federate-dev/kubectl-federate/pkg/kube"

	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// Each exchange credential was issued after its provider's administrator saw what it reaches, and
// accepted it (the decision records that reach). What it reaches may grow without anyone touching the
// grant: its target gains rights (a binding someone added), or a namespace of its scope comes to hold
// identities or loses its Pod Security level. So each grant's reach is asked again, as issuance asked it
// (issue 19's check): the scope's for a constrained grant, and the target's own, whose rights beyond a
// namespaced share every grant was decided on (TARGET REACH, recorded with the decision); the target's own
// for an unconstrained one. What was neither accepted nor reached at consent is reported, with the
// bindings that name the target.

// reacher asks, once per target, what it reaches.
type reacher struct {
	c  *member.Cluster
	rr *exchange.Reader
	mu sync.Mutex
	by map[string]func() ([]string, error)
}

// newReacher asks through kc, the caller's own client without a client-side rate limit: a target's
// reach is a few hundred access reviews, which exchange sends reviewParallelism at a time.
func newReacher(c *member.Cluster, kc kube.Interface) *reacher {
	unlimited := &member.Cluster{Kube: kc, Dynamic: c.Dynamic, Config: c.Config, Now: c.Now, Report: c.Report}
	return &reacher{c: unlimited, rr: exchange.NewReader(unlimited), by: map[string]func() ([]string, error){}}
}

func (r *reacher) target(ctx context.Context, t exchange.Target) ([]string, error) {
	key := exchange.GrantHash("", t, exchange.Scope{})
	r.mu.Lock()
	f, ok := r.by[key]
	if !ok {
		f = sync.OnceValues(func() ([]string, error) { return exchange.TargetReach(ctx, r.rr, t) })
		r.by[key] = f
	}
	r.mu.Unlock()
	return f()
}

// exchangeRow checks one issued grant.
func exchangeRow(ctx context.Context, w *world, r *reacher, d *exchange.Decision) Row {
	fail := func(err error) Row {
		return row(d.ConsumerID, CheckExchange, d.Request, "", []Finding{{State: StateError, Message: "asking what target " + d.Target.User + " reaches: " + err.Error()}})
	}
	targetReach, err := r.target(ctx, d.Target)
	if err != nil {
		return fail(err)
	}
	var findings []Finding
	if d.Mode == sandbox.ModeConstrained {
		scopeReach, err := exchange.ScopeReach(ctx, r.rr, d.Scope)
		if err != nil {
			return fail(err)
		}
		if grown := notIn(scopeReach, d.Reach); len(grown) > 0 {
			findings = append(findings, Finding{State: StateBroken, Object: "the namespaces of its scope",
				Message: fmt.Sprintf("its scope (%s) now reaches %s, which was not accepted", d.Scope.String(), strings.Join(grown, ", "))})
		}
	}
	accepted := append(slices.Clone(d.Reach), d.TargetReach...)
	if grown := notIn(targetReach, accepted); len(grown) > 0 {
		by := targetBindings(w, d.Target)
		what := "beyond its scope (the API server still holds this credential to its scope)"
		if d.Mode != sandbox.ModeConstrained {
			what = "(and so may this unconstrained credential)"
		}
		msg := fmt.Sprintf("target %s%s may now do %s: %s", d.Target.User, groupsOf(d.Target), what, strings.Join(grown, ", "))
		if d.TargetReach == nil && d.Mode == sandbox.ModeConstrained {
			msg += " (what it reached when the grant was consented was not recorded: allow the request again to record it)"
		}
		if len(by) > 0 {
			msg += "; bindings naming it: " + strings.Join(by, ", ")
		}
		findings = append(findings, Finding{State: StateBroken, Object: strings.Join(by, ", "), Message: msg})
	}
	detail := fmt.Sprintf("%s, acting as %s for %s: reaches what was accepted", strings.ToLower(d.Mode), d.Target.User, d.Scope.String())
	return row(d.ConsumerID, CheckExchange, d.Request, detail, findings)
}

func groupsOf(t exchange.Target) string {
	if len(t.Groups) == 0 {
		return ""
	}
	return " (groups " + strings.Join(t.Groups, ", ") + ")"
}

// notIn lists what have holds that accepted does not.
func notIn(have, accepted []string) []string {
	var out []string
	for _, h := range have {
		if !slices.Contains(accepted, h) {
			out = append(out, h)
		}
	}
	return out
}

// targetBindings names the bindings that give a target rights beyond what every user has.
func targetBindings(w *world, t exchange.Target) []string {
	id := &identity{user: t.User, groups: append(slices.Clone(t.Groups), "system:authenticated")}
	var out []string
	for _, b := range allBindings(w) {
		if id.names(b.subjects) == "" {
			continue
		}
		if rules, ok := w.roles[b.roleKey()]; ok && slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return !harmless(r) }) {
			out = append(out, b.String()+" ("+b.role()+")")
		}
	}
	return out
}

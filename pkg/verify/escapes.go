package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/federate-dev/kubectl-federate/pkg/kube"

	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// The escape corpus is sent as the identity that works in each sandbox namespace: impersonating its user
// and groups (the tenants group included, which the tenant-only policies match), every write a
// server-side dry run, every read a read of an object that does not exist. So the API server answers
// exactly as it would answer the tenant, with its RBAC, Pod Security, admission policies and quota, and
// stores nothing.

// AsFunc builds a client that acts as a user in groups (impersonating them); user "" is the caller
// itself. Its requests are bounded by verify's own parallelism, not by a client-side rate.
type AsFunc func(user string, groups []string) (kube.Interface, error)

// impersonate acts as a user in groups (or as the caller) through the cluster's own connection (the same
// transport, so the same trace and dry-run layer), with no client-side rate limit: escapeParallel and the
// exchange reviews' own bound limit the requests in flight.
func impersonate(c *member.Cluster) AsFunc {
	return func(user string, groups []string) (kube.Interface, error) {
		if c.Config == nil {
			return nil, errors.New("no connection details to impersonate through")
		}
		cfg := rest.CopyConfig(c.Config)
		if user != "" {
			cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
		}
		cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
		return kube.NewForConfig(cfg)
	}
}

// ObjectPrefix starts the name of every object the corpus's dry runs would create.
const ObjectPrefix = "federate-verify-"

// Unlisted choices no provider allows, for the attacks that need a name the sandbox does not allow.
const (
	unlistedScheduler  = "federate-verify-scheduler"
	unlistedToleration = "federate.dev/verify-unlisted"
)

// params are the corpus's parameters for one sandbox namespace: a priority and a runtime class that exist
// and that it does not allow, a claim of it that waits, its quota on cpu.
func params(w *world, t *target) Params {
	p := Params{Namespace: t.ns, Prefix: ObjectPrefix, Scheduler: unlistedScheduler, Toleration: unlistedToleration, Volume: Absent,
		PendingClaim: w.pending[t.ns], ClasslessRefused: !w.defaultClass, AnyImage: slices.Contains(t.want.ImageVolumes, "*")}
	for _, pc := range w.priorityClasses {
		if !strings.HasPrefix(pc, "system-") && !slices.Contains(t.want.PriorityClasses, pc) {
			p.PriorityClass = pc
			break
		}
	}
	for _, rc := range w.runtimeClasses {
		if !slices.Contains(t.want.RuntimeClasses, rc) {
			p.RuntimeClass = rc
			break
		}
	}
	if q, ok := t.want.Quota["requests.cpu"]; ok {
		p.QuotaCPU = &q
	}
	return p
}

// escaper runs the corpus, at most parallel requests at once across every namespace.
type escaper struct {
	w   *world
	as  AsFunc
	sem chan struct{}
	// retry repeats an admitted attack, with a doubling pause, for up to sandbox.PolicyTimeout: after a
	// repair, admission loads a restored policy a moment later, as after init.
	retry bool

	mu      sync.Mutex
	clients map[*identity]kube.Interface
}

// escapeParallel bounds the corpus's requests in flight.
const escapeParallel = 32

func newEscaper(w *world, as AsFunc, retry bool) *escaper {
	return &escaper{w: w, as: as, sem: make(chan struct{}, escapeParallel), retry: retry, clients: map[*identity]kube.Interface{}}
}

func (e *escaper) client(id *identity) (kube.Interface, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cs, ok := e.clients[id]; ok {
		return cs, nil
	}
	cs, err := e.as(id.user, id.impersonated())
	if err != nil {
		return nil, err
	}
	e.clients[id] = cs
	return cs, nil
}

// impersonated are the groups sent when impersonating the identity: the API server adds
// system:authenticated to every user, and a ServiceAccount's own groups to a ServiceAccount impersonated
// without any, so only the tenants group is named (what the provider operator role may impersonate).
func (id *identity) impersonated() []string {
	if _, _, err := credential.SplitServiceAccountUser(id.user); err == nil {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(id.groups), func(g string) bool { return g == "system:authenticated" })
}

// escapes sends the corpus as the identity of t, and says what got through.
func (e *escaper) escapes(ctx context.Context, t *target) Row {
	cs, err := e.client(t.who)
	if err != nil {
		return row(t.consumer, CheckEscapes, t.ns, "", []Finding{{State: StateError, Message: "acting as " + t.who.user + ": " + err.Error()}})
	}
	cordoned := t.want.Cordoned
	var applicable []Attack
	for _, a := range Corpus(params(e.w, t)) {
		if a.Applies(t.want.PodSecurity) {
			applicable = append(applicable, a)
		}
	}
	outcomes := make([]Outcome, len(applicable))
	errs := make([]error, len(applicable))
	var wg sync.WaitGroup
	for i, a := range applicable {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcomes[i], errs[i] = e.try(ctx, cs, a, cordoned)
		}()
	}
	wg.Wait()
	return row(t.consumer, CheckEscapes, t.ns, e.summary(t, applicable, outcomes, errs), e.findings(t, applicable, outcomes, errs))
}

// summary says what was proven: how many attacks were refused, and how many the sandbox's level admits.
func (e *escaper) summary(t *target, tried []Attack, outcomes []Outcome, errs []error) string {
	refused, missing := 0, 0
	for i := range tried {
		switch {
		case outcomes[i] == Refused:
			refused++
		case objectMissing(tried[i], errs[i]):
			missing++
		}
	}
	detail := fmt.Sprintf("%d attacks refused as %s", refused, t.who.name)
	if missing > 0 {
		detail += fmt.Sprintf("; %d not tried: the object they change is missing", missing)
	}
	if left := len(Corpus(params(e.w, t))) - len(tried); left > 0 {
		detail += fmt.Sprintf("; %d that Pod Security %s admits by the provider's choice not tried", left, t.want.PodSecurity)
	}
	return detail
}

// objectMissing says an attack on one of the sandbox's objects found none to change (the sandbox row
// reports it missing).
func objectMissing(a Attack, err error) bool {
	return a.Access.Verb == "patch" && apierrors.IsNotFound(err)
}

// findings groups what got through by what should have refused it: one finding per guard or binding,
// naming the attacks it let through, in the corpus's order.
func (e *escaper) findings(t *target, tried []Attack, outcomes []Outcome, errs []error) []Finding {
	var groups []*Finding
	index := map[string]*Finding{}
	var others []Finding
	for i, a := range tried {
		switch {
		case outcomes[i] == Admitted:
			object, how := e.admittedBy(t, a)
			if f := index[object]; f != nil {
				f.Message += ", " + a.Name
				continue
			}
			f := &Finding{State: StateBroken, Object: object, Message: how + " " + a.Name}
			index[object], groups = f, append(groups, f)
		case outcomes[i] == OtherGuard:
			others = append(others, Finding{State: StateBroken, Message: fmt.Sprintf("%s (%s) was refused, but not by %s: %v", a.Name, a.Class, strings.Join(a.Guards, " or "), errs[i])})
		case outcomes[i] == NotTried && !objectMissing(a, errs[i]):
			others = append(others, Finding{State: StateError, Message: fmt.Sprintf("%s (%s) could not be tried: %v", a.Name, a.Class, errs[i])})
		}
	}
	out := make([]Finding, 0, len(groups)+len(others))
	for _, f := range groups {
		out = append(out, *f)
	}
	return append(out, others...)
}

// try sends one attack (again, while retry allows, when it got through).
func (e *escaper) try(ctx context.Context, cs kube.Interface, a Attack, cordoned bool) (Outcome, error) {
	deadline := time.Now().Add(sandbox.PolicyTimeout)
	pause := 100 * time.Millisecond
	for {
		e.sem <- struct{}{}
		err := a.Try(ctx, cs, true)
		<-e.sem
		got := a.Judge(err, cordoned)
		// Only admission loads late: what RBAC admits, a repair never changes.
		if got != Admitted || !e.retry || slices.Contains(a.Guards, ByRBAC) || time.Now().After(deadline) {
			return got, err
		}
		select {
		case <-ctx.Done():
			return NotTried, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}

// admittedBy is what let an admitted attack through, and the finding's opening words: the bindings that
// grant what RBAC should refuse, or the guard (Pod Security label, admission policy, quota) that did not
// refuse it.
func (e *escaper) admittedBy(t *target, a Attack) (object, how string) {
	if slices.Contains(a.Guards, ByRBAC) {
		by := strings.Join(grantedBy(e.w, t.who, a.Access), ", ")
		if by == "" {
			return "an authorizer other than RBAC", "admitted, though no RoleBinding or ClusterRoleBinding of " + t.who.user + " grants it (another authorizer allows it):"
		}
		return by, "admitted, granted by " + by + ":"
	}
	object = guardOf(a, t.ns)
	return object, "admitted where " + object + " should refuse:"
}

// policyOf names the sandbox policy that refuses an attack on a kind.
var policyOf = map[string]string{"pods": "pods", "services": "services", "secrets": "secrets", "persistentvolumeclaims": "persistentvolumeclaims",
	"statefulsets": "statefulsets"}

// guardOf names the guard an attack must meet: the namespace's Pod Security label, its quota, or a
// sandbox admission policy and its binding.
func guardOf(a Attack, ns string) string {
	switch {
	case slices.Contains(a.Guards, ByPodSecurity):
		return "the label " + sandbox.PsaPrefix + "enforce of Namespace " + ns
	case a.Guards[0] == ByQuota:
		return "ResourceQuota " + ns + "/" + sandbox.SandboxName
	case a.Access.Verb == "patch" && a.Access.Resource == "persistentvolumeclaims":
		return "ValidatingAdmissionPolicy " + sandbox.SandboxName + "-volumeclaims (and its binding)"
	}
	if res, ok := policyOf[a.Access.Resource]; ok {
		return "ValidatingAdmissionPolicy " + sandbox.SandboxName + "-" + res + " (and its binding)"
	}
	return "a sandbox admission policy"
}

package verify

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
	"github.com/federate-dev/kubectl-federate/pkg/status"
)

// Options say what to verify and how to act as a tenant.
type Options struct {
	Scope
	// As acts as an identity; nil impersonates it through the cluster's own connection (c.Config).
	As AsFunc
	// Retry repeats an admitted attack while admission may still be loading a restored policy (the
	// verification after a repair).
	Retry bool
}

// Result is a report and what it was made from, which Repair restores.
type Result struct {
	*Report
	world *world
	plans []*plan
}

// Verify proves, now, that every tenant's sandbox holds (or the scope's): it reads everything at once,
// then checks the cluster's own objects, each sandbox namespace's, each identity's bindings, the escape
// corpus as each identity, and each exchange grant's reach, all at once. It writes nothing: every request
// that would change something is a server-side dry run.
func Verify(ctx context.Context, c *member.Cluster, o Options) (*Result, error) {
	self, err := c.Load(ctx)
	if err != nil {
		return nil, err
	}
	if o.As == nil {
		o.As = impersonate(c)
	}
	w, err := read(ctx, c)
	if err != nil {
		return nil, err
	}
	ps, err := plans(w, o.Scope)
	if err != nil {
		return nil, err
	}
	res := &Result{Report: &Report{ClusterID: self.ClusterID}, world: w, plans: ps}
	if o.ConsumerID == "" {
		res.Rows = clusterRows(w)
	} else {
		res.Rows = clusterRows(w)[:2] // the admission objects every sandbox stands on; the rest are the cluster's
	}
	var mu sync.Mutex
	add := func(r Row) {
		mu.Lock()
		res.Rows = append(res.Rows, r)
		mu.Unlock()
	}
	e := newEscaper(w, o.As, o.Retry)
	var wg sync.WaitGroup
	for _, p := range ps {
		if p.skipped != "" {
			add(Row{RemoteClusterID: p.consumer, Check: CheckSandbox, Name: member.TenantNamespace(p.consumer), State: StateSkipped, Detail: p.skipped})
			continue
		}
		for _, id := range p.identities {
			add(row(p.consumer, CheckRights, id.name, "bound only by its sandbox", rightsFindings(w, id)))
		}
		for _, t := range p.targets {
			add(row(t.consumer, CheckSandbox, t.ns, "as issuance made it", sandboxDrift(w, t)))
			wg.Go(func() { add(e.escapes(ctx, t)) })
		}
	}
	if o.Slice == "" && o.Namespace == "" {
		kube, err := o.As("", nil)
		if err != nil {
			return nil, err
		}
		r := newReacher(c, kube)
		for _, d := range w.decisions {
			if (o.ConsumerID == "" || d.ConsumerID == o.ConsumerID) && d.Phase == exchange.ExchangeIssued && d.Issued(c.CurrentTime()) {
				wg.Go(func() { add(exchangeRow(ctx, w, r, d)) })
			}
		}
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sortRows(res.Rows)
	return res, nil
}

// clusterRows are the checks of the cluster every sandbox stands on: its admission policies and bindings,
// the tenant role, a NetworkPolicy engine, the pod ranges.
func clusterRows(w *world) []Row {
	var admission, role []Finding
	if w.installedErr != nil {
		admission = []Finding{{State: StateError, Message: w.installedErr.Error()}}
	}
	for _, d := range w.installed {
		f := Finding{State: StateDrift, Object: d.Kind + " " + d.Name, Message: d.Kind + " " + d.Name + ": " + d.What, Repairable: true}
		if d.Kind == "ClusterRole" {
			role = append(role, f)
		} else {
			admission = append(admission, f)
		}
	}
	rows := []Row{
		row("", CheckAdmission, sandbox.SandboxName+"-*", fmt.Sprintf("%d policies and their bindings as init installs them", len(sandbox.SandboxPolicyResources)), admission),
		row("", CheckTenantRole, member.DefaultClusterRole, "as init installs it", role),
	}
	switch {
	case w.engineErr != nil:
		rows = append(rows, row("", CheckEngine, "-", "", []Finding{{State: StateError, Message: w.engineErr.Error()}}))
	case w.engine == "":
		rows = append(rows, row("", CheckEngine, "-", "", []Finding{{State: StateWarning, Message: status.NoEngineWarning}}))
	default:
		rows = append(rows, row("", CheckEngine, w.engine, w.engine+" runs", nil))
	}
	switch {
	case w.podsErr != nil:
		rows = append(rows, row("", CheckPodRanges, "-", "", []Finding{{State: StateError, Message: w.podsErr.Error()}}))
	case !w.pods.Known():
		rows = append(rows, row("", CheckPodRanges, "-", "", []Finding{{State: StateWarning, Message: sandbox.PodRangesUnknown}}))
	default:
		rows = append(rows, row("", CheckPodRanges, w.pods.From, strings.Join(append(w.pods.IPv4, w.pods.IPv6...), ", ")+" from "+w.pods.From, nil))
	}
	return rows
}

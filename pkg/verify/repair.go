package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// Repair restores exactly what init and issuance would, through their own code, and only what they own:
// the admission policies, their bindings and the tenant role (init's reconcile, which says each one it
// restores), and every sandbox namespace that drifted (issuance's EnsureSandbox: its labels and allowed
// lists, its quota, the tenant namespace's as its share of the ledger's total, its LimitRange,
// NetworkPolicy and ServiceAccount, then the wait until the quota controller and admission enforce them). A
// RoleBinding that names someone beyond the recorded user is made to name that user alone. Nothing is ever
// bound or widened: a missing RoleBinding, a binding to another role, a binding someone added and an
// exchange target's new rights are reported, not repaired. It returns the findings of the sandbox
// namespaces it restored (init says itself what it restores).
func Repair(ctx context.Context, c *member.Cluster, res *Result) ([]Finding, error) {
	installed := len(repairable(res.Rows, "", CheckAdmission, CheckTenantRole)) > 0
	if installed {
		// Init says each object it restores, as it does when run itself.
		if _, err := sandbox.Init(ctx, c, ""); err != nil {
			return nil, fmt.Errorf("restoring the sandbox's admission policies and tenant role: %w", err)
		}
	}
	var restored []Finding
	var jobs []func() error
	var found [][]Finding
	var errs []error
	var untouched *target // a sandbox no repair waits on, where init's restored policies are awaited
	for _, p := range res.plans {
		for _, t := range p.targets {
			fix := slices.DeleteFunc(slices.Clone(sandboxRow(res.Rows, t).Findings), func(f Finding) bool { return !f.Repairable })
			if len(fix) == 0 {
				if untouched == nil {
					untouched = t
				}
				continue
			}
			i := len(found)
			found, errs = append(found, fix), append(errs, nil)
			jobs = append(jobs, func() error {
				errs[i] = repairTarget(ctx, c, res.world, t, fix)
				return nil
			})
		}
	}
	if installed && untouched != nil {
		// A restored policy reaches admission about a second later, in every sandbox at once: awaited in one
		// (the sandboxes repaired below await it themselves).
		jobs = append(jobs, func() error { return sandbox.WaitEnforced(ctx, c, untouched.ns, untouched.want.PodSecurity) })
	}
	err := parallel.All(jobs...)
	for i, fs := range found {
		if errs[i] == nil {
			restored = append(restored, fs...)
		}
	}
	return restored, errors.Join(append(errs, err)...)
}

// repairable are the rows' repairable findings, of the checks named, for one remote ("" the cluster's).
func repairable(rows []Row, remote string, checks ...string) []Finding {
	var out []Finding
	for _, r := range rows {
		if r.RemoteClusterID != remote || !slices.Contains(checks, r.Check) {
			continue
		}
		for _, f := range r.Findings {
			if f.Repairable {
				out = append(out, f)
			}
		}
	}
	return out
}

func sandboxRow(rows []Row, t *target) Row {
	for _, r := range rows {
		if r.RemoteClusterID == t.consumer && r.Check == CheckSandbox && r.Name == t.ns {
			return r
		}
	}
	return Row{}
}

// repairTarget restores one sandbox namespace as issuance makes it, and its RoleBinding where it names
// someone beyond the recorded user.
func repairTarget(ctx context.Context, c *member.Cluster, w *world, t *target, fix []Finding) error {
	rebind := slices.ContainsFunc(fix, func(f Finding) bool { return f.Object == "RoleBinding "+t.ns+"/"+member.RoleBindingName })
	if slices.ContainsFunc(fix, func(f Finding) bool { return f.Object != "RoleBinding "+t.ns+"/"+member.RoleBindingName }) {
		o := t.want
		switch {
		case t.kind == member.KindTenant && t.ledger != nil && t.ledger.Total != nil:
			ledger := t.ledger
			o.Share = func() (*sandbox.GrantLedger, error) { return ledger, nil }
		case o.Quota == nil && w.quotas[t.ns] != nil:
			o.Quota = w.quotas[t.ns].Spec.Hard // no ledger records the grant: its quota is kept as it is
		case o.Quota == nil:
			return fmt.Errorf("namespace %s: no record of its quota to restore it from", t.ns)
		}
		if err := sandbox.EnsureSandbox(ctx, c, t.ns, t.owner, o); err != nil {
			return fmt.Errorf("restoring the sandbox %s: %w", t.ns, err)
		}
	}
	if rebind {
		if err := sandbox.BindRole(ctx, c, t.ns, t.who.user, t.who.role, t.consumer); err != nil {
			return fmt.Errorf("restoring RoleBinding %s/%s: %w", t.ns, member.RoleBindingName, err)
		}
	}
	return nil
}

// Repairable are the findings of every row that a repair restores.
func Repairable(rows []Row) []Finding {
	var out []Finding
	for _, r := range rows {
		for _, f := range r.Findings {
			if f.Repairable {
				out = append(out, f)
			}
		}
	}
	return out
}

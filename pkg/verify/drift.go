package verify

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// A sandbox namespace's own objects, read, beside what issuance makes of its records: the namespace's
// labels (Pod Security, the sandbox's, the cordon's) and allowed lists, the quota the ledger gives it
// (and that the quota controller enforces it), the LimitRange, the NetworkPolicy (with the pod ranges
// detected now), the default ServiceAccount that mounts no token, and the one RoleBinding naming the
// recorded user with the recorded role. Every difference is drift, named with its object; what issuance
// would restore is marked repairable. A RoleBinding that is missing is not: repair never binds anyone.

// sandboxDrift compares one sandbox namespace with what issuance makes of it.
func sandboxDrift(w *world, t *target) []Finding {
	ns := w.namespaces[t.ns]
	if ns == nil {
		return []Finding{{State: StateDrift, Message: "namespace " + t.ns + " is missing", Object: "Namespace " + t.ns}}
	}
	if !t.owner.Owns(ns.Labels) {
		return []Finding{{State: StateDrift, Object: "Namespace " + t.ns,
			Message: fmt.Sprintf("namespace %s no longer carries the labels of %s's sandbox (%s=%s, %s=%s, %s=%s): its guards cannot be checked or restored",
				t.ns, t.owner, member.LabelManagedBy, member.ManagedBy, member.LabelRemoteClusterID, t.consumer, member.LabelRole, member.RoleProvider)}}
	}
	var out []Finding
	add := func(object, format string, a ...any) {
		out = append(out, Finding{State: StateDrift, Object: object, Message: object + ": " + fmt.Sprintf(format, a...), Repairable: true})
	}
	namespaceDrift(ns, t, add)
	quotaDrift(w.quotas[t.ns], t, add)
	limitDrift(w.limits[t.ns], t, add)
	if np, want := w.policies[t.ns], sandbox.NetworkPolicy(t.ns, t.consumer, w.pods); np == nil {
		add("NetworkPolicy "+t.ns+"/"+sandbox.SandboxName, "is missing: the sandbox's pods reach every pod and the cloud's metadata addresses")
	} else if !apiequality.Semantic.DeepEqual(np.Spec, want.Spec) {
		add("NetworkPolicy "+t.ns+"/"+sandbox.SandboxName, "was changed (issuance lets pods reach only their own namespace, the cluster's DNS and beyond the cluster's pods)")
	}
	if sa := w.accounts[t.ns]; sa == nil || sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		add("ServiceAccount "+t.ns+"/default", "mounts a token into pods that ask for none (issuance sets automountServiceAccountToken: false)")
	}
	out = append(out, bindingDrift(w, t)...)
	return out
}

func namespaceDrift(ns *corev1.Namespace, t *target, add func(object, format string, a ...any)) {
	object := "Namespace " + t.ns
	want := sandbox.Labels(t.owner, t.want)
	for _, key := range slices.Sorted(maps.Keys(want)) {
		have, ok := ns.Labels[key]
		switch {
		case strings.HasSuffix(key, "-version") && !ok:
			continue // no version is the latest
		case !ok:
			add(object, "label %s is missing (issuance sets %s)", key, want[key])
		case have != want[key]:
			add(object, "label %s is %s (issuance sets %s)", key, have, want[key])
		}
	}
	annotations := t.want.Annotations()
	for _, key := range slices.Sorted(maps.Keys(annotations)) {
		if have, ok := ns.Annotations[key]; !ok || have != annotations[key] {
			add(object, "annotation %s is %q (issuance sets %q)", key, have, annotations[key])
		}
	}
}

func quotaDrift(q *corev1.ResourceQuota, t *target, add func(object, format string, a ...any)) {
	object := "ResourceQuota " + t.ns + "/" + sandbox.SandboxName
	switch {
	case q == nil:
		add(object, "is missing: nothing bounds what the tenant runs or stores here")
		return
	case t.want.Quota == nil:
		// No ledger records this grant (a grant made before the ledger): nothing to compare with.
	default:
		if diff := quotaDiff(q.Spec.Hard, t.want.Quota); diff != "" {
			add(object, "%s", diff)
			return
		}
	}
	if !sandbox.SameQuota(q.Spec.Hard, q.Status.Hard) {
		add(object, "is not enforced as written (the quota controller has not taken it up: status.hard differs from spec.hard)")
	}
}

// quotaDiff says how a quota's hard limits differ from what the ledger gives ("" when they do not).
func quotaDiff(have, want corev1.ResourceList) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(want)) {
		w := want[name]
		h, ok := have[name]
		switch {
		case !ok:
			parts = append(parts, fmt.Sprintf("%s is missing (the ledger gives %s)", name, w.String()))
		case h.Cmp(w) != 0:
			parts = append(parts, fmt.Sprintf("%s is %s (the ledger gives %s)", name, h.String(), w.String()))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if _, ok := want[name]; !ok {
			h := have[name]
			parts = append(parts, fmt.Sprintf("%s is %s (the ledger gives none)", name, h.String()))
		}
	}
	return strings.Join(parts, ", ")
}

func limitDrift(lr *corev1.LimitRange, t *target, add func(object, format string, a ...any)) {
	object := "LimitRange " + t.ns + "/" + sandbox.SandboxName
	if lr == nil {
		add(object, "is missing: containers that name no resources are admitted with none")
		return
	}
	want := sandbox.LimitRange(t.ns, t.consumer, t.want).Spec.Limits[0]
	if len(lr.Spec.Limits) != 1 || lr.Spec.Limits[0].Type != want.Type || !sandbox.SameQuota(lr.Spec.Limits[0].Default, want.Default) ||
		!sandbox.SameQuota(lr.Spec.Limits[0].DefaultRequest, want.DefaultRequest) || len(lr.Spec.Limits[0].Max)+len(lr.Spec.Limits[0].Min) > 0 {
		add(object, "was changed (issuance sets container defaults requests %s, limits %s)",
			sandbox.FormatResourceList(sandbox.FormatResources(want.DefaultRequest)), sandbox.FormatResourceList(sandbox.FormatResources(want.Default)))
	}
}

// bindingDrift checks the sandbox's RoleBinding: it must name the recorded user, with the recorded role,
// and no one else. Someone else named is repaired (the binding made to name the user alone); a missing
// binding or another role is only reported: repair never binds or widens.
func bindingDrift(w *world, t *target) []Finding {
	object := "RoleBinding " + t.ns + "/" + member.RoleBindingName
	var rb *rbacv1.RoleBinding
	for i := range w.rbs {
		if w.rbs[i].Namespace == t.ns && w.rbs[i].Name == member.RoleBindingName {
			rb = &w.rbs[i]
		}
	}
	if rb == nil {
		return []Finding{{State: StateDrift, Object: object, Message: object + ": is missing: " + t.who.user + " cannot work here (renew the pairing or revoke it; repair never binds)"}}
	}
	var out []Finding
	if rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != t.who.role {
		out = append(out, Finding{State: StateDrift, Object: object, Message: fmt.Sprintf("%s: binds %s %s (issuance binds ClusterRole %s; repair never changes a role)",
			object, rb.RoleRef.Kind, rb.RoleRef.Name, t.who.role)})
	}
	want := credential.SubjectFor(t.who.user)
	var others []string
	named := false
	for _, s := range rb.Subjects {
		if s.Kind == want.Kind && s.Name == want.Name && s.Namespace == want.Namespace {
			named = true
			continue
		}
		others = append(others, s.Kind+" "+credential.SubjectUser(s))
	}
	if len(others) > 0 {
		out = append(out, Finding{State: StateDrift, Object: object, Repairable: named && len(out) == 0,
			Message: fmt.Sprintf("%s: also names %s (issuance names %s alone)", object, strings.Join(others, ", "), t.who.user)})
	}
	if !named {
		out = append(out, Finding{State: StateDrift, Object: object, Message: object + ": does not name " + t.who.user + ", the recorded user (repair never binds)"})
	}
	return out
}

package sandbox

import (
	"context"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// The sandbox holds only while its admission policies, their bindings and the tenant role are what this
// version installs. An administrator may delete or edit any of them, and the install-generation
// annotation would not show it, so init and every issuance read them back, all at once and alongside the
// cluster's record (two label-selected lists and one read: no extra round trip), compare what we set, and
// restore only what is missing or changed. Nothing is issued into a sandbox whose rules are not in place.

// ClusterRoleGVR is the resource of the tenant role, read and written with the dynamic client.
var ClusterRoleGVR = rbacv1.SchemeGroupVersion.WithResource("clusterroles")

// readInstalled reads the sandbox policies, their bindings and the tenant role, all at once.
func readInstalled(ctx context.Context, c *member.Cluster) (*member.InstalledObjects, error) {
	have := &member.InstalledObjects{}
	sel := labels.SelectorFromSet(labels.Set{member.LabelManagedBy: member.ManagedBy}).String()
	list := func(gvr schema.GroupVersionResource, into *map[string]*unstructured.Unstructured) func() error {
		return func() error {
			l, err := c.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return fmt.Errorf("listing %s to check the sandbox's admission rules (the operator needs list on them, see docs/rbac): %w", gvr.Resource, err)
			}
			m := map[string]*unstructured.Unstructured{}
			for i := range l.Items {
				if strings.HasPrefix(l.Items[i].GetName(), SandboxName+"-") {
					m[l.Items[i].GetName()] = &l.Items[i]
				}
			}
			*into = m
			return nil
		}
	}
	err := parallel.All(
		list(PolicyGVR, &have.Policies),
		list(PolicyBindingGVR, &have.Bindings),
		func() error {
			u, err := c.Dynamic.Resource(ClusterRoleGVR).Get(ctx, member.DefaultClusterRole, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return nil
			case err != nil:
				return fmt.Errorf("reading ClusterRole %s to check it: %w", member.DefaultClusterRole, err)
			}
			have.Role = u
			return nil
		},
	)
	return have, err
}

// takeInstalled returns the objects read alongside the cluster's record, or reads them now.
func takeInstalled(ctx context.Context, c *member.Cluster) (*member.InstalledObjects, error) {
	have, err := c.Installed, c.InstalledErr
	c.Installed, c.InstalledErr = nil, nil
	if have == nil && err == nil {
		return readInstalled(ctx, c)
	}
	return have, err
}

// ensureCurrent makes the installed objects current, once per process: from an older kubectl federate
// (installGeneration) they are upgraded; otherwise each one that was deleted or changed is restored, with
// a warning, since someone undid part of the sandbox.
func ensureCurrent(ctx context.Context, c *member.Cluster) error {
	if c.Verified {
		return nil
	}
	have, err := takeInstalled(ctx, c)
	if err != nil {
		return err
	}
	if c.StaleCM != nil {
		if err := member.Step(c.Reporter(), "Upgrading this cluster's kubectl federate objects (CRDs, tenant role, admission policies)", "Cluster's kubectl federate objects up to date", func() error {
			_, err := install(ctx, c, c.StaleCM, "", have)
			return err
		}); err != nil {
			return err
		}
		c.StaleCM = nil
		return nil
	}
	if err := reconcileInstalled(ctx, c, have, true); err != nil {
		return err
	}
	c.Verified = true
	return nil
}

// reconcileInstalled creates what is missing and replaces what differs, each object on its own, all at
// once; a policy goes before its binding. have nil (not read) applies every object. drift says the
// objects are expected to be right already, so each one restored is reported.
func reconcileInstalled(ctx context.Context, c *member.Cluster, have *member.InstalledObjects, drift bool) error {
	if have == nil {
		have = &member.InstalledObjects{}
	}
	warn := func(kind, name, what string) {
		if drift && what != "" {
			c.Reporter().Warn(fmt.Sprintf("%s %s %s: restored (kubectl federate's sandbox depends on it)", kind, name, what))
		}
	}
	role := defaultClusterRole()
	jobs := []func() error{func() error {
		what, err := converge(ctx, c, ClusterRoleGVR, have.Role, role, []string{"rules", "aggregationRule"}, sameRole(role))
		if err != nil {
			return fmt.Errorf("applying ClusterRole %s: %w", member.DefaultClusterRole, err)
		}
		warn("ClusterRole", member.DefaultClusterRole, what)
		return nil
	}}
	for _, res := range SandboxPolicyResources {
		policy, binding := Policy(res), PolicyBinding(res)
		jobs = append(jobs, func() error {
			what, err := converge(ctx, c, PolicyGVR, have.Policies[policy.Name], policy, []string{"spec"}, samePolicy(policy))
			if err != nil {
				return fmt.Errorf("applying ValidatingAdmissionPolicy %s: %w", policy.Name, err)
			}
			warn("ValidatingAdmissionPolicy", policy.Name, what)
			what, err = converge(ctx, c, PolicyBindingGVR, have.Bindings[binding.Name], binding, []string{"spec"}, sameBinding(binding))
			if err != nil {
				return fmt.Errorf("applying ValidatingAdmissionPolicyBinding %s: %w", binding.Name, err)
			}
			warn("ValidatingAdmissionPolicyBinding", binding.Name, what)
			return nil
		})
	}
	return parallel.All(jobs...)
}

// sameRole, samePolicy and sameBinding tell whether an object as read is the one this version installs.
func sameRole(role *rbacv1.ClusterRole) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		var h rbacv1.ClusterRole
		return objects.FromUnstructured(u, &h) == nil && h.AggregationRule == nil && apiequality.Semantic.DeepEqual(h.Rules, role.Rules)
	}
}

func samePolicy(policy *admissionv1.ValidatingAdmissionPolicy) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		var h admissionv1.ValidatingAdmissionPolicy
		return objects.FromUnstructured(u, &h) == nil && SamePolicySpec(h.Spec, policy.Spec)
	}
}

func sameBinding(binding *admissionv1.ValidatingAdmissionPolicyBinding) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		var h admissionv1.ValidatingAdmissionPolicyBinding
		return objects.FromUnstructured(u, &h) == nil && SameBindingSpec(h.Spec, binding.Spec)
	}
}

// Drift is one of the objects init installs (the tenant role, a sandbox admission policy or its binding)
// that is missing or differs from what this version installs.
type Drift struct {
	Kind, Name string
	What       string // "is missing", "was changed"
}

func (d Drift) String() string { return d.Kind + " " + d.Name + " " + d.What }

// InstalledDrift reads the tenant role and the sandbox's admission policies and bindings, and says which
// differ from what init installs (and would restore), writing nothing. Nothing means all is in place.
func InstalledDrift(ctx context.Context, c *member.Cluster) ([]Drift, error) {
	have, err := readInstalled(ctx, c)
	if err != nil {
		return nil, err
	}
	var out []Drift
	check := func(kind, name string, u *unstructured.Unstructured, same func(*unstructured.Unstructured) bool) {
		switch {
		case u == nil:
			out = append(out, Drift{kind, name, "is missing"})
		case !same(u) || u.GetLabels()[member.LabelManagedBy] != member.ManagedBy:
			out = append(out, Drift{kind, name, "was changed"})
		}
	}
	role := defaultClusterRole()
	check("ClusterRole", role.Name, have.Role, sameRole(role))
	for _, res := range SandboxPolicyResources {
		policy, binding := Policy(res), PolicyBinding(res)
		check("ValidatingAdmissionPolicy", policy.Name, have.Policies[policy.Name], samePolicy(policy))
		check("ValidatingAdmissionPolicyBinding", binding.Name, have.Bindings[binding.Name], sameBinding(binding))
	}
	return out, nil
}

// converge makes one object what want says and tells what it found wrong ("" when nothing): a missing one
// is created (server-side apply); a changed one is replaced whole in fields (an update, not an apply: an
// apply would leave what another field manager added, such as a match condition that switches a policy
// off). same tells whether an object is already right.
func converge(ctx context.Context, c *member.Cluster, gvr schema.GroupVersionResource, have *unstructured.Unstructured, want any, fields []string,
	same func(*unstructured.Unstructured) bool) (string, error) {
	if have == nil {
		return "was missing", c.ApplyTyped(ctx, gvr, "", want)
	}
	if same(have) && have.GetLabels()[member.LabelManagedBy] == member.ManagedBy {
		return "", nil
	}
	w, err := objects.ToUnstructured(want)
	if err != nil {
		return "", err
	}
	res := c.Dynamic.Resource(gvr)
	for range 3 { // a conflict means someone else wrote it meanwhile: judge it again
		u := have.DeepCopy()
		for _, f := range fields {
			if v, ok := w.Object[f]; ok {
				u.Object[f] = v
			} else {
				delete(u.Object, f)
			}
		}
		l := u.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[member.LabelManagedBy] = member.ManagedBy
		u.SetLabels(l)
		if _, err = res.Update(ctx, u, metav1.UpdateOptions{FieldManager: member.FieldManager}); !apierrors.IsConflict(err) {
			return "was changed", err
		}
		fresh, gerr := res.Get(ctx, w.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(gerr):
			return "was missing", c.ApplyTyped(ctx, gvr, "", want)
		case gerr != nil:
			return "", gerr
		case same(fresh) && fresh.GetLabels()[member.LabelManagedBy] == member.ManagedBy:
			return "", nil
		}
		have = fresh
	}
	return "", err
}

// SamePolicySpec compares a policy's spec with the one we install, with the API server's defaults filled
// in on both sides, so that what the server added is not taken for a change, and anything else (a field
// we do not set included) is.
func SamePolicySpec(have, want admissionv1.ValidatingAdmissionPolicySpec) bool {
	h, w := have.DeepCopy(), want.DeepCopy()
	for _, s := range []*admissionv1.ValidatingAdmissionPolicySpec{h, w} {
		if s.FailurePolicy == nil {
			fail := admissionv1.Fail
			s.FailurePolicy = &fail
		}
		DefaultMatchResources(s.MatchConstraints)
	}
	return apiequality.Semantic.DeepEqual(h, w)
}

// SameBindingSpec is samePolicySpec for a binding.
func SameBindingSpec(have, want admissionv1.ValidatingAdmissionPolicyBindingSpec) bool {
	h, w := have.DeepCopy(), want.DeepCopy()
	DefaultMatchResources(h.MatchResources)
	DefaultMatchResources(w.MatchResources)
	return apiequality.Semantic.DeepEqual(h, w)
}

// DefaultMatchResources fills in what the API server defaults in a MatchResources (admissionregistration
// v1 defaulting): the match policy, both selectors and each rule's scope.
func DefaultMatchResources(m *admissionv1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		eq := admissionv1.Equivalent
		m.MatchPolicy = &eq
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rules := range [][]admissionv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			if rules[i].Scope == nil {
				all := admissionv1.AllScopes
				rules[i].Scope = &all
			}
		}
	}
}

// LoadCurrent is Load for what issues or restricts credentials: when the cluster's admission policies,
// CRDs or tenant role come from an older kubectl federate (installGeneration), they are brought up to date
// first, so that nothing is issued under rules that do not yet know it (a token's ServiceAccount, a
// cordon). Read-only commands use Load, which never writes.
//
// It also restores any of the sandbox's admission policies, their bindings and the tenant role that was
// deleted or changed (ensureCurrent), reading them with the cluster's record: no extra round trip.
func LoadCurrent(ctx context.Context, c *member.Cluster) (*member.Self, error) {
	self, err := c.LoadAlong(ctx, readInstalledFunc(c))
	if err != nil {
		return nil, err
	}
	if err := ensureCurrent(ctx, c); err != nil {
		return nil, err
	}
	return self, nil
}

// readInstalledFunc is readInstalled as the cluster's record read takes it, to send alongside.
func readInstalledFunc(c *member.Cluster) func(context.Context) (*member.InstalledObjects, error) {
	return func(ctx context.Context) (*member.InstalledObjects, error) { return readInstalled(ctx, c) }
}

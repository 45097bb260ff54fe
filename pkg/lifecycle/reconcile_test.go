package lifecycle

import (
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/kube/kubetest"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// What the API server fills in is not a change; what anyone adds, even a field we never set, is.
func TestPolicyComparisonIsSemantic(t *testing.T) {
	want := sandbox.Policy("pods")
	served := want.DeepCopy()
	served.Spec.FailurePolicy = nil
	sandbox.DefaultMatchResources(served.Spec.MatchConstraints)
	if !sandbox.SamePolicySpec(served.Spec, want.Spec) {
		t.Error("the served defaults count as a change")
	}
	off := served.DeepCopy()
	off.Spec.MatchConditions = []admissionv1.MatchCondition{{Name: "off", Expression: "false"}}
	edited := served.DeepCopy()
	edited.Spec.Validations[0].Expression = "true"
	audit := sandbox.PolicyBinding("pods")
	audit.Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Audit}
	narrowed := sandbox.PolicyBinding("pods")
	narrowed.Spec.MatchResources.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}
	if sandbox.SamePolicySpec(off.Spec, want.Spec) || sandbox.SamePolicySpec(edited.Spec, want.Spec) {
		t.Error("an added match condition or an edited expression is not a change")
	}
	if sandbox.SameBindingSpec(audit.Spec, sandbox.PolicyBinding("pods").Spec) || sandbox.SameBindingSpec(narrowed.Spec, sandbox.PolicyBinding("pods").Spec) {
		t.Error("a binding that only audits, or selects fewer objects, is not a change")
	}
}

// init and every issuance put back a sandbox policy or binding that was deleted or changed, and the tenant
// role; when nothing was touched, they write none of them.
func TestSandboxPoliciesAreRestored(t *testing.T) {
	consumer, provider := fakePair(t)
	ctx := t.Context()
	policies, bindings := provider.dyn.Resource(sandbox.PolicyGVR), provider.dyn.Resource(sandbox.PolicyBindingGVR)
	tamper := func() {
		t.Helper()
		if err := policies.Delete(ctx, sandbox.SandboxName+"-pods", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := bindings.Delete(ctx, sandbox.SandboxName+"-persistentvolumeclaims", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		u, err := policies.Get(ctx, sandbox.SandboxName+"-secrets", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"expression": "true"}}, "spec", "validations")
		if _, err := policies.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		role, err := provider.dyn.Resource(sandbox.ClusterRoleGVR).Get(ctx, member.DefaultClusterRole, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedSlice(role.Object, []any{map[string]any{"apiGroups": []any{"*"}, "resources": []any{"*"}, "verbs": []any{"*"}}}, "rules")
		if _, err := provider.dyn.Resource(sandbox.ClusterRoleGVR).Update(ctx, role, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	intact := func(step string) {
		t.Helper()
		for _, res := range sandbox.SandboxPolicyResources {
			u, err := policies.Get(ctx, sandbox.SandboxName+"-"+res, metav1.GetOptions{})
			var p admissionv1.ValidatingAdmissionPolicy
			if err != nil || objects.FromUnstructured(u, &p) != nil || !sandbox.SamePolicySpec(p.Spec, sandbox.Policy(res).Spec) {
				t.Errorf("%s: policy %s not restored (%v)", step, res, err)
			}
			u, err = bindings.Get(ctx, sandbox.SandboxName+"-"+res, metav1.GetOptions{})
			var b admissionv1.ValidatingAdmissionPolicyBinding
			if err != nil || objects.FromUnstructured(u, &b) != nil || !sandbox.SameBindingSpec(b.Spec, sandbox.PolicyBinding(res).Spec) {
				t.Errorf("%s: binding %s not restored (%v)", step, res, err)
			}
		}
		role, err := provider.dyn.Resource(sandbox.ClusterRoleGVR).Get(ctx, member.DefaultClusterRole, metav1.GetOptions{})
		if err != nil || !strings.Contains(fmtAny(role.Object["rules"]), "pods/exec") || strings.Contains(fmtAny(role.Object["rules"]), `"*"`) {
			t.Errorf("%s: ClusterRole %s not restored: %v %v", step, member.DefaultClusterRole, role, err)
		}
	}
	writes := func() []string {
		var out []string
		for _, a := range provider.dyn.Actions() {
			if r := a.GetResource().Resource; (r == sandbox.PolicyGVR.Resource || r == sandbox.PolicyBindingGVR.Resource || r == sandbox.ClusterRoleGVR.Resource) && a.GetVerb() != "get" && a.GetVerb() != "list" {
				out = append(out, a.GetVerb()+" "+r)
			}
		}
		return out
	}

	// init, on a fresh client (a new process).
	tamper()
	if _, err := sandbox.Init(ctx, &member.Cluster{Kube: kubetest.Wrap(provider.kube), Dynamic: provider.dyn, Now: provider.Now}, ""); err != nil {
		t.Fatal(err)
	}
	intact("init")
	provider.dyn.ClearActions()
	if _, err := sandbox.Init(ctx, &member.Cluster{Kube: kubetest.Wrap(provider.kube), Dynamic: provider.dyn, Now: provider.Now}, ""); err != nil {
		t.Fatal(err)
	}
	if w := writes(); len(w) != 0 {
		t.Errorf("init of an intact cluster wrote %v", w)
	}

	// An issuance (generate identity), also on a fresh client.
	tamper()
	tenant, _ := manualFlow(t, consumer, provider)
	issuer := &member.Cluster{Kube: kubetest.Wrap(provider.kube), Dynamic: provider.dyn, Now: provider.Now}
	if _, err := handshake.IssueIdentity(ctx, issuer, issueOptions(tenant)); err != nil {
		t.Fatal(err)
	}
	intact("generate identity")
	provider.dyn.ClearActions()
	consumer.dyn.ClearActions()
	if _, err := Authenticate(ctx, consumer.Cluster, &member.Cluster{Kube: kubetest.Wrap(provider.kube), Dynamic: provider.dyn, Now: provider.Now},
		AuthenticateOptions{APIServer: "https://p:6443", KeyAlgorithm: credential.KeyEd25519}); err != nil {
		t.Fatal(err)
	}
	if w := writes(); len(w) != 0 {
		t.Errorf("authenticate on an intact cluster wrote %v", w)
	}
	// The consumer's side reads none of them (a consumer operator may not).
	for _, a := range consumer.dyn.Actions() {
		if r := a.GetResource().Resource; r == sandbox.PolicyGVR.Resource || r == sandbox.PolicyBindingGVR.Resource {
			t.Errorf("the consumer's side of authenticate sent %s %s", a.GetVerb(), r)
		}
	}
}

// warnings records a run's warnings.
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) Begin(string, string) func(error) { return func(error) {} }
func (w *warnings) Info(string)                      {}
func (w *warnings) Warn(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, msg)
}

// A cluster of an older installGeneration is upgraded by the first issuance, silently (its objects are
// expected to differ), and restored ones are warned about only on a current cluster.
func TestOlderGenerationIsUpgradedSilently(t *testing.T) {
	_, provider := fakePair(t)
	ctx := t.Context()
	cms := provider.kube.CoreV1().ConfigMaps(member.SystemNamespace)
	cm, err := cms.Get(ctx, member.ClusterConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Annotations[member.InstallGenAnnot] = "1"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := provider.dyn.Resource(sandbox.PolicyGVR).Delete(ctx, sandbox.SandboxName+"-cordon-jobs", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w := &warnings{}
	c := &member.Cluster{Kube: kubetest.Wrap(provider.kube), Dynamic: provider.dyn, Now: provider.Now, Report: w}
	if _, err := sandbox.LoadCurrent(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := provider.dyn.Resource(sandbox.PolicyGVR).Get(ctx, sandbox.SandboxName+"-cordon-jobs", metav1.GetOptions{}); err != nil {
		t.Errorf("the upgrade did not install the policy: %v", err)
	}
	if cm, _ = cms.Get(ctx, member.ClusterConfigMap, metav1.GetOptions{}); cm.Annotations[member.InstallGenAnnot] != member.InstallGeneration {
		t.Errorf("install generation %q after the upgrade", cm.Annotations[member.InstallGenAnnot])
	}
	if len(w.got) != 0 {
		t.Errorf("an upgrade warned: %v", w.got)
	}
	// A second issuance in the same process reads nothing again.
	provider.dyn.ClearActions()
	if _, err := sandbox.LoadCurrent(ctx, c); err != nil || len(provider.dyn.Actions()) != 0 {
		t.Errorf("a second loadCurrent: %v, %d requests", err, len(provider.dyn.Actions()))
	}
}

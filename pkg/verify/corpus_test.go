package verify

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/pkg/kube/kubetest"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

func fullParams() Params {
	cpu := resource.MustParse("4")
	return Params{Namespace: "federate-tenant-edge", Prefix: "federate-verify-", PriorityClass: "batch", RuntimeClass: "kata", Scheduler: "other",
		Toleration: "example.com/gpu", Volume: "root", PendingClaim: "waiting", ClasslessRefused: true, QuotaCPU: &cpu}
}

// The corpus covers every class of escape issue 37 lists, each attack named once, with a guard, an object
// name the API server accepts, and the right it needs.
func TestCorpusCoversEveryClass(t *testing.T) {
	corpus := Corpus(fullParams())
	seen := map[string]bool{}
	classes := map[string]bool{}
	for _, a := range corpus {
		if seen[a.Name] {
			t.Errorf("attack %s is in the corpus twice", a.Name)
		}
		seen[a.Name] = true
		classes[a.Class] = true
		if len(a.Guards) == 0 || a.Class == "" || a.Access.Verb == "" || a.Access.Resource == "" {
			t.Errorf("attack %s: guards %q, class %q, access %+v: each must be named", a.Name, a.Guards, a.Class, a.Access)
		}
		if a.Object.Name != "" {
			if errs := validation.IsDNS1123Subdomain(a.Object.Name); len(errs) > 0 {
				t.Errorf("attack %s: object name %q: %v", a.Name, a.Object.Name, errs)
			}
		}
	}
	for _, c := range []string{ClassHost, ClassHostPath, ClassHostPorts, ClassCaps, ClassStorage, ClassPlacement, ClassTokens, ClassCluster,
		ClassNamespaces, ClassSecrets, ClassRBAC, ClassCSR, ClassNodeProxy, ClassQuota, ClassSandbox} {
		if !classes[c] {
			t.Errorf("no attack of class %q", c)
		}
	}
	if len(corpus) < 60 {
		t.Errorf("%d attacks, want the whole corpus (at least 60)", len(corpus))
	}
}

// An attack that needs what a sandbox does not have is left out, not sent to prove nothing.
func TestCorpusLeavesOutWhatItCannotTry(t *testing.T) {
	bare := Corpus(Params{Namespace: "federate-tenant-edge", AnyImage: true})
	names := map[string]bool{}
	for _, a := range bare {
		names[a.Name] = true
	}
	for _, name := range []string{"unlisted-priority-class", "runtime-class-not-allowed", "scheduler-not-allowed", "tolerate-unlisted-key",
		"pvc-update-volume-name", "pvc-classless", "cpu-over-quota", "image-volume"} {
		if names[name] {
			t.Errorf("%s is tried without what it needs", name)
		}
	}
	if !names["pvc-volume-name"] || !names["privileged"] {
		t.Errorf("the attacks that need nothing are missing: %v", names)
	}
}

// Pod Security: baseline admits what only restricted refuses, privileged refuses nothing of Pod Security's;
// the sandbox's own policies hold at every level.
func TestCorpusLevels(t *testing.T) {
	byName := map[string]Attack{}
	for _, a := range Corpus(fullParams()) {
		byName[a.Name] = a
	}
	for _, c := range []struct {
		name                           string
		restricted, baseline, privileg bool
	}{
		{"root-no-seccomp", true, false, false},
		{"privileged", true, true, false},
		{"hostpath-root", true, true, false},
		{"csi-inline-volume", true, true, false},
		{"nodename", true, true, true},
		{"projected-token-with-audience", true, true, true},
		{"secret-in-kube-system", true, true, true},
	} {
		a := byName[c.name]
		if a.Applies(sandbox.PodSecurityRestricted) != c.restricted || a.Applies(sandbox.PodSecurityBaseline) != c.baseline ||
			a.Applies(sandbox.PodSecurityPrivileged) != c.privileg {
			t.Errorf("%s applies at restricted/baseline/privileged: %v/%v/%v, want %v/%v/%v", c.name, a.Applies(sandbox.PodSecurityRestricted),
				a.Applies(sandbox.PodSecurityBaseline), a.Applies(sandbox.PodSecurityPrivileged), c.restricted, c.baseline, c.privileg)
		}
	}
}

func forbidden(msg string) error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New(msg))
}

func TestJudge(t *testing.T) {
	a := Attack{Name: "privileged", Guards: []string{ByPodSecurity}}
	for _, c := range []struct {
		err      error
		cordoned bool
		want     Outcome
	}{
		{nil, false, Admitted},
		{forbidden(`violates PodSecurity "restricted:latest": privileged`), false, Refused},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "x", nil), false, OtherGuard},
		{forbidden("ValidatingAdmissionPolicy 'federate-sandbox-pods' denied request: no"), false, OtherGuard},
		{forbidden("ValidatingAdmissionPolicy 'federate-sandbox-cordon' denied request: cordoned"), true, Refused},
		{forbidden("ValidatingAdmissionPolicy 'federate-sandbox-cordon' denied request: cordoned"), false, OtherGuard},
		{apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "gone"), false, NotTried},
		{errors.New("connection refused"), false, NotTried},
		{fmt.Errorf("%w: the field", errDropped), false, OtherGuard},
	} {
		if got := a.Judge(c.err, c.cordoned); got != c.want {
			t.Errorf("Judge(%v, cordoned %v) = %s, want %s", c.err, c.cordoned, got, c.want)
		}
	}
	dropped := Attack{Guards: []string{byDataSource, byDropped}}
	if got := dropped.Judge(fmt.Errorf("%w: the field", errDropped), false); got != Refused {
		t.Errorf("a dropped field: %s, want refused", got)
	}
}

// Every attack sent as a dry run sends nothing but dry runs, reads of objects that do not exist, and
// access reviews; sent for real (the e2e), only a few are dry runs all the same. A refusal is judged refused,
// an admission admitted, and a read that finds nothing admitted (the API server authorized it).
func TestCorpusSendsDryRuns(t *testing.T) {
	for _, dry := range []bool{true, false} {
		cs := fake.NewClientset()
		var sent []clienttesting.Action
		cs.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
			sent = append(sent, a)
			return true, nil, forbidden(`User "u" cannot do it; violates PodSecurity; ` + ByPolicy + `'; must not; exceeded quota`)
		})
		for _, a := range Corpus(fullParams()) {
			sent = sent[:0]
			err := a.Try(t.Context(), kubetest.Wrap(cs), dry)
			if len(sent) == 0 {
				t.Fatalf("%s sent nothing", a.Name)
			}
			if a.Judge(err, false) == Admitted {
				t.Errorf("%s: a refusal judged admitted (%v)", a.Name, err)
			}
			for _, act := range sent {
				if !dry && !a.Always {
					continue
				}
				if w := writeOf(act); w != "" && !dryRunOf(act) {
					t.Errorf("%s (dry %v): %s is not a dry run", a.Name, dry, w)
				}
			}
		}
	}
}

// An admission admits; a read of the absent object answers NotFound, which means allowed.
func TestCorpusAdmittedWhenAllowed(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		switch a.GetVerb() {
		case "get", "list":
			return true, nil, apierrors.NewNotFound(a.GetResource().GroupResource(), Absent)
		}
		return false, nil, nil
	})
	cs.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		r := a.(clienttesting.CreateAction).GetObject().(*authzv1.SelfSubjectAccessReview).DeepCopy()
		r.Status.Allowed = true
		return true, r, nil
	})
	// The patches aim at the sandbox's objects, which this empty fake does not hold: NotFound, not tried.
	for _, a := range Corpus(fullParams()) {
		got := a.Judge(a.Try(t.Context(), kubetest.Wrap(cs), true), false)
		want := Admitted
		if a.Object.Name != "" && a.Access.Verb == "patch" {
			want = NotTried
		}
		if got != want {
			t.Errorf("%s on a cluster that refuses nothing: %s, want %s", a.Name, got, want)
		}
	}
}

// writeOf names an action that would change a cluster ("" for reads and reviews).
func writeOf(a clienttesting.Action) string {
	switch a.GetVerb() {
	case "get", "list", "watch":
		return ""
	}
	if slices.Contains([]string{"selfsubjectaccessreviews", "subjectaccessreviews"}, a.GetResource().Resource) {
		return ""
	}
	return a.GetVerb() + " " + a.GetResource().Resource + "/" + a.GetSubresource()
}

func dryRunOf(a clienttesting.Action) bool {
	switch act := a.(type) {
	case clienttesting.CreateActionImpl:
		return slices.Equal(act.CreateOptions.DryRun, []string{metav1.DryRunAll})
	case clienttesting.PatchActionImpl:
		return slices.Equal(act.PatchOptions.DryRun, []string{metav1.DryRunAll})
	case clienttesting.UpdateActionImpl:
		return slices.Equal(act.UpdateOptions.DryRun, []string{metav1.DryRunAll})
	}
	return false
}

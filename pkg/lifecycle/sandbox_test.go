package lifecycle

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// The provider's allowed lists: each refused input names what it is, the lists are kept sorted and
// without repeats, and they reach the namespace annotations the policies read and the Tenant's record.
func TestSandboxAllowLists(t *testing.T) {
	for _, tc := range []struct {
		o    sandbox.Options
		want string
	}{
		{sandbox.Options{StorageClasses: []string{"Fast_SSD"}}, `storage class "Fast_SSD": is not a valid name`},
		{sandbox.Options{Tolerations: []string{"a b"}}, `toleration "a b": is not a valid taint key`},
		{sandbox.Options{Tolerations: []string{""}}, `toleration "": is not a valid taint key`},
		{sandbox.Options{Tolerations: []string{"node-role.kubernetes.io/control-plane"}}, "never tolerated"},
		{sandbox.Options{Tolerations: []string{"node-role.kubernetes.io/etcd"}}, "never tolerated"},
		{sandbox.Options{RuntimeClasses: []string{"Kata!"}}, `runtime class "Kata!": is not a valid name`},
		{sandbox.Options{Schedulers: []string{"my_scheduler"}}, `scheduler "my_scheduler": is not a valid name`},
		{sandbox.Options{CSIDrivers: []string{"NFS driver"}}, `CSI driver "NFS driver": is not a valid driver name`},
		{sandbox.Options{ImageVolumes: []string{"registry.example.com"}}, `image volume source "registry.example.com": must be a registry or repository path ending in /`},
		{sandbox.Options{ImageVolumes: []string{""}}, `image volume source "": must be`},
		{sandbox.Options{ImageVolumes: []string{"/models/"}}, `image volume source "/models/": must be`},
	} {
		if _, err := tc.o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.o, err, tc.want)
		}
	}
	o, err := sandbox.Options{StorageClasses: []string{"slow", "fast", "slow"}, Tolerations: []string{"example.com/gpu", "CriticalAddonsOnly"},
		RuntimeClasses: []string{"gvisor"}, Schedulers: []string{"batch"}, CSIDrivers: []string{"nfs.csi.k8s.io"},
		ImageVolumes: []string{"registry.example.com/models/", "*"}}.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.StorageClasses, []string{"fast", "slow"}) || !slices.Equal(o.Tolerations, []string{"CriticalAddonsOnly", "example.com/gpu"}) {
		t.Errorf("lists not sorted and deduplicated: %+v", o)
	}
	want := map[string]string{sandbox.AnnotationPriorityClasses: "", sandbox.AnnotationStorageClasses: "fast,slow", sandbox.AnnotationTolerations: "CriticalAddonsOnly,example.com/gpu",
		sandbox.AnnotationRuntimeClasses: "gvisor", sandbox.AnnotationSchedulers: "batch", sandbox.AnnotationCSIDrivers: "nfs.csi.k8s.io",
		sandbox.AnnotationImageVolumes: "*,registry.example.com/models/"}
	if got := o.Annotations(); !equalMaps(got, want) {
		t.Errorf("annotations %v, want %v", got, want)
	}
	// Defaults: every list empty, and every annotation still set, so a re-issuance takes choices away.
	d, _ := sandbox.Options{}.Validate()
	for k, v := range d.Annotations() {
		if v != "" {
			t.Errorf("default annotation %s = %q", k, v)
		}
	}
	if len(d.Annotations()) != 7 {
		t.Errorf("default annotations %v", d.Annotations())
	}
	back, err := sandbox.FromStatus(o.Status())
	if err != nil {
		t.Fatal(err)
	}
	if back, _ = back.Validate(); !slices.Equal(back.StorageClasses, o.StorageClasses) || !slices.Equal(back.Tolerations, o.Tolerations) ||
		!slices.Equal(back.RuntimeClasses, o.RuntimeClasses) || !slices.Equal(back.Schedulers, o.Schedulers) ||
		!slices.Equal(back.CSIDrivers, o.CSIDrivers) || !slices.Equal(back.ImageVolumes, o.ImageVolumes) {
		t.Errorf("the record does not give the choices back: %+v from %+v", back, o.Status())
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Each policy is matched for the right requesters, selects the right namespaces and declares every
// variable it uses.
func TestSandboxPolicyObjects(t *testing.T) {
	tenantOnly := []string{"finalizers", "workloads", "statefulsets", "cronjobs", "history", "volumeclaims", "cordon", "cordon-scale", "cordon-jobs", "cordon-cronjobs"}
	uses := regexp.MustCompile(`variables\.([a-zA-Z]+)`)
	for _, res := range sandbox.SandboxPolicyResources {
		p, b := sandbox.Policy(res), sandbox.PolicyBinding(res)
		if p.Name != sandbox.SandboxName+"-"+res || b.Name != p.Name || b.Spec.PolicyName != p.Name {
			t.Errorf("%s: policy %s, binding %s for %s", res, p.Name, b.Name, b.Spec.PolicyName)
		}
		if len(p.Spec.Validations) == 0 || p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionv1.Fail {
			t.Errorf("%s: no validations or not failing closed", res)
		}
		if tenant := len(p.Spec.MatchConditions) == 1 && p.Spec.MatchConditions[0].Name == "tenant"; tenant != slices.Contains(tenantOnly, res) {
			t.Errorf("%s: tenant-only %v, want %v", res, tenant, !tenant)
		}
		sel := b.Spec.MatchResources.NamespaceSelector.MatchLabels
		if sel[sandbox.LabelSandbox] != "true" || (sel[sandbox.LabelCordoned] == "true") != strings.HasPrefix(res, "cordon") {
			t.Errorf("%s: binding selects %v", res, sel)
		}
		declared := map[string]bool{}
		for _, v := range p.Spec.Variables {
			declared[v.Name] = true
		}
		for _, v := range p.Spec.Validations {
			for _, m := range uses.FindAllStringSubmatch(v.Expression, -1) {
				if !declared[m[1]] {
					t.Errorf("%s: uses variables.%s, which it does not declare", res, m[1])
				}
			}
			if !strings.HasPrefix(v.Message, "kubectl federate sandbox: ") {
				t.Errorf("%s: message %q does not say who refused", res, v.Message)
			}
		}
	}
	// The pods policy reads every allowed list from the namespace, and always refuses the control plane's taints.
	pods := sandbox.Policy("pods")
	all := fmtAny(pods.Spec)
	for _, k := range []string{sandbox.AnnotationPriorityClasses, sandbox.AnnotationTolerations, sandbox.AnnotationRuntimeClasses, sandbox.AnnotationSchedulers, sandbox.AnnotationStorageClasses} {
		if !strings.Contains(all, k) {
			t.Errorf("the pods policy does not read %s", k)
		}
	}
	for _, k := range append(slices.Clone(sandbox.ControlPlaneTaints), sandbox.DefaultTolerations...) {
		if !strings.Contains(all, "'"+k+"'") {
			t.Errorf("the pods policy does not name %s", k)
		}
	}
	// Claims are checked for everyone at creation; a tenant may not set volumeName later.
	if c := sandbox.Policy("persistentvolumeclaims"); len(c.Spec.MatchConditions) != 0 || !strings.Contains(fmtAny(c.Spec.Validations), "volumeName") ||
		!strings.Contains(fmtAny(c.Spec.Validations), "dataSourceRef.namespace") || !strings.Contains(fmtAny(c.Spec.Validations), "storageClassName") {
		t.Errorf("persistentvolumeclaims policy: %s", fmtAny(c.Spec))
	}
	if v := sandbox.Policy("volumeclaims"); !strings.Contains(v.Spec.Validations[0].Expression, "oldObject.spec.volumeName") {
		t.Errorf("volumeclaims policy: %s", fmtAny(v.Spec))
	}
	// A cordoned tenant may not raise parallelism nor resume a Job or a CronJob.
	if j := fmtAny(sandbox.Policy("cordon-jobs").Spec); !strings.Contains(j, "parallelism") || !strings.Contains(j, "suspend") {
		t.Errorf("cordon-jobs policy: %s", j)
	}
	if c := sandbox.Policy("cordon-cronjobs"); !slices.Equal(c.Spec.MatchConstraints.ResourceRules[0].Resources, []string{"cronjobs"}) ||
		!strings.Contains(fmtAny(c.Spec), "suspend") {
		t.Errorf("cordon-cronjobs policy: %s", fmtAny(c.Spec))
	}
}

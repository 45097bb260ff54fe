package grants

import (
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
)

// A consumer shows its slices as the provider's copy says: gone, denied with the provider's reason, or
// granted and not imported; a copy of another slice or consumer changes nothing, nor does an answer to a
// slice already imported.
func TestWithAnswer(t *testing.T) {
	held := SliceInfo{ProviderID: "p", Name: "s1", Phase: SlicePending}
	answer := func(phase, reason string, mut func(*v1alpha1.ResourceSlice)) *v1alpha1.ResourceSlice {
		a := &v1alpha1.ResourceSlice{}
		a.Name = "s1"
		a.Spec.ClusterID, a.Spec.ProviderClusterID, a.Spec.Slice = "c", "p", "s1"
		a.Status.Phase, a.Status.Reason = phase, reason
		if mut != nil {
			mut(a)
		}
		return a
	}
	imported := held
	imported.Phase = SliceImported
	for _, tc := range []struct {
		name       string
		held       SliceInfo
		answer     *v1alpha1.ResourceSlice
		phase, why string
	}{
		{"deleted by the provider", held, nil, SliceRemoved, "deleted there"},
		{"imported, then deleted by the provider", imported, nil, SliceRemoved, "deleted there"},
		{"denied", held, answer(SliceDenied, "no room", nil), SliceDenied, "no room"},
		{"granted", held, answer(SliceAccepted, "", nil), SliceAccepted, "import resourceslice s1"},
		{"unanswered", held, answer("", "", nil), SlicePending, ""},
		{"imported stays imported", imported, answer(SliceAccepted, "", nil), SliceImported, ""},
		{"another consumer's copy", held, answer(SliceDenied, "x", func(a *v1alpha1.ResourceSlice) { a.Spec.ClusterID = "other" }), SlicePending, ""},
		{"another slice's copy", held, answer(SliceDenied, "x", func(a *v1alpha1.ResourceSlice) { a.Spec.Slice = "s2" }), SlicePending, ""},
	} {
		got := withAnswer(tc.held, tc.answer, "c")
		if got.Phase != tc.phase || (tc.why == "") != (got.Reason == "") || !strings.Contains(got.Reason, tc.why) {
			t.Errorf("%s: phase %q reason %q, want %q with %q", tc.name, got.Phase, got.Reason, tc.phase, tc.why)
		}
	}
}

// A provider's removal names only what it found.
func TestSliceRemovedLine(t *testing.T) {
	for _, tc := range []struct {
		unbound, ns, request bool
		want, not            []string
	}{
		{false, false, true, []string{"removed: the consumer's request"}, []string{"binding", "namespace", "revoked"}},
		{true, true, true, []string{"revoked and removed: its binding, namespace n with all it held, the consumer's request"}, nil},
		{false, true, false, []string{"removed: namespace n"}, []string{"binding", "request", "revoked"}},
		{false, false, false, []string{"nothing was left to remove"}, []string{"binding", "namespace", "request"}},
	} {
		got := sliceRemovedLine("s", "c", "n", tc.unbound, tc.ns, tc.request)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%v/%v/%v: %q lacks %q", tc.unbound, tc.ns, tc.request, got, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(got, w) {
				t.Errorf("%v/%v/%v: %q claims %q", tc.unbound, tc.ns, tc.request, got, w)
			}
		}
	}
}

package flags

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Each domain error with a next step gets it once, at the end of its one line, however deeply wrapped;
// one given its next step already, or one a command gives its own (ErrNoClusterID), and others, are left
// alone.
func TestNextStep(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string // suffix; "" for unchanged
	}{
		{fmt.Errorf("consumer: %w", &member.SliceNotAcceptedError{Slice: "s1", ProviderID: "farm", ConsumerID: "edge"}),
			"; its administrator accepts it with: kubectl federate accept resourceslice s1 --remote-cluster-id edge"},
		{&member.SliceNotRequestedError{ConsumerID: "edge", Slice: "s1", Namespace: "ns"}, "; its administrator asks for it with: kubectl federate create resourceslice s1"},
		{&member.StillAllowedError{User: "u", What: "get pods", After: time.Second}, "; find what binds it with: kubectl auth can-i --list --as u"},
		{fmt.Errorf("spec.class: %w", grants.ErrNoClass), "; create the class first: kubectl federate create resourceslice-class NAME"},
		{fmt.Errorf("provider: %w (no ConfigMap x)", member.ErrNotInitialized), "; run kubectl federate init"},
		{&handshake.NamespaceNotFoundError{Namespace: "argocd"}, "; create it first (kubectl create namespace argocd), or choose another"},
		{fmt.Errorf("%w: name this cluster with --cluster-id", member.ErrNoClusterID), ""},
		{NextStep(fmt.Errorf("x: %w", member.ErrNotInitialized)), ""}, // once only
		{errors.New("anything else"), ""},
	} {
		got := NextStep(c.err)
		switch {
		case c.want == "" && got.Error() != c.err.Error():
			t.Errorf("%v: changed to %v", c.err, got)
		case c.want != "" && got.Error() != c.err.Error()+c.want:
			t.Errorf("%v: got %q, want it followed by %q", c.err, got, c.want)
		case strings.Count(got.Error(), "; ") > 2:
			t.Errorf("%v: more than one next step: %q", c.err, got)
		case !errors.Is(got, c.err):
			t.Errorf("%v: the next step hides the error from errors.Is", c.err)
		}
	}
	if NextStep(nil) != nil {
		t.Error("NextStep(nil) is not nil")
	}
}

package renew_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

func subjects(t *testing.T, w *cmdtest.World, ns string) []string {
	t.Helper()
	rb, err := w.Cluster("farm").Clientset.RbacV1().RoleBindings(ns).Get(t.Context(), member.RoleBindingName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range rb.Subjects {
		out = append(out, credential.SubjectUser(s))
	}
	return out
}

// renew keeps the renewed-away user bound beside the new one for --overlap, says until when, then takes
// it out and says so; the new user alone is bound afterwards. (A token's ServiceAccount, which lives
// through the overlap and goes with it, is proven in test/e2e: a fake issues no token.)
func TestRenewOverlap(t *testing.T) {
	for _, kind := range []string{"certificate"} {
		t.Run(kind, func(t *testing.T) {
			w := cmdtest.NewWorld(t, "edge", "farm")
			if r := w.Run("authenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "farm", "--cluster-id", "edge", "--remote-cluster-id", "farm", "--credential", kind); r.Code != 0 {
				t.Fatalf("authenticate: %s", r)
			}
			ns := member.TenantNamespace("edge")
			old := subjects(t, w, ns)
			if len(old) != 1 {
				t.Fatalf("bound before renew: %v", old)
			}
			// The binding as the overlap ends, read as its end takes the old user out: both are bound then
			// (an event, not a poll: what the renewal leaves bound until it retires).
			var both []string
			w.Cluster("farm").Clientset.PrependReactor("update", "rolebindings", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if a.GetNamespace() == ns && both == nil {
					if cur, err := w.Cluster("farm").Clientset.Tracker().Get(rbacv1.SchemeGroupVersion.WithResource("rolebindings"), ns, member.RoleBindingName); err == nil {
						for _, s := range cur.(*rbacv1.RoleBinding).Subjects {
							both = append(both, credential.SubjectUser(s))
						}
					}
				}
				return false, nil, nil
			})
			r := w.Run("renew", "--kubeconfig", "edge", "--remote-kubeconfig", "farm", "--remote-cluster-id", "farm", "--overlap", "2s")
			if r.Code != 0 {
				t.Fatalf("renew: %s", r)
			}
			if len(both) != 2 || !slices.Contains(both, old[0]) {
				t.Errorf("never bound beside its successor during the overlap: %v (old %s)", both, old[0])
			}
			lines := strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
			if len(lines) != 3 || !strings.HasPrefix(lines[0], "pairing/farm renewed: ") ||
				!regexp.MustCompile(`^pairing/farm previous credential\(s\) `+regexp.QuoteMeta(old[0])+` authorized until \d{4}-\d\d-\d\dT\S+Z \(--overlap 2s\), for clients to read the new ones$`).MatchString(lines[1]) ||
				lines[2] != "pairing/farm previous credential(s) "+old[0]+" refused" {
				t.Errorf("stdout:\n%s", r.Stdout)
			}
			now := subjects(t, w, ns)
			if len(now) != 1 || now[0] == old[0] {
				t.Errorf("bound after the overlap: %v (old %s)", now, old[0])
			}
		})
	}
}

// The end of an overlap takes out exactly the renewed-away user, and never brings back a binding: a
// consumer revoked during the overlap (its bindings deleted) stays without one; a binding whose only
// subject is that user (a failed renewal put it back) is left; done twice is done.
func TestRetire(t *testing.T) {
	w := cmdtest.NewWorld(t, "edge", "farm")
	if r := w.Run("authenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "farm", "--cluster-id", "edge", "--remote-cluster-id", "farm"); r.Code != 0 {
		t.Fatalf("authenticate: %s", r)
	}
	ns := member.TenantNamespace("edge")
	current := subjects(t, w, ns)[0]
	farm := w.Domain("farm")
	rbs := w.Cluster("farm").Clientset.RbacV1().RoleBindings(ns)
	bind := func(users ...string) {
		t.Helper()
		rb, err := rbs.Get(t.Context(), member.RoleBindingName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rb.Subjects = nil
		for _, u := range users {
			rb.Subjects = append(rb.Subjects, credential.SubjectFor(u))
		}
		if _, err := rbs.Update(t.Context(), rb, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	old := handshake.Retiring{ConsumerID: "edge", User: "kubectl-federate:edge:0000000000000000"}
	bind(current, old.User)
	for range 2 {
		if err := handshake.Retire(t.Context(), farm, old); err != nil {
			t.Fatal(err)
		}
		if got := subjects(t, w, ns); !slices.Equal(got, []string{current}) {
			t.Errorf("after Retire: %v, want %s alone", got, current)
		}
	}
	bind(old.User)
	if err := handshake.Retire(t.Context(), farm, old); err != nil || !slices.Equal(subjects(t, w, ns), []string{old.User}) {
		t.Errorf("a binding left with its one subject: %v %v", subjects(t, w, ns), err)
	}
	if err := rbs.Delete(t.Context(), member.RoleBindingName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := handshake.Retire(t.Context(), farm, old); err != nil {
		t.Fatal(err)
	}
	if rb, err := rbs.Get(t.Context(), member.RoleBindingName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Retire made a binding again after a revocation: %v %v", rb, err)
	}
}

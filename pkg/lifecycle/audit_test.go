package lifecycle

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// auditEvent is an audit Event as the API server returns it: stored at created, with resourceVersion rv,
// its own time eventTime (the recording process's estimate of the server's clock).
func auditEvent(name, reason, rv string, created, eventTime time.Time) *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: member.TenantNamespace("edge-1"), ResourceVersion: rv,
			CreationTimestamp: metav1.NewTime(created), Labels: map[string]string{member.LabelManagedBy: member.ManagedBy, member.LabelRemoteClusterID: "edge-1", member.LabelRole: member.RoleProvider}},
		EventTime: metav1.NewMicroTime(eventTime), ReportingController: handshake.ReportingController, Reason: reason, Action: reason,
	}
}

// cordon, uncordon, then drain (which cordons first), three processes within one second, each stamping its
// Event from a Date header: the times disagree with what happened, the order of storage does not.
func TestHistoryIsInStorageOrder(t *testing.T) {
	sec := fakeNow.Truncate(time.Second)
	events := []*eventsv1.Event{
		auditEvent("d", "Drained", "1005", sec, sec.Add(100*time.Millisecond)),
		auditEvent("c2", "Cordoned", "1004", sec, sec.Add(50*time.Millisecond)),
		auditEvent("u", "Uncordoned", "1003", sec, sec.Add(900*time.Millisecond)),
		auditEvent("c1", "Cordoned", "1002", sec, sec.Add(800*time.Millisecond)),
		auditEvent("i", "Issued", "99", sec.Add(-time.Minute), sec.Add(-time.Minute)),
	}
	c := newFakeCluster(t)
	for _, e := range events {
		if err := c.kube.Tracker().Add(e); err != nil {
			t.Fatal(err)
		}
	}
	reasons := func() string {
		h, err := handshake.History(t.Context(), c.Cluster)
		if err != nil {
			t.Fatal(err)
		}
		var r []string
		for _, e := range h {
			r = append(r, e.Reason)
		}
		return strings.Join(r, " ")
	}
	if got, want := reasons(), "Issued Cordoned Uncordoned Cordoned Drained"; got != want {
		t.Errorf("history %s, want %s", got, want)
	}

	// Versions that are not numbers: the server's creation times, then the Events' own.
	c = newFakeCluster(t)
	for _, e := range []*eventsv1.Event{
		auditEvent("b", "Uncordoned", "x2", sec, sec.Add(900*time.Millisecond)),
		auditEvent("a", "Cordoned", "x1", sec, sec.Add(100*time.Millisecond)),
		auditEvent("z", "Issued", "x3", sec.Add(-time.Second), sec.Add(2*time.Second)),
	} {
		if err := c.kube.Tracker().Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := reasons(), "Issued Cordoned Uncordoned"; got != want {
		t.Errorf("history without numbered versions %s, want %s", got, want)
	}
}

// recorded checks that f's audit trail holds exactly want Events of reason whose note contains note.
func recorded(t *testing.T, f *fakeCluster, reason, note string, want int) {
	t.Helper()
	h, err := handshake.History(t.Context(), f.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range h {
		if e.Reason == reason && strings.Contains(e.Note, note) {
			n++
		}
	}
	if n != want {
		t.Errorf("%d %s Events noting %q, want %d; the trail: %+v", n, reason, note, want, h)
	}
}

// ticking makes f's clock advance a millisecond at each reading, as a real one does between two audit
// Events, which are named by their time.
func ticking(f *fakeCluster) {
	var n atomic.Int64
	f.Now = func() time.Time { return fakeNow.Add(time.Duration(n.Add(1)) * time.Millisecond) }
}

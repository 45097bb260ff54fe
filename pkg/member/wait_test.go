package member

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// expiringWatcher answers a watch from an old resourceVersion as an API server whose watch cache no
// longer holds it does (410 Expired), and a watch from the current one with the object's deletion.
type expiringWatcher struct {
	current string // the object's resourceVersion now; "" once it is gone
	watched []string
}

func (w *expiringWatcher) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w.watched = append(w.watched, opts.ResourceVersion)
	if opts.ResourceVersion != w.current {
		return nil, apierrors.NewResourceExpired("too old resource version: " + opts.ResourceVersion)
	}
	fw := watch.NewFake()
	go fw.Delete(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", ResourceVersion: "9"}})
	return fw, nil
}

func (w *expiringWatcher) currentVersion(_ context.Context, name string) (string, error) {
	if w.current == "" {
		return "", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, name)
	}
	return w.current, nil
}

// A namespace unchanged for long has a resourceVersion the watch cache has dropped: the wait for its
// deletion reads its current version and watches from there, or ends if it is gone already.
func TestWaitDeletedFromAnExpiredVersion(t *testing.T) {
	c := &Cluster{}
	w := &expiringWatcher{current: "500"}
	if err := c.WaitDeleted(t.Context(), w, "ns", "3"); err != nil {
		t.Fatalf("waitDeleted from an expired version: %v", err)
	}
	if len(w.watched) != 2 || w.watched[0] != "3" || w.watched[1] != "500" {
		t.Fatalf("watched from %v, want [3 500]", w.watched)
	}
	gone := &expiringWatcher{}
	if err := c.WaitDeleted(t.Context(), gone, "ns", "3"); err != nil {
		t.Fatalf("waitDeleted of an object gone meanwhile: %v", err)
	}
}

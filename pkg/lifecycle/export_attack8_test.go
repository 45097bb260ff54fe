package lifecycle

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/pkg/export"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// storedLate makes the next create of resource in ns fail as the API server's own timeout filter does (a
// 504 "the server was unable to return a response in the time allotted, but may still be processing the
// request"), while the handler goes on: the object is stored only later, after the client's read-back.
// finish stores it (the handler completing).
func storedLate(tracker clienttesting.ObjectTracker, prepend func(string, string, clienttesting.ReactionFunc), resource, ns string) (finish func() error) {
	armed := true
	var pending runtime.Object
	var gvr schema.GroupVersionResource
	prepend("create", resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		if !armed || a.GetNamespace() != ns {
			return false, nil, nil
		}
		armed = false
		pending, gvr = a.(clienttesting.CreateAction).GetObject().DeepCopyObject(), a.GetResource()
		m, _ := meta.Accessor(pending)
		m.SetUID(types.UID("stored-after-the-504"))
		return true, nil, apierrors.NewServerTimeout(gvr.GroupResource(), "create", 0)
	})
	return func() error { return tracker.Create(gvr, pending, ns) }
}

// Attack (one fault: the API server times out a Secret create, 504, and stores it a moment after
// createdAnyway's read-back): createdAnyway finds nothing, so the undo deletes the new record. The
// credential then lands in argocd with no record: status does not list it, unauthenticate leaves it, and
// the re-run refuses it as "not written by an export".
func TestASecretStoredAfterA504LeavesNoUnrecordedCredential(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "argocd")
	finish := storedLate(consumer.kube.Tracker(), consumer.kube.PrependReactor, "secrets", "argocd")
	_, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"})
	t.Logf("the export (Secret create: 504): %v", err)
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	_, rec := consumer.kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, handshake.ExportRecordName("argocd", "provider"), metav1.GetOptions{})
	t.Logf("record after the undo: %v", rec)
	_, rerr := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"})
	t.Logf("the re-run: %v", rerr)
	st, _ := handshake.Exports(ctx, consumer.Cluster)
	t.Logf("status lists %d exports", len(st))
	if _, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Fatal(err)
	}
	if s, err := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{}); err == nil {
		t.Errorf("argocd/provider (%d bytes of config, key included), written by the admin's export, survives unauthenticate with no record; the re-run said: %v", len(s.Data["config"]), rerr)
	}
}

// The same for the Admiralty Target of a fresh export: the undo deletes the Secret and the record, and
// the Target stored late stays, reading tools/provider-kubeconfig, which whoever may create Secrets in
// tools then fills with a kubeconfig of theirs; every re-run refuses the Target.
func TestATargetStoredAfterA504LeavesNoUnrecordedTarget(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "tools")
	serveTargets(consumer)
	finish := storedLate(consumer.dyn.Tracker(), consumer.dyn.PrependReactor, "targets", "tools")
	_, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatAdmiralty, ProviderID: "provider", Namespace: "tools"})
	t.Logf("the export (Target create: 504): %v", err)
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	_, rerr := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatAdmiralty, ProviderID: "provider", Namespace: "tools"})
	t.Logf("the re-run: %v", rerr)
	if _, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Fatal(err)
	}
	if tg, err := consumer.dyn.Resource(export.TargetGVR).Namespace("tools").Get(ctx, "provider", metav1.GetOptions{}); err == nil {
		t.Errorf("Target tools/provider (spec %v), created by the admin's export, survives unauthenticate with no record; the re-run said: %v", tg.Object["spec"], rerr)
	}
}

// The re-run of a recorded Admiralty export whose Target is gone: the Secret is pinned, the Target's
// create gets a 504 and is stored late. The undo rewrites the record from u.spec, which names no Target:
// the record forgets the Target name, so unauthenticate deletes the Secret and the record and leaves the
// Target, and every re-run refuses it.
func TestARerunTargetStoredAfterA504IsNotForgotten(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "tools")
	serveTargets(consumer)
	o := handshake.ExportOptions{Format: export.FormatAdmiralty, ProviderID: "provider", Namespace: "tools"}
	if _, err := handshake.Export(ctx, consumer.Cluster, o); err != nil {
		t.Fatal(err)
	}
	if err := consumer.dyn.Resource(export.TargetGVR).Namespace("tools").Delete(ctx, "provider", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	finish := storedLate(consumer.dyn.Tracker(), consumer.dyn.PrependReactor, "targets", "tools")
	_, err := handshake.Export(ctx, consumer.Cluster, o)
	t.Logf("the re-run (Target create: 504): %v", err)
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	r, _ := consumer.kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, handshake.ExportRecordName("tools", "provider-kubeconfig"), metav1.GetOptions{})
	t.Logf("record after the undo: %v", r.Annotations)
	_, rerr := handshake.Export(ctx, consumer.Cluster, o)
	t.Logf("the next re-run: %v", rerr)
	if _, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Fatal(err)
	}
	if tg, err := consumer.dyn.Resource(export.TargetGVR).Namespace("tools").Get(ctx, "provider", metav1.GetOptions{}); err == nil {
		t.Errorf("Target tools/provider (spec %v), created by the admin's re-run, survives unauthenticate: its record forgot it; the next re-run said: %v", tg.Object["spec"], rerr)
	}
}

package lifecycle

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/pkg/export"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// lostResponse makes the next create of resource in ns an ambiguous failure: the object is stored (as the
// API server does when the client's deadline, or the connection, goes before the response comes back), and
// the client sees an error.
func lostResponse(tracker clienttesting.ObjectTracker, prepend func(string, string, clienttesting.ReactionFunc), resource, ns string) *bool {
	armed := true
	prepend("create", resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		if !armed || a.GetNamespace() != ns {
			return false, nil, nil
		}
		armed = false
		obj := a.(clienttesting.CreateAction).GetObject()
		m, _ := meta.Accessor(obj)
		m.SetUID(types.UID("stored-but-unanswered"))
		if err := tracker.Create(a.GetResource(), obj, ns); err != nil {
			return true, nil, err
		}
		return true, nil, fmt.Errorf("Post \"https://consumer:6443/api/v1/namespaces/%s/%s\": %w", ns, resource, context.DeadlineExceeded)
	})
	return &armed
}

// A fresh export whose Secret create times out after the API server stored it: the undo has no Secret to
// delete (Create returned none), so it deletes the record it just made. The credential stays in argocd
// with no record: the re-run refuses it as a stranger, status does not list it, unauthenticate leaves it.
func TestAnAmbiguousSecretCreateLeavesNoUnrecordedCredential(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "argocd")
	lostResponse(consumer.kube.Tracker(), consumer.kube.PrependReactor, "secrets", "argocd")
	_, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"})
	t.Logf("the export (create's response lost): %v", err)
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

// The same for the Admiralty Target: its create times out after the API server stored it. The undo
// deletes the Secret and the record and leaves the Target, still reading tools/provider-kubeconfig: whoever
// may create Secrets in tools then points Admiralty at a cluster of theirs; and every re-run of the export
// refuses the Target as "not written by an export".
func TestAnAmbiguousTargetCreateLeavesNoUnrecordedTarget(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "tools")
	serveTargets(consumer)
	lostResponse(consumer.dyn.Tracker(), consumer.dyn.PrependReactor, "targets", "tools")
	_, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatAdmiralty, ProviderID: "provider", Namespace: "tools"})
	t.Logf("the export (Target create's response lost): %v", err)
	_, rerr := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatAdmiralty, ProviderID: "provider", Namespace: "tools"})
	t.Logf("the re-run: %v", rerr)
	if _, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Fatal(err)
	}
	if tg, err := consumer.dyn.Resource(export.TargetGVR).Namespace("tools").Get(ctx, "provider", metav1.GetOptions{}); err == nil {
		spec, _ := tg.Object["spec"].(map[string]any)
		t.Errorf("Target tools/provider (spec %v), created by the admin's export, survives unauthenticate with no record; the re-run said: %v", spec, rerr)
	}
	_ = apierrors.IsNotFound
}

package lifecycle

import (
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/pkg/export"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Attack: a re-run whose recorded Secret is gone (deleted by hand, or by an argocd user) writes the
// record pending under a fresh claim and creates the Secret with it: the claim is now published to
// whoever reads argocd (Argo CD's own cache, any watcher). When completing the record then fails once (a
// Conflict, a timeout), the undo deletes the Secret it created, but the record is not this run's
// (deleteRecord false) and names nothing left (no UID), so undo writes nothing: the record stays pending
// with the published claim. An argocd user who saw it plants a lookalike with that claim, and the next
// renew writes the new credential into it; status lists it as the export, unauthenticate deletes it.
func TestAFailedRerunLeavesNoPublishedClaimLive(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "argocd")
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"}); err != nil {
		t.Fatal(err)
	}
	// The export Secret goes (an argocd user, or the admin tidying up).
	if err := consumer.kube.CoreV1().Secrets("argocd").Delete(ctx, "provider", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A watcher of argocd (any user who may list/watch Secrets there) sees the re-run's create.
	seen := ""
	consumer.kube.PrependReactor("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "argocd" {
			m, _ := a.(clienttesting.CreateAction).GetObject().(metav1.Object)
			seen = m.GetAnnotations()[handshake.AnnExportClaim]
		}
		return false, nil, nil
	})
	n, during := 0, true
	consumer.kube.PrependReactor("update", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if during && a.GetNamespace() == member.SystemNamespace {
			n++
			if n == 2 { // the record's completion
				return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, "export", nil)
			}
		}
		return false, nil, nil
	})
	_, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"})
	during = false
	t.Logf("the re-run (record completion fails once): %v", err)
	r, _ := consumer.kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, handshake.ExportRecordName("argocd", "provider"), metav1.GetOptions{})
	t.Logf("claim seen on argocd/provider: %q; record after the undo: %v", seen, r.Annotations)
	if _, err := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the undo left the Secret: %v", err)
	}
	// The watcher plants a lookalike with the claim it saw.
	l := lookalike("argocd", "provider", time.Now())
	l.Annotations[handshake.AnnExportClaim] = seen
	if _, err := consumer.kube.CoreV1().Secrets("argocd").Create(ctx, l, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	st, _ := handshake.Exports(ctx, consumer.Cluster)
	t.Logf("status lists: %+v", st)
	if _, err := Renew(ctx, consumer.Cluster, provider.Cluster, RenewOptions{}); err != nil {
		t.Fatal(err)
	}
	s, _ := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{})
	if len(s.Data["config"]) > 0 {
		t.Errorf("renew wrote the provider's credential (%d bytes of config, key included) into the argocd user's lookalike (data %q kept beside it)", len(s.Data["config"]), s.Data["mine"])
	}
}

// The same through partial rights, with no transient fault at all: an admin who may create Secrets in
// tools but not Targets (Admiralty's CRD is served; RBAC grants get but not create) re-runs an Admiralty
// export whose Secret and Target are gone. The Secret is created under the fresh claim, the Target's
// create is Forbidden, the undo deletes the Secret and leaves the record pending with that claim.
func TestAForbiddenTargetLeavesNoPublishedClaimLive(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "tools")
	serveTargets(consumer)
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatAdmiralty, ProviderID: "provider", Namespace: "tools"}); err != nil {
		t.Fatal(err)
	}
	if err := consumer.kube.CoreV1().Secrets("tools").Delete(ctx, "provider-kubeconfig", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := consumer.dyn.Resource(export.TargetGVR).Namespace("tools").Delete(ctx, "provider", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	seen := ""
	consumer.kube.PrependReactor("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "tools" {
			m, _ := a.(clienttesting.CreateAction).GetObject().(metav1.Object)
			seen = m.GetAnnotations()[handshake.AnnExportClaim]
		}
		return false, nil, nil
	})
	consumer.dyn.PrependReactor("create", "targets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: export.TargetGVR.Group, Resource: "targets"}, "provider", nil)
	})
	_, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatAdmiralty, ProviderID: "provider", Namespace: "tools"})
	t.Logf("the re-run (Target create forbidden): %v", err)
	l := lookalike("tools", "provider-kubeconfig", time.Now())
	l.Labels[export.LabelFormat] = export.FormatAdmiralty
	l.Annotations[handshake.AnnExportClaim] = seen
	if _, err := consumer.kube.CoreV1().Secrets("tools").Create(ctx, l, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Renew(ctx, consumer.Cluster, provider.Cluster, RenewOptions{}); err != nil {
		t.Fatal(err)
	}
	s, _ := consumer.kube.CoreV1().Secrets("tools").Get(ctx, "provider-kubeconfig", metav1.GetOptions{})
	if len(s.Data["config"]) > 0 {
		t.Errorf("renew wrote the provider's credential (%d bytes of config) into a tools user's lookalike carrying the claim the failed re-run published", len(s.Data["config"]))
	}
}

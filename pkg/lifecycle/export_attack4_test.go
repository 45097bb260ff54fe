package lifecycle

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/pkg/export"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Each test below is an attack a review found against an earlier version of the export records: its
// comment says how the attack worked then; the test proves that it no longer does.

// Attack: `delete resourceslice` run by a consumer operator (no Secrets outside
// federate-system) skips the slice's export it cannot read, with a warning, and keeps its record "so that
// a re-run finds the export"; but it deletes the ResourceSlice record, which is all HasSliceRecord (the
// CLI's findSide / both) looks at: the admin's re-run says "already deleted" and never calls
// DeleteSliceLocal. The slice's kubeconfig (private key included) stays in argocd, and status lists it.
func TestAHiddenSliceExportIsFoundByTheRerun(t *testing.T) {
	ctx := t.Context()
	consumer, provider := pairedFakes(t)
	via, err := handshake.ViaPairing(ctx, consumer.Cluster, "provider")
	if err != nil {
		t.Fatal(err)
	}
	if err := grants.SubmitSlice(ctx, consumer.Cluster, via, requestSlice(t, consumer, "batch", "", map[string]string{"cpu": "1", "memory": "1Gi"})); err != nil {
		t.Fatal(err)
	}
	if _, err := grants.AcceptSlice(ctx, provider.Cluster, grants.AcceptSliceOptions{ConsumerID: "consumer", Name: "batch", Expiration: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := grants.ImportSlice(ctx, consumer.Cluster, grants.ImportSliceOptions{ProviderID: "provider", Name: "batch", Provider: via}); err != nil {
		t.Fatal(err)
	}
	makeNamespaces(t, consumer, "argocd")
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Slice: "batch", Namespace: "argocd"}); err != nil {
		t.Fatal(err)
	}
	operator := true
	consumer.kube.PrependReactor("*", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if operator && a.GetNamespace() != member.SystemNamespace && a.GetNamespace() != "" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", nil)
		}
		return false, nil, nil
	})
	err = grants.DeleteSliceLocal(ctx, consumer.Cluster, "provider", "batch", nil)
	t.Logf("the operator's delete resourceslice: %v", err)
	operator = false
	// The admin re-runs it: the CLI (deletecmd findSide / both) asks HasSliceRecord whether there is
	// anything to delete; false ends in SliceGone ("already deleted").
	held, err := grants.HasSliceRecord(ctx, consumer.Cluster, "provider", "batch")
	if err != nil {
		t.Fatal(err)
	}
	outcome, gerr := grants.SliceGone(ctx, consumer.Cluster, "provider", "batch")
	t.Logf("HasSliceRecord=%v; SliceGone=%v %v", held, outcome, gerr)
	if !held {
		if s, err := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider-batch", metav1.GetOptions{}); err == nil {
			st, _ := handshake.Exports(ctx, consumer.Cluster)
			t.Errorf("the admin's re-run of delete resourceslice finds nothing to delete (\"already deleted\"), yet argocd/%s (%d bytes of config, key included) survives; status lists %+v",
				s.Name, len(s.Data["config"]), st)
		}
	}
}

// Attack: a pending record (a run cut off after writing the Secret, before completing the
// record: here made by dropping the UID, which is exactly the state such a run leaves) owns its Secret by
// claim. The re-run's claimExport rotates the claim in the record *before* rewriting the Secret; when that
// rewrite fails (a Conflict with Argo CD touching the Secret, a webhook, a timeout), the undo keeps the
// record with the new claim, which the Secret does not carry. The admin's own export is now a stranger:
// the next export refuses it ("was not written by an export"), and unauthenticate deletes the record and
// leaves the credential in argocd.
func TestAPendingRerunThatFailsKeepsItsSecret(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "argocd")
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"}); err != nil {
		t.Fatal(err)
	}
	// The state a run cut off between the Secret's create and the record's completion leaves.
	recs := consumer.kube.CoreV1().Secrets(member.SystemNamespace)
	r, err := recs.Get(ctx, handshake.ExportRecordName("argocd", "provider"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(r.Annotations, handshake.AnnExportSecretUID)
	if _, err := recs.Update(ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The re-run: the Secret's update fails once.
	failing := true
	consumer.kube.PrependReactor("update", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if failing && a.GetNamespace() == "argocd" {
			failing = false
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, "provider", nil)
		}
		return false, nil, nil
	})
	_, err = handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"})
	t.Logf("the re-run (Secret update fails once): %v", err)
	_, err = handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"})
	t.Logf("the next re-run: %v", err)
	if err != nil {
		t.Errorf("the admin's own export is refused as a stranger after one failed re-run: %v", err)
	}
	if _, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Fatal(err)
	}
	if s, err := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{}); err == nil {
		t.Errorf("argocd/provider (%d bytes of config, key included), the admin's export, survives unauthenticate", len(s.Data["config"]))
	}
}

// Attack: an Admiralty re-run whose Target was deleted (by a tools user, or Admiralty's
// uninstall-reinstall) creates the Target; if completing the record then fails and so does deleting the new
// Target, the undo rewrites the record from u.spec, which has no Secret UID for an existing Secret: the
// record forgets the Secret it had recorded (and its claim is fresh). Unauthenticate then deletes the
// Target and the record and leaves the credential in tools/provider-kubeconfig; the next export refuses it.
func TestAnUndoKeepsTheExistingSecretsUID(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "tools")
	serveTargets(consumer)
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatAdmiralty, ProviderID: "provider", Namespace: "tools"}); err != nil {
		t.Fatal(err)
	}
	if err := consumer.dyn.Resource(export.TargetGVR).Namespace("tools").Delete(ctx, "provider", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	failUpdate, failDelete := true, true
	consumer.kube.PrependReactor("update", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if failUpdate && a.GetNamespace() == member.SystemNamespace {
			failUpdate = false
			return true, nil, apierrors.NewServerTimeout(schema.GroupResource{Resource: "secrets"}, "update", 1)
		}
		return false, nil, nil
	})
	consumer.dyn.PrependReactor("delete", "targets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if failDelete {
			return true, nil, apierrors.NewServerTimeout(schema.GroupResource{Resource: "targets"}, "delete", 1)
		}
		return false, nil, nil
	})
	_, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatAdmiralty, ProviderID: "provider", Namespace: "tools"})
	failDelete = false
	t.Logf("the re-run: %v", err)
	r, _ := consumer.kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, handshake.ExportRecordName("tools", "provider-kubeconfig"), metav1.GetOptions{})
	sec, _ := consumer.kube.CoreV1().Secrets("tools").Get(ctx, "provider-kubeconfig", metav1.GetOptions{})
	t.Logf("record after the undo: %v; Secret UID %s", r.Annotations, sec.UID)
	if _, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Fatal(err)
	}
	if s, err := consumer.kube.CoreV1().Secrets("tools").Get(ctx, "provider-kubeconfig", metav1.GetOptions{}); err == nil {
		t.Errorf("tools/provider-kubeconfig (%d bytes of config, key included), recorded before the failed re-run, survives unauthenticate", len(s.Data["config"]))
	}
}

var _ = corev1.Secret{}

// Attack: the same pending re-run, when the Secret's rewrite succeeds (the new claim is now
// published on it, to whoever reads argocd) and completing the record fails, keeps the record pending with
// that published claim: once the Secret is deleted by hand, an argocd user who read it plants a lookalike
// with that claim, and the next renew writes the new credential into it (TestAClaimNeverOwnsTwice again).
func TestAPendingRerunPublishesNoLiveClaim(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "argocd")
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"}); err != nil {
		t.Fatal(err)
	}
	recs := consumer.kube.CoreV1().Secrets(member.SystemNamespace)
	r, err := recs.Get(ctx, handshake.ExportRecordName("argocd", "provider"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(r.Annotations, handshake.AnnExportSecretUID) // the state a cut-off run leaves
	if _, err := recs.Update(ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n, during := 0, true
	consumer.kube.PrependReactor("update", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if during && a.GetNamespace() == member.SystemNamespace {
			n++
			if n == 2 { // the record's completion
				return true, nil, apierrors.NewServerTimeout(schema.GroupResource{Resource: "secrets"}, "update", 1)
			}
		}
		return false, nil, nil
	})
	_, err = handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"})
	during = false
	t.Logf("the re-run (record completion fails): %v", err)
	pub, _ := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{})
	claim := pub.Annotations[handshake.AnnExportClaim]
	r, _ = recs.Get(ctx, handshake.ExportRecordName("argocd", "provider"), metav1.GetOptions{})
	t.Logf("claim on argocd/provider %s; record %v", claim, r.Annotations)
	if err := consumer.kube.CoreV1().Secrets("argocd").Delete(ctx, "provider", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	l := lookalike("argocd", "provider", time.Now())
	l.Annotations[handshake.AnnExportClaim] = claim
	if err := consumer.kube.Tracker().Create(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, withUID(l), "argocd"); err != nil {
		t.Fatal(err)
	}
	if _, err := Renew(ctx, consumer.Cluster, provider.Cluster, RenewOptions{}); err != nil {
		t.Fatal(err)
	}
	s, _ := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{})
	if len(s.Data["config"]) > 0 {
		t.Errorf("renew wrote the provider's credential (%d bytes of config, key included) into the argocd user's own Secret (UID %s)", len(s.Data["config"]), s.UID)
	}
}

// A recorded export whose labels someone changed (its UID still the recorded one) is neither rewritten nor
// deleted, and its record is kept: unauthenticate warns instead of forgetting the credential in it.
func TestARelabelledExportKeepsItsRecord(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "argocd")
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"}); err != nil {
		t.Fatal(err)
	}
	sec, err := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Labels[member.LabelRemoteClusterID] = "elsewhere"
	if _, err := consumer.kube.CoreV1().Secrets("argocd").Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{}); err != nil {
		t.Errorf("unauthenticate deleted a relabelled export: %v", err)
	}
	if _, err := consumer.kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, handshake.ExportRecordName("argocd", "provider"), metav1.GetOptions{}); err != nil {
		t.Errorf("unauthenticate forgot the record of a relabelled export (the credential in it is then nobody's): %v", err)
	}
}

package lifecycle

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/pkg/export"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Each test below is an attack a review found against an earlier version of the export records: its
// comment says how the attack worked then; the test proves that it no longer does.

// Attack: The claim is public (an annotation on the export's Secret and Target, readable by
// whoever reads them) and a record keeps it for ever: recordExport reuses have.claim even when the record
// is rewritten for another credential (claimExport, !same), which drops the UIDs and makes the record
// pending again. A re-export that then fails (quota, webhook, a raced create) leaves that record pending
// (created is false: the undo keeps it), so the old, published claim owns any Secret of that name: an
// argocd user who read it once plants a lookalike, and the next renew (and re-export) fills it with the
// new credential.
func TestAClaimNeverOwnsTwice(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	other := newFakeCluster(t)
	if _, err := Authenticate(ctx, consumer.Cluster, other.Cluster, AuthenticateOptions{ConsumerID: "consumer", ProviderID: "other",
		APIServer: "https://other.example:6443", Expiration: time.Hour}); err != nil {
		t.Fatal(err)
	}
	makeNamespaces(t, consumer, "argocd")
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "other", Name: "prod", Namespace: "argocd"}); err != nil {
		t.Fatal(err)
	}
	// An argocd user reads other's export (as Argo CD's users may) and notes its claim; later that Secret is
	// deleted (by hand: there is no "unexport"); its record stays.
	old, err := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "prod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim := old.Annotations[handshake.AnnExportClaim]
	t.Logf("claim published on argocd/prod: %q", claim)
	if err := consumer.kube.CoreV1().Secrets("argocd").Delete(ctx, "prod", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The admin now exports "provider" as prod; the Secret's create fails once (a quota, a webhook).
	failing := true
	consumer.kube.PrependReactor("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if failing && a.GetNamespace() == "argocd" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "prod", nil)
		}
		return false, nil, nil
	})
	_, err = handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Name: "prod", Namespace: "argocd"})
	failing = false
	t.Logf("the admin's export of provider as prod: %v", err)
	rec, _ := consumer.kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, handshake.ExportRecordName("argocd", "prod"), metav1.GetOptions{})
	if rec != nil {
		t.Logf("record left behind: %v", rec.Annotations)
	}
	// The argocd user plants a lookalike carrying the old claim and provider's (public) labels.
	l := lookalike("argocd", "prod", time.Now())
	l.Annotations = maps.Clone(l.Annotations)
	l.Annotations[handshake.AnnExportClaim] = claim
	if err := consumer.kube.Tracker().Create(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, withUID(l), "argocd"); err != nil {
		t.Fatal(err)
	}
	// The admin's cron renews provider.
	if _, err := Renew(ctx, consumer.Cluster, provider.Cluster, RenewOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "prod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Data["config"]) > 0 {
		t.Errorf("renew wrote provider's credential (%d bytes of config, key included) into argocd/prod, the argocd user's own Secret (UID %s)", len(s.Data["config"]), s.UID)
	}
	st, _ := handshake.Exports(ctx, consumer.Cluster)
	t.Logf("status lists: %+v", st)
	// And the admin's retry adopts it for good (its UID recorded).
	out, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Name: "prod", Namespace: "argocd"})
	t.Logf("the admin's retry: %+v, %v", out, err)
	rec, _ = consumer.kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, handshake.ExportRecordName("argocd", "prod"), metav1.GetOptions{})
	if rec != nil && rec.Annotations[handshake.AnnExportSecretUID] == "attacker-made" {
		t.Errorf("the retry recorded the argocd user's Secret (UID attacker-made) as the export of provider")
	}
}

// Attack: unauthenticate run by a consumer operator (no Secrets outside federate-system)
// removes the pairing and skips the export it cannot read, with a warning, keeping its record "so that a
// re-run finds the export". But the re-run, by an admin who can, is "already removed": pairingExists ends
// it before deleteExports, so the credential stays in argocd for good, and status lists it as the export
// of a provider this cluster no longer has.
func TestAHiddenExportIsRemovedByTheRerun(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "argocd")
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"}); err != nil {
		t.Fatal(err)
	}
	operator := true
	consumer.kube.PrependReactor("*", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if operator && a.GetNamespace() != member.SystemNamespace && a.GetNamespace() != "" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", nil)
		}
		return false, nil, nil
	})
	outcome, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{})
	t.Logf("the operator's run: outcome %v, %v", outcome, err)
	operator = false // the admin re-runs it, as the warning invites
	outcome, err = Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{})
	t.Logf("the admin's re-run: outcome %v, %v", outcome, err)
	if s, err := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{}); err == nil {
		st, _ := handshake.Exports(ctx, consumer.Cluster)
		t.Errorf("argocd/provider (%d bytes of config, key included) survives unauthenticate and its re-run; status lists %+v", len(s.Data["config"]), st)
	}
}

// Attack: A record's Target is trusted by UID (or claim) and labels alone, not by its name
// matching the record's Secret: a consumer operator (writes federate-system, not tools) edits the record
// of the kubeconfig export "a" to name the Target of the Admiralty export "b" of the same credential
// (UID copied from b's record). The admin's next re-run of `export kubeconfig --name a` deletes b's
// Target, in a namespace the operator cannot write.
func TestAnEditedRecordDeletesNoOtherTarget(t *testing.T) {
	ctx := t.Context()
	consumer, _ := authenticated(t)
	makeNamespaces(t, consumer, "tools")
	serveTargets(consumer)
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatKubeconfig, ProviderID: "provider", Name: "a", Namespace: "tools"}); err != nil {
		t.Fatal(err)
	}
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatAdmiralty, ProviderID: "provider", Name: "b", Namespace: "tools"}); err != nil {
		t.Fatal(err)
	}
	secrets := consumer.kube.CoreV1().Secrets(member.SystemNamespace)
	rb, err := secrets.Get(ctx, handshake.ExportRecordName("tools", "b-kubeconfig"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ra, err := secrets.Get(ctx, handshake.ExportRecordName("tools", "a-kubeconfig"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ra.Annotations[handshake.AnnExportTarget], ra.Annotations[handshake.AnnExportTargetUID] = "b", rb.Annotations[handshake.AnnExportTargetUID]
	if _, err := secrets.Update(ctx, ra, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatKubeconfig, ProviderID: "provider", Name: "a", Namespace: "tools"})
	t.Logf("the admin's re-run of export a: %+v, %v", out, err)
	if _, err := consumer.dyn.Resource(export.TargetGVR).Namespace("tools").Get(ctx, "b", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Errorf("re-running the kubeconfig export a deleted the Admiralty Target tools/b of export b")
	}
}

var _ = corev1.Secret{}

// Attack: undo deletes the record it made even when it could not delete the Secret it wrote:
// a transient failure of the record's completion, then of the Secret's delete, leaves a credential no record
// names (status does not list it, unauthenticate does not delete it), and the re-run says that the
// Secret "was not written by an export".
func TestAnUndoThatCannotDeleteKeepsTheRecord(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "argocd")
	failing := true
	consumer.kube.PrependReactor("update", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if failing && a.GetNamespace() == member.SystemNamespace {
			return true, nil, apierrors.NewServerTimeout(schema.GroupResource{Resource: "secrets"}, "update", 1)
		}
		return false, nil, nil
	})
	consumer.kube.PrependReactor("delete", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if failing && a.GetNamespace() == "argocd" {
			return true, nil, apierrors.NewServerTimeout(schema.GroupResource{Resource: "secrets"}, "delete", 1)
		}
		return false, nil, nil
	})
	_, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"})
	failing = false
	t.Logf("the export: %v", err)
	_, err = handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"})
	t.Logf("its re-run: %v", err)
	if _, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{}); err != nil {
		t.Fatal(err)
	}
	if s, err := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{}); err == nil {
		t.Errorf("argocd/provider (%d bytes of config, key included), written by the failed export, survives unauthenticate: the undo deleted its record", len(s.Data["config"]))
	}
}

package lifecycle

import (
	"strings"
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

func authenticated(t *testing.T) (consumer, provider *fakeCluster) {
	t.Helper()
	consumer, provider = newFakeCluster(t), newFakeCluster(t)
	if _, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, AuthenticateOptions{ConsumerID: "consumer", ProviderID: "provider",
		APIServer: "https://provider.example:6443", Expiration: time.Hour}); err != nil {
		t.Fatal(err)
	}
	return consumer, provider
}

// lookalike is a Secret anyone who may create Secrets in ns can make: the export's labels are public
// (docs, and any other export).
func lookalike(ns, name string, at time.Time) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(at),
		Annotations: map[string]string{export.AnnotationName: name},
		Labels: map[string]string{member.LabelManagedBy: member.ManagedBy, member.LabelRole: member.RoleConsumer, member.LabelRemoteClusterID: "provider",
			export.LabelFormat: export.FormatArgoCD, export.LabelOf: export.OfPairing}},
		Data: map[string][]byte{"mine": []byte("attacker")}}
}

// An export whose Secret cannot be created (no right there, a quota, a webhook) deletes the record it
// made: a Secret of that name with the public export labels, made later by whoever may create Secrets in
// argocd, is nobody's export, and a renewal writes nothing into it.
func TestAFailedExportLeavesNoRecordToAdoptALookalike(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "argocd")
	failing := true
	consumer.kube.PrependReactor("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if failing && a.GetNamespace() == "argocd" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "provider", nil)
		}
		return false, nil, nil
	})
	_, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"})
	t.Logf("the admin's export: %v", err)
	failing = false
	if err == nil {
		t.Fatal("an export whose Secret could not be created succeeded")
	}
	rec := handshake.ExportRecordName("argocd", "provider")
	if _, err := consumer.kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, rec, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("record %s/%s is still there after the failed export: %v", member.SystemNamespace, rec, err)
	}
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	// Days later, a user of argocd (may create Secrets there, may not read federate-system).
	if _, err := consumer.kube.CoreV1().Secrets("argocd").Create(ctx, lookalike("argocd", "provider", t0.Add(48*time.Hour)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The admin renews the pairing (a cron job, say).
	if _, err := Renew(ctx, consumer.Cluster, provider.Cluster, RenewOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Data["config"]) > 0 {
		t.Errorf("renew wrote the provider's credential (%d bytes of config, key data included) into argocd/provider, a Secret the admin never wrote", len(s.Data["config"]))
	}
	st, _ := handshake.Exports(ctx, consumer.Cluster)
	t.Logf("status lists: %+v", st)
}

// A Secret of the export's name made between the export's read and its create (in the same second as the
// record) makes the export fail with AlreadyExists and delete its record; the retry finds a Secret no
// record owns, and refuses it: ownership is by UID or by the record's claim, never by time.
func TestARacedLookalikeIsNotFilledByTheRetry(t *testing.T) {
	ctx := t.Context()
	consumer, _ := authenticated(t)
	makeNamespaces(t, consumer, "argocd")
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	raced := false
	consumer.kube.PrependReactor("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		s := a.(clienttesting.CreateAction).GetObject().(*corev1.Secret)
		if a.GetNamespace() == member.SystemNamespace && strings.HasPrefix(s.Name, "export-") {
			s.CreationTimestamp = metav1.NewTime(t0.Add(300 * time.Millisecond)) // the API server stores seconds
			s.CreationTimestamp = metav1.NewTime(s.CreationTimestamp.Truncate(time.Second))
		}
		if a.GetNamespace() == "argocd" && !raced {
			raced = true
			// The user's create lands first, in the same second as the record, just before it.
			if err := consumer.kube.Tracker().Create(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, withUID(lookalike("argocd", "provider", t0)), "argocd"); err != nil {
				t.Fatal(err)
			}
		}
		return false, nil, nil
	})
	_, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"})
	t.Logf("first export: %v", err)
	out, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"})
	t.Logf("the retry: %+v, %v", out, err)
	s, gerr := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{})
	if gerr != nil {
		t.Fatal(gerr)
	}
	if len(s.Data["config"]) > 0 && s.UID == "attacker-made" {
		t.Errorf("the retried export wrote the credential (%d bytes of config) into the argocd user's own Secret (UID %s), and recorded it as the export", len(s.Data["config"]), s.UID)
	}
}

func withUID(s *corev1.Secret) *corev1.Secret { s.UID = "attacker-made"; return s }

// NAME-kubeconfig is the Secret of both the kubeconfig and the admiralty formats. Turning an Admiralty
// export into a kubeconfig one (its Secret deleted first, as the refusal says) deletes the recorded Target
// first: a record never forgets a Target, and none is left naming a Secret anyone may create.
func TestAnExportWithoutTargetDeletesTheOldTarget(t *testing.T) {
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
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatKubeconfig, ProviderID: "provider", Namespace: "tools"}); err != nil {
		t.Fatal(err)
	}
	r, _ := consumer.kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, handshake.ExportRecordName("tools", "provider-kubeconfig"), metav1.GetOptions{})
	t.Logf("record annotations after the kubeconfig export: %v", r.Annotations)
	if _, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Fatal(err)
	}
	if tg, err := consumer.dyn.Resource(export.TargetGVR).Namespace("tools").Get(ctx, "provider", metav1.GetOptions{}); err == nil {
		spec, _ := tg.Object["spec"].(map[string]any)
		t.Errorf("unauthenticate left the Admiralty Target tools/provider (spec %v) behind: whoever creates Secret tools/provider-kubeconfig now points Admiralty at a cluster of theirs", spec)
	}
}

// An export under the name of another provider's Admiralty export (its Secret gone) is refused while that
// Target is there: it would read this provider's credential; nothing is written.
func TestAnotherProvidersTargetBlocksTheName(t *testing.T) {
	ctx := t.Context()
	consumer, _ := authenticated(t)
	other := newFakeCluster(t)
	if _, err := Authenticate(ctx, consumer.Cluster, other.Cluster, AuthenticateOptions{ConsumerID: "consumer", ProviderID: "other",
		APIServer: "https://other.example:6443", Expiration: time.Hour}); err != nil {
		t.Fatal(err)
	}
	makeNamespaces(t, consumer, "tools")
	serveTargets(consumer)
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatAdmiralty, ProviderID: "other", Namespace: "tools"}); err != nil {
		t.Fatal(err)
	}
	if err := consumer.kube.CoreV1().Secrets("tools").Delete(ctx, "other-kubeconfig", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Refused while other's Target is there: it would read provider's credential.
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatKubeconfig, ProviderID: "provider", Name: "other", Key: "config", Namespace: "tools"}); err == nil ||
		!strings.Contains(err.Error(), `Target tools/other of the export of the pairing with provider "other" still reads the Secret other-kubeconfig`) {
		t.Errorf("an export under the name of another provider's Admiralty export: %v", err)
	}
	if _, err := consumer.kube.CoreV1().Secrets("tools").Get(ctx, "other-kubeconfig", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused export wrote Secret tools/other-kubeconfig: %v", err)
	}
	if _, err := Unauthenticate(ctx, consumer.Cluster, other.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := consumer.dyn.Resource(export.TargetGVR).Namespace("tools").Get(ctx, "other", metav1.GetOptions{}); err == nil {
		s, _ := consumer.kube.CoreV1().Secrets("tools").Get(ctx, "other-kubeconfig", metav1.GetOptions{})
		t.Errorf("other's Admiralty Target tools/other survives unauthenticating other, and its Secret other-kubeconfig now holds %q's kubeconfig under key config (%d bytes)",
			s.Labels[member.LabelRemoteClusterID], len(s.Data["config"]))
	}
}

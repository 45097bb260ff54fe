package lifecycle

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/pkg/export"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/status"
)

func makeNamespaces(t *testing.T, c *fakeCluster, names ...string) {
	t.Helper()
	for _, ns := range names {
		if _, err := c.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// a consumer operator (docs/rbac/consumer-operator.yaml: Secrets in federate-system only) forges
// an export record pointing at another provider's export, copying the UID from the genuine record. The
// admin's next renewal of provider "other" then writes other's credential into argocd/provider (Argo CD
// now deploys "provider"'s apps to "other"), and unauthenticate of "other" deletes argocd/provider.
func TestAForgedRecordRedirectsNothing(t *testing.T) {
	ctx := t.Context()
	consumer, provider, other := newFakeCluster(t), newFakeCluster(t), newFakeCluster(t)
	if _, err := Authenticate(ctx, consumer.Cluster, provider.Cluster, AuthenticateOptions{ConsumerID: "consumer", ProviderID: "provider",
		APIServer: "https://provider.example:6443", Expiration: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := Authenticate(ctx, consumer.Cluster, other.Cluster, AuthenticateOptions{ConsumerID: "consumer", ProviderID: "other",
		APIServer: "https://other.example:6443", Expiration: time.Hour}); err != nil {
		t.Fatal(err)
	}
	makeNamespaces(t, consumer, "argocd")
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"}); err != nil {
		t.Fatal(err)
	}
	// The operator: reads the genuine record (federate-system, readable) and writes a second one, for "other".
	genuine, err := consumer.kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, handshake.ExportRecordName("argocd", "provider"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	forged := &corev1.Secret{Type: genuine.Type, ObjectMeta: metav1.ObjectMeta{Name: "export-forged", Namespace: member.SystemNamespace,
		Labels: maps.Clone(genuine.Labels), Annotations: maps.Clone(genuine.Annotations)}}
	forged.Labels[handshake.LabelExportRecordOf] = "other"
	if _, err := consumer.kube.CoreV1().Secrets(member.SystemNamespace).Create(ctx, forged, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The admin renews "other".
	if _, err := Renew(ctx, consumer.Cluster, other.Cluster, RenewOptions{}); err != nil {
		t.Fatal(err)
	}
	sec, err := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("argocd/provider after renewing \"other\": name=%s server=%s", sec.Data["name"], sec.Data["server"])
	if string(sec.Data["server"]) != "https://provider.example:6443" {
		t.Errorf("renewing provider \"other\" rewrote argocd/provider (the export of \"provider\") with other's credential: server=%s", sec.Data["server"])
	}
	// The admin unauthenticates "other".
	if _, err := Unauthenticate(ctx, consumer.Cluster, other.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Errorf("unauthenticating \"other\" deleted argocd/provider, the export of \"provider\"")
	}
}

// the consumer operator may not read Secrets outside federate-system. Before the commit the
// export listing fell back to federate-system on Forbidden; now one export elsewhere makes status fail.
func TestAnExportTheUserCannotSeeIsSkipped(t *testing.T) {
	ctx := t.Context()
	consumer, _ := authenticated(t)
	makeNamespaces(t, consumer, "argocd")
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"}); err != nil {
		t.Fatal(err)
	}
	// From now on the caller is the consumer operator: no Secret outside federate-system.
	consumer.kube.PrependReactor("*", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() != member.SystemNamespace {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", nil)
		}
		return false, nil, nil
	})
	if _, err := status.Status(ctx, consumer.Cluster, false); err != nil {
		t.Errorf("status as the consumer operator fails because of an export it cannot read: %v", err)
	}
	if err := RemoveIdentity(ctx, consumer.Cluster, "provider"); err != nil {
		t.Errorf("the consumer half of unauthenticate as the consumer operator fails: %v", err)
	}
}

func serveTargets(c *fakeCluster) {
	d := c.kube.Discovery().(*fakediscovery.FakeDiscovery)
	d.Resources = append(d.Resources, &metav1.APIResourceList{GroupVersion: export.TargetGVR.GroupVersion().String(),
		APIResources: []metav1.APIResource{{Name: export.TargetGVR.Resource, Namespaced: true, Kind: export.TargetKind}}})
}

// the record does not name the Admiralty Target; deleteExports finds it through the Secret's
// annotation. Once the export Secret is gone (deleted by anyone who may delete Secrets there), unauthenticate
// deletes the record and leaves the recorded Target behind for good, still naming the Secret
// provider-kubeconfig: whoever then creates a Secret of that name points Admiralty at a cluster of theirs.
func TestTheRecordedTargetGoesWithoutItsSecret(t *testing.T) {
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
	if _, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Fatal(err)
	}
	l, _ := consumer.kube.CoreV1().Secrets(member.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: handshake.LabelExportRecordOf})
	tg, err := consumer.dyn.Resource(export.TargetGVR).Namespace("tools").Get(ctx, "provider", metav1.GetOptions{})
	if err == nil {
		spec, _ := tg.Object["spec"].(map[string]any)
		t.Logf("records left: %d; Target tools/provider still there, spec %v", len(l.Items), spec)
		t.Errorf("unauthenticate left the recorded Admiralty Target tools/provider behind, and deleted its record")
	}
}

// the credential is written before the export is recorded. When recording fails and the undo
// cannot delete (or the process dies in between), the credential stays in a Secret no later command
// knows: unauthenticate neither deletes it nor does status list it, and a re-export refuses its name.
func TestNoCredentialIsWrittenUnrecorded(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "argocd")
	failing := true
	consumer.kube.PrependReactor("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		s := a.(clienttesting.CreateAction).GetObject().(*corev1.Secret)
		if failing && a.GetNamespace() == member.SystemNamespace && strings.HasPrefix(s.Name, "export-") {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, s.Name, nil)
		}
		return false, nil, nil
	})
	consumer.kube.PrependReactor("delete", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if failing && a.GetNamespace() == "argocd" {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", nil)
		}
		return false, nil, nil
	})
	_, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"})
	t.Logf("export: %v", err)
	failing = false
	if _, err := Unauthenticate(context.WithoutCancel(ctx), consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Fatal(err)
	}
	if s, err := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{}); err == nil {
		t.Errorf("a credential Secret argocd/provider (%d bytes of config) survives the failed export and unauthenticate: no record names it", len(s.Data["config"]))
	}
}

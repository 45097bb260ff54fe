package lifecycle

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/pkg/export"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// dropAfter cuts the connection to the consumer's API server (every later request fails, as when the
// admin's laptop loses the VPN or kubectl is killed) right after the first create of resource in ns
// succeeds; restore brings it back.
func dropAfter(c *fakeCluster, resource, ns string) (restore func()) {
	down, armed := false, true
	fail := func(a clienttesting.Action) (bool, runtime.Object, error) {
		if down {
			return true, nil, errors.New("dial tcp consumer:6443: connect: connection refused")
		}
		return false, nil, nil
	}
	c.kube.PrependReactor("*", "*", fail)
	c.dyn.PrependReactor("*", "*", fail)
	created := func(a clienttesting.Action) (bool, runtime.Object, error) {
		if armed && a.GetNamespace() == ns {
			armed = false
			obj := a.(clienttesting.CreateAction).GetObject()
			if err := c.Server.Clientset.Tracker().Create(a.GetResource(), obj, ns); err != nil && resource == "secrets" {
				return true, nil, err
			}
			down = true
			return true, obj, nil
		}
		return false, nil, nil
	}
	if resource == "secrets" {
		c.kube.PrependReactor("create", resource, created)
	} else {
		c.dyn.PrependReactor("create", resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
			if armed && a.GetNamespace() == ns {
				armed = false
				obj := a.(clienttesting.CreateAction).GetObject()
				if err := c.dyn.Tracker().Create(a.GetResource(), obj, ns); err != nil {
					return true, nil, err
				}
				down = true
				return true, obj, nil
			}
			return false, nil, nil
		})
	}
	return func() { down = false }
}

// Attack: one fault, the connection dropping right after the export Secret's create (nothing after it,
// the undo included, reaches the API server), leaves the record pending with the claim that the Secret
// now carries in argocd, for every reader of argocd to see (TestAFailedRerunLeavesNoPublishedClaimLive's
// watcher). Once that Secret goes (the admin tidying up after the failed export, or an argocd user), the
// watcher plants a lookalike carrying the claim: the pending record owns it, status lists it, the next
// renew writes the new credential into it, and the admin's re-run adopts it (pins its UID).
func TestADroppedConnectionLeavesNoPublishedClaimLive(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "argocd")
	restore := dropAfter(consumer, "secrets", "argocd")
	seen := ""
	consumer.kube.PrependReactor("create", "secrets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == "argocd" {
			m, _ := a.(clienttesting.CreateAction).GetObject().(metav1.Object)
			seen = m.GetAnnotations()[handshake.AnnExportClaim]
		}
		return false, nil, nil
	})
	_, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"})
	restore()
	t.Logf("the export (connection drops after the Secret's create): %v", err)
	r, _ := consumer.kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, handshake.ExportRecordName("argocd", "provider"), metav1.GetOptions{})
	t.Logf("claim seen on argocd/provider: %q; record left: %v", seen, r.Annotations)
	// The half-written Secret goes (the admin tidying up, or an argocd user who may delete Secrets).
	if err := consumer.kube.CoreV1().Secrets("argocd").Delete(ctx, "provider", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	l := lookalike("argocd", "provider", time.Now())
	l.Annotations[handshake.AnnExportClaim] = seen
	planted, err := consumer.kube.CoreV1().Secrets("argocd").Create(ctx, l, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := handshake.Exports(ctx, consumer.Cluster)
	t.Logf("status lists: %+v", st)
	if _, err := Renew(ctx, consumer.Cluster, provider.Cluster, RenewOptions{}); err != nil {
		t.Fatal(err)
	}
	s, _ := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{})
	if s.UID == planted.UID && len(s.Data["config"]) > 0 {
		t.Errorf("renew wrote the provider's credential (%d bytes of config) into the argocd user's lookalike %s", len(s.Data["config"]), s.UID)
	}
	_, err = handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"})
	r, _ = consumer.kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, handshake.ExportRecordName("argocd", "provider"), metav1.GetOptions{})
	if err == nil && r.Annotations[handshake.AnnExportSecretUID] == string(planted.UID) {
		t.Errorf("the admin's re-run adopted the lookalike: its record now pins %s", planted.UID)
	}
}

// The same for Admiralty, where the claim is published on the Target to whoever may read Targets in
// tools (no right on Secrets there is needed to learn it): the connection drops right after the Target's
// create. The lookalike Secret (made by one who may create and delete Secrets in tools but not read them)
// is adopted by the admin's re-run and filled with the credential.
func TestADroppedConnectionAfterTheTargetLeavesNoLiveClaim(t *testing.T) {
	ctx := t.Context()
	consumer, _ := authenticated(t)
	makeNamespaces(t, consumer, "tools")
	serveTargets(consumer)
	restore := dropAfter(consumer, "targets", "tools")
	_, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatAdmiralty, ProviderID: "provider", Namespace: "tools"})
	restore()
	t.Logf("the export (connection drops after the Target's create): %v", err)
	tg, err := consumer.dyn.Resource(export.TargetGVR).Namespace("tools").Get(ctx, "provider", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := tg.GetAnnotations()[handshake.AnnExportClaim]
	t.Logf("claim read from Target tools/provider: %q", seen)
	if err := consumer.kube.CoreV1().Secrets("tools").Delete(ctx, "provider-kubeconfig", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	l := lookalike("tools", "provider-kubeconfig", time.Now())
	l.Labels[export.LabelFormat] = export.FormatAdmiralty
	l.Annotations[handshake.AnnExportClaim] = seen
	planted, err := consumer.kube.CoreV1().Secrets("tools").Create(ctx, l, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatAdmiralty, ProviderID: "provider", Namespace: "tools"})
	t.Logf("the admin's re-run: %v", err)
	s, _ := consumer.kube.CoreV1().Secrets("tools").Get(ctx, "provider-kubeconfig", metav1.GetOptions{})
	if s.UID == planted.UID && len(s.Data["config"]) > 0 {
		t.Errorf("the re-run wrote the credential (%d bytes of config) into a Secret it did not create (%s), and recorded it", len(s.Data["config"]), s.UID)
	}
}

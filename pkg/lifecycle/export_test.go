package lifecycle

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/export"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/status"
)

// An export is written only into a namespace that exists, never over an object it did not make nor over
// another export; a re-run changes nothing; a renewal rewrites every export with the new credential, and
// unauthenticate deletes them, leaving what is not ours.
func TestExportLifecycleOnFakes(t *testing.T) {
	ctx := t.Context()
	consumer, provider := newFakeCluster(t), newFakeCluster(t)
	auth := AuthenticateOptions{ConsumerID: "consumer", ProviderID: "provider", APIServer: "https://provider.example:6443", Expiration: time.Hour}
	if _, err := Authenticate(ctx, consumer.Cluster, provider.Cluster, auth); err != nil {
		t.Fatal(err)
	}
	secrets := func(ns string) map[string]string {
		l, err := consumer.kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, s := range l.Items {
			out[s.Name] = s.ResourceVersion + " " + string(s.Data["x"])
		}
		return out
	}
	var nf *handshake.NamespaceNotFoundError
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"}); !errors.As(err, &nf) {
		t.Fatalf("an export into a namespace that does not exist: %v", err)
	}
	for _, ns := range []string{"argocd", "tools"} {
		if _, err := consumer.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: "argocd", Labels: map[string]string{member.LabelManagedBy: member.ManagedBy}},
		Data: map[string][]byte{"x": []byte("someone's")}}
	if _, err := consumer.kube.CoreV1().Secrets("argocd").Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := secrets("argocd")
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"}); err == nil ||
		!strings.Contains(err.Error(), "Secret argocd/provider exists and was not written by an export: refusing to replace it") {
		t.Errorf("an export over a Secret it did not make: %v", err)
	}
	if after := secrets("argocd"); !maps.Equal(before, after) {
		t.Errorf("a refused export changed the namespace: %v -> %v", before, after)
	}

	argo := handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd", Name: "gpu"}
	if w, err := handshake.Export(ctx, consumer.Cluster, argo); err != nil || len(w) != 1 || w[0].Action != "created" || w[0].Name != "gpu" {
		t.Fatalf("argocd export: %+v %v", w, err)
	}
	if w, err := handshake.Export(ctx, consumer.Cluster, argo); err != nil || w[0].Action != "unchanged" {
		t.Errorf("argocd export again: %+v %v", w, err)
	}
	flux := handshake.ExportOptions{Format: export.FormatKubeconfig, ProviderID: "provider", Namespace: "tools", Key: "value"}
	if w, err := handshake.Export(ctx, consumer.Cluster, flux); err != nil || w[0].Name != "provider-kubeconfig" {
		t.Fatalf("kubeconfig export: %+v %v", w, err)
	}
	// Another format under the name of an export is another export: refused.
	before = secrets("argocd")
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatClusterGateway, ProviderID: "provider", Namespace: "argocd", Name: "gpu"}); err == nil ||
		!strings.Contains(err.Error(), `is the export of the pairing with provider "provider" in format argocd`) {
		t.Errorf("an export over another format's: %v", err)
	}
	// No Target API here: admiralty writes nothing, not even its Secret.
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatAdmiralty, ProviderID: "provider", Namespace: "argocd"}); !errors.Is(err, handshake.ErrTargetNotServed) {
		t.Errorf("admiralty without Admiralty: %v", err)
	}
	if after := secrets("argocd"); !maps.Equal(before, after) {
		t.Errorf("refused exports changed the namespace: %v -> %v", before, after)
	}
	// The objects printed are those written.
	objs, err := handshake.BuildExport(ctx, consumer.Cluster, flux)
	if err != nil {
		t.Fatal(err)
	}
	written, err := consumer.kube.CoreV1().Secrets("tools").Get(ctx, "provider-kubeconfig", metav1.GetOptions{})
	if err != nil || !bytes.Equal(written.Data["value"], objs.Secret.Data["value"]) {
		t.Errorf("written %v, built %v: %v", written, objs.Secret, err)
	}
	report, err := status.Status(ctx, consumer.Cluster, false)
	if err != nil || len(report.Exports) != 2 || report.Exports[0].Format != export.FormatArgoCD || report.Exports[1].Secret != "provider-kubeconfig" {
		t.Errorf("status's exports: %+v %v", report, err)
	}

	// A renewal rewrites both with the new credential.
	if _, err := Authenticate(ctx, consumer.Cluster, provider.Cluster, auth); err != nil {
		t.Fatal(err)
	}
	renewed, err := handshake.GetKubeconfig(ctx, consumer.Cluster, "provider")
	if err != nil {
		t.Fatal(err)
	}
	p, err := kubeconfig.Parse(renewed)
	if err != nil {
		t.Fatal(err)
	}
	if written, err := consumer.kube.CoreV1().Secrets("tools").Get(ctx, "provider-kubeconfig", metav1.GetOptions{}); err != nil ||
		!bytes.Equal(written.Data["value"], renewed) || !bytes.Equal(written.Data["kubeconfig"], renewed) {
		t.Errorf("the kubeconfig export after a renewal: %v", err)
	}
	sec, err := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "gpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		TLSClientConfig struct{ CertData []byte } `json:"tlsClientConfig"`
	}
	if err := json.Unmarshal(sec.Data["config"], &cfg); err != nil || !bytes.Equal(cfg.TLSClientConfig.CertData, p.CertPEM) {
		t.Errorf("the argocd export after a renewal does not hold the new certificate: %v", err)
	}

	if _, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct{ ns, name string }{{"argocd", "gpu"}, {"tools", "provider-kubeconfig"}} {
		if _, err := consumer.kube.CoreV1().Secrets(s.ns).Get(ctx, s.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("export %s/%s after unauthenticate: %v", s.ns, s.name, err)
		}
	}
	if _, err := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{}); err != nil {
		t.Errorf("unauthenticate deleted a Secret that was not an export: %v", err)
	}
}

// Labels prove nothing: whoever may write Secrets in some namespace can label one as an export. Such a
// Secret, beside an export or in the place of one deleted, never receives a credential at renewal, is not
// adopted by an export of its name, is not listed, and is not deleted by unauthenticate.
func TestExportLookalikesGetNothing(t *testing.T) {
	ctx := t.Context()
	consumer, provider := newFakeCluster(t), newFakeCluster(t)
	auth := AuthenticateOptions{ConsumerID: "consumer", ProviderID: "provider", APIServer: "https://provider.example:6443", Expiration: time.Hour}
	if _, err := Authenticate(ctx, consumer.Cluster, provider.Cluster, auth); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"argocd", "evil"} {
		if _, err := consumer.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	argo := handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: "argocd"}
	if _, err := handshake.Export(ctx, consumer.Cluster, argo); err != nil {
		t.Fatal(err)
	}
	real, err := consumer.kube.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lookalike := func(ns, name string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: maps.Clone(real.Labels), Annotations: maps.Clone(real.Annotations)},
			Data: maps.Clone(real.Data)}
		w, err := consumer.kube.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	beside := lookalike("evil", "provider")
	// The recorded export is deleted and a lookalike made under its name: another object (another UID).
	if err := consumer.kube.CoreV1().Secrets("argocd").Delete(ctx, "provider", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	inPlace := lookalike("argocd", "provider")
	unchanged := func(when string) {
		t.Helper()
		for _, want := range []*corev1.Secret{beside, inPlace} {
			got, err := consumer.kube.CoreV1().Secrets(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil || !maps.EqualFunc(got.Data, want.Data, bytes.Equal) {
				t.Errorf("%s: the lookalike %s/%s was written or deleted: %v", when, want.Namespace, want.Name, err)
			}
		}
	}
	// The record of the export deleted is listed as a record alone (its Secret gone), never the lookalike.
	report, err := status.Status(ctx, consumer.Cluster, false)
	gone := handshake.ExportState{RemoteClusterID: "provider", Format: "argocd", Namespace: "argocd", Secret: "provider", State: handshake.ExportSecretGone}
	if err != nil || len(report.Exports) != 1 || report.Exports[0] != gone {
		t.Errorf("status lists lookalikes as exports: %+v %v; want only %+v", report.Exports, err, gone)
	}
	if _, err := Renew(ctx, consumer.Cluster, provider.Cluster, RenewOptions{}); err != nil {
		t.Fatal(err)
	}
	unchanged("after a renewal")
	if _, err := handshake.Export(ctx, consumer.Cluster, argo); err == nil || !strings.Contains(err.Error(), "exists and was not written by an export") {
		t.Errorf("an export adopted a lookalike under its name: %v", err)
	}
	unchanged("after a refused export")
	if _, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Fatal(err)
	}
	unchanged("after unauthenticate")
	if l, err := consumer.kube.CoreV1().Secrets(member.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: handshake.LabelExportRecordOf}); err != nil || len(l.Items) != 0 {
		t.Errorf("export records left after unauthenticate: %d %v", len(l.Items), err)
	}
}

// federate-system holds the export records: an export there is refused (whoever may write it could write
// an export and its record both), and nothing is written.
func TestNoExportIntoFederateSystem(t *testing.T) {
	ctx := t.Context()
	consumer, _ := authenticated(t)
	before, err := consumer.kube.CoreV1().Secrets(member.SystemNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatArgoCD, ProviderID: "provider", Namespace: member.SystemNamespace}); err == nil ||
		!strings.Contains(err.Error(), "namespace federate-system holds this tool's own objects") {
		t.Errorf("an export into federate-system: %v", err)
	}
	if after, _ := consumer.kube.CoreV1().Secrets(member.SystemNamespace).List(ctx, metav1.ListOptions{}); len(after.Items) != len(before.Items) {
		t.Errorf("a refused export wrote %d Secret(s) in federate-system", len(after.Items)-len(before.Items))
	}
}

package lifecycle

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/pkg/export"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/status"
)

// serveProfiles installs the ClusterProfile CRD on a fake, in one version, with its status subresource.
func serveProfiles(c *fakeCluster, version string) schema.GroupVersionResource {
	gvr := export.ClusterProfileGroupResource.WithVersion(version)
	c.Serve(gvr, export.ClusterProfileKind, true)
	return gvr
}

var profileExport = handshake.ExportOptions{Format: export.FormatClusterProfile, ProviderID: "provider", Namespace: "fleet"}

func getProfile(t *testing.T, c *fakeCluster, gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
	t.Helper()
	cp, err := c.dyn.Resource(gvr).Namespace("fleet").Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ClusterProfile fleet/%s: %v", name, err)
	}
	return cp
}

func accessServers(cp *unstructured.Unstructured) []string {
	aps, _, _ := unstructured.NestedSlice(cp.Object, "status", "accessProviders")
	var out []string
	for _, ap := range aps {
		m, _ := ap.(map[string]any)
		s, _, _ := unstructured.NestedString(m, "cluster", "server")
		out = append(out, m["name"].(string)+"="+s)
	}
	return out
}

func dynCount(c *fakeCluster, verb, resource, sub string) int {
	n := 0
	for _, a := range c.dyn.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == sub {
			n++
		}
	}
	return n
}

// Without the ClusterProfile CRD an export says which one is missing and writes nothing: no Secret, no
// record, no CRD.
func TestAClusterProfileExportNeedsTheCRD(t *testing.T) {
	ctx := t.Context()
	consumer, _ := authenticated(t)
	makeNamespaces(t, consumer, "fleet")
	records := func() int {
		l, err := consumer.kube.CoreV1().Secrets(member.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: handshake.LabelExportRecordOf})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	before, dynBefore := consumer.count("create", "secrets"), len(consumer.dyn.Actions())
	_, err := handshake.Export(ctx, consumer.Cluster, profileExport)
	if !errors.Is(err, handshake.ErrClusterProfileNotServed) || !strings.Contains(err.Error(), "clusterprofiles.multicluster.x-k8s.io") {
		t.Errorf("an export without the ClusterProfile CRD: %v", err)
	}
	if n := consumer.count("create", "secrets") - before; n != 0 || records() != 0 {
		t.Errorf("a refused ClusterProfile export created %d Secret(s), %d record(s)", n, records())
	}
	for _, a := range consumer.dyn.Actions()[dynBefore:] {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("a refused ClusterProfile export wrote: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// The whole life of a ClusterProfile export on fakes that keep status apart (a create stores none): the
// profile carries this tool as cluster manager and the member's ID, its status (written through the
// status subresource) names the provider and the Secret; a re-run writes nothing; a renewal rewrites the
// credential, and the status only when the provider's address changed; status lists the export; the
// version served is the one written; unauthenticate deletes the profile, the Secret and the record.
func TestClusterProfileExportLifecycle(t *testing.T) {
	ctx := t.Context()
	for _, version := range []string{"v1alpha1", "v1alpha2"} {
		t.Run(version, func(t *testing.T) {
			consumer, provider := authenticated(t)
			makeNamespaces(t, consumer, "fleet")
			gvr := serveProfiles(consumer, version)
			w, err := handshake.Export(ctx, consumer.Cluster, profileExport)
			if err != nil || len(w) != 2 || w[0] != (handshake.ExportedObject{Kind: "Secret", Namespace: "fleet", Name: "provider-kubeconfig", Action: "created"}) ||
				w[1] != (handshake.ExportedObject{Kind: "ClusterProfile", Namespace: "fleet", Name: "provider", Action: "created"}) {
				t.Fatalf("export clusterprofile: %+v %v", w, err)
			}
			cp := getProfile(t, consumer, gvr, "provider")
			l := cp.GetLabels()
			if cp.GetAPIVersion() != "multicluster.x-k8s.io/"+version || l[export.LabelClusterManager] != "kubectl-federate" || l[export.LabelInventoryMemberID] != "provider" {
				t.Errorf("the ClusterProfile: %s %v", cp.GetAPIVersion(), l)
			}
			if got := accessServers(cp); strings.Join(got, ",") != "kubectl-federate=https://provider.example:6443,kubeconfig-secretreader=https://provider.example:6443" {
				t.Errorf("status.accessProviders (the status subresource): %v", got)
			}
			if n := dynCount(consumer, "update", "clusterprofiles", "status"); n != 1 {
				t.Errorf("%d status writes, want 1", n)
			}
			sec, err := consumer.kube.CoreV1().Secrets("fleet").Get(ctx, "provider-kubeconfig", metav1.GetOptions{})
			if err != nil || len(sec.Data[export.CredentialKey]) == 0 {
				t.Fatalf("the Secret: %v", err)
			}
			held, err := handshake.GetKubeconfig(ctx, consumer.Cluster, "provider")
			if err != nil || string(sec.Data[export.CredentialKey]) != string(held) {
				t.Errorf("the Secret does not hold the credential: %v", err)
			}

			writes := len(consumer.dyn.Actions())
			if w, err := handshake.Export(ctx, consumer.Cluster, profileExport); err != nil || w[0].Action != "unchanged" || w[1].Action != "unchanged" {
				t.Errorf("the export again: %+v %v", w, err)
			}
			for _, a := range consumer.dyn.Actions()[writes:] {
				if a.GetVerb() != "get" {
					t.Errorf("the export again wrote: %s %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
				}
			}
			report, err := status.Status(ctx, consumer.Cluster, false)
			if err != nil || len(report.Exports) != 1 || report.Exports[0].Format != export.FormatClusterProfile || report.Exports[0].Name != "provider" ||
				report.Exports[0].Secret != "provider-kubeconfig" {
				t.Errorf("status's exports: %+v %v", report.Exports, err)
			}

			// A renewal: the new credential in the Secret; the profile's status says the same, so it is left.
			if _, err := Renew(ctx, consumer.Cluster, provider.Cluster, RenewOptions{}); err != nil {
				t.Fatal(err)
			}
			renewed, _ := handshake.GetKubeconfig(ctx, consumer.Cluster, "provider")
			sec, _ = consumer.kube.CoreV1().Secrets("fleet").Get(ctx, "provider-kubeconfig", metav1.GetOptions{})
			if string(renewed) == string(held) || string(sec.Data[export.CredentialKey]) != string(renewed) {
				t.Error("the renewal did not rewrite the Secret with the new credential")
			}
			if n := dynCount(consumer, "update", "clusterprofiles", "status"); n != 1 {
				t.Errorf("a renewal that changed no address wrote the status (%d writes)", n)
			}
			// A renewal to another address: the status follows.
			if _, err := Renew(ctx, consumer.Cluster, provider.Cluster, RenewOptions{APIServer: "https://moved.example:6443", Given: handshake.Given{handshake.SettingAPIServer: true}}); err != nil {
				t.Fatal(err)
			}
			if got := accessServers(getProfile(t, consumer, gvr, "provider")); strings.Join(got, ",") != "kubectl-federate=https://moved.example:6443,kubeconfig-secretreader=https://moved.example:6443" {
				t.Errorf("status.accessProviders after a renewal to another address: %v", got)
			}

			if _, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
				t.Fatal(err)
			}
			if _, err := consumer.dyn.Resource(gvr).Namespace("fleet").Get(ctx, "provider", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the ClusterProfile after unauthenticate: %v", err)
			}
			if _, err := consumer.kube.CoreV1().Secrets("fleet").Get(ctx, "provider-kubeconfig", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the Secret after unauthenticate: %v", err)
			}
			if l, _ := consumer.kube.CoreV1().Secrets(member.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: handshake.LabelExportRecordOf}); len(l.Items) != 0 {
				t.Errorf("%d export record(s) left", len(l.Items))
			}
		})
	}
}

// A ClusterProfile of that name that no export wrote (another cluster manager's, or a lookalike copying
// an export's labels and annotations) is never replaced, and the refused export writes nothing.
func TestAClusterProfileNotOursIsRefused(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "fleet")
	gvr := serveProfiles(consumer, "v1alpha1")
	profiles := consumer.dyn.Resource(gvr).Namespace("fleet")
	theirs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": "ClusterProfile",
		"metadata": map[string]any{"name": "provider", "namespace": "fleet", "labels": map[string]any{export.LabelClusterManager: "open-cluster-management"}},
		"spec":     map[string]any{"clusterManager": map[string]any{"name": "open-cluster-management"}}}}
	if _, err := profiles.Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := consumer.count("create", "secrets")
	if _, err := handshake.Export(ctx, consumer.Cluster, profileExport); err == nil ||
		!strings.Contains(err.Error(), "ClusterProfile fleet/provider exists and was not written by an export: refusing to replace it") {
		t.Errorf("an export over another manager's ClusterProfile: %v", err)
	}
	if n := consumer.count("create", "secrets") - before; n != 0 {
		t.Errorf("the refused export created %d Secret(s)", n)
	}
	if cp := getProfile(t, consumer, gvr, "provider"); cp.GetLabels()[export.LabelClusterManager] != "open-cluster-management" {
		t.Errorf("another manager's ClusterProfile was changed: %v", cp.GetLabels())
	}
	if err := profiles.Delete(ctx, "provider", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// The export under another name, and a lookalike of its profile (labels, annotations, status copied)
	// under the default one: refused, and renew and unauthenticate leave it alone.
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatClusterProfile, ProviderID: "provider", Namespace: "fleet", Name: "real"}); err != nil {
		t.Fatal(err)
	}
	real := getProfile(t, consumer, gvr, "real")
	fake := &unstructured.Unstructured{Object: map[string]any{"apiVersion": real.GetAPIVersion(), "kind": "ClusterProfile", "spec": real.Object["spec"]}}
	fake.SetName("provider")
	fake.SetNamespace("fleet")
	fake.SetLabels(real.GetLabels())
	fake.SetAnnotations(maps.Clone(real.GetAnnotations()))
	created, err := profiles.Create(ctx, fake, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Object["status"] = real.Object["status"]
	if _, err = profiles.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := handshake.Export(ctx, consumer.Cluster, profileExport); err == nil || !strings.Contains(err.Error(), "exists and was not written by an export") {
		t.Errorf("an export adopted a lookalike ClusterProfile: %v", err)
	}
	if _, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := profiles.Get(ctx, "provider", metav1.GetOptions{}); err != nil {
		t.Errorf("unauthenticate deleted a lookalike ClusterProfile: %v", err)
	}
	if _, err := profiles.Get(ctx, "real", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("unauthenticate left the export's ClusterProfile: %v", err)
	}
}

// Attack: a consumer operator (writes federate-system, not the fleet namespace) edits the record of the
// kubeconfig export "a" to name the ClusterProfile of export "b" of the same credential (kind, name and
// UID copied from b's record). The admin's re-run of export a would delete b's profile as a's own second
// object turned into another format; it does not: b's profile points at b's Secret, not a's.
func TestAnEditedRecordDeletesNoOtherClusterProfile(t *testing.T) {
	ctx := t.Context()
	consumer, _ := authenticated(t)
	makeNamespaces(t, consumer, "fleet")
	gvr := serveProfiles(consumer, "v1alpha1")
	a := handshake.ExportOptions{Format: export.FormatKubeconfig, ProviderID: "provider", Name: "a", Namespace: "fleet"}
	if _, err := handshake.Export(ctx, consumer.Cluster, a); err != nil {
		t.Fatal(err)
	}
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatClusterProfile, ProviderID: "provider", Name: "b", Namespace: "fleet"}); err != nil {
		t.Fatal(err)
	}
	secrets := consumer.kube.CoreV1().Secrets(member.SystemNamespace)
	rb, err := secrets.Get(ctx, handshake.ExportRecordName("fleet", "b-kubeconfig"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rb.Annotations[handshake.AnnExportTargetKind] != "ClusterProfile" || rb.Annotations[handshake.AnnExportTarget] != "b" {
		t.Fatalf("the record of a ClusterProfile export: %v", rb.Annotations)
	}
	ra, err := secrets.Get(ctx, handshake.ExportRecordName("fleet", "a-kubeconfig"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{handshake.AnnExportTarget, handshake.AnnExportTargetUID, handshake.AnnExportTargetKind} {
		ra.Annotations[k] = rb.Annotations[k]
	}
	if _, err := secrets.Update(ctx, ra, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := handshake.Export(ctx, consumer.Cluster, a)
	t.Logf("the admin's re-run of export a: %+v, %v", out, err)
	if _, err := consumer.dyn.Resource(gvr).Namespace("fleet").Get(ctx, "b", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Errorf("re-running the kubeconfig export a deleted the ClusterProfile fleet/b of export b")
	}
}

// A record may name only a kind of the allow-list: one edited to name any other kind is no record at all
// (nothing of another API is read, written or deleted through it).
func TestARecordNamesOnlyAllowedKinds(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "fleet")
	serveProfiles(consumer, "v1alpha1")
	if _, err := handshake.Export(ctx, consumer.Cluster, profileExport); err != nil {
		t.Fatal(err)
	}
	secrets := consumer.kube.CoreV1().Secrets(member.SystemNamespace)
	rec, err := secrets.Get(ctx, handshake.ExportRecordName("fleet", "provider-kubeconfig"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec.Annotations[handshake.AnnExportTargetKind] = "Secret"
	if _, err := secrets.Update(ctx, rec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if recs, err := handshake.ExportRecords(ctx, consumer.Cluster, "provider", "", false); err != nil || len(recs) != 0 {
		t.Errorf("a record naming kind Secret is read as a record: %d %v", len(recs), err)
	}
	before := len(consumer.dyn.Actions())
	if _, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Fatal(err)
	}
	for _, a := range consumer.dyn.Actions()[before:] {
		if a.GetResource().Resource == "clusterprofiles" {
			t.Errorf("unauthenticate reached the profile through a record of another kind: %s", a.GetVerb())
		}
	}
}

// A status that cannot be written (a webhook, RBAC on clusterprofiles/status) fails the export, which
// deletes what it created: the ClusterProfile, the Secret and the record. Someone else's status (their
// access provider, conditions) survives an export that updates a profile.
func TestAClusterProfileWhoseStatusFailsIsUndone(t *testing.T) {
	ctx := t.Context()
	consumer, _ := authenticated(t)
	makeNamespaces(t, consumer, "fleet")
	gvr := serveProfiles(consumer, "v1alpha1")
	failing := true
	consumer.dyn.PrependReactor("update", "clusterprofiles", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if failing && a.GetSubresource() == "status" {
			return true, nil, apierrors.NewForbidden(gvr.GroupResource(), "provider", errors.New("no update on clusterprofiles/status"))
		}
		return false, nil, nil
	})
	if _, err := handshake.Export(ctx, consumer.Cluster, profileExport); err == nil || !strings.Contains(err.Error(), "ClusterProfile fleet/provider: writing its status") {
		t.Errorf("an export whose status is refused: %v", err)
	}
	if _, err := consumer.dyn.Resource(gvr).Namespace("fleet").Get(ctx, "provider", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ClusterProfile without its status was left: %v", err)
	}
	if _, err := consumer.kube.CoreV1().Secrets("fleet").Get(ctx, "provider-kubeconfig", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Secret of the failed export was left: %v", err)
	}
	if l, _ := consumer.kube.CoreV1().Secrets(member.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: handshake.LabelExportRecordOf}); len(l.Items) != 0 {
		t.Errorf("%d record(s) of the failed export left", len(l.Items))
	}

	failing = false
	if _, err := handshake.Export(ctx, consumer.Cluster, profileExport); err != nil {
		t.Fatal(err)
	}
	profiles := consumer.dyn.Resource(gvr).Namespace("fleet")
	cp := getProfile(t, consumer, gvr, "provider")
	aps, _, _ := unstructured.NestedSlice(cp.Object, "status", "accessProviders")
	aps = append([]any{map[string]any{"name": "theirs", "cluster": map[string]any{"server": "https://elsewhere.example"}}}, aps[1:]...) // theirs, and ours short of one
	l := cp.GetLabels()
	l["team"] = "gpu"
	cp.SetLabels(l)
	cp, err := profiles.Update(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cp.Object["status"] = map[string]any{"accessProviders": aps, "conditions": []any{map[string]any{"type": "ControlPlaneHealthy", "status": "True"}}}
	if _, err := profiles.UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if w, err := handshake.Export(ctx, consumer.Cluster, profileExport); err != nil || w[1].Action != "updated" {
		t.Errorf("the export over a profile missing one of its access providers: %+v %v", w, err)
	}
	cp = getProfile(t, consumer, gvr, "provider")
	conds, _, _ := unstructured.NestedSlice(cp.Object, "status", "conditions")
	if got := strings.Join(accessServers(cp), ","); got != "theirs=https://elsewhere.example,kubeconfig-secretreader=https://provider.example:6443,kubectl-federate=https://provider.example:6443" ||
		len(conds) != 1 || cp.GetLabels()["team"] != "gpu" {
		t.Errorf("after the export: access providers %s, conditions %v, labels %v", got, conds, cp.GetLabels())
	}
}

// An Admiralty export whose Secret is gone, exported again as a ClusterProfile under its name: the
// record's Target (another kind) goes first, and the record names the ClusterProfile.
func TestATargetTurnedIntoAClusterProfileGoes(t *testing.T) {
	ctx := t.Context()
	consumer, _ := authenticated(t)
	makeNamespaces(t, consumer, "fleet")
	serveTargets(consumer)
	gvr := serveProfiles(consumer, "v1alpha1")
	if _, err := handshake.Export(ctx, consumer.Cluster, handshake.ExportOptions{Format: export.FormatAdmiralty, ProviderID: "provider", Namespace: "fleet"}); err != nil {
		t.Fatal(err)
	}
	if err := consumer.kube.CoreV1().Secrets("fleet").Delete(ctx, "provider-kubeconfig", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := handshake.Export(ctx, consumer.Cluster, profileExport); err != nil {
		t.Fatal(err)
	}
	if _, err := consumer.dyn.Resource(export.TargetGVR).Namespace("fleet").Get(ctx, "provider", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Admiralty Target of the record survives an export of another kind: %v", err)
	}
	getProfile(t, consumer, gvr, "provider")
	rec, err := consumer.kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, handshake.ExportRecordName("fleet", "provider-kubeconfig"), metav1.GetOptions{})
	if err != nil || rec.Annotations[handshake.AnnExportTargetKind] != "ClusterProfile" {
		t.Errorf("the record: %v %v", rec.Annotations, err)
	}
}

// A ClusterProfile whose create gets a 504 and is stored a moment after the read-back, on a fresh export
// and on the re-run of one whose profile is gone: the record stays pending under its claim and names the
// profile by its kind, so the next run and unauthenticate find it and delete it (a record that forgot the
// kind would look for an Admiralty Target of that name, and leave the profile pointing consumers at a
// Secret anyone may make again).
func TestAClusterProfileStoredAfterA504IsNotForgotten(t *testing.T) {
	ctx := t.Context()
	for _, rerun := range []bool{false, true} {
		consumer, provider := authenticated(t)
		makeNamespaces(t, consumer, "fleet")
		gvr := serveProfiles(consumer, "v1alpha1")
		if rerun {
			if _, err := handshake.Export(ctx, consumer.Cluster, profileExport); err != nil {
				t.Fatal(err)
			}
			if err := consumer.dyn.Resource(gvr).Namespace("fleet").Delete(ctx, "provider", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		finish := storedLate(consumer.dyn.Tracker(), consumer.dyn.PrependReactor, "clusterprofiles", "fleet")
		_, err := handshake.Export(ctx, consumer.Cluster, profileExport)
		if err == nil {
			t.Fatal("an export whose ClusterProfile create timed out succeeded")
		}
		if err := finish(); err != nil {
			t.Fatal(err)
		}
		rec, err := consumer.kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, handshake.ExportRecordName("fleet", "provider-kubeconfig"), metav1.GetOptions{})
		if err != nil || rec.Annotations[handshake.AnnExportTargetKind] != "ClusterProfile" || rec.Annotations[handshake.AnnExportTarget] != "provider" {
			t.Errorf("re-run %v: the record after the undo: %v %v", rerun, rec, err)
		}
		if _, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := consumer.dyn.Resource(gvr).Namespace("fleet").Get(ctx, "provider", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("re-run %v: the ClusterProfile stored after the 504 survives unauthenticate: %v", rerun, err)
		}
	}
}

// A consumer operator (Secrets in federate-system only) may not read ClusterProfiles: unauthenticate's
// consumer half names the export in a warning and leaves it with its record, for someone who may.
func TestAClusterProfileTheUserCannotSeeIsLeftWithItsRecord(t *testing.T) {
	ctx := t.Context()
	consumer, _ := authenticated(t)
	makeNamespaces(t, consumer, "fleet")
	serveProfiles(consumer, "v1alpha1")
	if _, err := handshake.Export(ctx, consumer.Cluster, profileExport); err != nil {
		t.Fatal(err)
	}
	consumer.dyn.PrependReactor("*", "clusterprofiles", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", errors.New("a consumer operator"))
	})
	warned := &warnings{}
	consumer.Report = warned
	if err := RemoveIdentity(ctx, consumer.Cluster, "provider"); err != nil {
		t.Fatalf("the consumer half of unauthenticate as a consumer operator: %v", err)
	}
	if !slices.ContainsFunc(warned.got, func(w string) bool { return strings.Contains(w, "ClusterProfile fleet/provider: not readable") }) {
		t.Errorf("no warning names the ClusterProfile: %q", warned.got)
	}
	if _, err := consumer.kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, handshake.ExportRecordName("fleet", "provider-kubeconfig"), metav1.GetOptions{}); err != nil {
		t.Errorf("the record of the export left alone: %v", err)
	}
}

// The ClusterProfile CRD uninstalled (its profiles with it) after an export: renew and unauthenticate
// take the profile as gone, and still rewrite, then delete, the Secret and the record.
func TestAClusterProfileGoneWithItsCRD(t *testing.T) {
	ctx := t.Context()
	consumer, provider := authenticated(t)
	makeNamespaces(t, consumer, "fleet")
	gvr := serveProfiles(consumer, "v1alpha1")
	if _, err := handshake.Export(ctx, consumer.Cluster, profileExport); err != nil {
		t.Fatal(err)
	}
	if err := consumer.dyn.Tracker().Delete(gvr, "fleet", "provider"); err != nil {
		t.Fatal(err)
	}
	consumer.kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = nil
	before, _ := consumer.kube.CoreV1().Secrets("fleet").Get(ctx, "provider-kubeconfig", metav1.GetOptions{})
	if _, err := Renew(ctx, consumer.Cluster, provider.Cluster, RenewOptions{}); err != nil {
		t.Fatal(err)
	}
	if after, err := consumer.kube.CoreV1().Secrets("fleet").Get(ctx, "provider-kubeconfig", metav1.GetOptions{}); err != nil ||
		string(after.Data[export.CredentialKey]) == string(before.Data[export.CredentialKey]) {
		t.Errorf("renew did not rewrite the Secret of an export whose ClusterProfile is gone: %v", err)
	}
	if _, err := Unauthenticate(ctx, consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := consumer.kube.CoreV1().Secrets("fleet").Get(ctx, "provider-kubeconfig", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Secret after unauthenticate: %v", err)
	}
	if l, _ := consumer.kube.CoreV1().Secrets(member.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: handshake.LabelExportRecordOf}); len(l.Items) != 0 {
		t.Errorf("%d record(s) left", len(l.Items))
	}
}

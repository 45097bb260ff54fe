package export

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
)

func buildProfile(t *testing.T, data []byte) *Objects {
	t.Helper()
	objs, err := Build(Spec{Format: FormatClusterProfile, Name: "gpu-farm", Namespace: "fleet", Labels: ours, Kubeconfig: data, MemberID: "gpu-farm"})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// A ClusterProfile export: the Secret holds the credential as kubeconfig-secretreader reads it (a
// kubeconfig, inline, under the key both access providers name); the ClusterProfile names this tool as
// its cluster manager, by label and in spec, the member cluster by label, and in status two access
// providers with the provider's server and CA and the Secret as the plugin's configuration. No byte of
// the credential is in the ClusterProfile.
func TestClusterProfileFormat(t *testing.T) {
	for _, token := range []string{"", "tok.en"} {
		data := kc(t, token)
		objs := buildProfile(t, data)
		s := objs.Secret
		if s.Name != "gpu-farm-kubeconfig" || len(s.Data) != 1 || string(s.Data[CredentialKey]) != string(data) || s.Labels[LabelFormat] != FormatClusterProfile {
			t.Errorf("token %q: the Secret %s: labels %v, keys %d", token, s.Name, s.Labels, len(s.Data))
		}
		if _, err := kubeconfig.ParseInline(s.Data[CredentialKey], ""); err != nil {
			t.Errorf("token %q: the credential is not what kubeconfig-secretreader reads: %v", token, err)
		}
		cp := objs.Target
		if cp == nil || cp.GetKind() != "ClusterProfile" || cp.GetAPIVersion() != "multicluster.x-k8s.io/v1alpha1" || cp.GetName() != "gpu-farm" || cp.GetNamespace() != "fleet" {
			t.Fatalf("token %q: the ClusterProfile: %v", token, cp)
		}
		l := cp.GetLabels()
		if l["x-k8s.io/cluster-manager"] != "kubectl-federate" || l["multicluster.x-k8s.io/inventory-member-id"] != "gpu-farm" || l[LabelFormat] != FormatClusterProfile ||
			l["federate.dev/remote-cluster-id"] != "gpu-farm" {
			t.Errorf("token %q: the ClusterProfile's labels: %v", token, l)
		}
		if m, _, _ := unstructured.NestedString(cp.Object, "spec", "clusterManager", "name"); m != "kubectl-federate" {
			t.Errorf("spec.clusterManager.name %q", m)
		}
		aps, _, _ := unstructured.NestedSlice(cp.Object, "status", "accessProviders")
		if len(aps) != 2 {
			t.Fatalf("access providers: %v", aps)
		}
		for i, want := range []string{"kubectl-federate", "kubeconfig-secretreader"} {
			ap := aps[i].(map[string]any)
			c := ap["cluster"].(map[string]any)
			ca64 := base64.StdEncoding.EncodeToString(ca)
			ext := c["extensions"].([]any)[0].(map[string]any)
			cfg, _ := json.Marshal(ext["extension"])
			ref, err := kubeconfig.ParseSecretRef(cfg)
			if ap["name"] != want || c["server"] != "https://gpu-farm.example:6443" || c["certificate-authority-data"] != ca64 ||
				ext["name"] != "client.authentication.k8s.io/exec" || err != nil || ref != (kubeconfig.SecretRef{Name: "gpu-farm-kubeconfig", Key: "credential", Namespace: "fleet"}) {
				t.Errorf("access provider %d: %v (%v)", i, ap, err)
			}
		}
		whole, _ := json.Marshal(cp.Object)
		for _, secret := range []string{"CERT", "KEY", "tok.en", base64.StdEncoding.EncodeToString(cert), base64.StdEncoding.EncodeToString(key)} {
			if strings.Contains(string(whole), secret) {
				t.Errorf("token %q: the ClusterProfile holds %q", token, secret)
			}
		}
		if got, ok := PointsAt(cp); !ok || got != "gpu-farm-kubeconfig" {
			t.Errorf("PointsAt: %q %v", got, ok)
		}
	}
	if _, err := Build(Spec{Format: FormatClusterProfile, Name: "x", Namespace: "fleet", Kubeconfig: kc(t, "")}); err == nil {
		t.Error("a ClusterProfile was built without its member cluster's ID")
	}
	for _, s := range []Spec{{Key: "value"}, {Exec: &Exec{Command: "kubectl-federate"}}} {
		s.Format, s.Name, s.Kubeconfig, s.MemberID = FormatClusterProfile, "x", kc(t, ""), "p"
		if _, err := Build(s); err == nil {
			t.Errorf("format clusterprofile took %+v", s)
		}
	}
	// A rewrite builds the same objects around the new credential.
	objs := buildProfile(t, kc(t, ""))
	again, err := Rebuild(objs.Secret, kc(t, "new.token"), "gpu-farm")
	if err != nil || !strings.Contains(string(again.Secret.Data[CredentialKey]), "new.token") || again.Target == nil || again.Target.GetName() != "gpu-farm" {
		t.Errorf("rebuilt: %v %v", again, err)
	}
}

// Who a ClusterProfile points at: a profile whose annotation and access providers disagree, or whose
// provider reads a Secret in another namespace, points at nothing an export can own.
func TestPointsAt(t *testing.T) {
	objs := buildProfile(t, kc(t, ""))
	edit := func(f func(cp *unstructured.Unstructured)) *unstructured.Unstructured {
		cp := objs.Target.DeepCopy()
		f(cp)
		return cp
	}
	setRef := func(i int, field, value string) func(*unstructured.Unstructured) {
		return func(cp *unstructured.Unstructured) {
			aps := cp.Object["status"].(map[string]any)["accessProviders"].([]any)
			ext := aps[i].(map[string]any)["cluster"].(map[string]any)["extensions"].([]any)[0].(map[string]any)
			ext["extension"].(map[string]any)[field] = value
		}
	}
	for what, cp := range map[string]*unstructured.Unstructured{
		"another Secret in the annotation":        edit(func(cp *unstructured.Unstructured) { cp.SetAnnotations(map[string]string{AnnotationSecret: "other"}) }),
		"no annotation":                           edit(func(cp *unstructured.Unstructured) { cp.SetAnnotations(nil) }),
		"a provider naming another Secret":        edit(setRef(1, "name", "other-kubeconfig")),
		"a provider reading in another namespace": edit(setRef(0, "namespace", "argocd")),
	} {
		if s, ok := PointsAt(cp); ok {
			t.Errorf("%s: points at %q", what, s)
		}
	}
	// Someone else's access provider, with its own configuration, is not ours to judge; no status yet
	// (the status is written after the object) points at the annotation's Secret.
	other := edit(func(cp *unstructured.Unstructured) {
		aps := cp.Object["status"].(map[string]any)["accessProviders"].([]any)
		cp.Object["status"].(map[string]any)["accessProviders"] = append(aps, map[string]any{"name": "theirs", "cluster": map[string]any{"server": "https://x",
			"extensions": []any{map[string]any{"name": kubeconfig.ExecExtension, "extension": map[string]any{"name": "theirs"}}}}})
	})
	bare := edit(func(cp *unstructured.Unstructured) { delete(cp.Object, "status") })
	for what, cp := range map[string]*unstructured.Unstructured{"another manager's provider beside ours": other, "no status": bare} {
		if s, ok := PointsAt(cp); !ok || s != "gpu-farm-kubeconfig" {
			t.Errorf("%s: %q %v", what, s, ok)
		}
	}
	target := build(t, FormatAdmiralty, "", kc(t, "")).Target
	if s, ok := PointsAt(target); !ok || s != "gpu-farm-kubeconfig" {
		t.Errorf("a Target: %q %v", s, ok)
	}
}

// MergeStatus replaces our access providers in place, adds those missing, and keeps every other one and
// every other status field; what already says the same is no change.
func TestMergeStatus(t *testing.T) {
	want := buildProfile(t, kc(t, "")).Target
	if _, changed := MergeStatus(want, want); changed {
		t.Error("a status that says it already is a change")
	}
	// As the API server gives it back (JSON numbers and all): no change either.
	b, _ := json.Marshal(want.Object)
	var read map[string]any
	if err := json.Unmarshal(b, &read); err != nil {
		t.Fatal(err)
	}
	if _, changed := MergeStatus(&unstructured.Unstructured{Object: read}, want); changed {
		t.Error("a status read back is a change")
	}
	have := want.DeepCopy()
	delete(have.Object, "status")
	if st, changed := MergeStatus(have, want); !changed || len(st["accessProviders"].([]any)) != 2 {
		t.Errorf("a ClusterProfile without status: %v %v", st, changed)
	}
	// Someone's conditions and access provider stay; our stale provider (an old server) is replaced where it was.
	have = want.DeepCopy()
	_ = unstructured.SetNestedSlice(have.Object, []any{map[string]any{"type": "ControlPlaneHealthy", "status": "True"}}, "status", "conditions")
	aps, _, _ := unstructured.NestedSlice(have.Object, "status", "accessProviders")
	stale := aps[1].(map[string]any)
	stale["cluster"].(map[string]any)["server"] = "https://old.example:6443"
	theirs := map[string]any{"name": "theirs", "cluster": map[string]any{"server": "https://x"}}
	_ = unstructured.SetNestedSlice(have.Object, []any{theirs, stale}, "status", "accessProviders")
	st, changed := MergeStatus(have, want)
	got := st["accessProviders"].([]any)
	if !changed || len(got) != 3 || got[0].(map[string]any)["name"] != "theirs" || got[1].(map[string]any)["name"] != "kubeconfig-secretreader" ||
		got[1].(map[string]any)["cluster"].(map[string]any)["server"] != "https://gpu-farm.example:6443" || got[2].(map[string]any)["name"] != "kubectl-federate" {
		t.Errorf("merged: %v", got)
	}
	if c, _ := st["conditions"].([]any); len(c) != 1 {
		t.Errorf("someone's conditions were dropped: %v", st)
	}
}

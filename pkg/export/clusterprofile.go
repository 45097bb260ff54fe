package export

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
)

// SIG Multicluster's ClusterProfile (sigs.k8s.io/cluster-inventory-api, apis/v1alpha1 and v1alpha2): one
// per member cluster, written by its cluster manager; consumers (pkg/access, Argo CD's ClusterProfile
// integration, multicluster-runtime) read status.accessProviders and run the access provider (an exec
// credential plugin) they have configured under that provider's name.
const (
	ClusterProfileKind = "ClusterProfile"
	// ClusterProfileCRD is the CRD that serves it; an export never installs it.
	ClusterProfileCRD = "clusterprofiles.multicluster.x-k8s.io"
	// ClusterManager is this tool's name as a cluster manager: spec.clusterManager.name (immutable) and
	// the label LabelClusterManager.
	ClusterManager = "kubectl-federate"
	// LabelClusterManager is apis/v1alpha1 LabelClusterManagerKey; it must equal spec.clusterManager.name.
	LabelClusterManager = "x-k8s.io/cluster-manager"
	// LabelInventoryMemberID names the member cluster (v1alpha2's label, added to v1alpha1 too): the
	// provider's ID.
	LabelInventoryMemberID = "multicluster.x-k8s.io/inventory-member-id"
	// AccessProviderPlugin and AccessProviderSecretReader name the two access providers a profile lists,
	// with the same cluster and the same plugin configuration: this tool's plugin (kubectl federate
	// credential, which sets an expirationTimestamp), and the reference kubeconfig-secretreader
	// (examples/controller-example/plugins/kubeconfig-secretreader/provider-config.json names it so), for
	// consumers that only know that one.
	AccessProviderPlugin       = "kubectl-federate"
	AccessProviderSecretReader = "kubeconfig-secretreader" //nolint:gosec // a plugin's name, not a credential
	// AnnotationSecret, on a ClusterProfile, names the export Secret it points its consumers at: the
	// Secret is named before the status that names it can be written.
	AnnotationSecret = "federate.dev/export-secret" //nolint:gosec // an annotation key, not a credential
)

// ClusterProfileGroupResource is the ClusterProfile's group and resource.
var ClusterProfileGroupResource = schema.GroupResource{Group: "multicluster.x-k8s.io", Resource: "clusterprofiles"}

// ClusterProfileVersions are the versions an export writes, the preferred first: v1alpha1 is the storage
// version and the one pkg/access v0.1.x reads; v1alpha2 takes the same status.accessProviders (its
// Cluster drops certificate-authority, a path, which an export never writes).
var ClusterProfileVersions = []string{"v1alpha1", "v1alpha2"}

// ClusterProfileGVR is the ClusterProfile in the preferred version: what a printed export names.
var ClusterProfileGVR = ClusterProfileGroupResource.WithVersion(ClusterProfileVersions[0])

// AccessProviderNames are the access providers a ClusterProfile export writes, in order.
var AccessProviderNames = []string{AccessProviderPlugin, AccessProviderSecretReader}

func clusterProfile(s Spec, p kubeconfig.Params, secret string, labels map[string]string) (*unstructured.Unstructured, error) {
	if s.MemberID == "" {
		return nil, fmt.Errorf("format %s: the member cluster's ID must be given", FormatClusterProfile)
	}
	l := map[string]string{}
	for k, v := range labels {
		l[k] = v
	}
	l[LabelClusterManager], l[LabelInventoryMemberID] = ClusterManager, s.MemberID
	cp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ClusterProfileGVR.GroupVersion().String(),
		"kind":       ClusterProfileKind,
		"metadata":   map[string]any{"name": s.Name, "namespace": s.Namespace},
		"spec":       map[string]any{"clusterManager": map[string]any{"name": ClusterManager}},
	}}
	cp.SetLabels(l)
	cp.SetAnnotations(map[string]string{AnnotationName: s.Name, AnnotationSecret: secret})
	var providers []any
	for _, name := range AccessProviderNames {
		providers = append(providers, map[string]any{"name": name, "cluster": accessCluster(p, secret, s.Namespace)})
	}
	if err := unstructured.SetNestedSlice(cp.Object, providers, "status", "accessProviders"); err != nil {
		return nil, err
	}
	return cp, nil
}

// accessCluster is an access provider's cluster: where the provider is and how to trust it, and the
// plugin's configuration (the Secret and the key it reads, in kubeconfig-secretreader's schema); never a
// credential. Its fields are kubeconfig's (clientcmd/api/v1 Cluster), as the CRD spells them.
func accessCluster(p kubeconfig.Params, secret, namespace string) map[string]any {
	c := map[string]any{
		"server": p.Server,
		"extensions": []any{map[string]any{"name": kubeconfig.ExecExtension, "extension": map[string]any{
			"name": secret, "key": CredentialKey, "namespace": namespace,
		}}},
	}
	if len(p.CA) > 0 {
		c["certificate-authority-data"] = base64.StdEncoding.EncodeToString(p.CA)
	}
	if p.ProxyURL != "" {
		c["proxy-url"] = p.ProxyURL
	}
	return c
}

// PointsAt tells which Secret a ClusterProfile or an Admiralty Target points its tool at, as written
// by an export; ok is false when its parts disagree (a ClusterProfile whose annotation and access
// providers name different Secrets, or Secrets in another namespace).
func PointsAt(obj *unstructured.Unstructured) (secret string, ok bool) {
	switch obj.GetKind() {
	case TargetKind:
		s, _, _ := unstructured.NestedString(obj.Object, "spec", "kubeconfigSecret", "name")
		return s, s != ""
	case ClusterProfileKind:
		s := obj.GetAnnotations()[AnnotationSecret]
		if s == "" {
			return "", false
		}
		// Only the access providers an export writes: another one (someone else's) is not ours to judge.
		for _, ap := range accessProviders(obj) {
			name, _, _ := unstructured.NestedString(ap, "name")
			if !slices.Contains(AccessProviderNames, name) {
				continue
			}
			exts, _, _ := unstructured.NestedSlice(ap, "cluster", "extensions")
			for _, e := range exts {
				m, _ := e.(map[string]any)
				if m["name"] != kubeconfig.ExecExtension {
					continue
				}
				ref, _ := m["extension"].(map[string]any)
				if ref["name"] != s || ref["namespace"] != obj.GetNamespace() {
					return "", false
				}
			}
		}
		return s, true
	}
	return "", false
}

func accessProviders(obj *unstructured.Unstructured) []map[string]any {
	l, _, _ := unstructured.NestedSlice(obj.Object, "status", "accessProviders")
	var out []map[string]any
	for _, ap := range l {
		if m, ok := ap.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// MergeStatus is the status to write on have (a ClusterProfile as the cluster serves it) so that it
// holds want's access providers: each of ours replaced in place or added, every other access provider
// and every other status field (conditions, properties, version: someone else's) kept. changed is false
// when have already says exactly that.
func MergeStatus(have, want *unstructured.Unstructured) (status map[string]any, changed bool) {
	status, _, _ = unstructured.NestedMap(have.Object, "status")
	if status == nil {
		status = map[string]any{}
	}
	var next []any
	placed := map[string]bool{}
	ours := map[string]map[string]any{}
	for _, ap := range accessProviders(want) {
		name, _ := ap["name"].(string)
		ours[name] = ap
	}
	for _, ap := range accessProviders(have) {
		name, _ := ap["name"].(string)
		if w, ok := ours[name]; ok {
			if !placed[name] {
				next = append(next, w)
				placed[name] = true
			}
			continue
		}
		next = append(next, ap)
	}
	for _, ap := range accessProviders(want) {
		if name, _ := ap["name"].(string); !placed[name] {
			next = append(next, ap)
		}
	}
	before, _, _ := unstructured.NestedSlice(have.Object, "status", "accessProviders")
	if sameJSON(before, next) {
		return status, false
	}
	status["accessProviders"] = next
	return status, true
}

// sameJSON compares two values as they travel: an object read from the API server holds numbers and
// strings as JSON decodes them, one built here holds Go's own.
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(ja, &va) != nil || json.Unmarshal(jb, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

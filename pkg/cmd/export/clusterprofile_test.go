package export_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	formats "github.com/federate-dev/kubectl-federate/pkg/export"
)

// export clusterprofile through the command tree: without the CRD it names it and writes nothing; -o yaml
// prints the ClusterProfile (status included) and the Secret, and writes nothing; a dry run writes
// nothing; the export says what it wrote, as kubectl names the kinds, and a re-run that nothing changed;
// flags of other formats are refused.
func TestExportClusterProfile(t *testing.T) {
	w := pairedWithTools(t)
	edge := w.Cluster("edge")
	if _, err := edge.Clientset.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	args := []string{"export", "clusterprofile", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "fleet"}
	nothingWritten := func(what string) {
		t.Helper()
		if l, _ := edge.Clientset.CoreV1().Secrets("fleet").List(t.Context(), metav1.ListOptions{}); len(l.Items) != 0 {
			t.Errorf("%s wrote %d Secret(s)", what, len(l.Items))
		}
	}
	m := w.Mark("edge")
	r := w.Run(args...)
	if r.Code != 1 || r.Stdout != "" || !strings.Contains(r.Stderr, "FORMAT clusterprofile: this cluster serves no ClusterProfile API (clusterprofiles.multicluster.x-k8s.io, version v1alpha1 or v1alpha2): "+
		"its CRD is not installed here, and an export never installs it; install it first (config/crd/bases of sigs.k8s.io/cluster-inventory-api); nothing was written") {
		t.Errorf("export clusterprofile without the CRD: %s", r)
	}
	if writes := w.Writes("edge", m); len(writes) != 0 {
		t.Errorf("export clusterprofile without the CRD wrote %v", writes)
	}
	r = w.Run(append(args, "-o", "yaml")...)
	for _, want := range []string{"kind: List", "kind: Secret", "name: farm-kubeconfig", "kind: ClusterProfile", "apiVersion: multicluster.x-k8s.io/v1alpha1",
		"x-k8s.io/cluster-manager: kubectl-federate", "multicluster.x-k8s.io/inventory-member-id: farm", "accessProviders:", "name: kubeconfig-secretreader"} {
		if r.Code != 0 || !strings.Contains(r.Stdout, want) {
			t.Errorf("export clusterprofile -o yaml lacks %q: %s", want, r)
		}
	}
	nothingWritten("-o yaml")

	edge.Serve(formats.ClusterProfileGVR, formats.ClusterProfileKind, true)
	before := w.Snapshot("edge")
	r = w.Run(append(args, "--dry-run=client")...)
	for _, want := range []string{"# edge: would create secret/farm-kubeconfig in fleet", "# edge: would create clusterprofile/farm in fleet",
		"# edge: would update clusterprofile/farm in fleet" /* its status */} {
		if r.Code != 0 || !strings.Contains(r.Stdout, want) {
			t.Errorf("export clusterprofile --dry-run=client lacks %q: %s", want, r)
		}
	}
	if w.Snapshot("edge") != before {
		t.Error("a dry run changed the cluster")
	}

	if r := w.Run(args...); r.Code != 0 || r.Stdout != "secret/farm-kubeconfig created (namespace fleet)\nclusterprofile.multicluster.x-k8s.io/farm created (namespace fleet)\n" {
		t.Errorf("export clusterprofile: %s", r)
	}
	cp, err := edge.DynamicClient.Resource(formats.ClusterProfileGVR).Namespace("fleet").Get(t.Context(), "farm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if aps, _, _ := unstructured.NestedSlice(cp.Object, "status", "accessProviders"); len(aps) != 2 {
		t.Errorf("the ClusterProfile's access providers: %v", aps)
	}
	if r := w.Run(args...); r.Code != 0 || r.Stdout != "secret/farm-kubeconfig unchanged (namespace fleet)\nclusterprofile.multicluster.x-k8s.io/farm unchanged (namespace fleet)\n" {
		t.Errorf("export clusterprofile again: %s", r)
	}
	for _, bad := range [][]string{{"--exec"}, {"--key", "value"}} {
		if r := w.Run(append(args, bad...)...); r.Code != 1 || !strings.Contains(r.Stderr, bad[0]+": only format") {
			t.Errorf("export clusterprofile %v: %s", bad, r)
		}
	}
}

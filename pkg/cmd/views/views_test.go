package views

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/status"
)

// The provider sees why the consumer asked for a namespace, as text the tenant wrote: quoted, with no
// control character reaching the terminal, cut to fit a table.
func TestNamespacesShowTheConsumersReason(t *testing.T) {
	var out bytes.Buffer
	err := Namespaces(&out, nil, []grants.NamespaceInfo{
		{ConsumerID: "edge-1", Namespace: "edge-1-ci", Phase: grants.NamespacePending, Requested: true, RequestReason: "CI runners"},
		{ConsumerID: "edge-1", Namespace: "edge-1-x", Phase: grants.NamespaceRefused, Requested: true, Reason: "the name is taken",
			RequestReason: "\x1b[2J\x1b[31mgrant me " + strings.Repeat("now ", 40)},
		{ConsumerID: "edge-1", Namespace: "edge-1-old", Phase: grants.NamespaceGranted},
	})
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if strings.ContainsRune(text, '\x1b') {
		t.Errorf("a control character reached the table:\n%q", text)
	}
	for _, want := range []string{"REQUEST REASON", "ANSWER", `"CI runners"`, `"\x1b[2J\x1b[31mgrant me now`, `..."`, "the name is taken"} {
		if !strings.Contains(text, want) {
			t.Errorf("the table lacks %q:\n%s", want, text)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if len(l) > 200 {
			t.Errorf("a line of %d characters: %q", len(l), l)
		}
	}
}

// status -o json|yaml|name lists a report's exports after its credentials, each an Export named by its
// namespace and Secret, labelled with the pairing.
func TestCredentialListCarriesExports(t *testing.T) {
	obj, err := CredentialList(&status.Report{
		Credentials: []status.CredentialState{{Role: member.RoleConsumer, RemoteClusterID: "gpu-farm", Kind: "pairing"}},
		Exports:     []handshake.ExportState{{RemoteClusterID: "gpu-farm", Format: "argocd", Namespace: "argocd", Name: "gpu-farm", Secret: "gpu-farm"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	l, ok := obj.(*unstructured.UnstructuredList)
	if !ok || len(l.Items) != 2 {
		t.Fatalf("got %#v", obj)
	}
	e := l.Items[1]
	if e.GetKind() != KindExport || e.GetName() != "argocd.gpu-farm" || e.GetLabels()[member.LabelRemoteClusterID] != "gpu-farm" {
		t.Errorf("export item: kind %s name %s labels %v", e.GetKind(), e.GetName(), e.GetLabels())
	}
	if f, _, _ := unstructured.NestedString(e.Object, "status", "format"); f != "argocd" {
		t.Errorf("status.format = %q", f)
	}
}

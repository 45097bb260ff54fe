package views

import (
	"bytes"
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// The provider sees why the consumer asked for a namespace, as text the tenant wrote: quoted, with no
// control character reaching the terminal, cut to fit a table.
func TestNamespacesShowTheConsumersReason(t *testing.T) {
	var out bytes.Buffer
	err := Namespaces(&out, nil, []handshake.NamespaceInfo{
		{ConsumerID: "edge-1", Namespace: "edge-1-ci", Phase: handshake.NamespacePending, Requested: true, RequestReason: "CI runners"},
		{ConsumerID: "edge-1", Namespace: "edge-1-x", Phase: handshake.NamespaceRefused, Requested: true, Reason: "the name is taken",
			RequestReason: "\x1b[2J\x1b[31mgrant me " + strings.Repeat("now ", 40)},
		{ConsumerID: "edge-1", Namespace: "edge-1-old", Phase: handshake.NamespaceGranted},
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

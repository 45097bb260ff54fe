package cmdutil

import (
	"bytes"
	"strings"
	"testing"
)

// printable redacts data and stringData but keeps metadata whole. A Secret once written with
// `kubectl apply` (e.g. `kubectl federate export ... -o yaml | kubectl apply -f -`, the documented way
// where Admiralty is elsewhere) carries its whole manifest, values included, in the
// kubectl.kubernetes.io/last-applied-configuration annotation: a dry run that updates or deletes it
// prints the credential.
func TestPrintableHidesLastAppliedOfSecrets(t *testing.T) {
	const secret = "c2VjcmV0LWtleS1tYXRlcmlhbA==" // base64("secret-key-material")
	lastApplied := `{"apiVersion":"v1","data":{"config":"` + secret + `"},"kind":"Secret","metadata":{"name":"provider","namespace":"argocd"}}`
	for _, action := range []string{"update", "delete"} {
		d := &DryRun{Strategy: DryRunClient}
		d.record(DryRunRecord{Cluster: "edge", Action: action, Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": "provider", "namespace": "argocd",
				"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": lastApplied}},
			"data": map[string]any{"config": secret},
		}})
		var out bytes.Buffer
		if err := d.Print(&out); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), secret) {
			t.Errorf("a dry run %s of a Secret prints its value through last-applied-configuration:\n%s", action, out.String())
		}
	}
}

package dryrun

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
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
		d := &Recorder{Strategy: Client}
		d.record(Record{Cluster: "edge", Action: action, Object: map[string]any{
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

// Managed fields are the server's bookkeeping: a dry run prints the object without them, as kubectl does.
func TestPrintHidesManagedFields(t *testing.T) {
	d := &Recorder{Strategy: Client}
	d.record(Record{Cluster: "edge", Action: "patch", Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "n", "managedFields": []any{map[string]any{"manager": "kubectl-federate"}}},
	}})
	var out bytes.Buffer
	if err := d.Print(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "managedFields") || !strings.Contains(out.String(), "name: c") {
		t.Errorf("printed:\n%s", out.String())
	}
}

// The one rule of what a dry run holds back: writes that store something, never reads, reviews or
// requests that are server-side dry runs already.
func TestIsWrite(t *testing.T) {
	pods := Target{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: "n"}
	sar := Target{GVR: schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "subjectaccessreviews"}}
	for _, c := range []struct {
		w    Write
		want bool
	}{
		{Write{Target: pods, Method: http.MethodGet}, false},
		{Write{Target: pods, Method: http.MethodPost}, true},
		{Write{Target: pods, Method: http.MethodPut}, true},
		{Write{Target: pods, Method: http.MethodPatch}, true},
		{Write{Target: pods, Method: http.MethodDelete}, true},
		{Write{Target: pods, Method: http.MethodPost, Query: url.Values{"dryRun": {"All"}}}, false},
		{Write{Target: sar, Method: http.MethodPost}, false},
	} {
		if got := IsWrite(c.w); got != c.want {
			t.Errorf("IsWrite(%s %s %v) = %v", c.w.Method, c.w.Target.GVR.Resource, c.w.Query, got)
		}
	}
}

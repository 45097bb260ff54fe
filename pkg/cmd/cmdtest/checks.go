package cmdtest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Expect checks a command's exit code, that stderr holds every want and stdout every out, and that the
// named clusters were not written to since the Marks.
func Expect(t *testing.T, w *World, r Result, code int, stdout []string, stderr []string, unchanged map[string]Mark) {
	t.Helper()
	if r.Code != code {
		t.Errorf("exit %d, want %d:\n%s", r.Code, code, r)
	}
	for _, s := range stdout {
		if !strings.Contains(r.Stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, r)
		}
	}
	for _, s := range stderr {
		if !strings.Contains(r.Stderr, s) {
			t.Errorf("stderr lacks %q:\n%s", s, r)
		}
	}
	if code != 0 && strings.Count(r.Stderr, "error: ") != 1 {
		t.Errorf("want exactly one error line:\n%s", r)
	}
	for name, mark := range unchanged {
		if writes := w.Writes(name, mark); len(writes) > 0 {
			t.Errorf("%s was changed: %v", name, writes)
		}
	}
}

// Marks are the named clusters' marks now: what each was sent is read since them.
func Marks(w *World, names ...string) map[string]Mark {
	m := map[string]Mark{}
	for _, n := range names {
		m[n] = w.Mark(n)
	}
	return m
}

// PairedWorld is two fake clusters, edge (consumer) and farm (provider), paired by the real authenticate
// command through the test factory, and the extra clusters, never initialized.
func PairedWorld(t *testing.T, extra ...string) *World {
	t.Helper()
	w := NewWorld(t, append([]string{"edge", "farm"}, extra...)...)
	r := w.Run("authenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "farm", "--cluster-id", "edge", "--remote-cluster-id", "farm")
	if r.Code != 0 {
		t.Fatalf("authenticate: %s", r)
	}
	return w
}

// KeyMaterial tells whether s holds a private key or a kubeconfig's key, as text or base64 (a Secret's
// data, itself perhaps a kubeconfig with base64 fields).
func KeyMaterial(s string) bool {
	if strings.Contains(s, "PRIVATE KEY") || strings.Contains(s, "client-key-data") {
		return true
	}
	for _, run := range base64Run.FindAllString(s, -1) {
		if b, err := base64.StdEncoding.DecodeString(run); err == nil && KeyMaterial(string(b)) {
			return true
		}
	}
	return false
}

// Documents reads a dry run's stdout as YAML Documents, failing the test if it is not one YAML stream,
// and returns "kind/name" of each.
func Documents(t *testing.T, out string) []string {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(out)), 4096)
	var refs []string
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return refs
		}
		if err != nil {
			t.Fatalf("stdout is not a YAML stream: %v\n%s", err, out)
		}
		if obj == nil {
			continue
		}
		meta, _ := obj["metadata"].(map[string]any)
		refs = append(refs, fmt.Sprintf("%s/%v", obj["kind"], meta["name"]))
	}
}

var base64Run = regexp.MustCompile(`[A-Za-z0-9+/]{40,}={0,2}`)

package cmdtest

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Output decoding.

// WantStdout is a stdout check for an exact text, whose {key}s are the world's values.
func WantStdout(want string) func(t *testing.T, e *Env, out string) {
	return func(t *testing.T, e *Env, out string) {
		t.Helper()
		if w := e.Expand([]string{want})[0]; out != w {
			t.Errorf("stdout %q, want %q", out, w)
		}
	}
}

// JSONObject decodes stdout as one JSON object, failing the test if it is not one.
func JSONObject(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	return m
}

// YAMLObject decodes stdout as one YAML object, failing the test if it is not one.
func YAMLObject(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(out), &m); err != nil || m == nil {
		t.Fatalf("stdout is not a YAML object: %v\n%s", err, out)
	}
	return m
}

// FieldAt is the value at a dotted path (items.0.status.role) of a decoded object, nil if absent; `\.`
// is a dot within a key (metadata.labels.federate\.dev/role).
func FieldAt(obj any, path string) any {
	for _, k := range strings.Split(strings.ReplaceAll(path, `\.`, "\x00"), ".") {
		k = strings.ReplaceAll(k, "\x00", ".")
		switch o := obj.(type) {
		case map[string]any:
			obj = o[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(o) {
				return nil
			}
			obj = o[i]
		default:
			return nil
		}
	}
	return obj
}

// WantFields checks fields of a decoded object: path -> the value's text (a string as it is, anything
// else as JSON: 10, true, ["a","b"]; <absent> for no value).
func WantFields(t *testing.T, obj map[string]any, want map[string]string) {
	t.Helper()
	for path, w := range want {
		got := FieldAt(obj, path)
		var s string
		switch v := got.(type) {
		case string:
			s = v
		case nil:
			s = "<absent>"
		default:
			b, _ := json.Marshal(v)
			s = string(b)
		}
		if s != w {
			t.Errorf("%s = %s, want %s", path, s, w)
		}
	}
}

// ListNames are the metadata.name of a v1 List's items.
func ListNames(t *testing.T, list map[string]any) []string {
	t.Helper()
	if list["apiVersion"] != "v1" || list["kind"] != "List" {
		t.Fatalf("not a v1 List: %v %v", list["apiVersion"], list["kind"])
	}
	items, _ := list["items"].([]any)
	names := []string{}
	for i := range items {
		name, _ := FieldAt(list, "items."+strconv.Itoa(i)+".metadata.name").(string)
		names = append(names, name)
	}
	return names
}

// headerCell is a column's header: words with single spaces between them (tabwriter pads with three).
var headerCell = regexp.MustCompile(`\S+( \S+)*`)

// TableOf reads a table printed with tabwriter: each row's cells by the header's columns (a header may
// hold a space: POD SECURITY). It fails the test when the first line is not the header wanted.
func TableOf(t *testing.T, out string, header ...string) []map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	cols := headerCell.FindAllStringIndex(lines[0], -1)
	var names []string
	for _, c := range cols {
		names = append(names, lines[0][c[0]:c[1]])
	}
	if !slices.Equal(names, header) {
		t.Fatalf("table header %q, want %q:\n%s", names, header, out)
	}
	var rows []map[string]string
	for _, l := range lines[1:] {
		row := map[string]string{}
		for i, c := range cols {
			end := len(l)
			if i+1 < len(cols) {
				end = min(cols[i+1][0], len(l))
			}
			if c[0] < len(l) {
				row[names[i]] = strings.TrimSpace(l[c[0]:end])
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// WantRow checks cells of a table row.
func WantRow(t *testing.T, row map[string]string, want map[string]string) {
	t.Helper()
	for col, w := range want {
		if row[col] != w {
			t.Errorf("column %s = %q, want %q (row %v)", col, row[col], w, row)
		}
	}
}

// KubeconfigOf decodes a printed kubeconfig and checks what every one must be: a Config whose current
// context reaches the server, in the namespace, as a user holding a key.
func KubeconfigOf(t *testing.T, out, server, namespace string) map[string]any {
	t.Helper()
	kc := YAMLObject(t, out)
	WantFields(t, kc, map[string]string{"kind": "Config", "clusters.0.cluster.server": server, "contexts.0.context.namespace": namespace})
	if FieldAt(kc, "current-context") != FieldAt(kc, "contexts.0.name") {
		t.Errorf("current-context %v is not the context %v", FieldAt(kc, "current-context"), FieldAt(kc, "contexts.0.name"))
	}
	if key, _ := FieldAt(kc, "users.0.user.client-key-data").(string); key == "" {
		t.Errorf("the kubeconfig holds no client key:\n%s", out)
	}
	return kc
}

package printers

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func item(name string, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Thing", "status": status}}
	u.SetName(name)
	return u
}

// --sort-by orders numbers by value (10 after 9), puts items missing the field first, keeps equal ones
// in the command's order, and refuses a path no item has.
func TestOrderSortsByJSONPath(t *testing.T) {
	items := []*unstructured.Unstructured{
		item("ten", map[string]any{"n": int64(10), "s": "b"}),
		item("none", map[string]any{}),
		item("nine", map[string]any{"n": int64(9), "s": "a"}),
		item("ten-again", map[string]any{"n": int64(10), "s": "c"}),
	}
	names := func(order []int) []string {
		var out []string
		for _, i := range order {
			out = append(out, items[i].GetName())
		}
		return out
	}
	for _, c := range []struct {
		path string
		want []string
	}{
		{".status.n", []string{"none", "nine", "ten", "ten-again"}},
		{"{.status.s}", []string{"none", "nine", "ten", "ten-again"}},
		{"metadata.name", []string{"nine", "none", "ten", "ten-again"}},
	} {
		l := &ListFlags{SortBy: c.path}
		if err := l.validate(); err != nil {
			t.Fatal(err)
		}
		order, err := l.Order(items)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(order); !equal(got, c.want) {
			t.Errorf("--sort-by %s: %v, want %v", c.path, got, c.want)
		}
	}
	l := &ListFlags{SortBy: ".status.missing"}
	if err := l.validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Order(items); err == nil {
		t.Error("a path no item has: no error")
	}
	if order, err := (&ListFlags{}).Order(items); order != nil || err != nil {
		t.Errorf("no --sort-by: %v, %v; want the command's order", order, err)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// custom-columns prints a List's items, <none> for what an item lacks, lists joined by commas, escaped
// cells; the file form reads its headers and paths from two lines; --no-headers drops the header.
func TestCustomColumns(t *testing.T) {
	list := List([]*unstructured.Unstructured{
		item("a", map[string]any{"tags": []any{"x", "y"}, "note": "tab\there"}),
		item("b", map[string]any{}),
	})
	print := func(format string, noHeaders bool) string {
		t.Helper()
		p, err := customColumnsPrinter(format, noHeaders)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := p.PrintObj(list, &b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	want := "NAME   TAGS     NOTE\n" + "a      x,y      tab\\there\n" + "b      <none>   <none>\n"
	if got := print("custom-columns=NAME:.metadata.name,TAGS:.status.tags[*],NOTE:{.status.note}", false); got != want {
		t.Errorf("custom-columns:\n%q\nwant\n%q", got, want)
	}
	if got := print("custom-columns=NAME:.metadata.name", true); got != "a\nb\n" {
		t.Errorf("--no-headers: %q", got)
	}
	file := filepath.Join(t.TempDir(), "cols")
	if err := os.WriteFile(file, []byte("NAME  TAGS   NOTE\n.metadata.name .status.tags[*] {.status.note}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := print("custom-columns-file="+file, false); got != want {
		t.Errorf("custom-columns-file:\n%q\nwant\n%q", got, want)
	}
	for _, bad := range []string{"custom-columns=", "custom-columns=NAME", "custom-columns=:.a", "custom-columns=N:{.a", "custom-columns-file=/nonexistent"} {
		if _, err := customColumnsPrinter(bad, false); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

package printers

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestGoTemplateFormats: every Go template format of kubectl prints through our executor, from the
// format's value, from --template, and from a file; a missing key is an error only when asked for.
func TestGoTemplateFormats(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.tmpl")
	if err := os.WriteFile(file, []byte(`{{.metadata.name}}/{{.status.n}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	obj, err := Object("v1", "Thing", "one", "", nil, map[string]any{"n": 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-o", "go-template={{.metadata.name}}/{{.status.n}}"},
		{"-o", "template={{.metadata.name}}/{{.status.n}}"},
		{"--template", "{{.metadata.name}}/{{.status.n}}"},
		{"-o", "go-template", "--template", "{{.metadata.name}}/{{.status.n}}"},
		{"-o", "go-template-file=" + file},
		{"-o", "templatefile", "--template", file},
	} {
		f := parse(t, args...)
		var out bytes.Buffer
		if err := f.Print(&out, obj); err != nil || out.String() != "one/3" {
			t.Errorf("%v: printed %q, %v; want one/3", args, out.String(), err)
		}
	}
	var out bytes.Buffer
	if err := parse(t, "-o", "go-template={{.nope}}").Print(&out, obj); err != nil || out.String() != "<no value>" {
		t.Errorf("a missing key printed %q, %v", out.String(), err)
	}
	out.Reset()
	err = parse(t, "-o", "go-template={{.nope}}", "--allow-missing-template-keys=false").Print(&out, obj)
	if err == nil || !strings.Contains(err.Error(), `map has no entry for key "nope"`) || out.Len() != 0 {
		t.Errorf("a missing key with --allow-missing-template-keys=false: %q, %v", out.String(), err)
	}
	for args, want := range map[string]string{
		"-o go-template":                        "template format specified but no template given",
		"-o go-template={{.x":                   "error parsing template {{.x",
		"-o go-template-file=" + file + ".none": "error reading --template",
	} {
		f := parse(t, strings.SplitN(args, " ", 2)...)
		if err := f.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}

func parse(t *testing.T, args ...string) *Flags {
	t.Helper()
	cmd := &cobra.Command{Use: "x"}
	f := AddFlags(cmd, "", "a line", "wide")
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return f
}

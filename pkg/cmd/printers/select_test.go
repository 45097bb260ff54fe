package printers

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// kubectlAllowed is -o's list of kubectl's formats, in the order kubectl's help lists them.
const kubectlAllowed = "json, yaml, kyaml, name, go-template, go-template-file, template, templatefile, jsonpath, jsonpath-as-json, jsonpath-file"

// A thing with managedFields, which json and yaml leave out as kubectl does without --show-managed-fields.
func thing(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	u, err := Object("federate.dev/v1alpha1", "Thing", "one", "ns", map[string]string{"a": "b"}, map[string]any{"n": 3, "tags": []string{"x", "y"}})
	if err != nil {
		t.Fatal(err)
	}
	u.SetManagedFields(nil)
	u.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "kubectl"}}
	return u
}

// Each format of kubectl prints through its printer, exactly as kubectl prints it.
func TestEachFormatPrints(t *testing.T) {
	dir := t.TempDir()
	jsonPathFile := filepath.Join(dir, "jp")
	if err := os.WriteFile(jsonPathFile, []byte(`{.status.n}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", "json"}, `{
    "apiVersion": "federate.dev/v1alpha1",
    "kind": "Thing",
    "metadata": {
        "labels": {
            "a": "b"
        },
        "name": "one",
        "namespace": "ns"
    },
    "status": {
        "n": 3,
        "tags": [
            "x",
            "y"
        ]
    }
}
`},
		{[]string{"-o", "yaml"}, `apiVersion: federate.dev/v1alpha1
kind: Thing
metadata:
  labels:
    a: b
  name: one
  namespace: ns
status:
  "n": 3
  tags:
  - x
  - "y"
`},
		{[]string{"-o", "kyaml"}, `---
{
  apiVersion: "federate.dev/v1alpha1",
  kind: "Thing",
  metadata: {
    labels: {
      a: "b",
    },
    name: "one",
    namespace: "ns",
  },
  status: {
    "n": 3,
    tags: [
      "x",
      "y",
    ],
  },
}
`},
		{[]string{"-o", "name"}, "thing.federate.dev/one\n"},
		{[]string{"-o", "jsonpath={.status.tags[*]}"}, "x y"},
		{[]string{"-o", "jsonpath", "--template", "{.metadata.name}"}, "one"},
		{[]string{"-o", "jsonpath-file=" + jsonPathFile}, "3"},
		{[]string{"-o", "jsonpath-file", "--template", jsonPathFile}, "3"},
		{[]string{"-o", "jsonpath-as-json={.status.tags}"}, "[\n    [\n        \"x\",\n        \"y\"\n    ]\n]\n"},
		{[]string{"-o", "go-template={{.metadata.namespace}}"}, "ns"},
		{[]string{"--template", "{{.kind}}"}, "Thing"},
	} {
		var out bytes.Buffer
		if err := parse(t, c.args...).Print(&out, thing(t)); err != nil || out.String() != c.want {
			t.Errorf("%v: printed\n%s(%v), want\n%s", c.args, out.String(), err, c.want)
		}
	}
}

// -o and its completion offer kubectl's formats, then custom columns where the command lists, then the
// command's own forms; a format none of them is, or a value after "=" on a format that takes none, is
// refused when parsed.
func TestAllowedFormats(t *testing.T) {
	cmd := &cobra.Command{Use: "x"}
	f := AddFlags(cmd, "", "a table", "wide")
	if got := strings.Join(f.Allowed(), ", "); got != kubectlAllowed+", wide" {
		t.Errorf("allowed: %s", got)
	}
	AddListFlags(cmd, f)
	want := kubectlAllowed + ", custom-columns, custom-columns-file, wide"
	if got := strings.Join(f.Allowed(), ", "); got != want {
		t.Errorf("allowed with the listing flags: %s", got)
	}
	if got := cmd.Flags().Lookup("output").Usage; got != "Output format (default: a table). One of: ("+want+")" {
		t.Errorf("-o help: %s", got)
	}
	complete, ok := cmd.GetFlagCompletionFunc("output")
	if !ok {
		t.Fatal("-o has no completion")
	}
	if got, dir := complete(cmd, nil, ""); strings.Join(got, ", ") != want || dir != cobra.ShellCompDirectiveNoFileComp {
		t.Errorf("-o completes %v (%v)", got, dir)
	}
	for _, bad := range []string{"xml", "JSON", "name=x", "yaml=x", "wide=x", "custom"} {
		err := cmd.Flags().Set("output", bad)
		if err == nil || !strings.HasSuffix(err.Error(), ": must be one of "+strings.Join(f.Allowed(), ", ")) {
			t.Errorf("-o %s: %v", bad, err)
		}
	}
}

// --template, --allow-missing-template-keys and -o's human forms are kubectl's: --template alone means
// go-template (also where the default is yaml); a human form has no printer.
func TestFormatChoice(t *testing.T) {
	cmd := &cobra.Command{Use: "x"}
	f := AddFlags(cmd, "yaml", "")
	if err := cmd.ParseFlags([]string{"--template", "{{.kind}}"}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := f.Print(&out, thing(t)); err != nil || out.String() != "Thing" {
		t.Errorf("--template with the default yaml: %q, %v", out.String(), err)
	}
	for args, want := range map[string]string{
		"":                     "",
		"-o wide":              "wide",
		"--template {{.kind}}": "go-template",
		"-o jsonpath={.a}":     "jsonpath",
	} {
		f := parse(t, strings.Fields(args)...)
		if f.Format() != want {
			t.Errorf("%s: format %q, want %q", args, f.Format(), want)
		}
		if human := want == "" || want == "wide"; f.Human() != human || f.Validate() != nil {
			t.Errorf("%s: human %v, validate %v", args, f.Human(), f.Validate())
		}
	}
	if f := parse(t); f.allowMissingKeys != true || f.template != "" {
		t.Errorf("defaults: --allow-missing-template-keys=%v --template=%q", f.allowMissingKeys, f.template)
	}
}

// The errors are kubectl's words, after the flags that caused them.
func TestFormatErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", "jsonpath"}, "-o, --output jsonpath: template format specified but no template given"},
		{[]string{"-o", "templatefile"}, "-o, --output templatefile: template format specified but no template given"},
		{[]string{"-o", "jsonpath={.a"}, "-o, --output jsonpath={.a: error parsing jsonpath {.a, unclosed action"},
		{[]string{"-o", "jsonpath", "--template", "{.a"}, "-o, --output jsonpath --template {.a: error parsing jsonpath {.a, unclosed action"},
		{[]string{"-o", "go-template={{.a"}, "-o, --output go-template={{.a: error parsing template {{.a, template: output:1: unclosed action"},
		{[]string{"-o", "jsonpath-file=" + missing}, "-o, --output jsonpath-file=" + missing + ": error reading --template " + missing + ", open " + missing + ": no such file or directory"},
		{[]string{"-o", "go-template-file", "--template", missing}, "-o, --output go-template-file --template " + missing + ": error reading --template " + missing + ", open " + missing + ": no such file or directory"},
		// --template beside a format that carries its own: no printer takes both, as in kubectl.
		{[]string{"-o", "jsonpath={.a}", "--template", "{.b}"}, `-o, --output jsonpath={.a} --template {.b}: unable to match a printer suitable for the output format "jsonpath={.a}", allowed formats are: go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,kyaml,name,template,templatefile,yaml`},
		{[]string{"-o", "go-template"}, "-o, --output go-template: template format specified but no template given"},
	} {
		f := parse(t, c.args...)
		if err := f.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("%v: %v\nwant %s", c.args, err, c.want)
		}
	}
}

// A key the template names that the object lacks prints nothing, or fails with
// --allow-missing-template-keys=false, printing nothing at all.
func TestMissingKeys(t *testing.T) {
	for _, c := range []struct {
		format, lenient, strict string
	}{
		{"jsonpath={.status.nope}", "", `-o jsonpath: error executing jsonpath "{.status.nope}": Error executing template: nope is not found.`},
		{"go-template={{.status.nope}}", "<no value>", `-o go-template: error executing template "{{.status.nope}}": template: output:1:9: executing "output" at <.status.nope>: map has no entry for key "nope"`},
	} {
		var out bytes.Buffer
		if err := parse(t, "-o", c.format).Print(&out, thing(t)); err != nil || out.String() != c.lenient {
			t.Errorf("%s: %q, %v; want %q", c.format, out.String(), err, c.lenient)
		}
		out.Reset()
		err := parse(t, "-o", c.format, "--allow-missing-template-keys=false").Print(&out, thing(t))
		if err == nil || !strings.HasPrefix(err.Error(), c.strict) || out.Len() != 0 {
			t.Errorf("%s --allow-missing-template-keys=false: %q, %v; want %s", c.format, out.String(), err, c.strict)
		}
	}
}

// A format no step knows is passed along to the next; the text is kubectl's, its formats sorted, and
// the error's own list is left as it was.
func TestNoPrinterError(t *testing.T) {
	allowed := []string{"yaml", "json"}
	err := &noPrinterError{format: "xml", allowed: allowed}
	if got := err.Error(); got != `unable to match a printer suitable for the output format "xml", allowed formats are: json,yaml` {
		t.Errorf("text: %s", got)
	}
	if allowed[0] != "yaml" {
		t.Error("Error sorted the caller's list")
	}
	for _, format := range []string{"", "xml", "custom-columns"} {
		if _, err := jsonYAMLPrinter(format); !passed(err) {
			t.Errorf("json/yaml step on %q: %v", format, err)
		}
	}
	if _, err := namePrinter("json"); !passed(err) {
		t.Errorf("name step on json: %v", err)
	}
	f := parse(t)
	for _, format := range []string{"", "json", "go-template={{.a}}"} {
		if _, err := f.jsonPathPrinter(format); !passed(err) {
			t.Errorf("jsonpath step on %q: %v", format, err)
		}
	}
	if _, err := f.goTemplatePrinter("jsonpath={.a}"); !passed(err) {
		t.Errorf("go-template step on jsonpath: %v", err)
	}
	if _, err := f.jsonPathPrinter("jsonpath"); err == nil || passed(err) {
		t.Errorf("jsonpath step on its own format without a template: %v", err)
	}
}

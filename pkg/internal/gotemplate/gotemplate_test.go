package gotemplate

import (
	"bytes"
	"strings"
	"testing"
	"text/template"

	"k8s.io/apimachinery/pkg/util/json"
)

// The document the templates run on, decoded as kubectl's printer decodes it (whole numbers as int64).
const doc = `{
  "apiVersion": "v1", "kind": "List",
  "metadata": {"name": "m1", "labels": {"b": "2", "a": "1"}, "empty": {}, "null": null},
  "items": [
    {"metadata": {"name": "one"}, "spec": {"replicas": 3, "ratio": 0.5, "on": true, "tags": ["x", "y"]}},
    {"metadata": {"name": "two"}, "spec": {"replicas": 0, "ratio": 1.0, "on": false, "tags": []}}
  ],
  "data": {"key": "aGVsbG8="},
  "big": 1e21, "neg": -4, "str": "text", "list": [1, 2, 3], "nested": [[1, 2], [3]]
}`

// templates cover the language: text, actions, pipelines, variables, if/with/range with else, break and
// continue, define/template/block, every builtin and kubectl's functions, and the failures of each.
var templates = []string{
	`plain text`,
	`{{.kind}} {{.metadata.name}}`,
	`{{.missing}}|{{.metadata.missing}}|{{.missing.deeper}}|{{.metadata.null}}`,
	`{{.metadata.null.x}}`,
	`{{.str.x}}`,
	`{{.metadata}}`,
	`{{.items}}`,
	`{{.big}} {{.neg}} {{.list}} {{.nested}} {{ .metadata.empty }}`,
	`{{range .items}}{{.metadata.name}}={{.spec.replicas}};{{end}}`,
	`{{range $i, $e := .items}}{{$i}}:{{$e.metadata.name}} {{end}}`,
	`{{range $e := .list}}{{$e}}{{end}}`,
	`{{range $k, $v := .metadata.labels}}{{$k}}={{$v}},{{end}}`,
	`{{range .metadata.labels}}{{.}}{{end}}`,
	`{{range .missing}}x{{else}}none{{end}}`,
	`{{range .metadata.empty}}x{{else}}empty{{end}}`,
	`{{range .str}}x{{end}}`,
	`{{range 3}}{{.}}{{end}}`,
	`{{range $i, $e := 3}}{{.}}{{end}}`,
	`{{range .list}}{{if eq . 2}}{{continue}}{{end}}{{if eq . 3}}{{break}}{{end}}{{.}}{{end}}`,
	`{{$x := 1}}{{range .list}}{{$x = .}}{{end}}{{$x}}`,
	`{{if .items}}yes{{else}}no{{end}} {{if .metadata.empty}}yes{{else if .str}}str{{else}}no{{end}}`,
	`{{with .metadata.labels}}{{.a}}{{else}}none{{end}} {{with .missing}}x{{else with .str}}{{.}}{{end}}`,
	`{{with $x := .str}}{{$x}}{{end}}`,
	`{{define "row"}}[{{.metadata.name}}]{{end}}{{range .items}}{{template "row" .}}{{end}}`,
	`{{block "b" .str}}({{.}}){{end}}`,
	`{{template "nope"}}`,
	`{{len .items}} {{len .str}} {{len .metadata.labels}}`,
	`{{len .neg}}`,
	`{{len .missing}}`,
	`{{index .items 1 "metadata" "name"}} {{index .metadata.labels "a"}} {{index .metadata.labels "zz"}}`,
	`{{index .list 5}}`,
	`{{index .missing 0}}`,
	`{{index .str 0}}`,
	`{{index .list "a"}}`,
	`{{slice .list 1}} {{slice .list 1 2}} {{slice .str 1 3}} {{slice .list 0 1 2}}`,
	`{{slice .list 2 1}}`,
	`{{slice .neg 1}}`,
	`{{eq .kind "List"}} {{eq .neg -4}} {{eq .items.x 1}} {{ne .str "text"}} {{eq .str "a" "text"}}`,
	`{{eq .neg 1.5}}`,
	`{{eq .missing .alsomissing}} {{eq .metadata.null .missing}}`,
	`{{eq .list .list}}`,
	`{{eq .metadata .list}}`,
	`{{eq .str}}`,
	`{{lt 1 2}} {{le 2 2}} {{gt .neg 1}} {{ge "b" "a"}} {{lt 1.5 2.5}} {{lt .big 1e22}}`,
	`{{lt true false}}`,
	`{{lt 1 "a"}}`,
	`{{lt .list 1}}`,
	`{{and .str .neg}} {{and .str .missing "x"}} {{or .missing "" .str}} {{or .missing}} {{not .str}} {{not .missing}}`,
	`{{"x" | and .str}} {{"" | or .missing}}`,
	`{{print .str 1 2.5 true .missing}} {{printf "%s-%d-%v-%05.1f" .str .neg .list 3.14159}} {{println .str}}`,
	`{{printf "%q" .metadata.name | printf "%s!"}}`,
	`{{html "<a&b>"}} {{js "it's \"q\""}} {{urlquery "a b&c"}} {{.str | html}}`,
	`{{exists . "metadata" "name"}} {{exists . "metadata" "zz"}} {{exists . "items" 1 "spec"}} {{exists . "items" 9}} {{exists .list "a"}}`,
	`{{base64decode .data.key}}`,
	`{{base64decode "%%%"}}`,
	`{{base64decode 5}}`,
	`{{.str | len}} {{.list | len | printf "%d items"}}`,
	`{{(index .items 0).metadata.name}} {{(.metadata).labels.a}}`,
	`{{$.kind}}{{range .items}}{{$.kind}}{{end}}`,
	`{{$ := 1}}`,
	`{{1}} {{1.0}} {{1e3}} {{0x10}} {{'a'}} {{1i}} {{true}} {{"s"}} {{.}}`,
	`{{9223372036854775807}}`,
	`{{18446744073709551615}}`,
	`{{nil}}`,
	`{{.str 1}}`,
	`{{"x" | .str}}`,
	`{{1 | 2}}`,
	`{{call .str}}`,
	`{{call .missing}}`,
	`{{printf}}`,
	`{{not}}`,
	`{{not 1 2}}`,
	`{{index}}`,
	`{{if .neg}}{{$y := 2}}{{$y}}{{end}}`,
	`{{/* a comment */}}x{{- " trimmed " -}} y`,
	`{{range .items}}{{range .spec.tags}}{{.}}{{end}}{{end}}`,
	`{{range $i, $t := (index .items 0).spec.tags}}{{$i}}{{$t}}{{end}}`,
	`{{len (slice .list 1)}}`,
	`{{if and (gt (len .items) 1) (eq (index .items 0).spec.on true)}}ok{{end}}`,
	`{{.items.metadata}}`,
	`{{.neg.x}}`,
	`{{nil.x}}`,
	`{{(1).x}}`,
}

var options = []string{"missingkey=default", "missingkey=zero", "missingkey=error"}

// TestMatchesTextTemplate runs every template on the document with text/template (in the test binary
// only) and with this package, under each missingkey option: the same output, or both failing with the
// same message.
func TestMatchesTextTemplate(t *testing.T) {
	var data map[string]any
	if err := json.Unmarshal([]byte(doc), &data); err != nil {
		t.Fatal(err)
	}
	for _, text := range templates {
		for _, opt := range options {
			want, wantErr := runStd(text, opt, data)
			got, gotErr := run(text, opt, data)
			if (wantErr == nil) != (gotErr == nil) {
				t.Errorf("%s %s: error %v, text/template's %v", text, opt, gotErr, wantErr)
				continue
			}
			if wantErr != nil {
				if gotErr.Error() != wantErr.Error() {
					t.Errorf("%s %s:\n got error %v\nwant error %v", text, opt, gotErr, wantErr)
				}
				continue
			}
			if got != want {
				t.Errorf("%s %s:\n got %q\nwant %q", text, opt, got, want)
			}
		}
	}
}

func runStd(text, opt string, data any) (string, error) {
	tm, err := template.New("output").Funcs(KubectlFuncs).Parse(text)
	if err != nil {
		return "", err
	}
	tm.Option(opt)
	var b bytes.Buffer
	err = tm.Execute(&b, data)
	return b.String(), err
}

func run(text, opt string, data any) (string, error) {
	tm := New("output", KubectlFuncs)
	if err := tm.Parse(text); err != nil {
		return "", err
	}
	tm.Option(opt)
	var b bytes.Buffer
	err := tm.Execute(&b, data)
	return b.String(), err
}

// TestParseErrors: a template that does not parse is refused with text/template's message.
func TestParseErrors(t *testing.T) {
	for _, text := range []string{`{{.x`, `{{nofunc}}`, `{{end}}`, `{{range}}{{end}}`, `{{define "a"}}x{{end}}{{define "a"}}y{{end}}`} {
		_, wantErr := runStd(text, options[0], nil)
		_, gotErr := run(text, options[0], nil)
		if wantErr == nil || gotErr == nil || !strings.EqualFold(gotErr.Error(), wantErr.Error()) {
			t.Errorf("%s: error %v, text/template's %v", text, gotErr, wantErr)
		}
	}
}

// TestWriteError: a failing writer's error is returned as it is.
func TestWriteError(t *testing.T) {
	tm := New("output", nil)
	if err := tm.Parse(`text`); err != nil {
		t.Fatal(err)
	}
	if err := tm.Execute(failWriter{}, nil); err == nil || err.Error() != "disk full" {
		t.Fatalf("error %v, want disk full", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errFull }

var errFull = &fullError{}

type fullError struct{}

func (*fullError) Error() string { return "disk full" }

// FuzzMatchesTextTemplate: any template text gives what text/template gives on the document (output, or
// the error's message), under missingkey=default and missingkey=error.
func FuzzMatchesTextTemplate(f *testing.F) {
	for _, text := range templates {
		f.Add(text, false)
	}
	var data map[string]any
	if err := json.Unmarshal([]byte(doc), &data); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string, strict bool) {
		if strings.Contains(text, "range") && strings.Contains(text, "template") {
			t.Skip() // recursion is limited by depth, not time: a fuzzer's nested templates can run for hours
		}
		opt := options[0]
		if strict {
			opt = options[2]
		}
		want, wantErr := runStd(text, opt, data)
		got, gotErr := run(text, opt, data)
		if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
			t.Fatalf("%q: error %v, text/template's %v", text, gotErr, wantErr)
		}
		if got != want {
			t.Fatalf("%q: got %q, text/template's %q", text, got, want)
		}
	})
}

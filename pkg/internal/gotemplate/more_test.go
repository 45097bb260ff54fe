package gotemplate

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"text/template"
)

// moreTemplates reach the comparisons, index and slice rules, map keys and truth values that the JSON
// document alone does not: they run on goData, whose values have types a JSON decoder never makes.
var moreTemplates = []string{
	`{{ne .str "text"}} {{ne .neg 1}} {{ne 1i 2i}} {{ne true false}}`,
	`{{ne .str 1}}`,
	`{{eq 1i 1i}} {{eq .u 7}} {{eq 7 .u}} {{eq -1 .u}} {{eq .u .u}} {{eq true true}} {{eq .f 0.5}}`,
	`{{eq .np .np}} {{eq .nm .nm}}`,
	`{{eq .arr .arr}}`,
	`{{eq .list .list2}}`,
	`{{lt .u 8}} {{lt 8 .u}} {{lt -1 .u}} {{lt .u -1}} {{lt .u .u}} {{le .u 7}} {{ge .u 7}} {{gt .u 7}}`,
	`{{lt 1i 2i}}`,
	`{{lt .u "a"}}`,
	`{{lt "a" .list}}`,
	`{{gt true 1}}`,
	`{{ge true 1}}`,
	`{{le true true}}`,
	`{{gt .list 1}}`,
	`{{ge .list 1}}`,
	`{{index .labels 1}}`,
	`{{index .labels nil}}`,
	`{{index .ints 1}} {{index .ints .u}} {{index .ints 9}}`,
	`{{index .ints "a"}}`,
	`{{index .list nil}}`,
	`{{index .list .u}} {{index .list .u8}}`,
	`{{index .list -1}}`,
	`{{index .neg 0}}`,
	`{{index .np 0}}`,
	`{{index .anys nil}}`,
	`{{index nil 1}}`,
	`{{slice nil 1}}`,
	`{{slice .np 1}}`,
	`{{slice .list 0 1 2 3}}`,
	`{{slice .str 0 1 2}}`,
	`{{slice .list 9}}`,
	`{{slice .list 0 2 1}}`,
	`{{slice .list 1 "a"}}`,
	`{{len .np}}`,
	`{{range $k, $v := .ints}}{{$k}}={{$v}} {{end}}`,
	`{{range $k, $v := .uints}}{{$k}}={{$v}} {{end}}`,
	`{{range $k, $v := .floats}}{{$k}}={{$v}} {{end}}`,
	`{{range $k, $v := .bools}}{{$k}}={{$v}} {{end}}`,
	`{{$i := 0}}{{$e := 0}}{{range $i, $e = .list}}{{end}}{{$i}}{{$e}}`,
	`{{$e := 0}}{{range $e = .list}}{{end}}{{$e}}`,
	`{{if 1i}}c{{end}}{{if 0.5}}f{{end}}{{if .u}}u{{end}}{{if .s}}s{{end}}{{if .p}}p{{end}}{{if .np}}np{{end}}{{if .arr}}a{{end}}`,
	`{{if .ch}}c{{end}}`,
	`{{(.str) 1}}`,
	`{{.labels.a 1}}`,
	`{{.np.x}}`,
	`{{.ni.x}}`,
	`{{.p.x}}`,
	`{{.p}}`,
	`{{.ch}}`,
	`{{with .u}}{{.}}{{end}} {{with 0}}x{{else}}zero{{end}}`,
	`{{and 1 0 2}} {{or 0 "" .u}} {{and .u}} {{or}}`,
	`{{"a" | printf "%s%s" "b"}} {{1 | eq 1}}`,
	`{{.str | call}}`,
	`{{call .str 1}}`,
	`{{call nil}}`,
	`{{b true}} {{b false}}`,
	`{{b 1}}`,
	`{{c 1i}} {{c .c}}`,
	`{{c 1}}`,
	`{{fl 1.5}} {{fl .f}}`,
	`{{fl "x"}}`,
	`{{i 3}} {{i .neg}}`,
	`{{i 1.5}}`,
	`{{ui 3}}`,
	`{{ui -3}}`,
	`{{s "x"}} {{s .str}} {{.str | s}}`,
	`{{s 1}}`,
	`{{s .missing}}`,
	`{{s nil}}`,
	`{{st .}}`,
	`{{st nil}}`,
	`{{any nil}} {{any 1}} {{any true}} {{any "x"}} {{any .missing}}`,
	`{{sp .sp}} {{sp .str}}`,
	`{{sp .nsp}}`,
	`{{boom}}`,
	`{{boomErr}}`,
	`{{fail}}`,
	`{{fn}}`,
	`{{fail | s}}`,
	`{{v}} {{v | printf "%v"}}`,
	`{{any (s "x")}}`,
}

// goData holds values of the types a program (not a JSON decoder) would hand the executor.
func goData() map[string]any {
	var nilMap map[string]any
	var nilPtr *[]int
	var nilStrPtr *string
	str := "pointed"
	return map[string]any{
		"str": "text", "neg": int64(-4), "u": uint(7), "u8": uint8(1), "f": 0.5, "c": 2i,
		"list":   []any{int64(1), int64(2), int64(3)},
		"list2":  []any{int64(1)},
		"arr":    [2]int{1, 2},
		"labels": map[string]string{"a": "1", "b": "2"},
		"ints":   map[int]string{2: "two", 1: "one", 7: "seven"},
		"uints":  map[uint]string{2: "two", 1: "one"},
		"floats": map[float64]string{2.5: "b", -1: "a"},
		"bools":  map[bool]string{true: "t", false: "f"},
		"anys":   map[*int]string{},
		"nm":     nilMap,
		"np":     nilPtr,
		"ni":     map[string]any{"x": nil}["x"],
		"p":      &map[string]int{"x": 1},
		"s":      struct{}{},
		"ch":     make(chan int),
		"sp":     &str,
		"nsp":    nilStrPtr,
	}
}

// goFuncs take and give typed values, so that constants convert to each parameter type.
var goFuncs = map[string]any{
	"b":       func(v bool) bool { return v },
	"c":       func(v complex128) complex128 { return v },
	"fl":      func(v float64) float64 { return v },
	"i":       func(v int) int { return v },
	"ui":      func(v uint) uint { return v },
	"s":       func(v string) string { return v },
	"st":      func(v any) string { return fmt.Sprintf("%T", v) },
	"any":     func(v any) any { return v },
	"sp":      func(v string) string { return "[" + v + "]" },
	"boom":    func() string { panic("boom") },
	"boomErr": func() string { panic(errors.New("boom error")) },
	"fail":    func() (string, error) { return "", errors.New("failed") },
	"fn":      func() func() { return func() {} },
	"v":       func() reflect.Value { return reflect.ValueOf("rv") },
}

// TestMatchesTextTemplateGoData: on values of Go's other types and with typed functions, the same output
// as text/template, or the same error.
func TestMatchesTextTemplateGoData(t *testing.T) {
	funcs := map[string]any{}
	for k, f := range KubectlFuncs {
		funcs[k] = f
	}
	for k, f := range goFuncs {
		funcs[k] = f
	}
	for _, text := range moreTemplates {
		for _, opt := range options {
			want, wantErr := runStdFuncs(text, opt, goData(), funcs)
			got, gotErr := runFuncs(text, opt, goData(), funcs)
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

func runStdFuncs(text, opt string, data any, funcs map[string]any) (string, error) {
	tm, err := template.New("output").Funcs(funcs).Parse(text)
	if err != nil {
		return "", err
	}
	tm.Option(opt)
	var b bytes.Buffer
	err = tm.Execute(&b, data)
	return b.String(), err
}

func runFuncs(text, opt string, data any, funcs map[string]any) (string, error) {
	tm := New("output", funcs)
	if err := tm.Parse(text); err != nil {
		return "", err
	}
	tm.Option(opt)
	var b bytes.Buffer
	err := tm.Execute(&b, data)
	return b.String(), err
}

// TestUnparsedTemplate: executing a template that was never parsed fails with text/template's message.
func TestUnparsedTemplate(t *testing.T) {
	var b bytes.Buffer
	gotErr := New("output", nil).Execute(&b, nil)
	wantErr := template.New("output").Execute(&b, nil)
	if gotErr == nil || wantErr == nil || gotErr.Error() != wantErr.Error() {
		t.Fatalf("error %v, text/template's %v", gotErr, wantErr)
	}
}

// TestUnknownOption: an option text/template does not know panics, as text/template's Option does.
func TestUnknownOption(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "unrecognized option missingkey=maybe") {
			t.Fatalf("recovered %v, want the unrecognized option", r)
		}
	}()
	New("output", nil).Option("missingkey=maybe")
}

// TestSignatureOnly: and, or and call are evaluated by the executor; their functions give back their
// first argument, and the errors carried in a panic say what they wrap.
func TestSignatureOnly(t *testing.T) {
	one, two := reflect.ValueOf(1), reflect.ValueOf(2)
	if and(one, two).Interface() != 1 || or(two, one).Interface() != 2 {
		t.Fatal("and/or do not give their first argument")
	}
	if v, err := callSignature(one, two); err != nil || v.Interface() != 1 {
		t.Fatalf("callSignature: %v %v", v, err)
	}
	if got := (execError{errors.New("exec")}).Error(); got != "exec" {
		t.Fatalf("execError says %q", got)
	}
	if got := (writeError{errors.New("write")}).Error(); got != "write" {
		t.Fatalf("writeError says %q", got)
	}
}

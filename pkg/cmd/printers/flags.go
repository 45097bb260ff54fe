package printers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kprinters "k8s.io/cli-runtime/pkg/printers"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil/flagutil"
)

// Flags is a command's -o, --output: kubectl's formats, chosen as cli-runtime's PrintFlags chooses them
// (select.go) and printed by cli-runtime's printers (json, yaml, kyaml, name, go-template,
// go-template-file, template, templatefile, jsonpath, jsonpath-as-json, jsonpath-file, with --template and
// --allow-missing-template-keys; custom-columns and custom-columns-file where the command has the listing
// flags, AddListFlags), next to the command's own human forms: "" (its default table or line) and, where
// it has one, "wide". The value is checked when parsed (an unknown format) and before the command runs (a
// template that does not parse), so a mistake costs no request.
type Flags struct {
	human  []string // the command's own forms: "" and any of "wide"
	value  string
	cmd    *cobra.Command
	parsed bool       // -o was given
	list   *ListFlags // the listing flags, when the command has them: -o custom-columns with them
	usage  string     // -o's help, before the list of formats

	template         string // --template
	allowMissingKeys bool   // --allow-missing-template-keys
}

// outputUsage is -o's help: what it is, then every format it accepts.
func (f *Flags) outputUsage() string {
	return fmt.Sprintf("%s. One of: (%s)", f.usage, strings.Join(f.Allowed(), ", "))
}

// AddFlags registers -o, --output (with --template and --allow-missing-template-keys) on cmd. def is the
// default format: "" for the command's own human form, which human describes in the help, or "yaml" for a
// command whose output is an object to apply. extra lists the command's other human forms ("wide").
func AddFlags(cmd *cobra.Command, def, human string, extra ...string) *Flags {
	f := &Flags{human: append([]string{""}, extra...), value: def, cmd: cmd}
	usage := "Output format"
	if human != "" {
		usage = "Output format (default: " + human + ")"
	}
	f.usage = usage
	cmd.Flags().VarP(outputValue{f}, "output", "o", f.outputUsage())
	// Asked when completing, so that the formats AddListFlags adds are offered too.
	_ = cmd.RegisterFlagCompletionFunc("output", func(c *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		return flagutil.CompleteValues(f.Allowed())(c, args, prefix)
	})
	// kubectl's two template flags, in this project's help style (no trailing period).
	cmd.Flags().StringVar(&f.template, "template", "", "Template string or path to a template file, for -o go-template, go-template-file, jsonpath or jsonpath-file (alone, it means -o go-template)")
	_ = cmd.MarkFlagFilename("template")
	cmd.Flags().BoolVar(&f.allowMissingKeys, "allow-missing-template-keys", true, "Print nothing for a field or map key a template names that is missing, instead of failing (go-template and jsonpath)")
	// A template that does not parse is the user's mistake: refused before Complete builds any client,
	// as a usage error, the way every other flag is checked before the command runs.
	checkBeforeRun(cmd, f.Validate)
	return f
}

// checkBeforeRun refuses, as a usage error, flags that check fails on, before Complete builds any client:
// after whatever PreRunE the command had.
func checkBeforeRun(cmd *cobra.Command, check func() error) {
	pre := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if pre != nil {
			if err := pre(c, args); err != nil {
				return err
			}
		}
		return flagutil.Usage(check())
	}
}

// Allowed lists the formats -o accepts: kubectl's, then the command's own non-default ones.
func (f *Flags) Allowed() []string {
	out := kubectlFormats()
	if f.list != nil {
		out = append(out, columnFormats...)
	}
	for _, h := range f.human {
		if h != "" {
			out = append(out, h)
		}
	}
	return out
}

// Format is the chosen format without its template: "" (the command's default human form), "wide",
// "json", "yaml", "name", "jsonpath", "go-template", ...
func (f *Flags) Format() string {
	if !f.parsed && f.templateGiven() && slices.Contains(f.human, f.value) {
		return "go-template" // kubectl: --template alone means -o go-template
	}
	format, _, _ := strings.Cut(f.value, "=")
	return format
}

// String is the format as given, template included.
func (f *Flags) String() string { return f.value }

// Human tells whether the command prints its own form (its table, line or -o wide) rather than an object.
func (f *Flags) Human() bool { return slices.Contains(f.human, f.Format()) }

// Wide tells whether -o wide was asked for.
func (f *Flags) Wide() bool { return f.Format() == "wide" }

func (f *Flags) templateGiven() bool { return f.template != "" }

// Validate builds the printer once, so that a template that does not parse, or a template file that
// cannot be read, is refused naming the flag.
func (f *Flags) Validate() error {
	if f.Human() {
		return nil
	}
	_, err := f.ToPrinter()
	return err
}

// ToPrinter returns cli-runtime's printer for the chosen format (not for a human form).
func (f *Flags) ToPrinter() (kprinters.ResourcePrinter, error) {
	p, err := f.toPrinter()
	if err != nil {
		what := "-o, --output " + f.value
		if f.templateGiven() {
			what += " --template " + f.template
		}
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return p, nil
}

// Print writes obj in the chosen format. A template that fails on this object (a missing key with
// --allow-missing-template-keys=false) is an error naming the format.
func (f *Flags) Print(w io.Writer, obj runtime.Object) error {
	p, err := f.ToPrinter()
	if err != nil {
		return err
	}
	// Rendered whole before it is written: a template that fails part way leaves stdout empty, and
	// cli-runtime's template printers write their debugging dump to the output on failure.
	var buf bytes.Buffer
	if err := p.PrintObj(obj, &buf); err != nil {
		return fmt.Errorf("-o %s: %w", f.Format(), err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// PrintObject writes a typed Kubernetes object (one of our API types) in the chosen format, cleaned as
// Clean does.
func (f *Flags) PrintObject(w io.Writer, obj any) error {
	u, err := Clean(obj)
	if err != nil {
		return err
	}
	return f.Print(w, u)
}

// outputValue is -o's flag value: a format kubectl or the command knows, checked when parsed, with the
// template after "=" for the template formats.
type outputValue struct{ f *Flags }

func (v outputValue) String() string { return v.f.value }
func (v outputValue) Type() string   { return "string" }
func (v outputValue) Set(s string) error {
	format, _, _ := strings.Cut(s, "=")
	if !slices.Contains(v.f.Allowed(), format) || (s != format && !strings.Contains(format, "template") && !strings.Contains(format, "jsonpath") && !strings.Contains(format, "custom-columns")) {
		return fmt.Errorf("must be one of %s", strings.Join(v.f.Allowed(), ", "))
	}
	v.f.value, v.f.parsed = s, true
	return nil
}

// Object is a command's view of something as a Kubernetes-style object, so that kubectl's printers (and
// -o name) can print it: apiVersion, kind, metadata (name, namespace if any, labels if any) and the view's
// fields under status, named as the view names them in JSON.
func Object(apiVersion, kind, name, namespace string, labels map[string]string, status any) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	if len(labels) > 0 {
		u.SetLabels(labels)
	}
	if status != nil {
		m, err := toMap(status)
		if err != nil {
			return nil, err
		}
		u.Object["status"] = m
	}
	return u, nil
}

// List is kubectl's List (apiVersion v1, kind List) of items, so that -o jsonpath='{.items[*]...}' and
// -o name work as on `kubectl get`.
func List(items []*unstructured.Unstructured) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}}}
	l.Items = make([]unstructured.Unstructured, 0, len(items))
	for _, it := range items {
		l.Items = append(l.Items, *it)
	}
	return l
}

// Clean turns a typed Kubernetes object into an unstructured one without the empty status and
// creationTimestamp a freshly built object carries, so the output applies cleanly.
func Clean(obj any) (*unstructured.Unstructured, error) {
	m, err := toMap(obj)
	if err != nil {
		return nil, err
	}
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	if st, ok := m["status"].(map[string]any); ok && len(st) == 0 {
		delete(m, "status")
	}
	return &unstructured.Unstructured{Object: m}, nil
}

func toMap(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}

package printers

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	kprinters "k8s.io/cli-runtime/pkg/printers"
)

// This file chooses the printer for -o the way cli-runtime's genericclioptions.PrintFlags does (json,
// yaml and kyaml; name; jsonpath; the Go templates; in that order, each step passing on a format it does
// not know), with the same formats, defaults and messages. It is written here rather than taken from
// genericclioptions because that package also holds ConfigFlags, whose imports (cli-runtime's resource
// builder, client-go's discovery) register every API group of client-go's scheme when the binary starts:
// a cost every run paid, --help included, for a printer choice that needs none of it.

// The formats kubectl's PrintFlags offers, in the order its help lists them.
var (
	jsonYAMLFormats   = []string{"json", "yaml", "kyaml"}
	kubectlNameFormat = []string{"name"}
	goTemplateFormats = []string{"go-template", "go-template-file", "template", "templatefile"}
	jsonPathFormats   = []string{"jsonpath", "jsonpath-as-json", "jsonpath-file"}
)

// kubectlFormats are every format of kubectl's PrintFlags, in its order (a new slice each time).
func kubectlFormats() []string {
	return slices.Concat(jsonYAMLFormats, kubectlNameFormat, goTemplateFormats, jsonPathFormats)
}

// noPrinterError is a format no printer of a step knows: the next step is asked. Its text is kubectl's
// (genericclioptions.NoCompatiblePrinterError), for the one that reaches the user: no step knew it.
type noPrinterError struct {
	format  string
	allowed []string
}

func (e *noPrinterError) Error() string {
	allowed := slices.Clone(e.allowed)
	sort.Strings(allowed)
	return fmt.Sprintf("unable to match a printer suitable for the output format %q, allowed formats are: %s", e.format, strings.Join(allowed, ","))
}

// passed tells whether a step passed the format on (it knew none of it), rather than built its printer
// or failed building it.
func passed(err error) bool {
	var n *noPrinterError
	return errors.As(err, &n)
}

// toPrinter picks the printer for -o: custom columns first where the command has the listing flags, then
// kubectl's steps. --template without -o means -o go-template, as in kubectl.
func (f *Flags) toPrinter() (kprinters.ResourcePrinter, error) {
	format := f.value
	if f.templateGiven() && !f.parsed {
		format = "go-template"
	}
	steps := []func(string) (kprinters.ResourcePrinter, error){
		jsonYAMLPrinter,
		namePrinter,
		f.jsonPathPrinter,
		f.goTemplatePrinter,
	}
	if f.list != nil { // kubectl get's custom columns, with the listing flags (list.go)
		steps = slices.Insert(steps, 0, func(format string) (kprinters.ResourcePrinter, error) {
			p, err := customColumnsPrinter(format, f.list.NoHeaders)
			if err != nil {
				return nil, err // not a nil *columnsPrinter in an interface
			}
			return p, nil
		})
	}
	for _, step := range steps {
		if p, err := step(format); !passed(err) {
			return p, err
		}
	}
	return nil, &noPrinterError{format: format, allowed: kubectlFormats()}
}

// jsonYAMLPrinter is -o json, yaml or kyaml (in any case), without the managedFields, which kubectl
// prints only with --show-managed-fields (a flag these commands do not have: their objects carry none).
func jsonYAMLPrinter(format string) (kprinters.ResourcePrinter, error) {
	var p kprinters.ResourcePrinter
	switch strings.ToLower(format) {
	case "json":
		p = &kprinters.JSONPrinter{}
	case "yaml":
		p = &kprinters.YAMLPrinter{}
	case "kyaml":
		p = &kprinters.KYAMLPrinter{}
	default:
		return nil, &noPrinterError{format: strings.ToLower(format), allowed: jsonYAMLFormats}
	}
	return &kprinters.OmitManagedFieldsPrinter{Delegate: p}, nil
}

// namePrinter is -o name (kind.group/name). An empty format gets kubectl's long form (kind.group/name
// and an operation, here none): what PrintFlags answers for no format, which the commands never ask,
// since no format is their human form.
func namePrinter(format string) (kprinters.ResourcePrinter, error) {
	switch strings.ToLower(format) {
	case "name":
		return &kprinters.NamePrinter{ShortOutput: true}, nil
	case "":
		return &kprinters.NamePrinter{}, nil
	}
	return nil, &noPrinterError{format: strings.ToLower(format), allowed: kubectlNameFormat}
}

// templateText splits a template format into its name and its template: --template when given, else what
// follows "=" in the format (-o jsonpath='{.x}'). A format that is none of formats is passed on.
func (f *Flags) templateText(format string, formats []string) (name, text string, err error) {
	if !f.templateGiven() && format == "" {
		return "", "", &noPrinterError{format: format}
	}
	name, text = format, f.template
	if !f.templateGiven() {
		for _, known := range formats {
			if t, ok := strings.CutPrefix(format, known+"="); ok {
				name, text = known, t
				break
			}
		}
	}
	if !slices.Contains(formats, name) {
		return "", "", &noPrinterError{format: name, allowed: formats}
	}
	if text == "" {
		return "", "", errors.New("template format specified but no template given")
	}
	return name, text, nil
}

// readTemplate is the template a -file format names: the file's contents.
func readTemplate(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("error reading --template %s, %w", path, err)
	}
	return string(data), nil
}

// jsonPathPrinter is -o jsonpath, jsonpath-file or jsonpath-as-json, through cli-runtime's JSONPathPrinter.
func (f *Flags) jsonPathPrinter(format string) (kprinters.ResourcePrinter, error) {
	name, text, err := f.templateText(format, jsonPathFormats)
	if err != nil {
		return nil, err
	}
	if name == "jsonpath-file" {
		if text, err = readTemplate(text); err != nil {
			return nil, err
		}
	}
	p, err := kprinters.NewJSONPathPrinter(text)
	if err != nil {
		return nil, fmt.Errorf("error parsing jsonpath %s, %w", text, err)
	}
	p.AllowMissingKeys(f.allowMissingKeys)
	if name == "jsonpath-as-json" {
		p.EnableJSONOutput(true)
	}
	return p, nil
}

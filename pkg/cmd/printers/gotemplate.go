package printers

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	kprinters "k8s.io/cli-runtime/pkg/printers"

	"github.com/federate-dev/kubectl-federate/pkg/internal/gotemplate"
)

// toPrinter picks the printer for -o as cli-runtime's PrintFlags.ToPrinter does (json and yaml, name,
// jsonpath, then the Go templates), with one change: the Go template formats run on pkg/internal/gotemplate
// rather than cli-runtime's text/template printer, whose executor would make the linker keep every method
// of every linked type (see that package). Same formats, same template language, same messages.
func (f *Flags) toPrinter() (kprinters.ResourcePrinter, error) {
	format := f.value
	if f.templateGiven() && !f.parsed {
		format = "go-template" // kubectl: --template alone means -o go-template
	}
	if f.list != nil { // kubectl get's custom columns, with the listing flags (list.go)
		p, err := customColumnsPrinter(format, f.list.NoHeaders)
		switch {
		case err == nil:
			return p, nil
		case !genericclioptions.IsNoCompatiblePrinterError(err):
			return nil, err
		}
	}
	if p, err := f.print.JSONYamlPrintFlags.ToPrinter(format); !genericclioptions.IsNoCompatiblePrinterError(err) {
		return p, err
	}
	if p, err := f.print.NamePrintFlags.ToPrinter(format); !genericclioptions.IsNoCompatiblePrinterError(err) {
		return p, err
	}
	tf := f.print.TemplatePrinterFlags
	if p, err := tf.JSONPathPrintFlags.ToPrinter(format); !genericclioptions.IsNoCompatiblePrinterError(err) {
		return p, err
	}
	if p, err := goTemplatePrinter(format, *tf.TemplateArgument, *tf.AllowMissingKeys); !genericclioptions.IsNoCompatiblePrinterError(err) {
		return p, err
	}
	return nil, genericclioptions.NoCompatiblePrinterError{OutputFormat: &format, AllowedFormats: f.print.AllowedFormats()}
}

var goTemplateFormats = []string{"go-template", "go-template-file", "template", "templatefile"}

// goTemplatePrinter is cli-runtime's GoTemplatePrintFlags.ToPrinter on our executor: the template from
// --template, else after "=" in the format; a file's contents for the -file formats.
func goTemplatePrinter(format, argument string, allowMissingKeys bool) (kprinters.ResourcePrinter, error) {
	if argument == "" && format == "" {
		return nil, genericclioptions.NoCompatiblePrinterError{OutputFormat: &format}
	}
	text := argument
	if text == "" {
		for _, f := range goTemplateFormats {
			if t, ok := strings.CutPrefix(format, f+"="); ok {
				text, format = t, f
				break
			}
		}
	}
	known := false
	for _, f := range goTemplateFormats {
		known = known || f == format
	}
	if !known {
		return nil, genericclioptions.NoCompatiblePrinterError{OutputFormat: &format, AllowedFormats: goTemplateFormats}
	}
	if text == "" {
		return nil, errors.New("template format specified but no template given")
	}
	if format == "templatefile" || format == "go-template-file" {
		data, err := os.ReadFile(text)
		if err != nil {
			return nil, fmt.Errorf("error reading --template %s, %w", text, err)
		}
		text = string(data)
	}
	t := gotemplate.New("output", gotemplate.KubectlFuncs)
	if err := t.Parse(text); err != nil {
		return nil, fmt.Errorf("error parsing template %s, %w", text, err)
	}
	if allowMissingKeys {
		t.Option("missingkey=default")
	} else {
		t.Option("missingkey=error")
	}
	return &goTemplate{text: text, t: t}, nil
}

// goTemplate prints an object through a Go template applied to its JSON form, as kubectl does.
type goTemplate struct {
	text string
	t    *gotemplate.Template
}

func (p *goTemplate) PrintObj(obj runtime.Object, w io.Writer) (err error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	doc := map[string]any{}
	if err := json.Unmarshal(data, &doc); err != nil {
		return err
	}
	var buf bytes.Buffer
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("caught panic: %+v", r)
			}
		}()
		err = p.t.Execute(&buf, doc)
	}()
	if err != nil {
		return fmt.Errorf("error executing template %q: %w", p.text, err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

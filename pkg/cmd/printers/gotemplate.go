package printers

import (
	"bytes"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/json"
	kprinters "k8s.io/cli-runtime/pkg/printers"

	"github.com/federate-dev/kubectl-federate/pkg/internal/gotemplate"
)

// goTemplatePrinter is -o go-template, go-template-file, template or templatefile, as cli-runtime's
// GoTemplatePrintFlags builds it but on pkg/internal/gotemplate rather than cli-runtime's text/template
// printer, whose executor would make the linker keep every method of every linked type (see that
// package). Same formats, same template language, same messages.
func (f *Flags) goTemplatePrinter(format string) (kprinters.ResourcePrinter, error) {
	name, text, err := f.templateText(format, goTemplateFormats)
	if err != nil {
		return nil, err
	}
	if name == "templatefile" || name == "go-template-file" {
		if text, err = readTemplate(text); err != nil {
			return nil, err
		}
	}
	t := gotemplate.New("output", gotemplate.KubectlFuncs)
	if err := t.Parse(text); err != nil {
		return nil, fmt.Errorf("error parsing template %s, %w", text, err)
	}
	if f.allowMissingKeys {
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

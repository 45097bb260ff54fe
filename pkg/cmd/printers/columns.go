package printers

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"
)

// columnFormats are kubectl get's custom columns: -o custom-columns=HEADER:JSONPATH,... and
// -o custom-columns-file=FILE (a line of headers, then a line of JSONPaths, separated by blanks).
var columnFormats = []string{"custom-columns", "custom-columns-file"}

// column is one custom column.
type column struct {
	header string
	path   *jsonpath.JSONPath
}

// columnsPrinter prints each item of a List (or one object) as a row of its columns, in this project's
// table (escaped cells, kubectl's spacing). A field an item lacks is <none>, as in kubectl.
type columnsPrinter struct {
	columns   []column
	noHeaders bool
}

// customColumnsPrinter is the printer of -o custom-columns[-file]; any other format it passes on
// (noPrinterError). The client-go JSONPath engine is the one -o jsonpath already links.
func customColumnsPrinter(format string, noHeaders bool) (*columnsPrinter, error) {
	name, spec, _ := strings.Cut(format, "=")
	switch name {
	case "custom-columns":
	case "custom-columns-file":
		if spec == "" {
			return nil, errors.New("custom-columns-file format specified but no file given")
		}
		data, err := os.ReadFile(spec)
		if err != nil {
			return nil, fmt.Errorf("error reading custom-columns file %s: %w", spec, err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) != 2 {
			return nil, fmt.Errorf("custom-columns file %s: want two lines (the headers, then their JSONPaths), got %d", spec, len(lines))
		}
		headers, paths := strings.Fields(lines[0]), strings.Fields(lines[1])
		if len(headers) != len(paths) {
			return nil, fmt.Errorf("custom-columns file %s: %d headers but %d JSONPaths", spec, len(headers), len(paths))
		}
		parts := make([]string, len(headers))
		for i := range headers {
			parts[i] = headers[i] + ":" + paths[i]
		}
		spec = strings.Join(parts, ",")
	default:
		return nil, &noPrinterError{format: format, allowed: columnFormats}
	}
	if spec == "" {
		return nil, errors.New("custom-columns format specified but no custom columns given")
	}
	p := &columnsPrinter{noHeaders: noHeaders}
	for _, part := range strings.Split(spec, ",") {
		header, path, ok := strings.Cut(part, ":")
		if !ok || header == "" || path == "" {
			return nil, fmt.Errorf("unexpected custom-columns spec: %s, expected <header>:<json-path-expr>", part)
		}
		jp, err := parseJSONPath(header, path)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", header, err)
		}
		p.columns = append(p.columns, column{header: header, path: jp})
	}
	return p, nil
}

// PrintObj prints obj's items (or obj) as rows.
func (p *columnsPrinter) PrintObj(obj runtime.Object, w io.Writer) error {
	items := []runtime.Object{obj}
	if meta.IsListType(obj) {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return err
		}
	}
	var t *Table
	if p.noHeaders {
		t = NewTable(w)
	} else {
		headers := make([]string, len(p.columns))
		for i, c := range p.columns {
			headers[i] = c.header
		}
		t = NewTable(w, headers...)
	}
	for _, it := range items {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(it)
		if err != nil {
			return err
		}
		cells := make([]string, len(p.columns))
		for i, c := range p.columns {
			cells[i] = cell(c.path, u)
		}
		t.Row(cells...)
	}
	return t.Flush()
}

// cell is what a column's JSONPath finds in an item: its values joined by commas, or <none>.
func cell(p *jsonpath.JSONPath, obj map[string]any) string {
	results, err := p.FindResults(obj)
	if err != nil {
		return "<none>"
	}
	var vals []string
	for _, r := range results {
		for _, v := range r {
			if v.Kind() == reflect.Interface && v.IsNil() {
				continue
			}
			vals = append(vals, text(v.Interface()))
		}
	}
	if len(vals) == 0 {
		return "<none>"
	}
	return strings.Join(vals, ",")
}

// text is a value as kubectl's custom columns show it: a string as it is, anything else as Go prints it.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

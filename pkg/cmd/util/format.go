package util

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"
)

// OutputFormat is a validated -o value for structured (non-object) output.
type OutputFormat struct {
	Value   string
	allowed []string
}

// NewOutputFormat accepts the given formats; "" means the command's default human form.
func NewOutputFormat(allowed ...string) *OutputFormat { return &OutputFormat{allowed: allowed} }

func (o *OutputFormat) String() string { return o.Value }

// Set validates an -o value.
func (o *OutputFormat) Set(v string) error {
	for _, a := range o.allowed {
		if v == a {
			o.Value = v
			return nil
		}
	}
	return fmt.Errorf("must be one of %s", strings.Join(o.allowed, "|"))
}

// Type names the flag's value in help.
func (o *OutputFormat) Type() string { return "string" }

// Allowed lists the accepted formats, for help and completion.
func (o *OutputFormat) Allowed() []string { return o.allowed }

// Print writes v as indented JSON or as YAML, ending with a newline.
func Print(w io.Writer, format string, v any) error {
	switch format {
	case "json":
		data, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", data)
		return err
	case "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	return fmt.Errorf("unsupported output format %q", format)
}

// Package printers writes command results to stdout: structured -o json|yaml and Kubernetes objects.
package printers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
)

// AddOutputFlag registers -o, --output for structured output in the given formats; def is the default
// ("" for the command's own human form, described by human).
func AddOutputFlag(cmd *cobra.Command, def, human string, formats ...string) *cmdutil.Enum {
	o := cmdutil.NewEnum(def, formats...)
	usage := "Output format"
	if human != "" {
		usage = "Output format (default: " + human + ")"
	}
	cmdutil.AddEnumFlag(cmd, o, "output", "o", usage)
	return o
}

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

// PrintObject writes a Kubernetes object as YAML or JSON, without the empty status and creationTimestamp
// a freshly built object carries, so the output applies cleanly.
func PrintObject(w io.Writer, format string, obj any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	if st, ok := m["status"].(map[string]any); ok && len(st) == 0 {
		delete(m, "status")
	}
	if format == "json" {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "    ")
		if err := enc.Encode(m); err != nil {
			return err
		}
		_, err = w.Write(buf.Bytes())
		return err
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

package util

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// Cluster returns the handshake view of the factory's cluster, reporting to report.
func (f *Factory) Cluster(report handshake.Reporter) (*handshake.Cluster, *Clients, error) {
	c, err := f.Clients()
	if err != nil {
		return nil, nil, err
	}
	return &handshake.Cluster{Kube: c.Kube, Dynamic: c.Dynamic, Report: report, Now: f.ServerNow}, c, nil
}

// ReadInput reads the file named by a -f flag ("-" is stdin), refusing more than max bytes.
func ReadInput(flag, name string, stdin io.Reader, max int64) ([]byte, error) {
	var r io.Reader
	if name == "-" {
		r = stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, name, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s %s: is larger than %d bytes", flag, name, max)
	}
	return data, nil
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

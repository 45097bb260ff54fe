package dryrun

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"strings"

	"sigs.k8s.io/yaml"
)

// Print writes what the run recorded as YAML documents on w, grouped per cluster in the order the
// clusters were first written to, each document after a comment naming the cluster and the action:
// `kubectl federate ... --dry-run | kubectl apply -f -` style tools read the documents and skip the comments.
func (d *Recorder) Print(w io.Writer) error {
	recs := d.Records()
	var order []string
	byCluster := map[string][]Record{}
	for _, r := range recs {
		if _, seen := byCluster[r.Cluster]; !seen {
			order = append(order, r.Cluster)
		}
		byCluster[r.Cluster] = append(byCluster[r.Cluster], r)
	}
	mode := "dry run"
	if d.Strategy == Server {
		mode = "server dry run"
	}
	for _, c := range order {
		for _, r := range byCluster[c] {
			obj, redacted := printable(r)
			data, err := yaml.Marshal(obj)
			if err != nil {
				return err
			}
			note := ""
			if r.Note != "" {
				note = "; " + r.Note
			}
			ref := objectRef(r.Object)
			if redacted {
				ref += ", its values redacted"
			}
			if _, err := fmt.Fprintf(w, "---\n# %s: would %s %s (%s%s)\n%s", c, r.Action, ref, mode, note, data); err != nil {
				return err
			}
		}
	}
	return nil
}

// printable is the object a record prints. A deletion shows what is deleted, not its contents. A
// Secret's values never reach stdout, where a dry run's output ends up in CI logs and pull requests:
// they are the credentials themselves (a kubeconfig's private key, a token, the integrity key), and each
// is shown as its length instead, which also makes the document fail to apply rather than apply a
// credential no one saw. redacted tells whether a value was hidden.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

func printable(r Record) (map[string]any, bool) {
	obj := r.Object
	// Managed fields are the server's bookkeeping, hundreds of lines no reader asked for: kubectl hides them.
	if meta, ok := obj["metadata"].(map[string]any); ok && meta["managedFields"] != nil {
		obj, meta = maps.Clone(obj), maps.Clone(meta)
		delete(meta, "managedFields")
		obj["metadata"] = meta
	}
	if r.Action == "delete" {
		out := map[string]any{}
		for _, k := range []string{"apiVersion", "kind", "metadata"} {
			if v, ok := obj[k]; ok {
				out[k] = v
			}
		}
		obj = out
	}
	if obj["kind"] != "Secret" {
		return obj, false
	}
	out := maps.Clone(obj)
	redacted := false
	// kubectl apply keeps the whole manifest, values included, in an annotation.
	if meta, ok := obj["metadata"].(map[string]any); ok {
		if ann, ok := meta["annotations"].(map[string]any); ok {
			if v, ok := ann[lastApplied]; ok {
				ann = maps.Clone(ann)
				ann[lastApplied] = fmt.Sprintf("<redacted: %d bytes>", len(fmt.Sprint(v)))
				meta = maps.Clone(meta)
				meta["annotations"] = ann
				out["metadata"] = meta
				redacted = true
			}
		}
	}
	for _, field := range []string{"data", "stringData"} {
		values, ok := obj[field].(map[string]any)
		if !ok {
			continue
		}
		hidden := make(map[string]any, len(values))
		for k, v := range values {
			n := len(fmt.Sprint(v))
			if s, ok := v.(string); ok && field == "data" {
				if b, err := base64.StdEncoding.DecodeString(s); err == nil {
					n = len(b)
				}
			}
			hidden[k] = fmt.Sprintf("<redacted: %d bytes>", n)
			redacted = true
		}
		out[field] = hidden
	}
	return out, redacted
}

// CommentWriter is the command's stdout during a dry run: every line the command prints (its
// "kind/name verb" results, its tables) becomes a YAML comment marked as a dry run, so that stdout stays
// one YAML stream of the objects (see Print) and no line claims a change that was not made.
type CommentWriter struct {
	Out io.Writer
	d   *Recorder
	buf []byte
}

// NewCommentWriter returns out, turned into comments while r is active.
func NewCommentWriter(out io.Writer, r *Recorder) *CommentWriter {
	return &CommentWriter{Out: out, d: r}
}

func (c *CommentWriter) Write(p []byte) (int, error) {
	if !c.d.Active() {
		return c.Out.Write(p)
	}
	c.buf = append(c.buf, p...)
	for {
		i := bytes.IndexByte(c.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(c.buf[:i])
		c.buf = c.buf[i+1:]
		mode := "dry run"
		if c.d.Strategy == Server {
			mode = "server dry run"
		}
		if _, err := fmt.Fprintf(c.Out, "# %s (%s)\n", line, mode); err != nil {
			return 0, err
		}
	}
}

// Fd is stdout's file descriptor, so that a command still sees whether stdout is a terminal (an invalid
// descriptor, never a terminal, when stdout is not a file).
func (c *CommentWriter) Fd() uintptr {
	if f, ok := c.Out.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}

// Flush writes a last line that had no newline.
func (c *CommentWriter) Flush() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Write([]byte("\n"))
	return err
}

func objectRef(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if g, _ := meta["generateName"].(string); name == "" && g != "" {
		name = g + "*" // the server would complete the name
	}
	ns, _ := meta["namespace"].(string)
	kind, _ := obj["kind"].(string)
	ref := strings.ToLower(kind) + "/" + name
	if ns != "" {
		ref += " in " + ns
	}
	return ref
}

package cmdutil

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// DryRunStrategy is the --dry-run value: none, client or server, as kubectl's.
type DryRunStrategy string

// The dry-run strategies.
const (
	DryRunNone   DryRunStrategy = "none"
	DryRunClient DryRunStrategy = "client"
	DryRunServer DryRunStrategy = "server"
)

// DryRunStrategies are the values --dry-run accepts.
var DryRunStrategies = []string{string(DryRunNone), string(DryRunClient), string(DryRunServer)}

// DryRun is a command's dry-run mode and what it recorded, shared by every factory of the command (the
// local cluster's, the remote one's, a fleet's), so that one run prints one stream of objects.
type DryRun struct {
	Strategy DryRunStrategy

	mu      sync.Mutex
	records []DryRunRecord
	// created holds, in server mode, the objects (and namespaces) a write of this run would create: the
	// server has not stored them, so a later write to them, or into such a namespace, cannot be checked.
	created map[string]bool
	written map[string]bool           // in server mode, the objects a dry-run write was accepted for
	objects map[string]map[string]any // and the server's answers
	// unchecked counts, per cluster, writes answered here in server mode, for the closing note.
	unchecked map[string][]string
}

// DryRunRecord is one write a dry run did not make: on which cluster, what, and the object.
type DryRunRecord struct {
	Cluster string
	Action  string // create, update, patch, apply, delete
	Object  map[string]any
	Note    string // why the server did not check it, in server mode
}

// Active tells whether writes are held back (client) or sent as dry runs (server).
func (d *DryRun) Active() bool { return d != nil && d.Strategy != "" && d.Strategy != DryRunNone }

// Records returns what the run recorded, in order.
func (d *DryRun) Records() []DryRunRecord {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.records)
}

func (d *DryRun) record(r DryRunRecord) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.records = append(d.records, r)
	if r.Note != "" {
		if d.unchecked == nil {
			d.unchecked = map[string][]string{}
		}
		d.unchecked[r.Cluster] = append(d.unchecked[r.Cluster], objectRef(r.Object))
	}
}

// dryRunValue is --dry-run's value: checked when parsed, like every enumerated flag.
type dryRunValue struct{ d *DryRun }

func (v dryRunValue) String() string {
	if v.d.Strategy == "" {
		return string(DryRunNone)
	}
	return string(v.d.Strategy)
}

func (v dryRunValue) Set(s string) error {
	if !slices.Contains(DryRunStrategies, s) {
		return fmt.Errorf("must be one of %s", strings.Join(DryRunStrategies, ", "))
	}
	v.d.Strategy = DryRunStrategy(s)
	return nil
}

func (dryRunValue) Type() string { return "string" }

// AddDryRunFlag registers --dry-run on a command that changes a cluster. The bare flag means client, as
// kubectl's bare --dry-run did (kubectl has since removed the bare form; it is kept here because typing
// --dry-run alone and getting the safe mode is what a reader expects). Boolean values are refused, as by
// today's kubectl. The mode applies to every cluster the command's factory, and its siblings, reach.
func AddDryRunFlag(cmd *cobra.Command, f *Factory) {
	cmd.Flags().Var(dryRunValue{f.dry}, "dry-run", `Must be "none", "server", or "client". If client strategy, only print the objects that would be created, changed or deleted on each cluster, as YAML, without sending them. If server strategy, send every write as a server-side dry run (admission and RBAC answer), changing nothing`)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = string(DryRunClient)
	_ = cmd.RegisterFlagCompletionFunc("dry-run", CompleteValues(DryRunStrategies))
}

// DryRun is the command's dry-run mode (never nil).
func (f *Factory) DryRun() *DryRun { return f.dry }

// reviews are the writes that store nothing: access and token reviews answer a question. They are sent
// as they are in every mode.
var reviews = map[string]bool{
	"subjectaccessreviews": true, "selfsubjectaccessreviews": true, "localsubjectaccessreviews": true,
	"selfsubjectrulesreviews": true, "tokenreviews": true, "selfsubjectreviews": true,
}

// Target is what a request's path names, as the API server reads it.
type Target struct {
	GVR                          schema.GroupVersionResource
	Namespace, Name, Subresource string
}

// hostPath is the path part of a rest.Config's Host, without its trailing slash: the prefix every
// request path of that cluster starts with.
func hostPath(host string) string {
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		return ""
	}
	return strings.TrimSuffix(u.Path, "/")
}

// parsePath reads /api/v1/... and /apis/G/V/... paths as the API server's request-info resolver does
// (namespaces' own subresources are status and finalize).
func parsePath(prefix, p string) (Target, bool) {
	if !strings.HasPrefix(p, prefix+"/") {
		return Target{}, false
	}
	parts := strings.Split(strings.Trim(p[len(prefix):], "/"), "/")
	var t Target
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		t.GVR.Version, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		t.GVR.Group, t.GVR.Version, parts = parts[1], parts[2], parts[3:]
	default:
		return t, false
	}
	if parts[0] == "namespaces" && len(parts) > 2 && parts[2] != "status" && parts[2] != "finalize" {
		t.Namespace, parts = parts[1], parts[2:]
	}
	t.GVR.Resource = parts[0]
	if len(parts) > 1 {
		t.Name = parts[1]
	}
	if len(parts) > 2 {
		t.Subresource = strings.Join(parts[2:], "/")
	}
	return t, true
}

func (t Target) key() string {
	return t.GVR.String() + "|" + t.Namespace + "|" + t.Name
}

// isDryRunWrite tells whether a request changes what the cluster stores: a write that is not a review and
// not already a server-side dry run (the sandbox's admission probes are).
func isDryRunWrite(r *http.Request, t Target) bool {
	if !isWriteMethod(r.Method) || reviews[t.GVR.Resource] {
		return false
	}
	return r.URL.Query().Get("dryRun") != "All"
}

func isWriteMethod(m string) bool {
	switch m {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// wrap puts the dry-run layer around a cluster's transport (outside the request counter, so that only
// what is sent is counted). cluster names the cluster in what is recorded.
func (d *DryRun) wrap(cluster func() string, prefix string, rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if !d.Active() {
			return rt.RoundTrip(r)
		}
		t, ok := parsePath(prefix, r.URL.Path)
		if !ok && isWriteMethod(r.Method) {
			// Fail closed: a write whose target cannot be told is not sent at all.
			return nil, fmt.Errorf("dry run: %s %s is a write this dry run cannot describe; not sent", r.Method, r.URL.Path)
		}
		if !ok || !isDryRunWrite(r, t) {
			return rt.RoundTrip(r)
		}
		body, err := readBody(r)
		if err != nil {
			return nil, err
		}
		w := Write{Target: t, Method: r.Method, ContentType: r.Header.Get("Content-Type"), Body: body, Query: r.URL.Query()}
		read := httpReader{rt: rt, base: r, prefix: prefix}
		if d.Strategy == DryRunClient {
			return respond(r, d.Answer(cluster(), w, read))
		}
		if note := d.wouldCreate(t); note != "" {
			return respond(r, d.answer(cluster(), w, read, note))
		}
		return d.serverDryRun(cluster(), r, w, rt, read)
	})
}

// serverDryRun sends the write with dryRun=All: the query parameter, and for a DELETE also its body,
// since the API server reads a DELETE's options from the body when there is one.
func (d *DryRun) serverDryRun(cluster string, r *http.Request, w Write, rt http.RoundTripper, read Reader) (*http.Response, error) {
	q := r.URL.Query()
	q.Set("dryRun", "All")
	r2 := r.Clone(r.Context())
	r2.URL.RawQuery = q.Encode()
	body := w.Body
	if r.Method == http.MethodDelete && len(body) > 0 {
		var opts map[string]any
		if err := json.Unmarshal(body, &opts); err != nil {
			return nil, fmt.Errorf("dry run: reading the options of DELETE %s: %w", r.URL.Path, err)
		}
		opts["dryRun"] = []string{"All"}
		var err error
		if body, err = json.Marshal(opts); err != nil {
			return nil, err
		}
	}
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	resp, err := rt.RoundTrip(r2)
	if err != nil {
		return resp, err
	}
	if resp.StatusCode == http.StatusNotFound {
		// An object an earlier write of this run (a server-side apply) would have created, or one of a
		// kind whose CustomResourceDefinition it would have created: the server has stored neither, so it
		// cannot check this write.
		note := ""
		switch {
		case w.Target.Name != "" && d.wasWritten(w.Target):
			note = "not checked by the server: it would be created by this run"
		case d.wasWritten(Target{GVR: crdGVR, Name: w.Target.GVR.Resource + "." + w.Target.GVR.Group}):
			note = "not checked by the server: its CustomResourceDefinition would be created by this run"
		}
		if note != "" {
			_ = resp.Body.Close()
			return respond(r, d.answer(cluster, w, read, note))
		}
	}
	if resp.StatusCode >= 300 {
		return resp, nil
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	var obj map[string]any
	_ = json.Unmarshal(data, &obj)
	kind, _ := obj["kind"].(string)
	items, isList := obj["items"].([]any)
	switch {
	case isList && strings.HasSuffix(kind, "List"):
		// A deletion of a collection answers with what it would delete.
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				if m["kind"] == nil {
					m["apiVersion"], m["kind"] = obj["apiVersion"], strings.TrimSuffix(kind, "List")
				}
				d.record(DryRunRecord{Cluster: cluster, Action: w.action(), Object: m})
			}
		}
	case obj != nil && kind != "Status":
		if r.Method == http.MethodPost && w.Target.Subresource == "" {
			d.markCreated(w.Target, obj)
		}
		d.markWritten(w.Target, obj)
		d.record(DryRunRecord{Cluster: cluster, Action: w.action(), Object: obj})
	case w.Target.Name != "":
		// The server answered with a Status: show the object as it stands.
		cur, aerr := read.Get(Target{GVR: w.Target.GVR, Namespace: w.Target.Namespace, Name: w.Target.Name})
		if aerr != nil {
			cur = stub(w.Target, nil)
		}
		d.record(DryRunRecord{Cluster: cluster, Action: w.action(), Object: cur})
	}
	return resp, nil
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// markWritten remembers an object a server dry run accepted a write of.
func (d *DryRun) markWritten(t Target, obj map[string]any) {
	meta, _ := obj["metadata"].(map[string]any)
	if name, _ := meta["name"].(string); name != "" {
		t.Name = name
	}
	t.Subresource = ""
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.written == nil {
		d.written = map[string]bool{}
	}
	d.written[t.key()] = true
	if d.objects == nil {
		d.objects = map[string]map[string]any{}
	}
	d.objects[t.key()] = obj
}

// writtenObject is the server's answer to an earlier write of this run to the object, if any.
func (d *DryRun) writtenObject(t Target) map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	t.Subresource = ""
	return d.objects[t.key()]
}

func (d *DryRun) wasWritten(t Target) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.written[t.key()]
}

// markCreated remembers, in server mode, an object the server would have created.
func (d *DryRun) markCreated(t Target, obj map[string]any) {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if name == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.created == nil {
		d.created = map[string]bool{}
	}
	t.Name = name
	d.created[t.key()] = true
	if t.GVR.Group == "" && t.GVR.Resource == "namespaces" {
		d.created["namespace|"+name] = true
	}
}

// wouldCreate says why the server cannot check a write in server mode: its object, or its namespace,
// would be created by this run and so does not exist on the server.
func (d *DryRun) wouldCreate(t Target) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case t.Namespace != "" && d.created["namespace|"+t.Namespace]:
		return "not checked by the server: its namespace " + t.Namespace + " would be created by this run"
	case t.Name != "" && d.created[t.key()]:
		return "not checked by the server: it would be created by this run"
	}
	return ""
}

// Unchecked lists, per cluster, the objects a server dry run answered without the server (see
// wouldCreate).
func (d *DryRun) Unchecked() map[string][]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string][]string{}
	for k, v := range d.unchecked {
		out[k] = slices.Clone(v)
	}
	return out
}

// Write is one write request as the dry-run layer sees it, whatever client sent it.
type Write struct {
	Target      Target
	Method      string
	ContentType string
	Body        []byte
	Query       url.Values
}

// NewWrite describes a write for a test adapter (fake clientsets have no transport): method is the HTTP
// method, body the request body (JSON, or an apply patch).
func NewWrite(method string, gvr schema.GroupVersionResource, namespace, name, subresource, contentType string, body []byte, query url.Values) Write {
	return Write{Target: Target{GVR: gvr, Namespace: namespace, Name: name, Subresource: subresource},
		Method: method, ContentType: contentType, Body: body, Query: query}
}

func (w Write) action() string {
	switch w.Method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodDelete:
		return "delete"
	}
	if strings.HasPrefix(w.ContentType, "application/apply-patch") {
		return "apply"
	}
	return "patch"
}

// Object is the request's body as an object (an apply patch may be YAML); nil when there is none.
func (w Write) Object() map[string]any {
	if len(w.Body) == 0 {
		return nil
	}
	var obj map[string]any
	if err := yaml.Unmarshal(w.Body, &obj); err != nil {
		return nil
	}
	return obj
}

// Reader reads the cluster for the dry-run layer: a merge patch is applied to the object as it is, a
// deletion shows what it would delete.
type Reader interface {
	Get(t Target) (map[string]any, *APIError)
	List(t Target, query url.Values) ([]map[string]any, *APIError)
}

// APIError is an API server's refusal, as a Status.
type APIError struct {
	Code   int
	Status map[string]any
}

// Answer answers a write locally, as a client dry run does: the object echoed for a create, update or
// apply, patched for a merge patch, a Status Success for a deletion; what the cluster would refuse that a
// read can tell (a patch or deletion of an object that is not there) is refused as the server would.
func (d *DryRun) Answer(cluster string, w Write, read Reader) Answer {
	return d.answer(cluster, w, read, "")
}

// Answer is a locally answered write: a status code and the object (or Status) the server would return.
type Answer struct {
	Code   int
	Object map[string]any
}

func (d *DryRun) answer(cluster string, w Write, read Reader, note string) Answer {
	t := w.Target
	switch w.action() {
	case "create", "update", "apply":
		obj := w.Object()
		if obj == nil {
			obj = stub(t, nil)
		}
		// A typed client names the namespace in the path only.
		if meta, ok := obj["metadata"].(map[string]any); ok && t.Namespace != "" && meta["namespace"] == nil {
			meta["namespace"] = t.Namespace
		}
		if t.Subresource == "status" && w.action() != "create" && obj["status"] != nil {
			// A status write changes the object: show it whole, with the new status, when it exists.
			cur, aerr := read.Get(Target{GVR: t.GVR, Namespace: t.Namespace, Name: t.Name})
			if aerr != nil {
				cur = d.writtenObject(t)
			}
			if cur != nil {
				obj, _ = mergePatch(cur, map[string]any{"status": obj["status"]}).(map[string]any)
			}
		}
		d.record(DryRunRecord{Cluster: cluster, Action: w.action(), Object: obj, Note: note})
		d.markWritten(t, obj)
		if w.action() == "create" {
			return Answer{Code: http.StatusCreated, Object: obj}
		}
		return Answer{Code: http.StatusOK, Object: obj}
	case "patch":
		cur, aerr := read.Get(Target{GVR: t.GVR, Namespace: t.Namespace, Name: t.Name})
		if aerr != nil && note == "" {
			return Answer{Code: aerr.Code, Object: aerr.Status}
		}
		if aerr != nil {
			cur = d.writtenObject(t)
		}
		var patch map[string]any
		if err := json.Unmarshal(w.Body, &patch); err != nil {
			return Answer{Code: http.StatusBadRequest, Object: status(http.StatusBadRequest, "BadRequest", "dry run: the patch is not JSON: "+err.Error())}
		}
		obj, _ := mergePatch(cur, patch).(map[string]any)
		d.record(DryRunRecord{Cluster: cluster, Action: "patch", Object: obj, Note: note})
		d.markWritten(t, obj)
		return Answer{Code: http.StatusOK, Object: obj}
	}
	// A deletion: of one object, or of a collection by selector.
	if t.Name == "" {
		items, aerr := read.List(t, w.Query)
		if aerr != nil {
			return Answer{Code: aerr.Code, Object: aerr.Status}
		}
		for _, it := range items {
			d.record(DryRunRecord{Cluster: cluster, Action: "delete", Object: it, Note: note})
		}
		return Answer{Code: http.StatusOK, Object: status(http.StatusOK, "", "")}
	}
	cur, aerr := read.Get(t)
	if aerr != nil {
		if note != "" {
			obj := d.writtenObject(t)
			if obj == nil {
				obj = stub(t, nil)
			}
			d.record(DryRunRecord{Cluster: cluster, Action: "delete", Object: obj, Note: note})
			return Answer{Code: http.StatusOK, Object: status(http.StatusOK, "", "")}
		}
		return Answer{Code: aerr.Code, Object: aerr.Status}
	}
	d.record(DryRunRecord{Cluster: cluster, Action: "delete", Object: cur, Note: note})
	return Answer{Code: http.StatusOK, Object: status(http.StatusOK, "", "")}
}

// stub names an object the request did not carry (a deletion of something the server did not describe).
func stub(t Target, obj map[string]any) map[string]any {
	if obj != nil {
		return obj
	}
	meta := map[string]any{"name": t.Name}
	if t.Namespace != "" {
		meta["namespace"] = t.Namespace
	}
	return map[string]any{"apiVersion": schema.GroupVersion{Group: t.GVR.Group, Version: t.GVR.Version}.String(),
		"kind": t.GVR.Resource, "metadata": meta}
}

func status(code int, reason, msg string) map[string]any {
	s := map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "code": code}
	if reason == "" {
		s["status"] = "Success"
		return s
	}
	s["status"], s["reason"], s["message"] = "Failure", reason, msg
	return s
}

// mergePatch applies a JSON merge patch (RFC 7386).
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	out := make(map[string]any, len(t))
	for k, v := range t {
		out[k] = v
	}
	for k, v := range p {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = mergePatch(out[k], v)
	}
	return out
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

func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	defer r.Body.Close()
	return io.ReadAll(r.Body)
}

func respond(r *http.Request, a Answer) (*http.Response, error) {
	data, err := json.Marshal(a.Object)
	if err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: a.Code, Status: fmt.Sprintf("%d %s", a.Code, http.StatusText(a.Code)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(bytes.NewReader(data)),
		ContentLength: int64(len(data)), Request: r}, nil
}

// httpReader reads through the cluster's own transport (so that reads are counted like any other).
type httpReader struct {
	rt     http.RoundTripper
	base   *http.Request
	prefix string // the server's own path (see hostPath)
}

func (h httpReader) do(path string, query url.Values) ([]byte, *APIError) {
	u := *h.base.URL
	u.Path, u.RawPath, u.RawQuery = h.prefix+path, "", query.Encode()
	r, err := http.NewRequestWithContext(h.base.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, &APIError{Code: http.StatusBadRequest, Status: status(http.StatusBadRequest, "BadRequest", err.Error())}
	}
	// The read is made as the write would have been: the same credential, and the same --as (the
	// Impersonate-* headers), so that it sees what that user sees.
	for k, v := range h.base.Header {
		if k == "User-Agent" || k == "Authorization" || strings.HasPrefix(k, "Impersonate-") {
			r.Header[k] = slices.Clone(v)
		}
	}
	r.Header.Set("Accept", "application/json")
	resp, err := h.rt.RoundTrip(r)
	if err != nil {
		return nil, &APIError{Code: http.StatusServiceUnavailable, Status: status(http.StatusServiceUnavailable, "ServiceUnavailable", err.Error())}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, &APIError{Code: http.StatusServiceUnavailable, Status: status(http.StatusServiceUnavailable, "ServiceUnavailable", err.Error())}
	}
	if resp.StatusCode >= 300 {
		var s map[string]any
		if json.Unmarshal(data, &s) != nil {
			s = status(resp.StatusCode, http.StatusText(resp.StatusCode), string(data))
		}
		return nil, &APIError{Code: resp.StatusCode, Status: s}
	}
	return data, nil
}

func (t Target) path() string {
	p := "/api/" + t.GVR.Version
	if t.GVR.Group != "" {
		p = "/apis/" + t.GVR.Group + "/" + t.GVR.Version
	}
	if t.Namespace != "" {
		p += "/namespaces/" + t.Namespace
	}
	p += "/" + t.GVR.Resource
	if t.Name != "" {
		p += "/" + t.Name
	}
	return p
}

func (h httpReader) Get(t Target) (map[string]any, *APIError) {
	data, aerr := h.do(t.path(), nil)
	if aerr != nil {
		return nil, aerr
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, &APIError{Code: http.StatusInternalServerError, Status: status(http.StatusInternalServerError, "InternalError", err.Error())}
	}
	return obj, nil
}

func (h httpReader) List(t Target, query url.Values) ([]map[string]any, *APIError) {
	q := url.Values{}
	for _, k := range []string{"labelSelector", "fieldSelector"} {
		if v := query.Get(k); v != "" {
			q.Set(k, v)
		}
	}
	data, aerr := h.do(t.path(), q)
	if aerr != nil {
		return nil, aerr
	}
	var list struct {
		APIVersion string           `json:"apiVersion"`
		Kind       string           `json:"kind"`
		Items      []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, &APIError{Code: http.StatusInternalServerError, Status: status(http.StatusInternalServerError, "InternalError", err.Error())}
	}
	// A built-in type's list items carry no apiVersion and kind: the list's say it.
	for _, it := range list.Items {
		if it["kind"] == nil {
			it["apiVersion"], it["kind"] = list.APIVersion, strings.TrimSuffix(list.Kind, "List")
		}
	}
	return list.Items, nil
}

// Print writes what the run recorded as YAML documents on w, grouped per cluster in the order the
// clusters were first written to, each document after a comment naming the cluster and the action:
// `kubectl federate ... --dry-run | kubectl apply -f -` style tools read the documents and skip the comments.
func (d *DryRun) Print(w io.Writer) error {
	recs := d.Records()
	var order []string
	byCluster := map[string][]DryRunRecord{}
	for _, r := range recs {
		if _, seen := byCluster[r.Cluster]; !seen {
			order = append(order, r.Cluster)
		}
		byCluster[r.Cluster] = append(byCluster[r.Cluster], r)
	}
	mode := "dry run"
	if d.Strategy == DryRunServer {
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

func printable(r DryRunRecord) (map[string]any, bool) {
	obj := r.Object
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
	d   *DryRun
	buf []byte
}

// NewCommentWriter returns out, turned into comments while f's dry run is active.
func (f *Factory) NewCommentWriter(out io.Writer) *CommentWriter {
	return &CommentWriter{Out: out, d: f.dry}
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
		if c.d.Strategy == DryRunServer {
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

// Capitalize makes a message's first letter upper case.
func Capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

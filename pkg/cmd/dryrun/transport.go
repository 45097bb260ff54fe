package dryrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Wrap puts the dry-run layer around a cluster's transport (outside the request counter, so that only
// what is sent is counted). cluster names the cluster in what is recorded.
func (d *Recorder) Wrap(cluster func() string, prefix string, rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if !d.Active() {
			return rt.RoundTrip(r)
		}
		t, ok := parsePath(prefix, r.URL.Path)
		if !ok && writeMethod(r.Method) {
			// Fail closed: a write whose target cannot be told is not sent at all.
			return nil, fmt.Errorf("dry run: %s %s is a write this dry run cannot describe; not sent", r.Method, r.URL.Path)
		}
		w := Write{Target: t, Method: r.Method, ContentType: r.Header.Get("Content-Type"), Query: r.URL.Query()}
		if !ok || !IsWrite(w) {
			return rt.RoundTrip(r)
		}
		var err error
		if w.Body, err = readBody(r); err != nil {
			return nil, err
		}
		read := httpReader{rt: rt, base: r, prefix: prefix}
		if d.Strategy == Client {
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
func (d *Recorder) serverDryRun(cluster string, r *http.Request, w Write, rt http.RoundTripper, read Reader) (*http.Response, error) {
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
				d.record(Record{Cluster: cluster, Action: w.action(), Object: m})
			}
		}
	case obj != nil && kind != "Status":
		if r.Method == http.MethodPost && w.Target.Subresource == "" {
			d.markCreated(w.Target, obj)
		}
		d.markWritten(w.Target, obj)
		d.record(Record{Cluster: cluster, Action: w.action(), Object: obj})
	case w.Target.Name != "":
		// The server answered with a Status: show the object as it stands.
		cur, aerr := read.Get(Target{GVR: w.Target.GVR, Namespace: w.Target.Namespace, Name: w.Target.Name})
		if aerr != nil {
			cur = stub(w.Target, nil)
		}
		d.record(Record{Cluster: cluster, Action: w.action(), Object: cur})
	}
	return resp, nil
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

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

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

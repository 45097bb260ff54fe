package dryrun

import (
	"encoding/json"
	"net/http"
	"net/url"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

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
func (d *Recorder) Answer(cluster string, w Write, read Reader) Answer {
	return d.answer(cluster, w, read, "")
}

// Answer is a locally answered write: a status code and the object (or Status) the server would return.
type Answer struct {
	Code   int
	Object map[string]any
}

func (d *Recorder) answer(cluster string, w Write, read Reader, note string) Answer {
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
		d.record(Record{Cluster: cluster, Action: w.action(), Object: obj, Note: note})
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
		d.record(Record{Cluster: cluster, Action: "patch", Object: obj, Note: note})
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
			d.record(Record{Cluster: cluster, Action: "delete", Object: it, Note: note})
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
			d.record(Record{Cluster: cluster, Action: "delete", Object: obj, Note: note})
			return Answer{Code: http.StatusOK, Object: status(http.StatusOK, "", "")}
		}
		return Answer{Code: aerr.Code, Object: aerr.Status}
	}
	d.record(Record{Cluster: cluster, Action: "delete", Object: cur, Note: note})
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

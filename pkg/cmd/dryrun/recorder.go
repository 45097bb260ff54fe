package dryrun

import (
	"slices"
	"sync"
)

// Recorder is a command's dry run: its strategy and what it recorded, shared by every client of the
// command (the local cluster's, the remote one's, a mesh's, a stored kubeconfig's), so that one run prints
// one stream of objects.
type Recorder struct {
	Strategy Strategy

	mu      sync.Mutex
	records []Record
	// created holds, in server mode, the objects (and namespaces) a write of this run would create: the
	// server has not stored them, so a later write to them, or into such a namespace, cannot be checked.
	created map[string]bool
	written map[string]bool           // in server mode, the objects a dry-run write was accepted for
	objects map[string]map[string]any // and the server's answers
	// unchecked counts, per cluster, writes answered here in server mode, for the closing note.
	unchecked map[string][]string
}

// Record is one write a dry run did not make: on which cluster, what, and the object.
type Record struct {
	Cluster string
	Action  string // create, update, patch, apply, delete
	Object  map[string]any
	Note    string // why the server did not check it, in server mode
}

// Active tells whether writes are held back (client) or sent as dry runs (server).
func (r *Recorder) Active() bool { return r != nil && r.Strategy != "" && r.Strategy != None }

// Records returns what the run recorded, in order.
func (r *Recorder) Records() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.records)
}

func (r *Recorder) record(rec Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec)
	if rec.Note != "" {
		if r.unchecked == nil {
			r.unchecked = map[string][]string{}
		}
		r.unchecked[rec.Cluster] = append(r.unchecked[rec.Cluster], objectRef(rec.Object))
	}
}

// markWritten remembers an object a server dry run accepted a write of.
func (r *Recorder) markWritten(t Target, obj map[string]any) {
	meta, _ := obj["metadata"].(map[string]any)
	if name, _ := meta["name"].(string); name != "" {
		t.Name = name
	}
	t.Subresource = ""
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written == nil {
		r.written = map[string]bool{}
	}
	r.written[t.key()] = true
	if r.objects == nil {
		r.objects = map[string]map[string]any{}
	}
	r.objects[t.key()] = obj
}

// writtenObject is the server's answer to an earlier write of this run to the object, if any.
func (r *Recorder) writtenObject(t Target) map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	t.Subresource = ""
	return r.objects[t.key()]
}

func (r *Recorder) wasWritten(t Target) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.written[t.key()]
}

// markCreated remembers, in server mode, an object the server would have created.
func (r *Recorder) markCreated(t Target, obj map[string]any) {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if name == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.created == nil {
		r.created = map[string]bool{}
	}
	t.Name = name
	r.created[t.key()] = true
	if t.GVR.Group == "" && t.GVR.Resource == "namespaces" {
		r.created["namespace|"+name] = true
	}
}

// wouldCreate says why the server cannot check a write in server mode: its object, or its namespace,
// would be created by this run and so does not exist on the server.
func (r *Recorder) wouldCreate(t Target) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case t.Namespace != "" && r.created["namespace|"+t.Namespace]:
		return "not checked by the server: its namespace " + t.Namespace + " would be created by this run"
	case t.Name != "" && r.created[t.key()]:
		return "not checked by the server: it would be created by this run"
	}
	return ""
}

// Unchecked lists, per cluster, the objects a server dry run answered without the server (see
// wouldCreate).
func (r *Recorder) Unchecked() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	for k, v := range r.unchecked {
		out[k] = slices.Clone(v)
	}
	return out
}

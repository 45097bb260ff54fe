package cmdtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/internal/fakeapi"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/dryrun"
)

// A fake clientset has no HTTP transport for the factory's dry-run layer to wrap, so the world puts the
// same layer in front of each fake cluster as a reactor: while the running command's dry run is active,
// every request is described as the one the real client would send (a dryrun.Write), the one rule of
// dryrun.IsWrite tells whether it is a write, and a write is answered by the command's dry run exactly as
// the transport answers it; the fake's store is never reached. A server-side dry run needs a server's
// admission, which a fake does not have: it is refused here, and proven end to end
// (test/e2e TestDryRunLeavesBothClustersUnchanged).

// teachDryRun puts the dry-run reactor in front of a fake cluster's clients.
func (w *World) teachDryRun(name string, s *fakeapi.Server) {
	typed := func(a clienttesting.Action) (bool, runtime.Object, error) {
		return w.dryRunReact(name, a, trackerReader{s.Clientset.Tracker(), false})
	}
	dyn := func(a clienttesting.Action) (bool, runtime.Object, error) {
		return w.dryRunReact(name, a, trackerReader{s.DynamicClient.Tracker(), true})
	}
	s.Clientset.PrependReactor("*", "*", typed)
	s.DynamicClient.PrependReactor("*", "*", dyn)
}

// requestOf is the request a real client would send for a fake's action, and the typed object it carried.
func requestOf(a clienttesting.Action) (dryrun.Write, runtime.Object) {
	t := dryrun.Target{GVR: a.GetResource(), Namespace: a.GetNamespace(), Subresource: a.GetSubresource()}
	w := dryrun.Write{Target: t, Method: http.MethodGet, ContentType: "application/json", Query: url.Values{}}
	switch act := a.(type) {
	case clienttesting.CreateActionImpl:
		if len(act.CreateOptions.DryRun) > 0 {
			w.Query.Set("dryRun", act.CreateOptions.DryRun[0])
		}
		w.Method, w.Target.Name, w.Body = http.MethodPost, act.Name, objectJSON(act.GetObject())
		return w, act.GetObject()
	case clienttesting.UpdateActionImpl:
		if len(act.UpdateOptions.DryRun) > 0 {
			w.Query.Set("dryRun", act.UpdateOptions.DryRun[0])
		}
		m, _ := meta.Accessor(act.GetObject())
		w.Method, w.Target.Name, w.Body = http.MethodPut, m.GetName(), objectJSON(act.GetObject())
		return w, act.GetObject()
	case clienttesting.PatchActionImpl:
		if len(act.PatchOptions.DryRun) > 0 {
			w.Query.Set("dryRun", act.PatchOptions.DryRun[0])
		}
		w.Method, w.Target.Name, w.Body, w.ContentType = http.MethodPatch, act.GetName(), act.GetPatch(), "application/merge-patch+json"
		if act.GetPatchType() == types.ApplyPatchType {
			w.ContentType = "application/apply-patch+yaml"
		}
	case clienttesting.DeleteActionImpl:
		w.Method, w.Target.Name = http.MethodDelete, act.GetName()
	case clienttesting.DeleteCollectionActionImpl:
		w.Method = http.MethodDelete
		if sel := act.GetListRestrictions().Labels; sel != nil && !sel.Empty() {
			w.Query.Set("labelSelector", sel.String())
		}
	}
	return w, nil
}

func (w *World) dryRunReact(cluster string, a clienttesting.Action, read trackerReader) (bool, runtime.Object, error) {
	w.mu.Lock()
	f := w.running
	w.mu.Unlock()
	if f == nil || !f.DryRun().Active() {
		return false, nil, nil
	}
	write, typedObj := requestOf(a)
	if !dryrun.IsWrite(write) {
		return false, nil, nil
	}
	if f.DryRun().Strategy == dryrun.Server {
		return true, nil, errors.New("a server-side dry run needs an API server's admission, which a fake cluster does not have: prove it end to end")
	}
	gvr, ns := write.Target.GVR, write.Target.Namespace
	ans := f.DryRun().Answer(cluster, write, read)
	if ans.Code >= 300 {
		var st metav1.Status
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(ans.Object, &st)
		return true, nil, &apierrors.StatusError{ErrStatus: st}
	}
	if _, isDelete := a.(clienttesting.DeleteActionImpl); isDelete {
		return true, nil, nil
	}
	if _, isDelete := a.(clienttesting.DeleteCollectionActionImpl); isDelete {
		return true, nil, nil
	}
	if read.dynamic {
		return true, &unstructured.Unstructured{Object: ans.Object}, nil
	}
	// A typed client wants its own type back.
	var out runtime.Object
	if typedObj != nil {
		out = reflect.New(reflect.TypeOf(typedObj).Elem()).Interface().(runtime.Object)
	} else if cur, err := read.tracker.Get(gvr, ns, a.(clienttesting.PatchActionImpl).GetName()); err == nil {
		out = reflect.New(reflect.TypeOf(cur).Elem()).Interface().(runtime.Object)
	} else if gvk, ok := ans.Object["kind"].(string); ok {
		o, err := scheme.Scheme.New(schema.FromAPIVersionAndKind(fmt.Sprint(ans.Object["apiVersion"]), gvk))
		if err != nil {
			return true, nil, err
		}
		out = o
	} else {
		return true, nil, fmt.Errorf("dry run on a fake: no type for %s", gvr)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(ans.Object, out); err != nil {
		return true, nil, err
	}
	return true, out, nil
}

// objectJSON is an object as a client sends it: with its apiVersion and kind (typed objects in a fake's
// actions carry none).
func objectJSON(obj runtime.Object) []byte {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil
	}
	if m["kind"] == nil {
		if gvks, _, err := scheme.Scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
			m["apiVersion"], m["kind"] = gvks[0].GroupVersion().String(), gvks[0].Kind
		}
	}
	data, _ := json.Marshal(m)
	return data
}

// trackerReader reads a fake's store for the dry-run layer.
type trackerReader struct {
	tracker clienttesting.ObjectTracker
	dynamic bool
}

func toMap(obj runtime.Object) map[string]any {
	m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if m["kind"] == nil {
		if gvks, _, err := scheme.Scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
			m["apiVersion"], m["kind"] = gvks[0].GroupVersion().String(), gvks[0].Kind
		}
	}
	return m
}

func apiError(err error) *dryrun.APIError {
	st := apierrors.APIStatus(nil)
	if se, ok := err.(apierrors.APIStatus); ok {
		st = se
	} else {
		st = apierrors.NewInternalError(err)
	}
	m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(ptr(st.Status()))
	return &dryrun.APIError{Code: int(st.Status().Code), Status: m}
}

func ptr[T any](v T) *T { return &v }

func (r trackerReader) Get(t dryrun.Target) (map[string]any, *dryrun.APIError) {
	obj, err := r.tracker.Get(t.GVR, t.Namespace, t.Name)
	if err != nil {
		return nil, apiError(err)
	}
	return toMap(obj), nil
}

func (r trackerReader) List(t dryrun.Target, query url.Values) ([]map[string]any, *dryrun.APIError) {
	objs, err := listAll(r.tracker, t.GVR, t.Namespace, r.dynamic)
	if err != nil {
		return nil, apiError(err)
	}
	sel, err := labels.Parse(query.Get("labelSelector"))
	if err != nil {
		return nil, apiError(apierrors.NewBadRequest(err.Error()))
	}
	var out []map[string]any
	for _, o := range objs {
		m, _ := meta.Accessor(o)
		if sel.Matches(labels.Set(m.GetLabels())) {
			out = append(out, toMap(o))
		}
	}
	return out, nil
}

// kindOf finds a resource's kind: the dynamic fake's list kinds, or the typed scheme.
func kindOf(gvr schema.GroupVersionResource, dynamic bool) (schema.GroupVersionKind, bool) {
	if dynamic {
		if lk, ok := fakeapi.ListKinds[gvr]; ok {
			return gvr.GroupVersion().WithKind(strings.TrimSuffix(lk, "List")), true
		}
		return schema.GroupVersionKind{}, false
	}
	for kind := range scheme.Scheme.KnownTypes(gvr.GroupVersion()) {
		gvk := gvr.GroupVersion().WithKind(kind)
		if plural, _ := meta.UnsafeGuessKindToResource(gvk); plural.Resource == gvr.Resource {
			return gvk, true
		}
	}
	return schema.GroupVersionKind{}, false
}

func listAll(tr clienttesting.ObjectTracker, gvr schema.GroupVersionResource, ns string, dynamic bool) ([]runtime.Object, error) {
	gvk, ok := kindOf(gvr, dynamic)
	if !ok {
		return nil, nil
	}
	list, err := tr.List(gvr, gvk, ns)
	if err != nil {
		return nil, err
	}
	return meta.ExtractList(list)
}

// snapshotResources are the kinds a snapshot of a fake cluster lists through the typed client: every
// kind kubectl federate writes there (the dynamic client's kinds are fakeapi.ListKinds).
var snapshotResources = []schema.GroupVersionResource{
	{Version: "v1", Resource: "namespaces"}, {Version: "v1", Resource: "secrets"}, {Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "serviceaccounts"}, {Version: "v1", Resource: "resourcequotas"}, {Version: "v1", Resource: "limitranges"},
	{Version: "v1", Resource: "pods"}, {Version: "v1", Resource: "events"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	{Group: "certificates.k8s.io", Version: "v1", Resource: "certificatesigningrequests"},
	{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"},
	{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
	{Group: "events.k8s.io", Version: "v1", Resource: "events"},
}

// Snapshot is everything a fake cluster stores of the kinds kubectl federate writes, as sorted lines
// "resource namespace/name resourceVersion": two equal snapshots mean nothing was created, changed or
// deleted in between.
func (w *World) Snapshot(name string) string {
	w.t.Helper()
	s := w.Cluster(name)
	var lines []string
	add := func(tr clienttesting.ObjectTracker, gvr schema.GroupVersionResource, dynamic bool) {
		objs, err := listAll(tr, gvr, "", dynamic)
		if err != nil {
			w.t.Fatalf("snapshot of %s: %v", gvr, err)
		}
		for _, o := range objs {
			m, _ := meta.Accessor(o)
			data, _ := json.Marshal(o)
			lines = append(lines, fmt.Sprintf("%s %s/%s %s %x", gvr.Resource, m.GetNamespace(), m.GetName(), m.GetResourceVersion(), data))
		}
	}
	for _, gvr := range snapshotResources {
		add(s.Clientset.Tracker(), gvr, false)
	}
	for gvr := range fakeapi.ListKinds {
		add(s.DynamicClient.Tracker(), gvr, true)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

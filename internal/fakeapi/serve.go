package fakeapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// Serve makes the fake serve gvr, namespaced, of kind (a CRD installed): discovery lists it. With status,
// the resource has a status subresource, kept as the API server keeps it: a create stores no status, an
// update of the object leaves status as it was, and an update of status changes status alone. The fake's
// tracker would otherwise store whatever it is sent, status and all, and hide a status written the wrong
// way.
func (s *Server) Serve(gvr schema.GroupVersionResource, kind string, status bool) {
	d := s.Clientset.Discovery().(*fakediscovery.FakeDiscovery)
	res := []metav1.APIResource{{Name: gvr.Resource, Namespaced: true, Kind: kind, Group: gvr.Group, Version: gvr.Version}}
	if status {
		res = append(res, metav1.APIResource{Name: gvr.Resource + "/status", Namespaced: true, Kind: kind, Group: gvr.Group, Version: gvr.Version})
		s.DynamicClient.PrependReactor("*", gvr.Resource, s.statusSubresource(gvr))
	}
	gv := gvr.GroupVersion().String()
	for _, l := range d.Resources {
		if l.GroupVersion == gv {
			l.APIResources = append(l.APIResources, res...)
			return
		}
	}
	d.Resources = append(d.Resources, &metav1.APIResourceList{GroupVersion: gv, APIResources: res})
}

// statusSubresource rewrites what a create or an update sends before the reactors behind it (the
// tracker, or a dry run's) see it: it never handles the action itself.
func (s *Server) statusSubresource(gvr schema.GroupVersionResource) clienttesting.ReactionFunc {
	return func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetResource() != gvr {
			return false, nil, nil
		}
		// By verb: a create action and an update action have the same methods.
		switch a.GetVerb() {
		case "create":
			if u, ok := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured); ok && a.GetSubresource() == "" {
				delete(u.Object, "status")
			}
		case "update":
			u, ok := a.(clienttesting.UpdateAction).GetObject().(*unstructured.Unstructured)
			if !ok {
				return false, nil, nil
			}
			got, err := s.DynamicClient.Tracker().Get(gvr, a.GetNamespace(), u.GetName())
			if err != nil {
				return false, nil, nil // the tracker answers NotFound
			}
			have := got.(*unstructured.Unstructured).DeepCopy()
			if a.GetSubresource() == "status" {
				// status alone: everything else as stored
				if st, ok := u.Object["status"]; ok {
					have.Object["status"] = st
				} else {
					delete(have.Object, "status")
				}
				u.Object = have.Object
				return false, nil, nil
			}
			if st, ok := have.Object["status"]; ok {
				u.Object["status"] = st
			} else {
				delete(u.Object, "status")
			}
		}
		return false, nil, nil
	}
}

package kube

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

// names lists each list's resources as group-version:resource[ns], for comparing.
func names(lists []*metav1.APIResourceList) []string {
	var out []string
	for _, l := range lists {
		for _, r := range l.APIResources {
			ns := ""
			if r.Namespaced {
				ns = "[ns]"
			}
			out = append(out, l.GroupVersion+":"+r.Name+ns)
		}
	}
	slices.Sort(out)
	return out
}

func resource(name string, namespaced bool, subs ...string) apidiscoveryv2.APIResourceDiscovery {
	r := apidiscoveryv2.APIResourceDiscovery{Resource: name, Scope: apidiscoveryv2.ScopeCluster, Verbs: []string{"get", "list"},
		ResponseKind: &metav1.GroupVersionKind{Kind: strings.ToUpper(name[:1]) + name[1:]}}
	if namespaced {
		r.Scope = apidiscoveryv2.ScopeNamespace
	}
	for _, s := range subs {
		r.Subresources = append(r.Subresources, apidiscoveryv2.APISubresourceDiscovery{Subresource: s, Verbs: []string{"get"}, ResponseKind: r.ResponseKind})
	}
	return r
}

func aggregatedList(groups ...apidiscoveryv2.APIGroupDiscovery) *apidiscoveryv2.APIGroupDiscoveryList {
	return &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}, Items: groups}
}

// With aggregated discovery the preferred resources come from two requests, sent together: each
// resource once, in its group's preferred version if served there, subresources and resources without a
// kind left out (as client-go leaves them out).
func TestPreferredResourcesAggregated(t *testing.T) {
	core := aggregatedList(apidiscoveryv2.APIGroupDiscovery{Versions: []apidiscoveryv2.APIVersionDiscovery{
		{Version: "v1", Resources: []apidiscoveryv2.APIResourceDiscovery{resource("pods", true, "status", "log"), resource("nodes", false),
			{Resource: "kindless", Scope: apidiscoveryv2.ScopeCluster, Verbs: []string{"get"}}}}}})
	named := aggregatedList(apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: "example.com"}, Versions: []apidiscoveryv2.APIVersionDiscovery{
		{Version: "v2", Resources: []apidiscoveryv2.APIResourceDiscovery{resource("widgets", true)}},
		{Version: "v1", Resources: []apidiscoveryv2.APIResourceDiscovery{resource("widgets", true), resource("gadgets", false)}},
	}})
	s, k := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept"), "as=APIGroupDiscoveryList") {
			t.Errorf("%s asked without aggregated discovery: %q", r.URL.Path, r.Header.Get("Accept"))
		}
		w.Header().Set("Content-Type", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
		if r.URL.Path == "/api" {
			writeJSON(w, 200, core)
		} else {
			writeJSON(w, 200, named)
		}
	})
	lists, err := k.Discovery().ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"example.com/v1:gadgets", "example.com/v2:widgets[ns]", "v1:nodes", "v1:pods[ns]"}
	if got := names(lists); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if len(s.requests) != 2 {
		t.Errorf("%d requests, want 2: %q", len(s.requests), s.requests)
	}
	nsd, err := k.Discovery().ServerPreferredNamespacedResources()
	if err != nil {
		t.Fatal(err)
	}
	if got := names(nsd); !slices.Equal(got, []string{"example.com/v2:widgets[ns]", "v1:pods[ns]"}) {
		t.Errorf("namespaced: got %q", got)
	}
}

// A group version whose discovery is stale is left out and named in the error; the rest is returned.
func TestPreferredResourcesStaleGroup(t *testing.T) {
	named := aggregatedList(apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: "metrics.k8s.io"}, Versions: []apidiscoveryv2.APIVersionDiscovery{
		{Version: "v1beta1", Freshness: apidiscoveryv2.DiscoveryFreshnessStale, Resources: []apidiscoveryv2.APIResourceDiscovery{resource("pods", true)}}}})
	core := aggregatedList(apidiscoveryv2.APIGroupDiscovery{Versions: []apidiscoveryv2.APIVersionDiscovery{{Version: "v1", Resources: []apidiscoveryv2.APIResourceDiscovery{resource("pods", true)}}}})
	_, k := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api" {
			writeJSON(w, 200, core)
		} else {
			writeJSON(w, 200, named)
		}
	})
	lists, err := k.Discovery().ServerPreferredResources()
	if err == nil || !strings.Contains(err.Error(), "metrics.k8s.io/v1beta1") {
		t.Errorf("error %v, want the stale group version named", err)
	}
	if got := names(lists); !slices.Equal(got, []string{"v1:pods[ns]"}) {
		t.Errorf("got %q", got)
	}
}

// A server without aggregated discovery answers with the older lists: then every group version's
// resources are read, and the same choice is made.
func TestPreferredResourcesLegacy(t *testing.T) {
	s, k := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api":
			writeJSON(w, 200, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
		case "/apis":
			writeJSON(w, 200, &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{{
				Name:             "example.com",
				Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: "example.com/v1", Version: "v1"}, {GroupVersion: "example.com/v2", Version: "v2"}},
				PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "example.com/v2", Version: "v2"},
			}}})
		case "/api/v1":
			writeJSON(w, 200, &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true}, {Name: "pods/status", Namespaced: true}}})
		case "/apis/example.com/v1":
			writeJSON(w, 200, &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "widgets", Namespaced: true}, {Name: "gadgets"}}})
		case "/apis/example.com/v2":
			writeJSON(w, 200, &metav1.APIResourceList{GroupVersion: "example.com/v2", APIResources: []metav1.APIResource{{Name: "widgets", Namespaced: true}}})
		default:
			writeJSON(w, 404, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: 404})
		}
	})
	lists, err := k.Discovery().ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"example.com/v1:gadgets", "example.com/v2:widgets[ns]", "v1:pods[ns]"}
	if got := names(lists); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if len(s.requests) != 5 {
		t.Errorf("%d requests, want 5: %q", len(s.requests), s.requests)
	}
}

func TestServerVersion(t *testing.T) {
	_, k := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			t.Errorf("asked %s", r.URL.Path)
		}
		writeJSON(w, 200, &version.Info{Major: "1", Minor: "37", GitVersion: "v1.37.2"})
	})
	v, err := k.Discovery().ServerVersion()
	if err != nil || v.GitVersion != "v1.37.2" {
		t.Fatalf("got %v %v", v, err)
	}
	if k.Discovery().RESTClient() == nil {
		t.Error("no REST client for requests by path")
	}
}

// Each answer is taken as what it is: an aggregated /api beside an older /apis (a proxy that answers the
// two paths differently) still yields every group.
func TestPreferredResourcesMixedAnswers(t *testing.T) {
	core := aggregatedList(apidiscoveryv2.APIGroupDiscovery{Versions: []apidiscoveryv2.APIVersionDiscovery{{Version: "v1", Resources: []apidiscoveryv2.APIResourceDiscovery{resource("pods", true)}}}})
	s, k := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api":
			writeJSON(w, 200, core)
		case "/apis":
			writeJSON(w, 200, &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{{
				Name:             "example.com",
				Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: "example.com/v1", Version: "v1"}},
				PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "example.com/v1", Version: "v1"},
			}}})
		case "/apis/example.com/v1":
			writeJSON(w, 200, &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "gadgets"}}})
		default:
			t.Errorf("asked %s", r.URL.Path)
			writeJSON(w, 404, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: 404})
		}
	})
	lists, err := k.Discovery().ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(lists), []string{"example.com/v1:gadgets", "v1:pods[ns]"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if len(s.requests) != 3 {
		t.Errorf("%d requests, want 3: %q", len(s.requests), s.requests)
	}
	nsd, err := k.Discovery().ServerPreferredNamespacedResources()
	if err != nil {
		t.Fatal(err)
	}
	if len(nsd) != 1 || nsd[0].GroupVersion != "v1" {
		t.Errorf("namespaced lists %d, want the core group's alone (no list left empty)", len(nsd))
	}
}

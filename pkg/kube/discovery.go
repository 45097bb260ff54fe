package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
)

// Discovery is what the plugin asks of the API server's discovery, as client-go's discovery client
// spells it (no context: the connection's timeout bounds each request).
type Discovery interface {
	// RESTClient is a client of the server's root, for requests by absolute path; nil on a fake cluster.
	RESTClient() rest.Interface
	ServerVersion() (*version.Info, error)
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
	// ServerPreferredResources lists each group's resources (no subresources) once, in the group's
	// preferred version where it is served there, else in the first version that serves it.
	ServerPreferredResources() ([]*metav1.APIResourceList, error)
	ServerPreferredNamespacedResources() ([]*metav1.APIResourceList, error)
}

// acceptAggregated asks for aggregated discovery (every group's versions and resources in one answer
// for /api and one for /apis), and takes the older lists from a server without it.
const acceptAggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"

type discovery struct {
	rc *rest.RESTClient
}

func newDiscovery(c *rest.Config, hc *http.Client, cd *codecs) (*discovery, error) {
	dc := *c
	dc.APIPath, dc.GroupVersion = "", nil
	dc.NegotiatedSerializer = cd.serializer
	rc, err := rest.UnversionedRESTClientForConfigAndClient(&dc, hc)
	if err != nil {
		return nil, err
	}
	return &discovery{rc: rc}, nil
}

func (d *discovery) RESTClient() rest.Interface { return d.rc }

func (d *discovery) get(path, accept string, into any) error {
	req := d.rc.Get().AbsPath(path)
	if accept != "" {
		req = req.SetHeader("Accept", accept)
	}
	raw, err := req.Do(context.TODO()).Raw()
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("discovery %s: %w", path, err)
	}
	return nil
}

func (d *discovery) ServerVersion() (*version.Info, error) {
	var v version.Info
	if err := d.get("/version", "", &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// groupVersionPath is where a group version's resources are listed.
func groupVersionPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

func (d *discovery) ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error) {
	gv, err := schema.ParseGroupVersion(groupVersion)
	if err != nil {
		return nil, err
	}
	var l metav1.APIResourceList
	if err := d.get(groupVersionPath(gv), "", &l); err != nil {
		return nil, err
	}
	l.GroupVersion = groupVersion
	return &l, nil
}

func (d *discovery) ServerPreferredNamespacedResources() ([]*metav1.APIResourceList, error) {
	all, err := d.ServerPreferredResources()
	out := make([]*metav1.APIResourceList, 0, len(all))
	for _, l := range all {
		n := &metav1.APIResourceList{GroupVersion: l.GroupVersion}
		for _, r := range l.APIResources {
			if r.Namespaced {
				n.APIResources = append(n.APIResources, r)
			}
		}
		if len(n.APIResources) > 0 {
			out = append(out, n)
		}
	}
	return out, err
}

// served is one group as discovery answered it: its versions in order of preference, and the resources
// of each version that could be read.
type served struct {
	name      string
	versions  []string
	resources map[string][]metav1.APIResource
}

func (d *discovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	groups, err := d.groups()
	if len(groups) == 0 {
		return nil, err
	}
	return preferred(groups), err
}

// preferred picks each resource's version: the group's preferred one if it serves the resource, else
// the first that does. Lists keep the server's order of groups and versions.
func preferred(groups []served) []*metav1.APIResourceList {
	var out []*metav1.APIResourceList
	for _, g := range groups {
		chosen := map[string]bool{}
		for _, v := range g.versions {
			rs, ok := g.resources[v]
			if !ok {
				continue
			}
			gv := schema.GroupVersion{Group: g.name, Version: v}.String()
			l := &metav1.APIResourceList{GroupVersion: gv}
			for _, r := range rs {
				if strings.Contains(r.Name, "/") || chosen[r.Name] {
					continue
				}
				chosen[r.Name] = true
				l.APIResources = append(l.APIResources, r)
			}
			out = append(out, l)
		}
	}
	return out
}

// groups reads /api and /apis at once. Each answer is taken as what it is: aggregated discovery holds
// its groups' resources; from a server (or a proxy) that answers the older way, that answer's group
// versions are then read, all at once. A group version that could not be read is left out and named in
// the error. Unlike client-go's discovery, nothing is read twice: a group that is stale for a moment is
// left out of this answer, not retried.
func (d *discovery) groups() ([]served, error) {
	var core, named []served
	var coreErr, namedErr error
	all(func() { core, coreErr = d.answer("/api") }, func() { named, namedErr = d.answer("/apis") })
	return append(core, named...), errors.Join(coreErr, namedErr)
}

// answer reads one of /api and /apis, and the resources of its group versions.
func (d *discovery) answer(path string) ([]served, error) {
	var raw json.RawMessage
	if err := d.get(path, acceptAggregated, &raw); err != nil {
		return nil, err
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, fmt.Errorf("discovery %s: %w", path, err)
	}
	switch {
	case tm.Kind == "APIGroupDiscoveryList":
		return aggregated(raw)
	case path == "/api":
		var versions metav1.APIVersions
		if err := json.Unmarshal(raw, &versions); err != nil {
			return nil, fmt.Errorf("discovery %s: %w", path, err)
		}
		return d.legacy([]served{{name: "", versions: versions.Versions}})
	}
	var list metav1.APIGroupList
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("discovery %s: %w", path, err)
	}
	groups := make([]served, 0, len(list.Groups))
	for _, g := range list.Groups {
		s := served{name: g.Name, versions: []string{g.PreferredVersion.Version}}
		for _, v := range g.Versions {
			if v.Version != g.PreferredVersion.Version {
				s.versions = append(s.versions, v.Version)
			}
		}
		groups = append(groups, s)
	}
	return d.legacy(groups)
}

// aggregated reads the groups of an aggregated discovery answer.
func aggregated(raw json.RawMessage) ([]served, error) {
	var l apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	var out []served
	var errs []error
	for _, g := range l.Items {
		s := served{name: g.Name, resources: map[string][]metav1.APIResource{}}
		for _, v := range g.Versions {
			s.versions = append(s.versions, v.Version)
			if v.Freshness == apidiscoveryv2.DiscoveryFreshnessStale {
				errs = append(errs, fmt.Errorf("%s: stale discovery", schema.GroupVersion{Group: g.Name, Version: v.Version}))
				continue
			}
			s.resources[v.Version] = resourcesOf(v.Resources)
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// resourcesOf turns aggregated discovery's resources into discovery's older form, subresources as
// "resource/subresource". A resource or subresource without a kind is left out, as client-go leaves it.
func resourcesOf(in []apidiscoveryv2.APIResourceDiscovery) []metav1.APIResource {
	var out []metav1.APIResource
	for _, r := range in {
		if r.ResponseKind == nil {
			continue
		}
		ns := r.Scope == apidiscoveryv2.ScopeNamespace
		out = append(out, metav1.APIResource{Name: r.Resource, SingularName: r.SingularResource, Namespaced: ns, Verbs: r.Verbs,
			ShortNames: r.ShortNames, Categories: r.Categories, Group: r.ResponseKind.Group, Version: r.ResponseKind.Version, Kind: r.ResponseKind.Kind})
		for _, sub := range r.Subresources {
			if sub.ResponseKind == nil {
				continue
			}
			out = append(out, metav1.APIResource{Name: r.Resource + "/" + sub.Subresource, Namespaced: ns, Verbs: sub.Verbs,
				Group: sub.ResponseKind.Group, Version: sub.ResponseKind.Version, Kind: sub.ResponseKind.Kind})
		}
	}
	return out
}

// legacy reads the resources of every version of groups, all at once (a server without aggregated
// discovery).
func (d *discovery) legacy(groups []served) ([]served, error) {
	type read struct {
		group, version int
		list           *metav1.APIResourceList
		err            error
	}
	var reads []*read
	var calls []func()
	for gi, g := range groups {
		groups[gi].resources = map[string][]metav1.APIResource{}
		for vi, v := range g.versions {
			r := &read{group: gi, version: vi}
			reads = append(reads, r)
			gv := schema.GroupVersion{Group: g.name, Version: v}
			calls = append(calls, func() { r.list, r.err = d.ServerResourcesForGroupVersion(gv.String()) })
		}
	}
	all(calls...)
	var errs []error
	for _, r := range reads {
		g := &groups[r.group]
		if r.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", schema.GroupVersion{Group: g.name, Version: g.versions[r.version]}, r.err))
			continue
		}
		g.resources[g.versions[r.version]] = r.list.APIResources
	}
	return groups, errors.Join(errs...)
}

// all runs fns at once and returns when each has. (Not pkg/internal/parallel: this package is a leaf.)
func all(fns ...func()) {
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Go(fn)
	}
	wg.Wait()
}

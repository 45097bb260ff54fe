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
		out = append(out, n)
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

// groups reads /api and /apis at once. With aggregated discovery that is all; from an older server it
// then reads every group version's resources at once. A group version that could not be read is left
// out, and named in the error.
func (d *discovery) groups() ([]served, error) {
	var core, named json.RawMessage
	var coreErr, namedErr error
	all(func() { coreErr = d.get("/api", acceptAggregated, &core) },
		func() { namedErr = d.get("/apis", acceptAggregated, &named) })
	if err := errors.Join(coreErr, namedErr); err != nil {
		return nil, err
	}
	var kinds [2]metav1.TypeMeta
	if err := errors.Join(json.Unmarshal(core, &kinds[0]), json.Unmarshal(named, &kinds[1])); err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	if kinds[0].Kind == "APIGroupDiscoveryList" && kinds[1].Kind == "APIGroupDiscoveryList" {
		return aggregated(core, named)
	}
	return d.legacy(core, named)
}

// aggregated reads the groups of aggregated discovery answers.
func aggregated(lists ...json.RawMessage) ([]served, error) {
	var out []served
	var errs []error
	for _, raw := range lists {
		var l apidiscoveryv2.APIGroupDiscoveryList
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
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
	}
	return out, errors.Join(errs...)
}

// resourcesOf turns aggregated discovery's resources into discovery's older form, subresources as
// "resource/subresource".
func resourcesOf(in []apidiscoveryv2.APIResourceDiscovery) []metav1.APIResource {
	var out []metav1.APIResource
	for _, r := range in {
		ns := r.Scope == apidiscoveryv2.ScopeNamespace
		a := metav1.APIResource{Name: r.Resource, SingularName: r.SingularResource, Namespaced: ns, Verbs: r.Verbs,
			ShortNames: r.ShortNames, Categories: r.Categories}
		if r.ResponseKind != nil {
			a.Group, a.Version, a.Kind = r.ResponseKind.Group, r.ResponseKind.Version, r.ResponseKind.Kind
		}
		out = append(out, a)
		for _, sub := range r.Subresources {
			s := metav1.APIResource{Name: r.Resource + "/" + sub.Subresource, Namespaced: ns, Verbs: sub.Verbs}
			if sub.ResponseKind != nil {
				s.Group, s.Version, s.Kind = sub.ResponseKind.Group, sub.ResponseKind.Version, sub.ResponseKind.Kind
			}
			out = append(out, s)
		}
	}
	return out
}

// legacy reads the groups of a server without aggregated discovery: /api's versions and /apis's groups,
// then each version's resources, all at once.
func (d *discovery) legacy(core, named json.RawMessage) ([]served, error) {
	var versions metav1.APIVersions
	var list metav1.APIGroupList
	if err := errors.Join(json.Unmarshal(core, &versions), json.Unmarshal(named, &list)); err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	groups := []served{{name: "", versions: versions.Versions}}
	for _, g := range list.Groups {
		s := served{name: g.Name, versions: []string{g.PreferredVersion.Version}}
		for _, v := range g.Versions {
			if v.Version != g.PreferredVersion.Version {
				s.versions = append(s.versions, v.Version)
			}
		}
		groups = append(groups, s)
	}
	type read struct {
		group, version int
		list           *metav1.APIResourceList
		err            error
	}
	var reads []*read
	var calls []func()
	for gi := range groups {
		groups[gi].resources = map[string][]metav1.APIResource{}
		for vi := range groups[gi].versions {
			r := &read{group: gi, version: vi}
			reads = append(reads, r)
			gv := schema.GroupVersion{Group: groups[gi].name, Version: groups[gi].versions[vi]}
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

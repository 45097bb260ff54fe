package sandbox

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Every kind the tenant role can create is counted by the default total: otherwise a tenant fills etcd
// with it (120 Deployments and 120 CronJobs were admitted in a tenant namespace before).
func TestDefaultQuotaCountsEveryKindTheTenantCreates(t *testing.T) {
	total := DefaultQuota()
	// Core kinds are counted by their plain names, which count every stored object; pods are the
	// exception: "pods" leaves out finished pods, count/pods counts them.
	plain := map[string]bool{"services": true, "configmaps": true, "secrets": true, "persistentvolumeclaims": true}
	for _, rule := range defaultClusterRole().Rules {
		if !slices.Contains(rule.Verbs, "create") {
			continue
		}
		for _, group := range rule.APIGroups {
			for _, res := range rule.Resources {
				if strings.Contains(res, "/") {
					continue // subresources (exec, portforward) store nothing
				}
				key := "count/" + res
				if group != "" {
					key += "." + group
				} else if plain[res] {
					key = res
				}
				if q, ok := total[corev1.ResourceName(key)]; !ok || q.Sign() <= 0 {
					t.Errorf("the tenant role creates %s (group %q), which DefaultQuota does not count as %s", res, group, key)
				}
			}
		}
	}
}

// controllerMade is what the controllers of kube-controller-manager make from each kind the tenant role
// creates, as the quota names them: a count of DefaultQuota, or a bound by another count (the text says
// which). test/e2e walks the same on a real cluster.
var controllerMade = map[string][]string{
	"/pods":                   {"events: the API server leaves them out of quota; they expire (event TTL) and recorders rate-limit them"},
	"/services":               {"count/endpointslices.discovery.k8s.io", "endpoints: one per Service, bounded by services"},
	"/configmaps":             nil,
	"/secrets":                nil,
	"/persistentvolumeclaims": {"persistentvolumes: cluster-scoped, one per claim, bounded by persistentvolumeclaims"},
	"apps/deployments":        {"count/replicasets.apps", "count/pods"},
	"apps/replicasets":        {"count/pods"},
	"apps/statefulsets":       {"count/controllerrevisions.apps", "count/pods", "persistentvolumeclaims"},
	"batch/jobs":              {"count/pods"},
	"batch/cronjobs":          {"count/jobs.batch", "count/pods"},
	// The consumer's requests to its provider: nothing acts on them but the provider's administrator.
	"federate.dev/resourceslices":    nil,
	"federate.dev/namespacerequests": nil,
	"federate.dev/exchangerequests":  nil,
}

// Every kind a controller makes from what the tenant creates is counted (a StatefulSet patched again and
// again filled etcd with ControllerRevisions before), and the walk above covers every kind of the role.
func TestDefaultQuotaCountsWhatControllersMake(t *testing.T) {
	total := DefaultQuota()
	for _, rule := range defaultClusterRole().Rules {
		if !slices.Contains(rule.Verbs, "create") {
			continue
		}
		for _, group := range rule.APIGroups {
			for _, res := range rule.Resources {
				if _, ok := controllerMade[group+"/"+res]; !ok && !strings.Contains(res, "/") {
					t.Errorf("the tenant role creates %s/%s: say what controllers make from it in controllerMade", group, res)
				}
			}
		}
	}
	for kind, made := range controllerMade {
		for _, m := range made {
			if strings.Contains(m, ": ") {
				continue // bounded otherwise, and says how
			}
			if q, ok := total[corev1.ResourceName(m)]; !ok || q.Sign() <= 0 {
				t.Errorf("controllers make %s from %s, which DefaultQuota does not count", m, kind)
			}
		}
	}
}

// storedObjects is how many objects a quota lets a tenant keep in etcd: every count, Services twice (each
// has its Endpoints); -1 when stored pods are not counted (unbounded).
func storedObjects(hard corev1.ResourceList) int64 {
	if _, ok := hard["count/pods"]; !ok {
		return -1
	}
	var n int64
	for name, q := range hard {
		switch {
		case strings.HasPrefix(string(name), "count/"), slices.Contains([]corev1.ResourceName{"secrets", "configmaps", "persistentvolumeclaims"}, name):
			n += q.Value()
		case name == "services":
			n += 2 * q.Value()
		}
	}
	return n
}

// The stated bound of what a tenant stores with the default total (docs/security.md): DefaultStoredObjects
// objects of at most 1.5 MiB each (etcd's default request limit: an object is written in one request),
// 300 MiB. A grant's default takes a fifth of it or less.
func TestDefaultTotalBoundsStoredBytes(t *testing.T) {
	n := storedObjects(DefaultQuota())
	if n != DefaultStoredObjects {
		t.Errorf("DefaultQuota admits %d stored objects, DefaultStoredObjects says %d", n, DefaultStoredObjects)
	}
	if mib := n * 3 / 2; mib != 300 {
		t.Errorf("the default total stores at most %d MiB, the documentation says 300", mib)
	}
	if g := storedObjects(DefaultGrantQuota()); g <= 0 || g*5 > n {
		t.Errorf("a grant's default stores %d objects, more than a fifth of the total's %d", g, n)
	}
}

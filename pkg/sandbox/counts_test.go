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

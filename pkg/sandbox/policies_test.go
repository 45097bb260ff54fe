package sandbox

import (
	"strings"
	"testing"
)

// History limits are capped at the Kubernetes defaults, so that a workload setting none is admitted.
func TestHistoryCaps(t *testing.T) {
	for res, want := range map[string]string{"history": "revisionHistoryLimit <= 10", "statefulsets": "revisionHistoryLimit <= 10",
		"cronjobs": "successfulJobsHistoryLimit <= 3"} {
		found := false
		for _, v := range Policy(res).Spec.Validations {
			found = found || strings.Contains(v.Expression, want)
		}
		if !found {
			t.Errorf("%s: no rule %s", res, want)
		}
	}
}

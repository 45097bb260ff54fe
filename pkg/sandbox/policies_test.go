package sandbox

import (
	"slices"
	"strings"
	"testing"
)

// The volume allowlist holds for every pod (the pods policy, everyone: controllers create pods from the
// tenant's templates) and is told to the tenant at its templates (workloads, CronJobs); each rule's message
// is its own, and the pods policy's come in the order that names the most precise rule first.
func TestVolumeRulesInEveryPodPath(t *testing.T) {
	for res, path := range map[string]string{"pods": "object.spec.volumes", "workloads": "object.spec.template.spec.volumes",
		"cronjobs": "object.spec.jobTemplate.spec.template.spec.volumes"} {
		p := Policy(res)
		var msgs []string
		for _, v := range p.Spec.Validations {
			if strings.Contains(v.Expression, path) {
				msgs = append(msgs, v.Message)
			}
		}
		for _, want := range []string{podCertMessage, csiMessage, imageMessage, emptyDirMessage, volumeMessage} {
			if !slices.Contains(msgs, want) {
				t.Errorf("%s: no rule %q on %s", res, want, path)
			}
		}
		if i, j := slices.Index(msgs, csiMessage), slices.Index(msgs, volumeMessage); i > j {
			t.Errorf("%s: the allowlist comes before the CSI rule, whose message is the precise one", res)
		}
	}
}

// The cordon policy holds for everyone who creates in a cordoned sandbox, controllers included; only the
// provider's own dry runs of its other guards are let through, and the cordon probe is not.
func TestCordonMatchesControllers(t *testing.T) {
	cond := Policy("cordon").Spec.MatchConditions[0].Expression
	if !strings.HasPrefix(cond, "!request.dryRun || ") || !strings.Contains(cond, AnnotationCordonProbe) {
		t.Errorf("the cordon policy's match condition: %s", cond)
	}
	for _, res := range []string{"cordon-scale", "cordon-jobs", "finalizers", "workloads"} {
		if c := Policy(res).Spec.MatchConditions[0].Expression; c != tenantMatch {
			t.Errorf("%s: matches %s, want the tenant identities", res, c)
		}
	}
}

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

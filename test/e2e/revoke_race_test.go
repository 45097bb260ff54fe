//go:build e2e

package e2e

// Issue 43, finding 3: a revoke could be undone by a grant made at the same moment. Revoke listed the
// consumer's namespaces once and marked the Tenant at the end; a grant checked the Tenant once, at its
// start, and never the revocation record; so `grant namespace` and `accept resourceslice --pending` run
// within a fraction of a second of `revoke` left RoleBindings behind, the kept, revoked kubeconfig created
// a pod, and a second revoke answered "already revoked". Now every grant path checks the revocation
// record and the Tenant after it binds, and takes back what it bound if the consumer was revoked
// meanwhile; revoke sweeps every namespace of the consumer again once the Tenant is marked; and a second
// revoke sweeps too.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// consumerBindings lists, as the administrator, every RoleBinding on the provider that names a user or
// ServiceAccount of the consumer (its pairing's, its slices', its Token identities'), as namespace/name.
func consumerBindings(t *testing.T, consumerID string) []string {
	t.Helper()
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	rbs, err := admin.RbacV1().RoleBindings("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rb := range rbs.Items {
		for _, s := range rb.Subjects {
			if strings.HasPrefix(s.Name, "kubectl-federate:"+consumerID+":") ||
				(s.Kind == "ServiceAccount" && strings.HasPrefix(s.Name, "federate-credential-") && rb.Labels[member.LabelRemoteClusterID] == consumerID) {
				out = append(out, rb.Namespace+"/"+rb.Name+" ("+s.Name+")")
			}
		}
	}
	return out
}

// createsNothing proves that a kubeconfig creates nothing in any of the namespaces: a ConfigMap create is
// Forbidden in each.
func createsNothing(t *testing.T, cfg *rest.Config, namespaces ...string) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cfg)
	for _, ns := range namespaces {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-revoke"}}, metav1.CreateOptions{})
		if err == nil || !refused(err) {
			t.Errorf("the revoked kubeconfig created a ConfigMap in %s (err = %v)", ns, err)
		}
	}
}

// revokeAgain runs a second revoke and proves it leaves no binding: it may say "already revoked" only
// when there was none to remove.
func revokeAgain(t *testing.T, before []string) {
	t.Helper()
	r := mustOn(t, provider, "revoke", "--remote-cluster-id", "consumer")
	if len(before) > 0 && strings.Contains(r.stdout, "already revoked") {
		t.Errorf("the second revoke said %q while bindings remained: %v", strings.TrimSpace(r.stdout), before)
	}
	if left := consumerBindings(t, "consumer"); len(left) > 0 {
		t.Errorf("bindings left after the second revoke: %v", left)
	}
}

// Revoke, and within a fraction of a second (the offset varies by round) a grant of a new namespace and
// the unattended accept of a pending slice, many rounds: when all three are done, no RoleBinding names
// any of the consumer's users, the kept kubeconfig of the revoked pairing creates nothing anywhere, the
// Tenant says Revoked, and a second revoke finds nothing to remove.
func TestRevokeFinalAgainstConcurrentGrants(t *testing.T) {
	const class, rounds = "e2e-race", 8
	mustRun(t, "", "init", "--kubeconfig", provider.Kubeconfig, "--cluster-id", "provider") // the class needs an initialized provider
	newSliceClass(t, class, "--max-cpu", "1", "--max-memory", "1Gi", "--auto-accept")
	won := map[string]int{}
	for round := range rounds {
		freshPairing(t)
		_, kept := issuedConfig(t)
		ns, slice := fmt.Sprintf("e2e-race-ns-%d", round), fmt.Sprintf("e2e-race-%d", round)
		mustOn(t, consumer, "create", "resourceslice", slice, "--remote-cluster-id", "provider", "--class", class, "--cpu", "100m", "--memory", "64Mi")

		revoke := startFederate(t, "revoke", "--remote-cluster-id", "consumer", "--kubeconfig", provider.Kubeconfig)
		time.Sleep(time.Duration(round%4) * 60 * time.Millisecond) // the attacker's timing, varied: not a wait for the system
		grant := startFederate(t, "grant", "namespace", ns, "--remote-cluster-id", "consumer", "--kubeconfig", provider.Kubeconfig)
		accept := startFederate(t, "accept", "resourceslice", "--pending", "--kubeconfig", provider.Kubeconfig)
		rr, rg, ra := revoke(), grant(), accept()
		if rr.code != 0 {
			t.Fatalf("round %d: revoke: %s", round, rr)
		}
		for what, r := range map[string]result{"grant namespace": rg, "accept --pending": ra} {
			if r.code == 0 {
				won[what]++
			}
			t.Logf("round %d: %s: exit %d %s", round, what, r.code, lastLine(r.stderr))
		}
		left := consumerBindings(t, "consumer")
		if len(left) > 0 {
			t.Errorf("round %d: RoleBindings of the revoked consumer remain: %v", round, left)
		}
		createsNothing(t, kept, tenantNS, ns, member.SliceNamespace("consumer", slice))
		if st := tenantStatus(t, provider); st.Phase != "Revoked" {
			t.Errorf("round %d: the Tenant's phase is %q, want Revoked", round, st.Phase)
		}
		revokeAgain(t, left)
	}
	t.Logf("%d rounds; grants that succeeded (then revoked): %v", rounds, won)
}

// A renewal (authenticate again) at the same moment as revoke: whichever lands first, the provider's
// record and its bindings agree. Revoked means no binding names any of the consumer's users; Active means
// the recorded user is bound, and no other (the renewal came after the revocation: a re-admission). The kept
// kubeconfig of the pairing before both creates nothing either way.
func TestRevokeFinalAgainstConcurrentRenewal(t *testing.T) {
	const rounds = 6
	outcomes := map[string]int{}
	for round := range rounds {
		freshPairing(t)
		_, kept := issuedConfig(t)
		revoke := startFederate(t, "revoke", "--remote-cluster-id", "consumer", "--kubeconfig", provider.Kubeconfig)
		time.Sleep(time.Duration(round%3) * 60 * time.Millisecond) // the timing, varied
		renew := startFederate(t, "authenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig,
			"--cluster-id", "consumer", "--remote-cluster-id", "provider")
		rr, ra := revoke(), renew()
		if rr.code != 0 {
			t.Fatalf("round %d: revoke: %s", round, rr)
		}
		st := tenantStatus(t, provider)
		left := consumerBindings(t, "consumer")
		outcomes[fmt.Sprintf("authenticate exit %d, Tenant %s", ra.code, st.Phase)]++
		switch st.Phase {
		case "Revoked":
			if len(left) > 0 {
				t.Errorf("round %d: the Tenant says Revoked, yet bindings remain: %v (authenticate: %s)", round, left, ra)
			}
			revokeAgain(t, left)
		case "Active":
			if ra.code != 0 {
				t.Errorf("round %d: the Tenant says Active after a failed authenticate: %s", round, ra)
			}
			if !slices.ContainsFunc(left, func(b string) bool { return strings.Contains(b, "("+st.User+")") }) {
				t.Errorf("round %d: the Tenant says Active for %s, which nothing binds: %v", round, st.User, left)
			}
			for _, b := range left {
				if !strings.Contains(b, "("+st.User+")") {
					t.Errorf("round %d: the Tenant's user is %s, yet %s is bound", round, st.User, b)
				}
			}
		default:
			t.Errorf("round %d: the Tenant's phase is %q", round, st.Phase)
		}
		createsNothing(t, kept, tenantNS)
	}
	t.Logf("%d rounds: %v", rounds, outcomes)
}

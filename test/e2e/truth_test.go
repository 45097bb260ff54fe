//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/status"
)

// heldCheck runs status --check on the consumer and returns its exit code and the state of its pairing
// identity for the provider.
func heldCheck(t *testing.T) (int, string) {
	t.Helper()
	r := on(t, consumer, "status", "--check", "-o", "json")
	for _, s := range itemsOf[status.CredentialState](t, r.stdout) {
		if s.Role == member.RoleConsumer && s.Kind == status.KindControlPlane && s.RemoteClusterID == "provider" && s.Check != nil {
			return r.code, s.Check.State
		}
	}
	t.Fatalf("status --check lists no checked pairing identity:\n%s", r)
	return 0, ""
}

// Done (issue 24): a typo never reads as success, and a revoked credential never reads as healthy.
func TestWhatItSaysIsWhatHappened(t *testing.T) {
	freshPairing(t)
	if code, state := heldCheck(t); code != 0 || state != status.CheckOK {
		t.Fatalf("paired: exit %d, state %s", code, state)
	}
	// A typo'd revoke in an incident fails, names the real consumer, and leaves it untouched.
	before := takeSnapshot(t)
	r := on(t, provider, "revoke", "--remote-cluster-id", "consumr")
	if r.code != 1 || !strings.Contains(r.stderr, `consumer "consumr" not found`) || !strings.Contains(r.stderr, `did you mean "consumer"?`) ||
		strings.Count(r.stderr, "error:") != 1 || r.stdout != "" {
		t.Errorf("revoke of a typo: %s", r)
	}
	if d := before.diff(takeSnapshot(t)); len(d) > 0 {
		t.Errorf("the typo'd revoke changed %v", d)
	}
	if code, state := heldCheck(t); code != 0 || state != status.CheckOK {
		t.Errorf("after the typo'd revoke: exit %d, state %s", code, state)
	}
	// The kubeconfigs swapped: refused, the right command named, nothing deleted.
	r = cli(t, "", "unauthenticate", "--kubeconfig", provider.Kubeconfig, "--remote-kubeconfig", consumer.Kubeconfig)
	if r.code != 1 || !strings.Contains(r.stderr, "--kubeconfig "+consumer.Kubeconfig+" --remote-kubeconfig "+provider.Kubeconfig) {
		t.Errorf("unauthenticate swapped: %s", r)
	}
	if d := before.diff(takeSnapshot(t)); len(d) > 0 {
		t.Errorf("the swapped unauthenticate changed %v", d)
	}
	// Cordoned, then revoked: status --check says so, with exit code 4.
	mustOn(t, provider, "cordon", "tenant", "--remote-cluster-id", "consumer")
	if code, state := heldCheck(t); code != 4 || state != status.CheckCordoned {
		t.Errorf("cordoned: exit %d, state %s", code, state)
	}
	mustOn(t, provider, "uncordon", "tenant", "--remote-cluster-id", "consumer")
	mustOn(t, provider, "revoke", "--remote-cluster-id", "consumer")
	if code, state := heldCheck(t); code != 4 || state != status.CheckRevoked {
		t.Errorf("revoked: exit %d, state %s", code, state)
	}
	// --expiring-within reports a revoked credential as revoked, not as expiring.
	r = on(t, consumer, "status", "--check", "--expiring-within", "3650d")
	if r.code != 4 || !strings.Contains(r.stderr, "revoked") {
		t.Errorf("status --check --expiring-within after revoke: %s", r)
	}
	if r := mustOn(t, provider, "revoke", "--remote-cluster-id", "consumer"); !strings.Contains(r.stdout, "already revoked") {
		t.Errorf("revoke again: %s", r)
	}
	if r := on(t, provider, "revoke", "--remote-cluster-id", "consumr", "--ignore-not-found"); r.code != 0 || r.stdout != "" {
		t.Errorf("revoke --ignore-not-found of a typo: %s", r)
	}
}

//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/status"
	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

func statusOf(t *testing.T, r result) status.Report {
	t.Helper()
	return status.Report{Credentials: itemsOf[status.CredentialState](t, r.stdout)}
}

// status lists each credential on both sides, proves the held ones, and is a monitor: exit 3 when one
// expires within the window, 4 when one does not work.
func TestStatus(t *testing.T) {
	defer unauthenticate(t)
	authenticate(t, "--expiration", "48h")
	mustRun(t, "", "create", "resourceslice", "status-s1", "--cpu", "1", "--memory", "1Gi",
		"--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)

	onConsumer := statusOf(t, mustOn(t, consumer, "status", "--check", "-o", "json"))
	onProvider := statusOf(t, mustOn(t, provider, "status", "-o", "json"))
	held := map[string]status.CredentialState{}
	for _, s := range onConsumer.Credentials {
		if s.RemoteClusterID == "provider" {
			held[s.Kind+"/"+s.Name] = s
		}
	}
	for _, key := range []string{"ControlPlane/", "ResourceSlice/status-s1"} {
		s, ok := held[key]
		if !ok {
			t.Fatalf("consumer status lacks %s: %+v", key, onConsumer.Credentials)
		}
		if s.Role != "consumer" || s.NotAfter == nil || s.Check == nil || !s.Check.OK || s.Check.User != s.User {
			t.Errorf("consumer %s: %+v (check %+v)", key, s, s.Check)
		}
	}
	issued := 0
	for _, s := range onProvider.Credentials {
		if s.RemoteClusterID == "consumer" && s.Role == "provider" {
			issued++
			if s.PodSecurity != "restricted" || s.NotAfter == nil || s.User == "" {
				t.Errorf("provider %s %s: %+v", s.Kind, s.Name, s)
			}
		}
	}
	if issued != 2 {
		t.Errorf("the provider lists %d credentials issued to the consumer, want 2: %+v", issued, onProvider.Credentials)
	}

	statusListing(t)

	// The pairing expires in 48h: inside a 72h window (exit 3, the table still printed), outside a 24h one.
	r := cli(t, "", "status", "--expiring-within", "72h", "--kubeconfig", consumer.Kubeconfig)
	if r.code != 3 || !strings.Contains(r.stderr, "expire within 72h0m0s") || !strings.Contains(r.stdout, "ControlPlane") {
		t.Errorf("status --expiring-within 72h: %s", r)
	}
	if r := cli(t, "", "status", "--expiring-within", "24h", "--kubeconfig", consumer.Kubeconfig); r.code != 0 {
		t.Errorf("status --expiring-within 24h: %s", r)
	}

	// A held credential that no longer works: a token whose ServiceAccount the provider revoked.
	authenticate(t, "--credential", "token")
	_, cfg, _ := storedKubeconfig(t, "provider")
	mustOn(t, provider, "revoke", "--remote-cluster-id", "consumer")
	tokenRefused(t, "the revoked token", kubernetes.NewForConfigOrDie(cfg), member.TenantNamespace("consumer"))
	r = cli(t, "", "status", "--check", "--kubeconfig", consumer.Kubeconfig)
	if r.code != 4 || !strings.Contains(r.stdout, "revoked") || !strings.Contains(r.stderr, "consumer ControlPlane of provider") {
		t.Errorf("status --check with a revoked token: %s", r)
	}
	start := time.Now()
	mustOn(t, provider, "status", "-o", "wide")
	t.Logf("status on the provider answered in %s", time.Since(start).Round(time.Millisecond))

	// The audit trail, on each side: what happened, by whom, for which user until when.
	admin := whoami(t, provider.Config).Username
	if !hasEvent(t, provider, start.Add(-time.Hour), "Issued", "Renewed", "Granted", "Revoked") {
		return
	}
	for _, e := range history(t, provider) {
		if e.RemoteClusterID == "consumer" && (e.Reason == "Renewed" || e.Reason == "Granted") &&
			(!strings.Contains(e.Note, "by "+admin) || !strings.Contains(e.Note, "credential user ") || !strings.Contains(e.Note, "expires ")) {
			t.Errorf("%s event lacks the operator, the credential's user or its expiry: %q", e.Reason, e.Note)
		}
	}
	hasEvent(t, consumer, start.Add(-time.Hour), "Imported")
}

// statusListing runs kubectl get's listing flags against a real API server (issue 42, item 16): a label
// the administrator puts on the Tenant (kubectl label) selects the pairing's every row, the slice's too,
// and -L shows it; a mistyped --remote-cluster-id is NotFound with "did you mean"; --sort-by,
// --no-headers and -o custom-columns read the items -o json prints.
func statusListing(t *testing.T) {
	t.Helper()
	if _, err := dyn(t, provider).Resource(v1alpha1.TenantGVR).Namespace(member.TenantNamespace("consumer")).Patch(t.Context(), "consumer",
		types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"e2e-status"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	r := mustOn(t, provider, "status", "-l", "team=e2e-status", "--remote-cluster-id", "consumer", "-L", "team", "--no-headers", "--sort-by", "{.status.kind}")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "consumer   provider   ControlPlane ") || !strings.Contains(lines[1], "ResourceSlice   status-s1 ") ||
		!strings.HasSuffix(lines[0], " e2e-status") || !strings.HasSuffix(lines[1], " e2e-status") {
		t.Errorf("status -l team=e2e-status -L team: want the pairing's and the slice's rows, labelled, no header: %s", r)
	}
	if r := cli(t, "", "status", "--kubeconfig", provider.Kubeconfig, "-l", "team=other"); r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "matches the selection") {
		t.Errorf("status -l team=other: %s", r)
	}
	if r := cli(t, "", "status", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", "consumr"); r.code != 1 || r.stdout != "" ||
		!strings.Contains(r.stderr, `remote cluster "consumr" not found among the pairings of this cluster; did you mean "consumer"?`) {
		t.Errorf("status --remote-cluster-id consumr: %s", r)
	}
	r = mustOn(t, consumer, "status", "--remote-cluster-id", "provider", "--sort-by", ".status.notAfter", "-o", "custom-columns=KIND:.status.kind,USER:.status.user")
	rows := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(rows) < 3 || !strings.HasPrefix(rows[0], "KIND ") || !strings.Contains(r.stdout, "kubectl-federate:consumer:") {
		t.Errorf("status -o custom-columns: %s", r)
	}
	for _, l := range append(rows, strings.Split(mustOn(t, provider, "status", "--history").stdout, "\n")...) {
		if len(l) > 120 {
			t.Errorf("a line of %d columns: %s", len(l), l)
		}
	}
}

// history reads status --history -o json.
func history(t *testing.T, c *kubeenv.Cluster) []handshake.HistoryEntry {
	t.Helper()
	return itemsOf[handshake.HistoryEntry](t, mustOn(t, c, "status", "--history", "-o", "json").stdout)
}

// hasEvent checks that c's audit trail holds an Event of each reason about the consumer since from.
func hasEvent(t *testing.T, c *kubeenv.Cluster, from time.Time, reasons ...string) bool {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range history(t, c) {
		if e.Time.After(from) && (e.RemoteClusterID == "consumer" || e.RemoteClusterID == "provider") {
			seen[e.Reason] = true
		}
	}
	ok := true
	for _, r := range reasons {
		if !seen[r] {
			t.Errorf("no %s event in the audit trail of %s (seen %v)", r, c.Name, seen)
			ok = false
		}
	}
	return ok
}

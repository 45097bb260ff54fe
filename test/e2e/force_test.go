//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unauthenticate with one side unreachable: without --force nothing changes; with --force the reachable
// side is cleaned, the rest is named, the exit code is 1; a later run with both sides up finishes.
func TestUnauthenticateWithOneSideGone(t *testing.T) {
	unauthenticate(t)
	authenticate(t)
	dead := filepath.Join(t.TempDir(), "dead.kubeconfig")
	if err := os.WriteFile(dead, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: d, cluster: {server: \"https://127.0.0.1:1\"}}]\n"+
		"contexts: [{name: d, context: {cluster: d, user: d}}]\ncurrent-context: d\nusers: [{name: d, user: {token: x}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	consumerObjs := pairingObjects(t, consumer, "provider")

	before := takeSnapshot(t)
	r := cli(t, "", "unauthenticate", "--kubeconfig", dead, "--remote-kubeconfig", provider.Kubeconfig)
	// The way on is named: this command's --force, with the unreachable side's ID.
	if r.code != 1 || !strings.Contains(r.stderr, "connection refused") ||
		!strings.Contains(r.stderr, "nothing was changed; to remove this pairing from the reachable cluster alone, add --force --cluster-id CONSUMER") {
		t.Errorf("without --force: %s", r)
	}
	r = cli(t, "", "unauthenticate", "--kubeconfig", dead, "--remote-kubeconfig", provider.Kubeconfig, "--force")
	if r.code != 1 || !strings.Contains(r.stderr, "--cluster-id for the consumer") {
		t.Errorf("--force without the unreachable side's ID: %s", r)
	}
	if d := before.diff(takeSnapshot(t)); len(d) > 0 {
		t.Errorf("refused runs changed the clusters: %v", d)
	}

	r = cli(t, "", "unauthenticate", "--kubeconfig", dead, "--remote-kubeconfig", provider.Kubeconfig, "--force", "--cluster-id", "consumer")
	if r.code != 1 || !strings.Contains(r.stderr, "consumer: not cleaned, unreachable") || !strings.Contains(r.stderr, "Identity, kubeconfig Secret and keys of provider") {
		t.Errorf("--force with the consumer gone: %s", r)
	}
	if left := pairingObjects(t, provider, "consumer"); len(left) > 0 {
		t.Errorf("--force left on the reachable provider: %v", left)
	}
	if got := pairingObjects(t, consumer, "provider"); strings.Join(got, ",") != strings.Join(consumerObjs, ",") {
		t.Errorf("the unreachable side changed: %v", got)
	}

	mustRun(t, "", "unauthenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
	if left := pairingObjects(t, consumer, "provider"); len(left) > 0 {
		t.Errorf("the later full run left on the consumer: %v", left)
	}
}

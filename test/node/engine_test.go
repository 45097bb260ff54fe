//go:build e2e

package node

import (
	"context"
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/status"
)

// TestNetworkPolicyCheck: `status --check` on the provider says, as a WARNING, when no NetworkPolicy
// engine runs, and that warning is true. With kube-router's DaemonSet, no warning; with it removed (its
// rules gone from the kernel), the warning, and a tenant pod indeed reaches the metadata address the
// policy names; with the engine back, no warning and the address is dropped again.
func TestNetworkPolicyCheck(t *testing.T) {
	tn := pair(t, consumer)
	ctx := t.Context()
	hostServers(t, "metadata", metadataV4)
	client := startPod(t, tn.client, tn.kubeconfig, tn.namespace, probePod("check-client"))
	check := func() string {
		r := run(t, "kubectl", "federate", "status", "--check", "--kubeconfig", provider.Kubeconfig)
		if strings.Contains(r.stdout, "WARNING") {
			t.Errorf("status printed its warning on stdout, which carries data only:\n%s", r.stdout)
		}
		return r.stderr
	}
	enforced := func(want bool) {
		t.Helper()
		if want {
			if err := node.WaitFirewall(ctx, client.Namespace, client.Name); err != nil {
				t.Fatal(err)
			}
		}
		out, code := fetch(t, tn, client, url(metadataV4, 80))
		if reached := code == 0; reached == want {
			t.Fatalf("engine running: %t; the metadata address reached: %t (%s)", want, reached, out)
		}
	}

	enforced(true)
	if stderr := check(); strings.Contains(stderr, status.NoEngineWarning) {
		t.Fatalf("with kube-router running, status --check warned:\n%s", stderr)
	}
	t.Cleanup(func() { // the other tests want it running
		if !node.EnforcesNetworkPolicy() {
			if err := node.StartNetworkPolicy(context.Background()); err != nil {
				t.Errorf("restarting the engine: %v", err)
			}
		}
	})
	if err := node.StopNetworkPolicy(ctx); err != nil {
		t.Fatal(err)
	}
	enforced(false)
	if stderr := check(); !strings.Contains(stderr, "WARNING") || !strings.Contains(stderr, status.NoEngineWarning) {
		t.Fatalf("without an engine, status --check did not warn:\n%s", stderr)
	}
	if err := node.StartNetworkPolicy(ctx); err != nil {
		t.Fatal(err)
	}
	enforced(true)
	if stderr := check(); strings.Contains(stderr, status.NoEngineWarning) {
		t.Fatalf("with kube-router back, status --check warned:\n%s", stderr)
	}
}

package cmd_test

import (
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// pairedWorld is two fake clusters, edge (consumer) and farm (provider), paired by the real authenticate
// command through the test factory, and the extra clusters, never initialized.
func pairedWorld(t *testing.T, extra ...string) *cmdtest.World {
	t.Helper()
	w := cmdtest.NewWorld(t, append([]string{"edge", "farm"}, extra...)...)
	r := w.Run("authenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "farm", "--cluster-id", "edge", "--remote-cluster-id", "farm")
	if r.Code != 0 {
		t.Fatalf("authenticate: %s", r)
	}
	return w
}

func TestAuthenticateOnFakes(t *testing.T) {
	w := pairedWorld(t)
	r := w.Run("status", "--kubeconfig", "farm", "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"remoteClusterID": "edge"`) {
		t.Fatalf("status: %s", r)
	}
}

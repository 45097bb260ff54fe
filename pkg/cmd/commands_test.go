package cmd_test

import (
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

func TestAuthenticateOnFakes(t *testing.T) {
	w := cmdtest.PairedWorld(t)
	r := w.Run("status", "--kubeconfig", "farm", "-o", "json")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"remoteClusterID": "edge"`) {
		t.Fatalf("status: %s", r)
	}
}

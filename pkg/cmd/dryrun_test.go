package cmd_test

import (
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

func TestDryRunExplore(t *testing.T) {
	w := cmdtest.NewWorld(t, "edge", "farm")
	for _, mode := range []string{"--dry-run=client", "--dry-run"} {
		before := w.Snapshot("edge")
		r := w.Run("init", "--kubeconfig", "edge", "--cluster-id", "edge", mode)
		t.Logf("%s", r)
		if w.Snapshot("edge") != before {
			t.Errorf("changed")
		}
	}
	_ = strings.Contains
}

package cmd_test

import (
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

func TestDryRunExplore(t *testing.T) {
	w := pairedWorld(t)
	for _, args := range [][]string{
		{"authenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "farm"},
		{"unauthenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "farm"},
		{"revoke", "--kubeconfig", "farm", "--remote-cluster-id", "edge"},
		{"cordon", "tenant", "--kubeconfig", "farm", "--remote-cluster-id", "edge"},
		{"drain", "tenant", "--kubeconfig", "farm", "--remote-cluster-id", "edge"},
		{"grant", "namespace", "team-a", "--kubeconfig", "farm", "--remote-cluster-id", "edge"},
		{"request", "namespace", "team-b", "--kubeconfig", "edge", "--remote-cluster-id", "farm"},
		{"create", "resourceslice", "s1", "--kubeconfig", "edge", "--remote-kubeconfig", "farm", "--remote-cluster-id", "farm", "--cpu", "1", "--memory", "1Gi"},
		{"create", "resourceslice-class", "gpu", "--kubeconfig", "farm"},
		{"create", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "other"},
		{"renew", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--remote-kubeconfig", "farm"},
		{"request", "exchange", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--for-user", "alice"},
		{"mesh", "--kubeconfigs", "edge,farm"},
		{"unmesh", "--kubeconfigs", "edge,farm"},
	} {
		for _, mode := range []string{"--dry-run=client", "--dry-run=server"} {
			be, bf := w.Snapshot("edge"), w.Snapshot("farm")
			r := w.Run(append(args, mode)...)
			out := r.Stdout
			if len(out) > 600 {
				out = out[:600]
			}
			t.Logf("%v %s: exit %d\n%s\nSTDERR\n%s", args, mode, r.Code, out, r.Stderr)
			if w.Snapshot("edge") != be || w.Snapshot("farm") != bf {
				t.Errorf("%v changed", args)
			}
		}
	}
	_ = strings.Contains
	_ = cmdtest.NewWorld
}

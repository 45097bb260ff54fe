package cmd_test

import (
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// -o prints an export's objects, credential included; with --dry-run (a CI log's stdout) the pair is
// refused before anything is read, and nothing reaches stdout.
func TestExportPrintedInADryRunHoldsNoKey(t *testing.T) {
	w := cmdtest.PairedWorld(t)
	for _, mode := range []string{"--dry-run=client", "--dry-run=server"} {
		for _, format := range []string{"kubeconfig", "argocd", "cluster-gateway"} {
			r := w.Run("export", format, "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "default", "-o", "yaml", mode)
			if r.Code != 1 || !strings.Contains(r.Stderr, "--dry-run and -o yaml: give one") {
				t.Errorf("export %s -o yaml %s: %s", format, mode, r)
			}
			if cmdtest.KeyMaterial(r.Stdout) || strings.Contains(r.Stdout, "keyData") || strings.Contains(r.Stdout, "bearerToken") {
				t.Errorf("export %s -o yaml %s printed key material on stdout", format, mode)
			}
		}
	}
}

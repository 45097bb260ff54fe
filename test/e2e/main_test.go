//go:build e2e

// Package e2e runs kubectl federate and its packages against real local control planes: two clusters,
// consumer and provider, started once for this test binary and shared by its tests.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

var (
	consumer, provider *kubeenv.Cluster
	federateBin        string // the plugin binary under test
	binDir             string // holds kubectl and kubectl-federate, for PATH
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if kubeenv.Listing() {
		return m.Run()
	}
	clusters, dir, stop, err := kubeenv.StartForTests("consumer", "provider")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	consumer, provider = clusters[0], clusters[1]
	if binDir, err = pluginPath(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// pluginPath returns a directory holding kubectl and kubectl-federate, for PATH.
func pluginPath(dir string) (string, error) {
	bins, err := kubeenv.EnsureBinaries(context.Background(), os.Stderr)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "bin")
	if err := os.MkdirAll(path, 0o755); err != nil {
		return "", err
	}
	if federateBin, err = kubeenv.PluginBinary(path); err != nil {
		return "", err
	}
	if federateBin != filepath.Join(path, "kubectl-federate") {
		if err := os.Symlink(federateBin, filepath.Join(path, "kubectl-federate")); err != nil {
			return "", err
		}
	}
	return path, os.Symlink(bins.Kubectl, filepath.Join(path, "kubectl"))
}

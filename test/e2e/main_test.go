// Package e2e runs kubectl federate and its packages against real local control planes: two clusters,
// consumer and provider, started once for this test binary and shared by its tests.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

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
	dir, err := os.MkdirTemp("", "federate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	clusters, err := kubeenv.Start(ctx, kubeenv.Options{Dir: dir, Names: []string{"consumer", "provider"}, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting clusters:", err)
		return 1
	}
	defer func() {
		for _, c := range clusters {
			c.Stop()
		}
	}()
	fmt.Fprintf(os.Stderr, "e2e: consumer and provider ready in %s\n", time.Since(start).Round(10*time.Millisecond))
	consumer, provider = clusters[0], clusters[1]
	if binDir, err = pluginPath(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// pluginPath returns a directory holding kubectl and kubectl-federate (FEDERATE_BIN, or a fresh build).
func pluginPath(dir string) (string, error) {
	bins, err := kubeenv.EnsureBinaries(context.Background(), os.Stderr)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "bin")
	if err := os.MkdirAll(path, 0o755); err != nil {
		return "", err
	}
	federateBin = os.Getenv("FEDERATE_BIN")
	if federateBin == "" {
		federateBin = filepath.Join(path, "kubectl-federate")
		out, err := exec.Command("go", "build", "-o", federateBin, "github.com/federate-dev/kubectl-federate/cmd/kubectl-federate").CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("building kubectl-federate: %w\n%s", err, out)
		}
	} else if err := os.Symlink(federateBin, filepath.Join(path, "kubectl-federate")); err != nil {
		return "", err
	}
	return path, os.Symlink(bins.Kubectl, filepath.Join(path, "kubectl"))
}

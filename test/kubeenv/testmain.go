package kubeenv

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// StartForTests starts one cluster per name for a test binary's TestMain, under a fresh temporary
// directory, and returns them with a function that stops them and removes the directory.
func StartForTests(names ...string) ([]*Cluster, string, func(), error) {
	return StartForTestsWith(Options{Names: names})
}

// StartForTestsWith is StartForTests with options (Names among them); Dir and Log are its own.
func StartForTestsWith(o Options) ([]*Cluster, string, func(), error) {
	dir, err := os.MkdirTemp("", "federate-test-")
	if err != nil {
		return nil, "", nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	o.Dir, o.Log = dir, os.Stderr
	clusters, err := Start(ctx, o)
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", nil, fmt.Errorf("starting clusters: %w", err)
	}
	fmt.Fprintf(os.Stderr, "kubeenv: %d clusters ready in %s\n", len(clusters), time.Since(start).Round(10*time.Millisecond))
	stop := func() {
		for _, c := range clusters {
			c.Stop()
		}
		os.RemoveAll(dir)
	}
	return clusters, dir, stop, nil
}

// PluginBinary returns the kubectl-federate binary under test: $FEDERATE_BIN (set by make test), or a
// fresh build into dir.
func PluginBinary(dir string) (string, error) {
	if bin := os.Getenv("FEDERATE_BIN"); bin != "" {
		return bin, nil
	}
	bin := filepath.Join(dir, "kubectl-federate")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/federate-dev/kubectl-federate/cmd/kubectl-federate").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building kubectl-federate: %w\n%s", err, out)
	}
	return bin, nil
}

// ToolsPath makes a directory under dir holding kubectl and the kubectl-federate under test (see
// PluginBinary), for a test's PATH: `kubectl federate ...` then runs the plugin as a user's shell would.
func ToolsPath(ctx context.Context, dir string) (string, error) {
	bins, err := EnsureBinaries(ctx, os.Stderr)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "bin")
	if err := os.MkdirAll(path, 0o755); err != nil {
		return "", err
	}
	plugin, err := PluginBinary(path)
	if err != nil {
		return "", err
	}
	if plugin != filepath.Join(path, "kubectl-federate") {
		if err := os.Symlink(plugin, filepath.Join(path, "kubectl-federate")); err != nil {
			return "", err
		}
	}
	return path, os.Symlink(bins.Kubectl, filepath.Join(path, "kubectl"))
}

// Listing tells whether the test binary only lists its tests (go test -list): its TestMain then starts no
// cluster, so hack/e2e.sh can ask each package which tests it holds for the price of a build.
func Listing() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	f := flag.Lookup("test.list")
	return f != nil && f.Value.String() != ""
}

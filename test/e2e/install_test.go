//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// make install puts the plugin where kubectl's plugin discovery finds it, with its completion shim.
func TestMakeInstallAndPluginDiscovery(t *testing.T) {
	bindir := t.TempDir()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// -o build: the binary the suite runs is installed as built, not rebuilt under the processes running it.
	// make runs in this process's whole environment (the later values win): the toolchain and its caches.
	if r := newCommand(t.Context(), os.Getenv("HOME"), os.Environ(), "make", "-C", root, "-o", "build", "install", "BINDIR="+bindir).run(t); r.code != 0 {
		t.Fatalf("make install: %s", r)
	}
	kubectl, err := os.Readlink(filepath.Join(binDir, "kubectl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(kubectl, filepath.Join(bindir, "kubectl")); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		// Only the installed directory on PATH (the later PATH wins): kubectl must find the plugin there.
		r := newCommand(t.Context(), t.TempDir(), []string{"PATH=" + bindir + ":/usr/bin:/bin", "KUBECONFIG=" + consumer.Kubeconfig},
			filepath.Join(bindir, "kubectl"), args...).run(t)
		if r.code != 0 {
			return r.stdout, fmt.Errorf("exit %d: %s", r.code, r.stderr)
		}
		return r.stdout, nil
	}
	list, err := run("plugin", "list")
	if err != nil || !strings.Contains(list, "kubectl-federate") {
		t.Fatalf("kubectl plugin list: %v\n%s", err, list)
	}
	version, err := run("federate", "version", "-o", "json")
	if err != nil {
		t.Fatalf("kubectl federate version: %v", err)
	}
	var v struct{ Status struct{ Version string } }
	if err := json.Unmarshal([]byte(version), &v); err != nil || v.Status.Version == "" {
		t.Fatalf("version -o json: %v\n%s", err, version)
	}
	comp, err := run("__complete", "federate", "gen")
	if err != nil || !strings.Contains(comp, "generate") {
		t.Fatalf("kubectl completion through the shim: %v\n%s", err, comp)
	}
}

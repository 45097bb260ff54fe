//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
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
	out, err := exec.Command("make", "-C", root, "-o", "build", "install", "BINDIR="+bindir).CombinedOutput()
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	kubectl, err := os.Readlink(filepath.Join(binDir, "kubectl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(kubectl, filepath.Join(bindir, "kubectl")); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(bindir, "kubectl"), args...)
		cmd.Env = []string{"PATH=" + bindir + ":/usr/bin:/bin", "HOME=" + t.TempDir(), "KUBECONFIG=" + consumer.Kubeconfig}
		b, err := cmd.Output()
		return string(b), err
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

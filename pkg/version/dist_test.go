package version

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// make dist stamps the release version into version and the commit it was built from into commit (an
// untagged `make dist RELEASE_VERSION=v0.1.0` once printed "commit v0.1.0"). make -n shows the link flags
// without building anything.
func TestDistStampsTheCommitNotTheVersion(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	head, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	out, err := exec.Command("make", "-C", "../..", "-n", "dist", "RELEASE_VERSION=v0.1.0").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n dist: %v\n%s", err, out)
	}
	stamp := func(name string) string {
		m := regexp.MustCompile(`pkg/version\.` + name + `=(\S+?)["\s]`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("make -n dist sets no %s:\n%s", name, out)
		}
		return string(m[1])
	}
	if v := stamp("version"); v != "v0.1.0" {
		t.Errorf("version stamped %q, want v0.1.0", v)
	}
	if c := stamp("commit"); c != strings.TrimSpace(string(head)) {
		t.Errorf("commit stamped %q, want the checkout's %s", c, head)
	}
}

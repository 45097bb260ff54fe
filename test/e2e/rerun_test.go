//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Every manual step is safe to repeat: the second run changes nothing and gives the same result.
func TestManualStepsAreRepeatable(t *testing.T) {
	unauthenticate(t)
	P, C := provider.Kubeconfig, consumer.Kubeconfig
	mustRun(t, "", "init", "--kubeconfig", C, "--cluster-id", "consumer")
	mustRun(t, "", "init", "--kubeconfig", P, "--cluster-id", "provider")
	first := mustRun(t, "", "create", "nonce", "--kubeconfig", P, "--remote-cluster-id", "consumer")
	again := mustRun(t, "", "create", "nonce", "--kubeconfig", P, "--remote-cluster-id", "consumer")
	if !strings.Contains(first.stdout, "created") || !strings.Contains(again.stdout, "unchanged") {
		t.Errorf("create nonce twice: %q then %q", first.stdout, again.stdout)
	}
	n := mustRun(t, "", "get", "nonce", "--kubeconfig", P, "--remote-cluster-id", "consumer").stdout
	t1 := mustRun(t, "", "generate", "tenant", "--kubeconfig", C, "--remote-cluster-id", "provider", "--nonce", n).stdout
	before := takeSnapshot(t)
	t2 := mustRun(t, "", "generate", "tenant", "--kubeconfig", C, "--remote-cluster-id", "provider", "--nonce", n).stdout
	if d := before.diff(takeSnapshot(t)); len(d) > 0 {
		t.Errorf("generate tenant again changed: %v", d)
	}
	f1, f2 := writeTenantText(t, t1), writeTenantText(t, t2)
	id1 := mustRun(t, "", "generate", "identity", "--kubeconfig", P, "--remote-cluster-id", "consumer", "-f", f1).stdout
	settle(t, provider, member.TenantNamespace("consumer"))
	before = takeSnapshot(t)
	id2 := mustRun(t, "", "generate", "identity", "--kubeconfig", P, "--remote-cluster-id", "consumer", "-f", f1).stdout
	id3 := mustRun(t, "", "generate", "identity", "--kubeconfig", P, "--remote-cluster-id", "consumer", "-f", f2).stdout
	if d := before.diff(takeSnapshot(t)); len(d) > 0 {
		t.Errorf("generate identity again changed: %v", d)
	}
	if id1 != id2 || id1 != id3 {
		t.Errorf("generate identity again gave another identity")
	}
	imp1 := mustRun(t, id1, "import", "identity", "--kubeconfig", C, "-f", "-").stdout
	imp2 := mustRun(t, id3, "import", "identity", "--kubeconfig", C, "-f", "-").stdout
	if !strings.Contains(imp1, " imported") || !strings.Contains(imp2, " unchanged") {
		t.Errorf("import twice: %q then %q", imp1, imp2)
	}
	if _, cfg := issuedConfig(t); cfg.Host != provider.Server {
		t.Errorf("kubeconfig server %q", cfg.Host)
	}
	mustRun(t, "", "init", "--kubeconfig", C, "--cluster-id", "consumer")
}

func writeTenantText(t *testing.T, text string) string {
	t.Helper()
	tn, err := decodeTenantText(text)
	if err != nil {
		t.Fatal(err)
	}
	return writeTenant(t, tn)
}

package cmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// Each failure is one error line with the next step, in the user's terms: a nonce that is gone names the
// command that makes a new one, and a file of the wrong kind names the kind it is and the command that
// reads it, with no Go type or decoder text. Neither changes a cluster.
func TestErrorsNameTheNextStep(t *testing.T) {
	w := cmdtest.NewWorld(t, "edge", "farm")
	w.Init("farm", "farm")
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cmdtest.Expect(t, w, w.Run("create", "nonce", "--remote-cluster-id", "edge", "--kubeconfig", "farm"), 0, nil, nil, nil)
	ticket := w.Run("get", "nonce", "--remote-cluster-id", "edge", "--kubeconfig", "farm")
	if ticket.Code != 0 {
		t.Fatal(ticket)
	}
	gen := w.Run("generate", "tenant", "--nonce-file", file("nonce.txt", ticket.Stdout), "--kubeconfig", "edge")
	if gen.Code != 0 {
		t.Fatal(gen)
	}
	tenant := file("tenant.yaml", gen.Stdout)

	// The nonce deleted before the provider answers: the answer names how to get a new one.
	cmdtest.Expect(t, w, w.Run("delete", "nonce", "--remote-cluster-id", "edge", "--kubeconfig", "farm"), 0, nil, nil, nil)
	m := cmdtest.Marks(w, "edge", "farm")
	cmdtest.Expect(t, w, w.Run("generate", "identity", "--remote-cluster-id", "edge", "-f", tenant, "--kubeconfig", "farm"), 1, nil,
		[]string{"nonce", "kubectl federate create nonce --remote-cluster-id edge"}, m)

	goText := []string{"v1alpha1.", "[]interface", "map[string]", "json: cannot unmarshal", "struct"}
	for _, c := range []struct {
		name, args, file string
		want             []string
	}{
		{"a Tenant to import identity", "import identity", tenant,
			[]string{"-f " + tenant, "a Tenant", "kubectl federate generate identity"}},
		{"a JSON array to import identity", "import identity", file("array.json", `[{"kind":"Identity"}]`),
			[]string{"-f ", "holds a list, not an Identity object"}},
		{"a kubeconfig to generate identity", "generate identity --remote-cluster-id edge", file("kubeconfig", "apiVersion: v1\nkind: Config\n"),
			[]string{"-f ", "is a Config, not a Tenant"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(strings.Fields(c.args), "-f", c.file, "--kubeconfig", "edge")
			if strings.HasPrefix(c.args, "generate") {
				args[len(args)-1] = "farm"
			}
			m := cmdtest.Marks(w, "edge", "farm")
			r := w.Run(args...)
			cmdtest.Expect(t, w, r, 1, nil, c.want, m)
			for _, g := range goText {
				if strings.Contains(r.Stderr, g) {
					t.Errorf("the error shows Go text %q:\n%s", g, r.Stderr)
				}
			}
		})
	}
}

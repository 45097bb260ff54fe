package cmd_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// completions runs cobra's __complete for a command line whose last word is being typed, and returns the
// candidates (the lines before the ":directive" line).
func completions(t *testing.T, stdout string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if strings.HasPrefix(l, ":") || l == "" {
			continue
		}
		out = append(out, strings.SplitN(l, "\t", 2)[0])
	}
	return out
}

// Every value the cluster knows completes: cluster IDs, classes, extra namespaces, and the enums (output
// formats, credential kinds). (Slice names complete the same way; a fake world cannot hold an imported
// slice, whose import proves its credential over HTTP, so test/e2e's TestRenew covers those.)
func TestCompletionFromTheCluster(t *testing.T) {
	w := cmdtest.PairedWorld(t)
	for _, step := range [][]string{
		{"create", "resourceslice-class", "small", "--max-cpu", "2", "--max-memory", "4Gi", "--kubeconfig", "farm"},
		{"request", "namespace", "edge-ci", "--kubeconfig", "edge", "--remote-kubeconfig", "farm"},
	} {
		if r := w.Run(step...); r.Code != 0 {
			t.Fatalf("%v: %s", step, r)
		}
	}
	for _, c := range []struct {
		line []string
		want []string
	}{
		{[]string{"revoke", "--kubeconfig", "farm", "--remote-cluster-id", ""}, []string{"edge"}},
		{[]string{"status", "--kubeconfig", "edge", "-o", ""}, []string{"json", "yaml", "wide"}},
		{[]string{"create", "resourceslice", "x", "--kubeconfig", "farm", "--class", ""}, []string{"small"}},
		{[]string{"revoke", "namespace", "--kubeconfig", "farm", "--remote-cluster-id", "edge", ""}, []string{"edge-ci"}},
		{[]string{"authenticate", "--credential", ""}, []string{"auto", "certificate", "token"}},
	} {
		r := w.Run(append([]string{"__complete"}, c.line...)...)
		got := completions(t, r.Stdout)
		for _, want := range c.want {
			if !slices.Contains(got, want) {
				t.Errorf("%s: completions %v lack %q (%s)", strings.Join(c.line, " "), got, want, r)
			}
		}
	}
}

// info fits a 120-column terminal; the whole quota is in -o wide.
func TestInfoFits120Columns(t *testing.T) {
	w := cmdtest.PairedWorld(t)
	r := w.Run("info", "--kubeconfig", "farm")
	if r.Code != 0 {
		t.Fatal(r)
	}
	for _, l := range strings.Split(r.Stdout, "\n") {
		if len([]rune(l)) > 120 {
			t.Errorf("info line of %d columns: %q", len([]rune(l)), l)
		}
	}
	if wide := w.Run("info", "--kubeconfig", "farm", "-o", "wide"); wide.Code != 0 || !strings.Contains(wide.Stdout, "count/deployments.apps") {
		t.Errorf("info -o wide lacks the whole quota: %s", wide)
	}
}

// The CONSUMER of cordon, uncordon and drain completes from the provider's tenants, as their
// --remote-cluster-id does, and never as a file name; once --remote-cluster-id names it, nothing.
func TestCompletionOfTheConsumer(t *testing.T) {
	w := cmdtest.PairedWorld(t)
	for _, verb := range []string{"cordon", "uncordon", "drain"} {
		r := w.Run("__complete", verb, "tenant", "--kubeconfig", "farm", "")
		if got := completions(t, r.Stdout); !slices.Equal(got, []string{"edge"}) {
			t.Errorf("%s tenant CONSUMER: completions %v, want [edge] (%s)", verb, got, r)
		}
		if !strings.Contains(r.Stdout, ":4\n") { // cobra.ShellCompDirectiveNoFileComp
			t.Errorf("%s tenant CONSUMER: completes file names (%s)", verb, r)
		}
		named := w.Run("__complete", verb, "tenant", "--kubeconfig", "farm", "--remote-cluster-id", "edge", "")
		if got := completions(t, named.Stdout); len(got) != 0 {
			t.Errorf("%s tenant --remote-cluster-id edge CONSUMER: completions %v, want none (%s)", verb, got, named)
		}
	}
}

package version_test

import (
	"regexp"
	"runtime"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// version prints the binary's version without reaching any cluster: a line, or a Version object.
func TestCommandTableVersion(t *testing.T) {
	version := func(t *testing.T, obj map[string]any) {
		t.Helper()
		// A test binary has no release stamp: the development version, nothing known of its build.
		cmdtest.WantFields(t, obj, map[string]string{"apiVersion": "federate.dev/v1alpha1", "kind": "Version", "metadata.name": "kubectl-federate",
			"status.version": "v0.0.0-dev", "status.gitCommit": "unknown", "status.buildDate": "unknown",
			"status.goVersion": runtime.Version(), "status.platform": runtime.GOOS + "/" + runtime.GOARCH})
	}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "the line", World: cmdtest.WorldBare, Args: []string{"version"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				want := `^kubectl-federate version v0\.0\.0-dev \(commit unknown, built unknown, ` + regexp.QuoteMeta(runtime.Version()+", "+runtime.GOOS+"/"+runtime.GOARCH) + `\)\n$`
				if !cmdtest.RegexpMatch(want, out) {
					t.Errorf("stdout %q, want %s", out, want)
				}
			}},
		{Name: "-o json", World: cmdtest.WorldBare, Args: []string{"version", "-o", "json"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) { version(t, cmdtest.JSONObject(t, out)) }},
		{Name: "-o yaml", World: cmdtest.WorldBare, Args: []string{"version", "-o", "yaml"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) { version(t, cmdtest.YAMLObject(t, out)) }},
		// A kubeconfig naming no cluster changes nothing: version never connects.
		{Name: "a kubeconfig out of reach", World: cmdtest.WorldBare, Args: []string{"version", "--kubeconfig", "nowhere", "-o", "name"},
			Stdout: cmdtest.WantStdout("version.federate.dev/kubectl-federate\n")},
		{Name: "an unknown output format", World: cmdtest.WorldBare, Args: []string{"version", "-o", "xml"},
			Code: 1, Usage: true, Err: `invalid argument "xml" for "-o, --output" flag`},
		{Name: "a positional argument", World: cmdtest.WorldBare, Args: []string{"version", "x"},
			Code: 1, Usage: true, Err: `unknown command "x" for "kubectl federate version"`},
	})
}

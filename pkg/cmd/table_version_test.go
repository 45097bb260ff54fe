package cmd_test

import (
	"regexp"
	"runtime"
	"testing"
)

// version prints the binary's version without reaching any cluster: a line, or a Version object.
func TestCommandTableVersion(t *testing.T) {
	version := func(t *testing.T, obj map[string]any) {
		t.Helper()
		// A test binary has no release stamp: the development version, nothing known of its build.
		wantFields(t, obj, map[string]string{"apiVersion": "federate.dev/v1alpha1", "kind": "Version", "metadata.name": "kubectl-federate",
			"status.version": "v0.0.0-dev", "status.gitCommit": "unknown", "status.buildDate": "unknown",
			"status.goVersion": runtime.Version(), "status.platform": runtime.GOOS + "/" + runtime.GOARCH})
	}
	runTable(t, []tableRow{
		{name: "the line", world: worldBare, args: []string{"version"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				want := `^kubectl-federate version v0\.0\.0-dev \(commit unknown, built unknown, ` + regexp.QuoteMeta(runtime.Version()+", "+runtime.GOOS+"/"+runtime.GOARCH) + `\)\n$`
				if !regexpMatch(want, out) {
					t.Errorf("stdout %q, want %s", out, want)
				}
			}},
		{name: "-o json", world: worldBare, args: []string{"version", "-o", "json"},
			stdout: func(t *testing.T, _ *tableEnv, out string) { version(t, jsonObject(t, out)) }},
		{name: "-o yaml", world: worldBare, args: []string{"version", "-o", "yaml"},
			stdout: func(t *testing.T, _ *tableEnv, out string) { version(t, yamlObject(t, out)) }},
		// A kubeconfig naming no cluster changes nothing: version never connects.
		{name: "a kubeconfig out of reach", world: worldBare, args: []string{"version", "--kubeconfig", "nowhere", "-o", "name"},
			stdout: wantStdout("version.federate.dev/kubectl-federate\n")},
		{name: "an unknown output format", world: worldBare, args: []string{"version", "-o", "xml"},
			code: 1, usage: true, err: `invalid argument "xml" for "-o, --output" flag`},
		{name: "a positional argument", world: worldBare, args: []string{"version", "x"},
			code: 1, usage: true, err: `unknown command "x" for "kubectl federate version"`},
	})
}

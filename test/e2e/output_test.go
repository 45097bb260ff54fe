package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// With stdout and stderr piped, no command writes escape codes, and every -o json output parses.
func TestPipedOutputIsPlainAndJSONParses(t *testing.T) {
	_, n, _ := pairingStart(t)
	P, C := provider.Kubeconfig, consumer.Kubeconfig
	for _, args := range [][]string{
		{"version", "-o", "json"},
		{"info", "--kubeconfig", P, "-o", "json"},
		{"info", "--kubeconfig", C, "-o", "json"},
		{"get", "nonce", "--kubeconfig", P, "--remote-cluster-id", "consumer", "-o", "json"},
		{"generate", "tenant", "--kubeconfig", C, "--remote-cluster-id", "provider", "--nonce", n, "-o", "json"},
	} {
		r := mustRun(t, "", args...)
		if !json.Valid([]byte(r.stdout)) {
			t.Errorf("%v: stdout is not JSON:\n%s", args, r.stdout)
		}
		if strings.Contains(r.stdout+r.stderr, "\x1b") {
			t.Errorf("%v: escape codes in piped output", args)
		}
	}
	for _, args := range [][]string{
		{"--help"}, {"authenticate", "--help"}, {"info", "--kubeconfig", P}, {"completion", "bash"},
	} {
		r := mustRun(t, "", args...)
		if strings.Contains(r.stdout+r.stderr, "\x1b[") {
			t.Errorf("%v: escape codes in piped output", args)
		}
	}
	// --color always is the one way to get colour on a pipe.
	r := mustRun(t, "", "authenticate", "--kubeconfig", C, "--remote-kubeconfig", P, "--color", "always")
	if !strings.Contains(r.stderr, "\x1b[") || strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("--color always: colour belongs on stderr only: %q", r.stderr)
	}
}

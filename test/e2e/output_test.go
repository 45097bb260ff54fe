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

// -v N is kubectl's: client-go logs each request and its answer on stderr at 6, and stdout still carries
// the data only (here the JSON, which parses).
func TestVerbosityLogsRequests(t *testing.T) {
	mustOn(t, provider, "init", "--cluster-id", "provider") // status reads an initialized cluster
	r := on(t, provider, "status", "-o", "json", "-v", "6")
	if r.code != 0 || !strings.Contains(r.stderr, `"Response" verb="GET" url="`+provider.Server) || !strings.Contains(r.stderr, `status="200 OK"`) {
		t.Errorf("status -v 6 logged no request: %s", r)
	}
	var v any
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Errorf("status -o json -v 6: stdout is not the JSON alone: %v\n%s", err, r.stdout)
	}
	if r := on(t, provider, "status", "-o", "json"); strings.Contains(r.stderr, "round_trippers") {
		t.Errorf("status without -v logged requests: %s", r.stderr)
	}
}

// itemsOf decodes what a listing prints with -o json, a List whose items carry the view under status, into
// the views.
func itemsOf[T any](t *testing.T, stdout string) []T {
	t.Helper()
	var l struct {
		Kind  string `json:"kind"`
		Items []struct {
			Status T `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(stdout), &l); err != nil || l.Kind != "List" {
		t.Fatalf("not a List (%v):\n%s", err, stdout)
	}
	out := make([]T, 0, len(l.Items))
	for _, it := range l.Items {
		out = append(out, it.Status)
	}
	return out
}

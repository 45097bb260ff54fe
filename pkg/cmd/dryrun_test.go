package cmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/federate-dev/kubectl-federate/pkg/cmd"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// Every command that changes a cluster, in both dry-run modes and with the bare flag (client): exit 0,
// both fake clusters exactly as before (every object, every resourceVersion), stdout one YAML stream of
// the objects it would have written, each after a comment naming the cluster and the action, and stderr
// never claiming a change.
func TestDryRunChangesNothing(t *testing.T) {
	w := cmdtest.PairedWorld(t)
	cases := []struct {
		args []string
		want []string // comment lines (cluster: would action kind/name) stdout must hold
		stop bool     // the run stops where a credential would be issued
	}{
		{args: []string{"init", "--kubeconfig", "edge"}, want: nil},
		{args: []string{"authenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "farm"}, stop: true,
			want: []string{"# farm: would create lease/authenticate-edge in federate-system", "# farm: would create certificatesigningrequest/"}},
		{args: []string{"renew", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--remote-kubeconfig", "farm"}, stop: true,
			want: []string{"# farm: would create certificatesigningrequest/"}},
		{args: []string{"unauthenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "farm"},
			want: []string{"# farm: would delete namespace/federate-tenant-edge", "# edge: would delete identity/controlplane-farm in federate-system"}},
		{args: []string{"revoke", "--kubeconfig", "farm", "--remote-cluster-id", "edge"},
			want: []string{"# farm: would delete rolebinding/", "# farm: would patch tenant/edge in federate-tenant-edge"}},
		{args: []string{"cordon", "tenant", "--kubeconfig", "farm", "--remote-cluster-id", "edge"},
			want: []string{"# farm: would patch namespace/federate-tenant-edge"}},
		{args: []string{"drain", "tenant", "--kubeconfig", "farm", "--remote-cluster-id", "edge"},
			want: []string{"# farm: would patch namespace/federate-tenant-edge"}},
		{args: []string{"grant", "namespace", "team-a", "--kubeconfig", "farm", "--remote-cluster-id", "edge"},
			want: []string{"# farm: would create namespace/team-a"}},
		{args: []string{"request", "namespace", "team-b", "--kubeconfig", "edge", "--remote-cluster-id", "farm"},
			want: []string{"# farm: would create namespacerequest/team-b in federate-tenant-edge"}},
		{args: []string{"create", "resourceslice", "s1", "--kubeconfig", "edge", "--remote-kubeconfig", "farm", "--remote-cluster-id", "farm", "--cpu", "1", "--memory", "1Gi"}, stop: true,
			want: []string{"# edge: would create secret/", "# farm: would create resourceslice/s1 in federate-tenant-edge"}},
		{args: []string{"create", "resourceslice-class", "gpu", "--kubeconfig", "farm"},
			want: []string{"# farm: would apply resourcesliceclass/gpu"}},
		{args: []string{"create", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "other"},
			want: []string{"# farm: would create secret/nonce-other in federate-system"}},
		{args: []string{"export", "argocd", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "kube-system"},
			want: []string{"# edge: would create secret/export-", "# edge: would create secret/farm in kube-system"}},
		{args: []string{"mesh", "--kubeconfigs", "edge,farm"}, stop: true,
			want: []string{"# edge: would create lease/authenticate-farm in federate-system"}},
	}
	for _, c := range cases {
		// Server mode needs an API server's admission: proven end to end (test/e2e TestDryRunLeavesBothClustersUnchanged).
		for _, mode := range []string{"--dry-run=client", "--dry-run"} {
			t.Run(strings.Join(c.args[:2], " ")+mode, func(t *testing.T) {
				edge, farm := w.Snapshot("edge"), w.Snapshot("farm")
				r := w.Run(append(c.args, mode)...)
				if r.Code != 0 {
					t.Fatalf("%s", r)
				}
				if w.Snapshot("edge") != edge || w.Snapshot("farm") != farm {
					t.Errorf("a dry run changed a cluster:\n%s", r)
				}
				cmdtest.Documents(t, r.Stdout)
				label := "(dry run)"
				for _, want := range c.want {
					if !strings.Contains(r.Stdout, want) {
						t.Errorf("stdout lacks %q:\n%s", want, r)
					}
				}
				for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
					if strings.HasPrefix(line, "# ") && !strings.HasSuffix(line, label) && !strings.Contains(line, label+";") {
						t.Errorf("comment line %q does not say %s", line, label)
					}
				}
				// Each write is listed once: the same action on the same object with the same body twice is
				// noise (a revoke's second sweep is for what a tenant made meanwhile, which a dry run has no
				// reason to repeat). A second write of other content (a status after its spec) is its own.
				seen := map[string]bool{}
				for _, doc := range strings.Split(r.Stdout, "\n---\n") {
					if strings.Contains(doc, ": would ") && seen[doc] {
						t.Errorf("a dry run lists this twice:\n%s", doc)
					}
					seen[doc] = true
				}
				for _, line := range strings.Split(strings.TrimSpace(r.Stderr), "\n") {
					if line != "" && !strings.Contains(line, "(dry run)") {
						t.Errorf("stderr line %q does not say (dry run)", line)
					}
				}
				if stopped := strings.Contains(r.Stderr, "Stopped at "); stopped != c.stop {
					t.Errorf("stopped before issuance: %v, want %v:\n%s", stopped, c.stop, r)
				}
				// No credential reaches stdout: no private key, plain or base64-encoded.
				if cmdtest.KeyMaterial(r.Stdout) {
					t.Errorf("a dry run printed key material:\n%s", r.Stdout)
				}
			})
		}
	}
}

// get kubeconfig writes only with --for-user (an exchange request): a dry run of anything else is a
// usage error, and prints no kubeconfig.
func TestGetKubeconfigDryRunNeedsForUser(t *testing.T) {
	w := cmdtest.PairedWorld(t)
	r := w.Run("get", "kubeconfig", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--dry-run")
	if r.Code != 1 || !strings.Contains(r.Stderr, "--dry-run: only with --for-user") || r.Stdout != "" {
		t.Errorf("get kubeconfig --dry-run without --for-user: %s", r)
	}
}

// --dry-run takes kubectl's three values, checked when parsed: anything else (a boolean too, as today's
// kubectl) is a usage error that sends nothing.
func TestDryRunFlagValues(t *testing.T) {
	w := cmdtest.NewWorld(t, "edge")
	for _, v := range []string{"--dry-run=true", "--dry-run=maybe", "--dry-run="} {
		m := cmdtest.Marks(w, "edge")
		r := w.Run("init", "--kubeconfig", "edge", v)
		cmdtest.Expect(t, w, r, 1, nil, []string{`invalid argument`, `for "--dry-run" flag: must be one of none, client, server`, "See 'kubectl federate init -h'"}, m)
	}
	before := w.Snapshot("edge")
	r := w.Run("init", "--kubeconfig", "edge", "--dry-run=none")
	if r.Code != 0 || w.Snapshot("edge") == before || strings.Contains(r.Stdout, "dry run") {
		t.Fatalf("--dry-run=none should initialize:\n%s", r)
	}
}

// dryCase is a command line, a line its client dry run prints, and whether it stops before issuance.
type dryCase struct {
	args []string
	want string
	stop bool
}

// The manual flow's steps, identity exchange and the slice's provider-side verbs: each dry run leaves
// both fake clusters as they were, with the objects on stdout; steps whose next move needs an issued
// credential stop there.
func TestDryRunManualFlowAndExchange(t *testing.T) {
	w := cmdtest.PairedWorld(t, "lone")
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	must := func(args ...string) cmdtest.Result {
		t.Helper()
		r := w.Run(args...)
		if r.Code != 0 {
			t.Fatalf("%v: %s", args, r)
		}
		return r
	}
	// Real steps that leave what the dry runs act on.
	must("create", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone")
	nonceFile := file("nonce.txt", must("get", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone").Stdout)
	tenant := file("tenant.yaml", must("generate", "tenant", "--kubeconfig", "lone", "--nonce-file", nonceFile, "--remote-cluster-id", "farm").Stdout)
	rules := file("rules.yaml", `apiVersion: cluster.core.oam.dev/v1alpha1
kind: ClusterGatewayConfiguration
spec:
  clientIdentityExchanger:
    rules:
    - name: mapping
      source:
        user: alice
      target:
        user: bob
      type: StaticMappingIdentityExchanger
      priority: 10
`)
	must("exchange", "apply", "-f", rules, "--kubeconfig", "edge")
	request := strings.TrimSpace(must("request", "exchange", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--for-user", "alice").Stdout)
	must("create", "resourceslice", "pending", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--cpu", "1", "--memory", "1Gi")
	must("grant", "namespace", "granted", "--kubeconfig", "farm", "--remote-cluster-id", "edge")

	cases := []dryCase{
		{[]string{"generate", "identity", "--kubeconfig", "farm", "--remote-cluster-id", "lone", "-f", tenant}, "# farm: would create certificatesigningrequest/", true},
		{[]string{"generate", "tenant", "--kubeconfig", "lone", "--nonce-file", nonceFile, "--remote-cluster-id", "farm"}, "", false},
		{[]string{"exchange", "apply", "-f", rules, "--kubeconfig", "farm"}, "# farm: would create configmap/federate-exchange-rules in federate-system", false},
		{[]string{"allow", "exchange", request, "--kubeconfig", "farm", "--remote-cluster-id", "edge"}, "", true},
		{[]string{"deny", "exchange", request, "--kubeconfig", "farm", "--remote-cluster-id", "edge", "--reason", "no"}, "exchangerequest/" + request, false},
		{[]string{"accept", "resourceslice", "pending", "--kubeconfig", "farm", "--remote-cluster-id", "edge"}, "# farm: would create certificatesigningrequest/", true},
		{[]string{"deny", "resourceslice", "pending", "--kubeconfig", "farm", "--remote-cluster-id", "edge", "--reason", "no"}, "resourceslice/pending", false},
		{[]string{"delete", "resourceslice", "pending", "--kubeconfig", "edge", "--remote-cluster-id", "farm"}, "would delete", false},
		{[]string{"delete", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone"}, "", false},
		{[]string{"revoke", "namespace", "granted", "--kubeconfig", "farm", "--remote-cluster-id", "edge"}, "would delete", false},
		{[]string{"uncordon", "tenant", "--kubeconfig", "farm", "--remote-cluster-id", "edge"}, "", false},
	}
	// The answers, issued for real, for the imports' dry runs (after the dry runs above of what issues them).
	var identity string
	cases = append(cases,
		dryCase{[]string{"import", "identity", "--kubeconfig", "lone", "-f", "IDENTITY"}, "# lone: would create secret/kubeconfig-controlplane-farm in federate-system", false},
		dryCase{[]string{"import", "resourceslice", "pending", "--kubeconfig", "edge", "--remote-cluster-id", "farm"}, "in federate-system", false})
	for i, c := range cases {
		if c.args[0] == "import" && identity == "" {
			identity = file("identity.yaml", must("generate", "identity", "--kubeconfig", "farm", "--remote-cluster-id", "lone", "-f", tenant).Stdout)
			must("accept", "resourceslice", "pending", "--kubeconfig", "farm", "--remote-cluster-id", "edge")
		}
		if c.args[len(c.args)-1] == "IDENTITY" {
			c.args[len(c.args)-1] = identity
			cases[i] = c
		}
		for _, mode := range []string{"--dry-run=client"} { // server mode: end to end, as above
			t.Run(strings.Join(c.args[:2], " ")+mode, func(t *testing.T) {
				snaps := map[string]string{}
				for _, n := range []string{"edge", "farm", "lone"} {
					snaps[n] = w.Snapshot(n)
				}
				r := w.Run(append(c.args, mode)...)
				if r.Code != 0 {
					t.Fatalf("%s", r)
				}
				for n, s := range snaps {
					if w.Snapshot(n) != s {
						t.Errorf("a dry run changed %s:\n%s", n, r)
					}
				}
				cmdtest.Documents(t, r.Stdout)
				if c.want != "" && !strings.Contains(r.Stdout, c.want) {
					t.Errorf("stdout lacks %q:\n%s", c.want, r)
				}
				if stopped := strings.Contains(r.Stderr, "Stopped at "); stopped != c.stop {
					t.Errorf("stopped: %v, want %v:\n%s", stopped, c.stop, r)
				}
			})
		}
	}
}

// Every command that can change a cluster takes --dry-run; only the commands that read are without it. A
// new command must be put in one list or the other.
func TestEveryWritingCommandTakesDryRun(t *testing.T) {
	readOnly := map[string]bool{
		"kubectl federate get nonce": true, "kubectl federate get resourceslices": true, "kubectl federate get authenticator": true,
		"kubectl federate info": true, "kubectl federate status": true, "kubectl federate version": true,
		"kubectl federate exchange get": true, "kubectl federate exchange resolve": true, "kubectl federate credential": true,
		"kubectl federate completion bash": true, "kubectl federate completion fish": true,
		"kubectl federate completion powershell": true, "kubectl federate completion zsh": true,
	}
	root := cmd.NewRootCmd(genericiooptions.NewTestIOStreamsDiscard())
	root.InitDefaultCompletionCmd()
	withFlag := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		// Groups (create, get, ...) run nothing; revoke is a command with a subcommand.
		if !c.Runnable() || c.Hidden || c.Name() == "help" || c == root || (c.HasSubCommands() && c.Name() != "revoke") {
			return
		}
		has := c.Flags().Lookup("dry-run") != nil
		if has {
			withFlag++
		}
		switch {
		case readOnly[c.CommandPath()] && has:
			t.Errorf("%s reads only, but takes --dry-run", c.CommandPath())
		case !readOnly[c.CommandPath()] && !has:
			t.Errorf("%s has no --dry-run (add cmdutil.AddDryRunFlag, or list it here as read-only)", c.CommandPath())
		}
	}
	walk(root)
	if withFlag < 29 {
		t.Errorf("%d commands take --dry-run, want the 29 that write", withFlag)
	}
}

package renew_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// renewedLine checks renew's line for farm: a new user (the old one is refused afterwards), the slices
// renewedLine with it, and that status holds the new user.
func renewedLine(slices string) func(t *testing.T, e *cmdtest.Env, out string) {
	line := regexp.MustCompile(`^pairing/farm renewed: (kubectl-federate:edge:[0-9a-f]{16}) until \d{4}-\d\d-\d\dT\S+Z, ` + slices + ` resource slice\(s\), in \S+\n$`)
	return func(t *testing.T, e *cmdtest.Env, out string) {
		t.Helper()
		m := line.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("stdout %q, want one renewed line with %s slice(s)", out, slices)
		}
		if m[1] == e.Vars["olduser"] {
			t.Errorf("renewed with the old user %s", m[1])
		}
		if now := cmdtest.HeldUser(t, e); now != m[1] {
			t.Errorf("status holds %s, renew said %s", now, m[1])
		}
	}
}

// renew renews one provider's credentials with the provider's kubeconfig, or with --all each due
// provider's from a directory; a provider not paired, or not the one reached, is refused with nothing
// written.
func TestCommandTableRenew(t *testing.T) {
	withUser := func(world func(t *testing.T) *cmdtest.Env) func(t *testing.T) *cmdtest.Env {
		return func(t *testing.T) *cmdtest.Env {
			e := world(t)
			e.Vars["olduser"] = cmdtest.HeldUser(t, e)
			return e
		}
	}
	// inDir runs the row in a directory holding the named kubeconfig files (a file named farm reaches
	// the fake farm: the test factory takes a kubeconfig path as a fake cluster's name), as {dir} ".".
	inDir := func(world func(t *testing.T) *cmdtest.Env, files ...string) *cmdtest.TableWorld {
		return &cmdtest.TableWorld{Fresh: true, Build: func(t *testing.T) *cmdtest.Env {
			e := withUser(world)(t)
			dir := t.TempDir()
			for _, f := range files {
				if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			t.Chdir(dir)
			return e
		}}
	}
	// --overlap 0: the old credentials refused at once (pkg/cmd/renew's own test runs an overlap).
	one := []string{"renew", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--remote-kubeconfig", "farm", "--overlap", "0"}
	all := []string{"renew", "--all", "--kubeconfig", "edge", "--remote-kubeconfig-dir", ".", "--overlap", "0"}
	// A renewal issues anew on the provider and stores the new kubeconfig and Identity on the consumer.
	issued := map[string][]string{"farm": {"create certificatesigningrequests", "patch tenants"}, "edge": {"update secrets", "patch identities"}}
	lone := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		e.World.Init("lone", "lone")
		return e
	})
	cmdtest.RunTable(t, []cmdtest.Row{
		// A federated pairing holds no credential: nothing is issued, nothing stored, and renew says so.
		{Name: "a federated pairing", World: cmdtest.WorldFederated, Args: one,
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if !regexp.MustCompile(`^pairing/farm has nothing to rotate: federated, it holds no credential \(its tokens are minted on demand and expire by themselves\); 0 resource slice\(s\) renewed, in \S+\n$`).MatchString(out) {
					t.Errorf("stdout %q", out)
				}
			},
			Sent: map[string]func(*testing.T, []string){
				"farm": func(t *testing.T, got []string) {
					if slices.Contains(got, "create certificatesigningrequests") || slices.Contains(got, "patch tenants") {
						t.Errorf("farm was sent %v: a federated pairing is issued nothing", got)
					}
				},
				"edge": func(t *testing.T, got []string) {
					if slices.Contains(got, "update secrets") || slices.Contains(got, "create secrets") {
						t.Errorf("edge was sent %v: a federated pairing stores nothing", got)
					}
				},
			}},
		{Name: "one provider", World: cmdtest.NewTableWorld(withUser(cmdtest.Paired)), Args: one,
			Stdout: renewedLine("0"), Stderr: []string{"(remote) Client certificate issued", "(local) Kubeconfig stored in Secret federate-system/kubeconfig-controlplane-farm"},
			Wrote: issued},
		{Name: "one provider with a slice", World: cmdtest.NewTableWorld(withUser(cmdtest.ImportedSlice)), Args: one,
			Stdout: renewedLine("1"), Stderr: []string{"(remote) Slice certificate issued"},
			Wrote: map[string][]string{"farm": {"create certificatesigningrequests", "patch tenants", "create resourceslices"}, "edge": {"update secrets", "patch identities"}}},
		{Name: "--all", World: inDir(cmdtest.Paired, "farm"), Args: all,
			Stdout: renewedLine("0"), Stderr: []string{"(farm) Client certificate issued"}, Wrote: issued},
		{Name: "--all, due within the window", World: inDir(cmdtest.Paired, "farm"), Args: append(all, "--expiring-within", "3650d"),
			Stdout: renewedLine("0"), Wrote: issued},
		{Name: "--all, none due within the window", World: inDir(cmdtest.Paired, "farm"), Args: append(all, "--expiring-within", "1h"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if !regexp.MustCompile(`^pairing/farm not due \(first expiry \d{4}-\d\d-\d\dT\S+Z\)\n$`).MatchString(out) {
					t.Errorf("stdout %q, want farm not due", out)
				}
			}},
		{Name: "--all, a kubeconfig with a .kubeconfig suffix", World: inDir(cmdtest.Paired, "farm.kubeconfig"), Args: all,
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				// farm.kubeconfig names no fake cluster: that it was tried shows it was found.
				if !regexp.MustCompile(`^pairing/farm failed: .*farm\.kubeconfig`).MatchString(out) {
					t.Errorf("stdout %q, want farm.kubeconfig tried", out)
				}
			},
			Code: 1, Err: `1 of 1 provider(s) not renewed: provider "farm"`},
		{Name: "--all, no kubeconfig for the provider", World: inDir(cmdtest.Paired), Args: all,
			Stdout: cmdtest.WantStdout("pairing/farm failed: no kubeconfig for it in --remote-kubeconfig-dir . (a file farm, farm.kubeconfig or farm.yaml)\n"),
			Code:   1, Err: `1 of 1 provider(s) not renewed: provider "farm": no kubeconfig for it in --remote-kubeconfig-dir .`},
		// Silence would read as "all renewed": it says there was nothing, and that a provider's consumers renew.
		{Name: "--all on a cluster holding no credential", World: inDir(cmdtest.Paired, "farm"), Args: []string{"renew", "--all", "--kubeconfig", "farm", "--remote-kubeconfig-dir", "."},
			Stdout: cmdtest.WantStdout(""), Stderr: []string{"Nothing to renew: this cluster holds no credential on any provider (it is the provider of 1 consumer(s), which renew from their side"}},
		// lone is initialized but edge never paired with it: nothing to renew there.
		{Name: "a provider never paired with", World: lone, Args: []string{"renew", "--kubeconfig", "edge", "--remote-cluster-id", "lone", "--remote-kubeconfig", "lone"},
			Code: 1, Err: `consumer "edge" has no active identity on this provider (no Tenant federate-tenant-edge/edge)`},
		{Name: "a provider ID the kubeconfig does not reach", World: cmdtest.WorldPaired, Args: []string{"renew", "--kubeconfig", "edge", "--remote-cluster-id", "lone", "--remote-kubeconfig", "farm"},
			Code: 1, Err: `--remote-cluster-id "lone": the provider's kubeconfig reaches cluster "farm"`},
		{Name: "no provider named", World: cmdtest.WorldPaired, Args: []string{"renew", "--kubeconfig", "edge"},
			Code: 1, Usage: true, Err: "--remote-cluster-id: must not be empty"},
		{Name: "no provider kubeconfig", World: cmdtest.WorldPaired, Args: []string{"renew", "--kubeconfig", "edge", "--remote-cluster-id", "farm"},
			Code: 1, Usage: true, Err: "--remote-kubeconfig or --remote-context: one is required"},
		{Name: "both kubeconfigs one cluster", World: cmdtest.WorldPaired, Args: []string{"renew", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--remote-kubeconfig", "edge"},
			Code: 1, Usage: true, Err: "both point at https://edge.fake:6443"},
		{Name: "--all with a provider named", World: cmdtest.WorldPaired, Args: []string{"renew", "--all", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--remote-kubeconfig-dir", "."},
			Code: 1, Usage: true, Err: "--all: renews every provider from --remote-kubeconfig-dir; it takes no --remote-cluster-id"},
		{Name: "--all without a directory", World: cmdtest.WorldPaired, Args: []string{"renew", "--all", "--kubeconfig", "edge"},
			Code: 1, Usage: true, Err: "--remote-kubeconfig-dir: is required with --all"},
		{Name: "--all with a directory that is not there", World: cmdtest.WorldPaired, Args: []string{"renew", "--all", "--kubeconfig", "edge", "--remote-kubeconfig-dir", "/nonexistent"},
			Code: 1, Usage: true, Err: `--remote-kubeconfig-dir "/nonexistent": is not a directory`},
		{Name: "--expiring-within without --all", World: cmdtest.WorldPaired, Args: append(one, "--expiring-within", "1h"),
			Code: 1, Usage: true, Err: "--remote-kubeconfig-dir and --expiring-within: only with --all"},
		{Name: "--proxy-url not a proxy URL", World: cmdtest.WorldPaired, Args: append(one, "--proxy-url", "ftp://proxy"),
			Code: 1, Usage: true, Err: "--proxy-url: proxy URL"},
	})
}

package cmd_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// heldUser is the user of the pairing's identity edge holds on farm, as status says.
func heldUser(t *testing.T, e *tableEnv) string {
	t.Helper()
	list := jsonObject(t, e.must(t, "status", "--kubeconfig", "edge", "-o", "json").Stdout)
	user, _ := fieldAt(list, "items.0.status.user").(string)
	if fieldAt(list, "items.0.status.kind") != "ControlPlane" || user == "" {
		t.Fatalf("status holds no pairing identity: %v", list)
	}
	return user
}

// renewedLine checks renew's line for farm: a new user (the old one is refused afterwards), the slices
// renewedLine with it, and that status holds the new user.
func renewedLine(slices string) func(t *testing.T, e *tableEnv, out string) {
	line := regexp.MustCompile(`^pairing/farm renewed: (kubectl-federate:edge:[0-9a-f]{16}) until \d{4}-\d\d-\d\dT\S+Z, ` + slices + ` resource slice\(s\), in \S+\n$`)
	return func(t *testing.T, e *tableEnv, out string) {
		t.Helper()
		m := line.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("stdout %q, want one renewed line with %s slice(s)", out, slices)
		}
		if m[1] == e.vars["olduser"] {
			t.Errorf("renewed with the old user %s", m[1])
		}
		if now := heldUser(t, e); now != m[1] {
			t.Errorf("status holds %s, renew said %s", now, m[1])
		}
	}
}

// renew renews one provider's credentials with the provider's kubeconfig, or with --all each due
// provider's from a directory; a provider not paired, or not the one reached, is refused with nothing
// written.
func TestCommandTableRenew(t *testing.T) {
	withUser := func(world func(t *testing.T) *tableEnv) func(t *testing.T) *tableEnv {
		return func(t *testing.T) *tableEnv {
			e := world(t)
			e.vars["olduser"] = heldUser(t, e)
			return e
		}
	}
	// inDir runs the row in a directory holding the named kubeconfig files (a file named farm reaches
	// the fake farm: the test factory takes a kubeconfig path as a fake cluster's name), as {dir} ".".
	inDir := func(world func(t *testing.T) *tableEnv, files ...string) *tableWorld {
		return &tableWorld{fresh: true, build: func(t *testing.T) *tableEnv {
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
	lone := newWorld(func(t *testing.T) *tableEnv {
		e := tablePaired(t)
		e.w.Init("lone", "lone")
		return e
	})
	runTable(t, []tableRow{
		{name: "one provider", world: newWorld(withUser(tablePaired)), args: one,
			stdout: renewedLine("0"), stderr: []string{"(remote) Client certificate issued", "(local) Kubeconfig stored in Secret federate-system/kubeconfig-controlplane-farm"},
			wrote: issued},
		{name: "one provider with a slice", world: newWorld(withUser(tableImportedSlice)), args: one,
			stdout: renewedLine("1"), stderr: []string{"(remote) Slice certificate issued"},
			wrote: map[string][]string{"farm": {"create certificatesigningrequests", "patch tenants", "create resourceslices"}, "edge": {"update secrets", "patch identities"}}},
		{name: "--all", world: inDir(tablePaired, "farm"), args: all,
			stdout: renewedLine("0"), stderr: []string{"(farm) Client certificate issued"}, wrote: issued},
		{name: "--all, due within the window", world: inDir(tablePaired, "farm"), args: append(all, "--expiring-within", "3650d"),
			stdout: renewedLine("0"), wrote: issued},
		{name: "--all, none due within the window", world: inDir(tablePaired, "farm"), args: append(all, "--expiring-within", "1h"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				if !regexp.MustCompile(`^pairing/farm not due \(first expiry \d{4}-\d\d-\d\dT\S+Z\)\n$`).MatchString(out) {
					t.Errorf("stdout %q, want farm not due", out)
				}
			}},
		{name: "--all, a kubeconfig with a .kubeconfig suffix", world: inDir(tablePaired, "farm.kubeconfig"), args: all,
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				// farm.kubeconfig names no fake cluster: that it was tried shows it was found.
				if !regexp.MustCompile(`^pairing/farm failed: .*farm\.kubeconfig`).MatchString(out) {
					t.Errorf("stdout %q, want farm.kubeconfig tried", out)
				}
			},
			code: 1, err: `1 of 1 provider(s) not renewed: provider "farm"`},
		{name: "--all, no kubeconfig for the provider", world: inDir(tablePaired), args: all,
			stdout: wantStdout("pairing/farm failed: no kubeconfig for it in --remote-kubeconfig-dir . (a file farm, farm.kubeconfig or farm.yaml)\n"),
			code:   1, err: `1 of 1 provider(s) not renewed: provider "farm": no kubeconfig for it in --remote-kubeconfig-dir .`},
		{name: "--all on a cluster holding no credential", world: inDir(tablePaired, "farm"), args: []string{"renew", "--all", "--kubeconfig", "farm", "--remote-kubeconfig-dir", "."},
			stdout: wantStdout("")},
		// lone is initialized but edge never paired with it: nothing to renew there.
		{name: "a provider never paired with", world: lone, args: []string{"renew", "--kubeconfig", "edge", "--remote-cluster-id", "lone", "--remote-kubeconfig", "lone"},
			code: 1, err: `consumer "edge" has no active identity on this provider (no Tenant federate-tenant-edge/edge)`},
		{name: "a provider ID the kubeconfig does not reach", world: worldPaired, args: []string{"renew", "--kubeconfig", "edge", "--remote-cluster-id", "lone", "--remote-kubeconfig", "farm"},
			code: 1, err: `--remote-cluster-id "lone": the provider's kubeconfig reaches cluster "farm"`},
		{name: "no provider named", world: worldPaired, args: []string{"renew", "--kubeconfig", "edge"},
			code: 1, usage: true, err: "--remote-cluster-id: must not be empty"},
		{name: "no provider kubeconfig", world: worldPaired, args: []string{"renew", "--kubeconfig", "edge", "--remote-cluster-id", "farm"},
			code: 1, usage: true, err: "--remote-kubeconfig or --remote-context: one is required"},
		{name: "both kubeconfigs one cluster", world: worldPaired, args: []string{"renew", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--remote-kubeconfig", "edge"},
			code: 1, usage: true, err: "both point at https://edge.fake:6443"},
		{name: "--all with a provider named", world: worldPaired, args: []string{"renew", "--all", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--remote-kubeconfig-dir", "."},
			code: 1, usage: true, err: "--all: renews every provider from --remote-kubeconfig-dir; it takes no --remote-cluster-id"},
		{name: "--all without a directory", world: worldPaired, args: []string{"renew", "--all", "--kubeconfig", "edge"},
			code: 1, usage: true, err: "--remote-kubeconfig-dir: is required with --all"},
		{name: "--all with a directory that is not there", world: worldPaired, args: []string{"renew", "--all", "--kubeconfig", "edge", "--remote-kubeconfig-dir", "/nonexistent"},
			code: 1, usage: true, err: `--remote-kubeconfig-dir "/nonexistent": is not a directory`},
		{name: "--expiring-within without --all", world: worldPaired, args: append(one, "--expiring-within", "1h"),
			code: 1, usage: true, err: "--remote-kubeconfig-dir and --expiring-within: only with --all"},
		{name: "--proxy-url not a proxy URL", world: worldPaired, args: append(one, "--proxy-url", "ftp://proxy"),
			code: 1, usage: true, err: "--proxy-url: proxy URL"},
	})
}

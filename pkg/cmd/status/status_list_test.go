package status_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// labelTenant sets a label on the provider farm's Tenant of consumer edge, as `kubectl label` would.
func labelTenant(t *testing.T, e *cmdtest.Env, key, value string) {
	t.Helper()
	tenants := e.World.Domain("farm").Dynamic.Resource(v1alpha1.TenantGVR).Namespace(member.TenantNamespace("edge"))
	list, err := tenants.List(t.Context(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("the Tenant of edge: %v, %d", err, len(list.Items))
	}
	u := &list.Items[0]
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[key] = value
	u.SetLabels(labels)
	if _, err := tenants.Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// kubectl get's listing flags on status: -l over the labels -o json shows (the pairing's and its
// record's), --remote-cluster-id (NotFound with "did you mean" for a typo), --no-headers, --sort-by, -L,
// -o custom-columns and custom-columns-file, on the credentials and on --history.
func TestCommandTableStatusListing(t *testing.T) {
	labelled := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		labelTenant(t, e, "team", "ml")
		return e
	})
	revoked := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		e.Must(t, "revoke", "--kubeconfig", "farm", "--remote-cluster-id", "edge")
		return e
	})
	columns := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		e.Vars["file"] = cmdtest.File(t, "columns.txt", "REMOTE   WHO\n.status.remoteClusterID   {.status.user}\n")
		return e
	})
	rowsOf := func(header ...string) func(want ...map[string]string) func(t *testing.T, _ *cmdtest.Env, out string) {
		return func(want ...map[string]string) func(t *testing.T, _ *cmdtest.Env, out string) {
			return func(t *testing.T, _ *cmdtest.Env, out string) {
				t.Helper()
				rows := cmdtest.TableOf(t, out, header...)
				if len(rows) != len(want) {
					t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), out)
				}
				for i := range want {
					cmdtest.WantRow(t, rows[i], want[i])
				}
			}
		}
	}
	table := rowsOf("REMOTE", "ROLE", "KIND", "NAME", "PHASE", "LEFT")
	history := rowsOf("AGE", "REMOTE", "ROLE", "REASON", "NOTE")
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "-l on the pairing's role", World: cmdtest.WorldImportedSlice, Args: []string{"status", "--kubeconfig", "farm", "-l", "federate.dev/role=provider"},
			Stdout: table(map[string]string{"KIND": "ControlPlane"}, map[string]string{"KIND": "ResourceSlice", "NAME": "batch"})},
		// Nothing selected: kubectl's "No resources found" on stderr, an empty stdout, exit 0.
		{Name: "-l selecting nothing", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "-l", "federate.dev/role=consumer"},
			Stderr: []string{"No credential of this cluster matches the selection"}, Stdout: cmdtest.WantStdout("")},
		// The Tenant's own labels select its pairing's rows, and -L shows them.
		{Name: "-l and -L on the Tenant's labels", World: labelled, Args: []string{"status", "--kubeconfig", "farm", "-l", "team=ml", "-L", "team,federate.dev/remote-cluster-id"},
			Stdout: rowsOf("REMOTE", "ROLE", "KIND", "NAME", "PHASE", "LEFT", "TEAM", "REMOTE-CLUSTER-ID")(map[string]string{"REMOTE": "edge", "TEAM": "ml", "REMOTE-CLUSTER-ID": "edge"})},
		{Name: "-l on a label the Tenant does not have", World: labelled, Args: []string{"status", "--kubeconfig", "farm", "-l", "team=web"},
			Stderr: []string{"No credential of this cluster matches the selection"}, Stdout: cmdtest.WantStdout("")},
		{Name: "-l in -o json", World: labelled, Args: []string{"status", "--kubeconfig", "farm", "-l", "team in (ml)", "-o", "json"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				list := cmdtest.JSONObject(t, out)
				if names := cmdtest.ListNames(t, list); len(names) != 1 || names[0] != "provider.edge.controlplane" {
					t.Fatalf("items %v", names)
				}
				cmdtest.WantFields(t, list, map[string]string{"items.0.metadata.labels.team": "ml", `items.0.metadata.labels.federate\.dev/remote-cluster-id`: "edge"})
			}},
		{Name: "a selector that does not parse", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "-l", "team in ml"},
			Code: 1, Usage: true, Err: `-l, --selector "team in ml"`},
		{Name: "--remote-cluster-id", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "edge", "--remote-cluster-id", "farm"},
			Stdout: table(map[string]string{"REMOTE": "farm", "ROLE": "consumer"})},
		{Name: "--remote-cluster-id of no pairing", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "edge", "--remote-cluster-id", "fram"},
			Code: 1, Err: `--remote-cluster-id: remote cluster "fram" not found among the pairings of this cluster; did you mean "farm"? (known: farm)`},
		{Name: "--history --remote-cluster-id of no pairing", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "--history", "--remote-cluster-id", "egde"},
			Code: 1, Err: `remote cluster "egde" not found among the pairings of this cluster; did you mean "edge"?`},
		{Name: "--no-headers", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "--no-headers"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if len(lines) != 1 || !strings.HasPrefix(lines[0], "edge   provider   ControlPlane   -   Active   ") {
					t.Errorf("want one row and no header:\n%s", out)
				}
			}},
		// Oldest first by default; by note, the revocation's ("every credential ...") sorts before the
		// issuance's ("identity ...").
		{Name: "--history --sort-by", World: revoked, Args: []string{"status", "--kubeconfig", "farm", "--history", "--sort-by", "{.status.note}"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				rows := cmdtest.TableOf(t, out, "AGE", "REMOTE", "ROLE", "REASON", "NOTE")
				if len(rows) < 2 || rows[0]["REASON"] != "Revoked" || rows[len(rows)-1]["REASON"] != "Issued" {
					t.Errorf("want Revoked first and Issued last:\n%s", out)
				}
			}},
		{Name: "--history", World: revoked, Args: []string{"status", "--kubeconfig", "farm", "--history", "-l", "federate.dev/role=provider"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				rows := cmdtest.TableOf(t, out, "AGE", "REMOTE", "ROLE", "REASON", "NOTE")
				if len(rows) < 2 || rows[0]["REASON"] != "Issued" || rows[len(rows)-1]["REASON"] != "Revoked" {
					t.Errorf("want Issued first and Revoked last:\n%s", out)
				}
			}},
		{Name: "--history -l selecting nothing", World: revoked, Args: []string{"status", "--kubeconfig", "farm", "--history", "-l", "federate.dev/role=consumer"},
			Stderr: []string{"No audit Event of this cluster matches the selection"}, Stdout: cmdtest.WantStdout("")},
		{Name: "--history --remote-cluster-id", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "--history", "--remote-cluster-id", "edge"},
			Stdout: history(map[string]string{"REMOTE": "edge", "REASON": "Issued"})},
		{Name: "--sort-by a field no item has", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "--sort-by", ".status.nothing"},
			Code: 1, Err: `--sort-by ".status.nothing": no item has that field`},
		{Name: "--sort-by that does not parse", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "--sort-by", "{.status"},
			Code: 1, Usage: true, Err: `--sort-by "{.status"`},
		{Name: "-o custom-columns", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "edge", "-o", "custom-columns=REMOTE:.status.remoteClusterID,USER:.status.user,TARGET:.status.target"},
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				rows := cmdtest.TableOf(t, out, "REMOTE", "USER", "TARGET")
				if len(rows) != 1 {
					t.Fatalf("%d rows:\n%s", len(rows), out)
				}
				cmdtest.WantRow(t, rows[0], map[string]string{"REMOTE": "farm", "USER": cmdtest.HeldUser(t, e), "TARGET": "<none>"})
			}},
		{Name: "-o custom-columns --no-headers", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "--no-headers", "-o", "custom-columns=R:.status.remoteClusterID,P:.status.phase"},
			Stdout: cmdtest.WantStdout("edge   Active\n")},
		{Name: "-o custom-columns-file", World: columns, Args: []string{"status", "--kubeconfig", "edge", "-o", "custom-columns-file={file}"},
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				rows := cmdtest.TableOf(t, out, "REMOTE", "WHO")
				if len(rows) != 1 || rows[0]["WHO"] != cmdtest.HeldUser(t, e) {
					t.Errorf("rows %v:\n%s", rows, out)
				}
			}},
		{Name: "--history -o custom-columns shows the whole note", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "--history", "-o", "custom-columns=REASON:.status.reason,NOTE:.status.note"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if !strings.Contains(out, "Issued   identity (Certificate) issued to consumer edge in federate-tenant-edge") || strings.Contains(out, "...") {
					t.Errorf("want the whole note:\n%s", out)
				}
			}},
		// --check proves what is shown, before -o prints it and --sort-by orders it.
		{Name: "--check with custom-columns", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "edge", "--check", "--remote-cluster-id", "farm",
			"--sort-by", ".status.check.state", "-o", "custom-columns=R:.status.remoteClusterID,C:.status.check.state"},
			Stdout: cmdtest.WantStdout("R      C\nfarm   ok\n")},
		// The exit code is about the rows shown: a revoked credential filtered out is not reported.
		{Name: "--check of a revoked identity not selected", World: revoked, Args: []string{"status", "--kubeconfig", "edge", "--check", "-l", "federate.dev/role=provider"},
			Stderr: []string{"No credential of this cluster matches the selection"}, Stdout: cmdtest.WantStdout("")},
		{Name: "--check of a revoked identity selected", World: revoked, Args: []string{"status", "--kubeconfig", "edge", "--check", "-l", "federate.dev/role=consumer"},
			Code: 4, Err: "1 credential(s) not ok: consumer ControlPlane of farm: revoked",
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if !strings.Contains(out, "revoked") {
					t.Errorf("want the revoked row:\n%s", out)
				}
			}},
		{Name: "a custom-columns spec without a path", World: cmdtest.WorldPaired, Args: []string{"status", "--kubeconfig", "farm", "-o", "custom-columns=REMOTE"},
			Code: 1, Usage: true, Err: "unexpected custom-columns spec: REMOTE, expected <header>:<json-path-expr>"},
	})
}

// Item 13 of issue 42: status -o wide and --history keep one row per record within 120 columns for
// usual names, a dozen characters for a cluster ID and thirty for a slice, on both sides of a pairing
// with a slice, a cordon and a revocation. They were up to 310 and 315 columns.
func TestStatusTablesFit120Columns(t *testing.T) {
	const consumer, provider, slice = "edge-west-04", "gpu-farm-prd", "nightly-batch-training-gpu-v01"
	w := cmdtest.NewWorld(t, consumer, provider)
	e := &cmdtest.Env{World: w, Vars: map[string]string{}}
	e.Must(t, "authenticate", "--kubeconfig", consumer, "--remote-kubeconfig", provider, "--cluster-id", consumer, "--remote-cluster-id", provider)
	e.Must(t, "create", "resourceslice", slice, "--kubeconfig", consumer, "--remote-cluster-id", provider, "--cpu", "1", "--memory", "1Gi")
	e.Must(t, "accept", "resourceslice", slice, "--kubeconfig", provider, "--remote-cluster-id", consumer)
	e.Must(t, "import", "resourceslice", slice, "--kubeconfig", consumer, "--remote-cluster-id", provider)
	e.Must(t, "cordon", "tenant", consumer, "--kubeconfig", provider)
	e.Must(t, "uncordon", "tenant", consumer, "--kubeconfig", provider)
	for _, args := range [][]string{
		{"status", "--kubeconfig", provider, "-o", "wide"},
		{"status", "--kubeconfig", consumer, "-o", "wide"},
		{"status", "--kubeconfig", provider, "--history"},
		{"status", "--kubeconfig", provider, "--history", "-o", "wide"},
		{"status", "--kubeconfig", consumer, "--history", "-o", "wide"},
	} {
		out := e.Must(t, args...).Stdout
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) < 3 {
			t.Errorf("%s: want a header and at least two records:\n%s", strings.Join(args, " "), out)
		}
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n > 120 {
				t.Errorf("%s: a line of %d columns:\n%s", strings.Join(args, " "), n, l)
			}
		}
	}
}

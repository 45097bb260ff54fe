package deletecmd_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// delete resourceslice-class removes a class on the provider; a class it has no record of is NotFound.
// (table_delete_test.go holds delete's other tables; this one is apart only to leave that file as it is.)
func TestCommandTableDeleteResourceSliceClass(t *testing.T) {
	withClass := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		e.Must(t, "create", "resourceslice-class", "small", "--kubeconfig", "farm", "--max-cpu", "4")
		return e
	})
	del := func(more ...string) []string {
		return append([]string{"delete", "resourceslice-class", "--kubeconfig", "farm"}, more...)
	}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "a class", World: withClass, Args: del("small"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				cmdtest.WantStdout("resourcesliceclass/small deleted\n")(t, e, out)
				// Gone: a second delete finds nothing.
				if r := e.World.Run(del("small")...); r.Code != 1 {
					t.Errorf("the class is still there: %s", r)
				}
			},
			Writes: map[string][]string{"farm": {"delete resourcesliceclasses", "delete resourcesliceclasses"}}},
		// The DELETE is sent and answered NotFound (as kubectl delete does): the store is as before.
		{Name: "a class this cluster has no record of", World: withClass, Args: del("nope"), DryRun: true,
			Code: 1, Err: `NAME: resource slice class "nope" not found on this cluster; known: small (--ignore-not-found to accept that)`},
		{Name: "a typo", World: withClass, Args: del("smal"), DryRun: true,
			Code: 1, Err: `NAME: resource slice class "smal" not found on this cluster; did you mean "small"?`},
		{Name: "a name that is no DNS label", World: withClass, Args: del("Bad"),
			Code: 1, Usage: true, Err: `NAME "Bad": must be a DNS label`},
		{Name: "no name", World: withClass, Args: del(),
			Code: 1, Usage: true, Err: "NAME: exactly 1 argument(s) required, got 0"},
		{Name: "--ignore-not-found", World: withClass, Args: del("nope", "--ignore-not-found"), DryRun: true,
			Stdout: cmdtest.WantStdout("")},
	})
}

// delete resourceslice removes a slice on the side this cluster holds (the provider's binding first, so
// the certificate is authorized for nothing before the namespace goes), or on both at once; a name the
// cluster has no record of is NotFound and writes nothing.
func TestCommandTableDeleteResourceSlice(t *testing.T) {
	// sliceDeleted is cmdtest.ImportedSlice with the slice deleted on both sides before.
	sliceDeleted := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.ImportedSlice(t)
		e.Must(t, "delete", "resourceslice", "batch", "--kubeconfig", "farm", "--remote-cluster-id", "edge")
		e.Must(t, "delete", "resourceslice", "batch", "--kubeconfig", "edge", "--remote-cluster-id", "farm")
		return e
	})
	del := []string{"delete", "resourceslice"}
	onFarm := []string{"--kubeconfig", "farm", "--remote-cluster-id", "edge"}
	onEdge := []string{"--kubeconfig", "edge", "--remote-cluster-id", "farm"}
	both := []string{"--kubeconfig", "edge", "--remote-kubeconfig", "farm"}
	line := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "on the provider", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"batch"}, onFarm),
			Stdout: cmdtest.WantStdout("resourceslice/batch deleted\n"), Stderr: []string{"Resource slice batch of edge revoked and removed"},
			Wrote: map[string][]string{"farm": {"delete rolebindings", "delete namespaces", "delete resourceslices"}}},
		// The consumer's own records go, and its request on the provider is withdrawn through the pairing.
		{Name: "on the consumer", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"batch"}, onEdge),
			Stdout: cmdtest.WantStdout("resourceslice/batch deleted\n"), Stderr: []string{"request on the provider"},
			Wrote:  map[string][]string{"edge": {"delete secrets", "delete identities", "delete resourceslices"}},
			Writes: map[string][]string{"farm": {"delete resourceslices"}}},
		{Name: "a request not yet answered, on the provider", World: cmdtest.WorldPendingSlice, Args: line(del, []string{"batch"}, onFarm),
			Stdout: cmdtest.WantStdout("resourceslice/batch deleted\n"),
			Wrote:  map[string][]string{"farm": {"delete resourceslices"}}},
		{Name: "both sides at once", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"batch"}, both),
			Stdout: cmdtest.WantStdout("resourceslice/batch deleted\n"), Stderr: []string{"(remote) Resource slice batch of edge revoked and removed", "(local) Resource slice batch of farm removed: its Identity, its kubeconfig, its record"},
			Wrote: map[string][]string{"farm": {"delete rolebindings", "delete namespaces", "delete resourceslices"}, "edge": {"delete identities", "delete resourceslices"}}},
		{Name: "--side provider", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"batch", "--side", "provider"}, onFarm),
			Stdout: cmdtest.WantStdout("resourceslice/batch deleted\n"),
			Wrote:  map[string][]string{"farm": {"delete rolebindings", "delete namespaces", "delete resourceslices"}}},
		// --side only chooses between two records this cluster holds: without one, NotFound as ever.
		{Name: "--side consumer, a slice this cluster has no record of", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"nope", "--side", "consumer"}, onEdge),
			Code: 1, Err: `NAME: resource slice "nope" not found shared with farm`},
		{Name: "--side provider, a slice this cluster has no record of", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"nope", "--side", "provider"}, onFarm),
			Code: 1, Err: `NAME: resource slice "nope" not found shared with edge`},
		{Name: "deleted before", World: sliceDeleted, Args: line(del, []string{"batch"}, onFarm),
			Stdout: cmdtest.WantStdout("resourceslice/batch already deleted\n")},
		{Name: "deleted before, both sides at once", World: sliceDeleted, Args: line(del, []string{"batch"}, both),
			Stdout: cmdtest.WantStdout("resourceslice/batch already deleted\n")},
		{Name: "a slice this cluster has no record of", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"nope"}, onFarm),
			Code: 1, Err: `NAME: resource slice "nope" not found shared with edge`, Stderr: []string{"--ignore-not-found"}},
		{Name: "a slice no side has a record of, both sides at once", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"nope"}, both),
			Code: 1, Err: `NAME: resource slice "nope" not found shared with edge`},
		{Name: "--ignore-not-found", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"nope"}, onFarm, []string{"--ignore-not-found"}),
			Stdout: cmdtest.WantStdout("")},
		{Name: "a pairing with another provider than the one reached", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"batch"}, both, []string{"--remote-cluster-id", "lone"}),
			Code: 1, Err: `--remote-cluster-id "lone": the provider is initialized with cluster ID "farm"`},
		{Name: "a name that is no DNS label", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"Bad_Name"}, onFarm),
			Code: 1, Usage: true, Err: `NAME "Bad_Name": must be a DNS label`},
		{Name: "no name", World: cmdtest.WorldImportedSlice, Args: line(del, onFarm),
			Code: 1, Usage: true, Err: "NAME: exactly 1 argument(s) required, got 0"},
		{Name: "no other cluster named", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"batch", "--kubeconfig", "farm"}),
			Code: 1, Usage: true, Err: "--remote-cluster-id: must not be empty"},
		{Name: "--side provider both sides at once", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"batch", "--side", "provider"}, both),
			Code: 1, Usage: true, Err: "--side provider: with --remote-kubeconfig this cluster is the consumer"},
		{Name: "an unknown --side", World: cmdtest.WorldImportedSlice, Args: line(del, []string{"batch", "--side", "both"}, onFarm),
			Code: 1, Usage: true, Err: `invalid argument "both" for "--side" flag`},
	})
}

// delete nonce removes an unused nonce; a used one reads "already used", one never made is NotFound; a
// dry run prints what it would delete and writes nothing.
func TestCommandTableDeleteNonce(t *testing.T) {
	farm := []string{"delete", "nonce", "--kubeconfig", "farm"}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "an unused nonce", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "lone"),
			Stdout: cmdtest.WantStdout("nonce/lone deleted\n"), Stderr: []string{"Nonce for consumer lone deleted"},
			Writes: map[string][]string{"farm": {"delete secrets"}}},
		// edge paired with its nonce: its record goes with unauthenticate, not here.
		{Name: "a nonce already used", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "edge"),
			Stdout: cmdtest.WantStdout("nonce/edge already used\n")},
		{Name: "a consumer with no nonce", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "edgy"),
			Code: 1, Err: `--remote-cluster-id: unused nonce for consumer "edgy" not found`, Stderr: []string{"--ignore-not-found"}},
		{Name: "--ignore-not-found", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "edgy", "--ignore-not-found"),
			Stdout: cmdtest.WantStdout("")},
		// The dry run prints the Secret it would delete, without its data: the nonce stays off stdout.
		{Name: "--dry-run", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "lone", "--dry-run"), DryRun: true,
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				refs := cmdtest.Documents(t, out)
				if len(refs) != 1 || refs[0] != "Secret/nonce-lone" || !strings.Contains(out, "# farm: would delete secret/nonce-lone in federate-system (dry run)") {
					t.Errorf("a dry run's Stdout: %v\n%s", refs, out)
				}
				nonce := strings.Split(e.Must(t, "get", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone").Stdout, ".")[4]
				if strings.Contains(out, nonce) || strings.Contains(out, "\ndata:") {
					t.Errorf("a dry run printed the nonce:\n%s", out)
				}
			}},
		{Name: "no consumer named", World: cmdtest.WorldNonce, Args: farm,
			Code: 1, Usage: true, Err: `required flag(s) "remote-cluster-id" not set`},
		{Name: "an ID that is no DNS label", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "-lone"),
			Code: 1, Usage: true, Err: `--remote-cluster-id "-lone": must be a DNS label`},
		{Name: "a positional argument", World: cmdtest.WorldNonce, Args: append(farm, "lone"),
			Code: 1, Usage: true, Err: `unknown command "lone"`},
	})
}

// delete export removes what one export wrote (its Secret, then its record), found by its record; a
// Secret deleted by hand leaves the record, which it then removes alone (a stranger made under the
// Secret's name is left); an export this cluster has no record of, or of another format, is NotFound.
func TestCommandTableDeleteExport(t *testing.T) {
	exported := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		if _, err := e.World.Cluster("edge").Clientset.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.Must(t, "export", "argocd", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "argocd")
		return e
	})
	del := func(more ...string) []string {
		return append([]string{"delete", "export", "argocd", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "argocd"}, more...)
	}
	deleted := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := exported.Build(t)
		e.Must(t, del()...)
		return e
	})
	byHand := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := exported.Build(t)
		if err := e.World.Cluster("edge").Clientset.CoreV1().Secrets("argocd").Delete(t.Context(), "farm", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		return e
	})
	// Someone made a Secret of the same name, with the export's labels, after the export's was deleted.
	stranger := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := byHand.Build(t)
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "farm", Namespace: "argocd", Labels: map[string]string{
			"app.kubernetes.io/managed-by": "kubectl-federate", "federate.dev/remote-cluster-id": "farm", "federate.dev/role": "consumer", "federate.dev/export-format": "argocd"}}}
		if _, err := e.World.Cluster("edge").Clientset.CoreV1().Secrets("argocd").Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return e
	})
	// Someone changed the export's labels: it is no longer provably the export, and is left with its record.
	relabelled := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := exported.Build(t)
		secrets := e.World.Cluster("edge").Clientset.CoreV1().Secrets("argocd")
		s, err := secrets.Get(t.Context(), "farm", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Labels["federate.dev/remote-cluster-id"] = "elsewhere"
		if _, err := secrets.Update(t.Context(), s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return e
	})
	records := func(t *testing.T, e *cmdtest.Env) int {
		t.Helper()
		l, err := e.World.Cluster("edge").Clientset.CoreV1().Secrets("federate-system").List(t.Context(), metav1.ListOptions{LabelSelector: "federate.dev/export-record-of"})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	secretThere := func(t *testing.T, e *cmdtest.Env) bool {
		t.Helper()
		_, err := e.World.Cluster("edge").Clientset.CoreV1().Secrets("argocd").Get(t.Context(), "farm", metav1.GetOptions{})
		return err == nil
	}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "an export", World: exported, Args: del(),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				cmdtest.WantStdout("secret/farm deleted (namespace argocd)\n")(t, e, out)
				if secretThere(t, e) || records(t, e) != 0 {
					t.Errorf("the Secret (there: %v) or its record (%d) remains", secretThere(t, e), records(t, e))
				}
			},
			// The Secret by its UID, then the record.
			Writes: map[string][]string{"edge": {"delete secrets", "delete secrets"}}},
		{Name: "-o name", World: exported, Args: del("-o", "name"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if !cmdtest.RegexpMatch(`^secret/farm\nsecret/export-[0-9a-f]{20}\n$`, out) {
					t.Errorf("stdout %q: want the Secret and its record, as kind/name", out)
				}
			},
			Writes: map[string][]string{"edge": {"delete secrets", "delete secrets"}}},
		{Name: "--dry-run", World: exported, Args: del("--dry-run"), DryRun: true,
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if !strings.HasPrefix(out, "# secret/farm deleted (namespace argocd) (dry run)\n") || !strings.Contains(out, "would delete secret/farm in argocd") ||
					!strings.Contains(out, "would delete secret/export-") {
					t.Errorf("stdout %q: want the line as a comment, then both deletions", out)
				}
			}},
		// The record alone: status lists it, and delete export removes it.
		{Name: "its Secret deleted by hand: status", World: byHand, Args: []string{"status", "--kubeconfig", "edge", "-o", "json"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if !strings.Contains(out, `"state": "SecretGone"`) || !strings.Contains(out, `"secret": "farm"`) || !strings.Contains(out, `"format": "argocd"`) {
					t.Errorf("status -o json does not list the record alone:\n%s", out)
				}
			}},
		{Name: "its Secret deleted by hand", World: byHand, Args: del(),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				cmdtest.WantStdout("secret/farm was gone already (namespace argocd): its export record deleted\n")(t, e, out)
				if records(t, e) != 0 {
					t.Errorf("%d record(s) remain", records(t, e))
				}
			},
			Writes: map[string][]string{"edge": {"delete secrets"}}},
		{Name: "a stranger under its name", World: stranger, Args: del(),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				cmdtest.WantStdout("secret/farm was gone already (namespace argocd): its export record deleted\n")(t, e, out)
				if !secretThere(t, e) {
					t.Error("the stranger's Secret was deleted")
				}
			},
			Writes: map[string][]string{"edge": {"delete secrets"}}},
		{Name: "its labels changed", World: relabelled, Args: del(),
			Code: 1, Err: "export Secret argocd/farm: its labels were changed since the export wrote it; left as it is, with its record; nothing was deleted"},
		{Name: "deleted before", World: deleted, Args: del(),
			Code: 1, Err: `FORMAT, --name and -n: export "argocd/farm" not found for the pairing with provider "farm" (no record of an export Secret argocd/farm in federate-system); there is none (--ignore-not-found to accept that)`},
		{Name: "--ignore-not-found", World: deleted, Args: del("--ignore-not-found"),
			Stdout: cmdtest.WantStdout("")},
		{Name: "a mistyped name", World: exported, Args: del("--name", "farn"),
			Code: 1, Err: `export "argocd/farn" not found for the pairing with provider "farm" (no record of an export Secret argocd/farn in federate-system); did you mean "argocd/farm"?`},
		{Name: "another format under its name", World: exported, Args: []string{"delete", "export", "cluster-gateway", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "argocd"},
			Code: 1, Err: `export "argocd/farm" not found for the pairing with provider "farm" (the Secret argocd/farm is not a cluster-gateway export); there is none`},
		{Name: "an unknown format", World: exported, Args: []string{"delete", "export", "flux", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "argocd"},
			Code: 1, Usage: true, Err: `FORMAT: format "flux": must be one of`},
	})
}

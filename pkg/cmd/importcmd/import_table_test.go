package importcmd_test

import (
	"regexp"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// import identity stores what farm issued for lone (its kubeconfig, its Identity) and drops the waiting
// key; the same Identity again is "unchanged"; an Identity for another cluster, or another kind of
// document, is refused with nothing written.
func TestCommandTableImportIdentity(t *testing.T) {
	imported := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.IdentityFile(t)
		e.Must(t, "import", "identity", "--kubeconfig", "lone", "-f", e.Vars["identity"])
		return e
	})
	// lone asked again (a new nonce, a new Tenant) after farm issued {identity}: that identity is stale.
	stale := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.IdentityFile(t)
		e.Must(t, "create", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone")
		next := cmdtest.File(t, "nonce2.txt", e.Must(t, "get", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone").Stdout)
		e.Must(t, "generate", "tenant", "--kubeconfig", "lone", "--nonce-file", next)
		return e
	})
	line := func(verb string) func(t *testing.T, _ *cmdtest.Env, out string) {
		re := regexp.MustCompile(`^identity\.federate\.dev/controlplane-farm ` + verb + ` \(user kubectl-federate:lone:[0-9a-f]{16}, expires \S+Z, kubeconfig in secret federate-system/kubeconfig-controlplane-farm\)\n$`)
		return func(t *testing.T, _ *cmdtest.Env, out string) {
			t.Helper()
			if !re.MatchString(out) {
				t.Errorf("stdout %q, want %s", out, re)
			}
		}
	}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "the Identity issued", World: cmdtest.WorldIdentityFile, Args: []string{"import", "identity", "--kubeconfig", "lone", "-f", "{identity}"},
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				line("imported")(t, e, out)
				cmdtest.KubeconfigOf(t, e.Must(t, "get", "kubeconfig", "--kubeconfig", "lone", "--remote-cluster-id", "farm").Stdout, "https://farm.fake:6443", "federate-tenant-lone")
			},
			Stderr: []string{"(local) Identity federate-system/controlplane-farm recorded", "(local) Kubeconfig stored in Secret federate-system/kubeconfig-controlplane-farm"},
			// The kubeconfig stored, the waiting key dropped, the Identity recorded.
			Wrote: map[string][]string{"lone": {"create secrets", "delete secrets", "patch identities"}}},
		// kubectl's -o name: the Identity and the Secret of its kubeconfig, nothing else on stdout.
		{Name: "-o name", World: cmdtest.WorldIdentityFile, Args: []string{"import", "identity", "--kubeconfig", "lone", "-f", "{identity}", "-o", "name"},
			Stdout: cmdtest.WantStdout("identity.federate.dev/controlplane-farm\nsecret/kubeconfig-controlplane-farm\n"),
			Wrote:  map[string][]string{"lone": {"create secrets", "delete secrets", "patch identities"}}},
		{Name: "-o name, imported before", World: imported, Args: []string{"import", "identity", "--kubeconfig", "lone", "-f", "{identity}", "-o", "name"},
			Stdout: cmdtest.WantStdout("identity.federate.dev/controlplane-farm\nsecret/kubeconfig-controlplane-farm\n")},
		{Name: "imported before", World: imported, Args: []string{"import", "identity", "--kubeconfig", "lone", "-f", "{identity}"},
			Stdout: line("unchanged")},
		{Name: "an Identity issued to another consumer", World: cmdtest.WorldIdentityFile, Args: []string{"import", "identity", "--kubeconfig", "edge", "-f", "{identity}"},
			Code: 1, Err: `spec.consumerClusterID "lone": this identity was issued to another consumer (this cluster is "edge")`},
		{Name: "a Tenant instead", World: cmdtest.WorldIdentityFile, Args: []string{"import", "identity", "--kubeconfig", "lone", "-f", "{tenant}"},
			Code: 1, Err: "is a Tenant, not an Identity: that file is read by the provider's kubectl federate generate identity -f"},
		// Said once (no progress line repeats it), with what to do next.
		{Name: "a stale identity", World: stale, Args: []string{"import", "identity", "--kubeconfig", "lone", "-f", "{identity}"},
			Code: 1, Err: "this identity answers an earlier request (a new one was signed since); import the identity the provider makes from the latest tenant.yaml",
			NotStderr: []string{"ERROR", "Matching the credential"}},
		{Name: "no file", World: cmdtest.WorldIdentityFile, Args: []string{"import", "identity", "--kubeconfig", "lone"},
			Code: 1, Usage: true, Err: `required flag(s) "filename" not set`},
	})
}

// import resourceslice stores the credential farm granted for edge's slice, read through the pairing or
// from the file accept -o yaml wrote; again it is "unchanged"; a slice not answered, denied, or never
// asked for fails saying so.
func TestCommandTableImportResourceSlice(t *testing.T) {
	imp := func(more ...string) []string {
		return append([]string{"import", "resourceslice", "--kubeconfig", "edge", "--remote-cluster-id", "farm"}, more...)
	}
	accepted := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.PendingSlice(t)
		e.Vars["granted"] = cmdtest.File(t, "granted.yaml", e.Must(t, "accept", "resourceslice", "batch", "--kubeconfig", "farm", "--remote-cluster-id", "edge", "-o", "yaml").Stdout)
		return e
	})
	denied := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.PendingSlice(t)
		e.Must(t, "deny", "resourceslice", "batch", "--kubeconfig", "farm", "--remote-cluster-id", "edge", "--reason", "no capacity")
		return e
	})
	line := func(verb string) func(t *testing.T, _ *cmdtest.Env, out string) {
		re := regexp.MustCompile(`^identity\.federate\.dev/resource-farm\.batch ` + verb + ` \(granted cpu=1,ephemeral-storage=2Gi,memory=1Gi,pods=4 in namespace fs-edge-batch-[0-9a-f]{8}, user kubectl-federate:edge:slice-batch:[0-9a-f]{16}, expires \S+Z, kubeconfig in secret federate-system/kubeconfig-resource-farm\.batch\)\n$`)
		return func(t *testing.T, _ *cmdtest.Env, out string) {
			t.Helper()
			if !re.MatchString(out) {
				t.Errorf("stdout %q, want %s", out, re)
			}
		}
	}
	// The kubeconfig stored, the waiting key dropped, the Identity and the slice's record.
	stored := map[string][]string{"edge": {"create secrets", "delete secrets", "patch identities", "patch resourceslices"}}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "through the pairing", World: accepted, Args: imp("batch"),
			Stdout: line("imported"), Stderr: []string{"The slice's credential works in fs-edge-batch-", "Identity federate-system/resource-farm.batch recorded"},
			Wrote: stored},
		{Name: "from the file accept wrote", World: accepted, Args: imp("batch", "-f", "{granted}"),
			Stdout: line("imported"), Wrote: stored},
		{Name: "imported before", World: cmdtest.WorldImportedSlice, Args: imp("batch"),
			Stdout: line("unchanged")},
		{Name: "not answered yet", World: cmdtest.WorldPendingSlice, Args: imp("batch"),
			Code: 1, Err: `resource slice "batch": provider "farm" has not accepted it yet; its administrator accepts it with: kubectl federate accept resourceslice batch --remote-cluster-id edge`},
		// The refusal is recorded in the consumer's own record of the slice, and said.
		{Name: "denied", World: denied, Args: imp("batch"),
			Code: 1, Err: `resource slice "batch" was denied by provider "farm": no capacity`,
			Writes: map[string][]string{"edge": {"patch resourceslices"}}},
		{Name: "a slice this cluster never asked for", World: cmdtest.WorldPendingSlice, Args: imp("nope"),
			Code: 1, Err: `provider "farm" holds no ResourceSlice "nope" from this cluster: create it first`},
		{Name: "a provider this cluster is not paired with", World: cmdtest.WorldPendingSlice, Args: []string{"import", "resourceslice", "batch", "--kubeconfig", "edge", "--remote-cluster-id", "lone"},
			Code: 1, Err: `provider "lone" not found among the providers this cluster holds an identity of (import its identity first); known: farm`},
		{Name: "a name that is no DNS label", World: cmdtest.WorldPendingSlice, Args: imp("Bad"),
			Code: 1, Usage: true, Err: `NAME "Bad": must be a DNS label`},
		{Name: "no provider named", World: cmdtest.WorldPendingSlice, Args: []string{"import", "resourceslice", "batch", "--kubeconfig", "edge"},
			Code: 1, Usage: true, Err: `required flag(s) "remote-cluster-id" not set`},
	})
}

package cmd_test

import (
	"regexp"
	"testing"
)

// import identity stores what farm issued for lone (its kubeconfig, its Identity) and drops the waiting
// key; the same Identity again is "unchanged"; an Identity for another cluster, or another kind of
// document, is refused with nothing written.
func TestCommandTableImportIdentity(t *testing.T) {
	imported := newWorld(func(t *testing.T) *tableEnv {
		e := tableIdentityFile(t)
		e.must(t, "import", "identity", "--kubeconfig", "lone", "-f", e.vars["identity"])
		return e
	})
	line := func(verb string) func(t *testing.T, _ *tableEnv, out string) {
		re := regexp.MustCompile(`^identity\.federate\.dev/controlplane-farm ` + verb + ` \(user kubectl-federate:lone:[0-9a-f]{16}, expires \S+Z, kubeconfig in secret federate-system/kubeconfig-controlplane-farm\)\n$`)
		return func(t *testing.T, _ *tableEnv, out string) {
			t.Helper()
			if !re.MatchString(out) {
				t.Errorf("stdout %q, want %s", out, re)
			}
		}
	}
	runTable(t, []tableRow{
		{name: "the Identity issued", world: worldIdentityFile, args: []string{"import", "identity", "--kubeconfig", "lone", "-f", "{identity}"},
			stdout: func(t *testing.T, e *tableEnv, out string) {
				line("imported")(t, e, out)
				kubeconfigOf(t, e.must(t, "get", "kubeconfig", "--kubeconfig", "lone", "--remote-cluster-id", "farm").Stdout, "https://farm.fake:6443", "federate-tenant-lone")
			},
			stderr: []string{"(local) Identity federate-system/controlplane-farm recorded", "(local) Kubeconfig stored in Secret federate-system/kubeconfig-controlplane-farm"},
			// The kubeconfig stored, the waiting key dropped, the Identity recorded.
			wrote: map[string][]string{"lone": {"create secrets", "delete secrets", "patch identities"}}},
		{name: "imported before", world: imported, args: []string{"import", "identity", "--kubeconfig", "lone", "-f", "{identity}"},
			stdout: line("unchanged")},
		{name: "an Identity issued to another consumer", world: worldIdentityFile, args: []string{"import", "identity", "--kubeconfig", "edge", "-f", "{identity}"},
			code: 1, err: `spec.consumerClusterID "lone": this identity was issued to another consumer (this cluster is "edge")`},
		{name: "a Tenant instead", world: worldIdentityFile, args: []string{"import", "identity", "--kubeconfig", "lone", "-f", "{tenant}"},
			code: 1, err: "is a Tenant, not an Identity: that file is read by the provider's kubectl federate generate identity -f"},
		{name: "no file", world: worldIdentityFile, args: []string{"import", "identity", "--kubeconfig", "lone"},
			code: 1, usage: true, err: `required flag(s) "filename" not set`},
	})
}

// import resourceslice stores the credential farm granted for edge's slice, read through the pairing or
// from the file accept -o yaml wrote; again it is "unchanged"; a slice not answered, denied, or never
// asked for fails saying so.
func TestCommandTableImportResourceSlice(t *testing.T) {
	imp := func(more ...string) []string {
		return append([]string{"import", "resourceslice", "--kubeconfig", "edge", "--remote-cluster-id", "farm"}, more...)
	}
	accepted := newWorld(func(t *testing.T) *tableEnv {
		e := tablePendingSlice(t)
		e.vars["granted"] = tableFile(t, "granted.yaml", e.must(t, "accept", "resourceslice", "batch", "--kubeconfig", "farm", "--remote-cluster-id", "edge", "-o", "yaml").Stdout)
		return e
	})
	denied := newWorld(func(t *testing.T) *tableEnv {
		e := tablePendingSlice(t)
		e.must(t, "deny", "resourceslice", "batch", "--kubeconfig", "farm", "--remote-cluster-id", "edge", "--reason", "no capacity")
		return e
	})
	line := func(verb string) func(t *testing.T, _ *tableEnv, out string) {
		re := regexp.MustCompile(`^identity\.federate\.dev/resource-farm\.batch ` + verb + ` \(granted cpu=1,ephemeral-storage=2Gi,memory=1Gi,pods=4 in namespace fs-edge-batch-[0-9a-f]{8}, user kubectl-federate:edge:slice-batch:[0-9a-f]{16}, expires \S+Z, kubeconfig in secret federate-system/kubeconfig-resource-farm\.batch\)\n$`)
		return func(t *testing.T, _ *tableEnv, out string) {
			t.Helper()
			if !re.MatchString(out) {
				t.Errorf("stdout %q, want %s", out, re)
			}
		}
	}
	// The kubeconfig stored, the waiting key dropped, the Identity and the slice's record.
	stored := map[string][]string{"edge": {"create secrets", "delete secrets", "patch identities", "patch resourceslices"}}
	runTable(t, []tableRow{
		{name: "through the pairing", world: accepted, args: imp("batch"),
			stdout: line("imported"), stderr: []string{"The slice's credential works in fs-edge-batch-", "Identity federate-system/resource-farm.batch recorded"},
			wrote: stored},
		{name: "from the file accept wrote", world: accepted, args: imp("batch", "-f", "{granted}"),
			stdout: line("imported"), wrote: stored},
		{name: "imported before", world: worldImportedSlice, args: imp("batch"),
			stdout: line("unchanged")},
		{name: "not answered yet", world: worldPendingSlice, args: imp("batch"),
			code: 1, err: `resource slice "batch": provider "farm" has not accepted it yet; its administrator accepts it with: kubectl federate accept resourceslice batch --remote-cluster-id edge`},
		// The refusal is recorded in the consumer's own record of the slice, and said.
		{name: "denied", world: denied, args: imp("batch"),
			code: 1, err: `resource slice "batch" was denied by provider "farm": no capacity`,
			writes: map[string][]string{"edge": {"patch resourceslices"}}},
		{name: "a slice this cluster never asked for", world: worldPendingSlice, args: imp("nope"),
			code: 1, err: `provider "farm" holds no ResourceSlice "nope" from this cluster: create it first`},
		{name: "a provider this cluster is not paired with", world: worldPendingSlice, args: []string{"import", "resourceslice", "batch", "--kubeconfig", "edge", "--remote-cluster-id", "lone"},
			code: 1, err: `no kubeconfig for provider "lone" (Secret federate-system/kubeconfig-controlplane-lone not found): import its identity first`},
		{name: "a name that is no DNS label", world: worldPendingSlice, args: imp("Bad"),
			code: 1, usage: true, err: `NAME "Bad": must be a DNS label`},
		{name: "no provider named", world: worldPendingSlice, args: []string{"import", "resourceslice", "batch", "--kubeconfig", "edge"},
			code: 1, usage: true, err: `required flag(s) "remote-cluster-id" not set`},
	})
}

package create_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// create nonce makes one unused nonce for a consumer (kept while unused), initializing the provider only
// with the --cluster-id it is given; its ID must match an initialized cluster's.
func TestCommandTableCreateNonce(t *testing.T) {
	farm := []string{"create", "nonce", "--kubeconfig", "farm"}
	line := func(consumer, verb string) func(t *testing.T, _ *cmdtest.Env, out string) {
		re := regexp.MustCompile(`^nonce/` + consumer + ` ` + verb + ` \(expires \d{4}-\d\d-\d\dT\S+Z\)\n$`)
		return func(t *testing.T, _ *cmdtest.Env, out string) {
			t.Helper()
			if !re.MatchString(out) {
				t.Errorf("stdout %q, want %s", out, re)
			}
		}
	}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "a nonce", World: cmdtest.WorldPaired, Args: append(farm, "--remote-cluster-id", "lone"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				line("lone", "created")(t, e, out)
				e.Must(t, "get", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone")
			},
			Stderr: []string{"Nonce ensured"}, Writes: map[string][]string{"farm": {"create secrets"}}},
		// kubectl's -o name: the Secret that holds the nonce, nothing else on stdout.
		{Name: "-o name", World: cmdtest.WorldPaired, Args: append(farm, "--remote-cluster-id", "lone", "-o", "name"),
			Stdout: cmdtest.WantStdout("secret/nonce-lone\n"), Writes: map[string][]string{"farm": {"create secrets"}}},
		{Name: "-o name, an unused nonce exists", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "lone", "-o", "name"),
			Stdout: cmdtest.WantStdout("secret/nonce-lone\n")},
		{Name: "-o name --dry-run", World: cmdtest.WorldPaired, Args: append(farm, "--remote-cluster-id", "lone", "-o", "name", "--dry-run"), DryRun: true,
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if !strings.HasPrefix(out, "# secret/nonce-lone (dry run)\n---\n") || !strings.Contains(out, "would create secret/nonce-lone") {
					t.Errorf("stdout %q: want the name as a comment, then the write", out)
				}
			}},
		{Name: "an unused nonce exists", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "lone"),
			Stdout: line("lone", "unchanged"), Stderr: []string{`An unused nonce for "lone" already exists`}},
		// Its expiry is kept: a --ttl given is said not applied, with the way to another expiry.
		{Name: "an unused nonce exists, --ttl given", World: cmdtest.WorldNonce, Args: append(farm, "--remote-cluster-id", "lone", "--ttl", "48h"),
			Stdout: line("lone", "unchanged"), Stderr: []string{"WARNING", "was kept, as it was", "not after the --ttl 2d given", "kubectl federate delete nonce --remote-cluster-id lone"}},
		// A provider never initialized takes --cluster-id as its ID.
		{Name: "a cluster never initialized, with --cluster-id", World: cmdtest.WorldBare, Args: []string{"create", "nonce", "--kubeconfig", "lone", "--remote-cluster-id", "edge", "--cluster-id", "lone"},
			Stdout: line("edge", "created"), Stderr: []string{"Cluster initialized", "Nonce ensured"},
			Sent: map[string]func(*testing.T, []string){"lone": func(t *testing.T, got []string) {
				cmdtest.InitWrites(t, got)
				n := 0
				for _, w := range got {
					if w == "create secrets" {
						n++
					}
				}
				if n != 2 {
					t.Errorf("lone was sent %d Secret creations, want the key's and the nonce's", n)
				}
			}}},
		{Name: "a cluster never initialized, no ID", World: cmdtest.WorldPaired, Args: []string{"create", "nonce", "--kubeconfig", "lone", "--remote-cluster-id", "edge"},
			Code: 1, Err: "this cluster is not initialized for kubectl federate, and no cluster ID was given to initialize it with"},
		{Name: "another ID than the cluster's", World: cmdtest.WorldPaired, Args: append(farm, "--remote-cluster-id", "lone", "--cluster-id", "other"),
			Code: 1, Err: `--cluster-id: cluster ID "other": this cluster is initialized with cluster ID "farm"`},
		{Name: "a TTL under the minimum", World: cmdtest.WorldPaired, Args: append(farm, "--remote-cluster-id", "lone", "--ttl", "10s"),
			Code: 1, Usage: true, Err: `invalid argument "10s" for "--ttl" flag: 10s is out of range: must be from 1m to 7d`},
		{Name: "an ID that is no DNS label", World: cmdtest.WorldPaired, Args: append(farm, "--remote-cluster-id", "Bad"),
			Code: 1, Usage: true, Err: `--remote-cluster-id "Bad": must be a DNS label`},
		{Name: "no consumer named", World: cmdtest.WorldPaired, Args: farm,
			Code: 1, Usage: true, Err: `required flag(s) "remote-cluster-id" not set`},
	})
}

// create resourceslice records a slice request on the consumer and leaves it on the provider through
// the pairing (or, with the provider's kubeconfig too, has it accepted and imported at once); a provider
// this cluster is not paired with is refused with nothing written.
func TestCommandTableCreateResourceSlice(t *testing.T) {
	create := func(name string, more ...string) []string {
		return append([]string{"create", "resourceslice", name, "--kubeconfig", "edge", "--cpu", "1", "--memory", "1Gi"}, more...)
	}
	// The slice's key waiting on edge, its record there, the request on farm.
	asked := map[string][]string{"edge": {"create secrets", "patch resourceslices", "patch resourceslices"}, "farm": {"create resourceslices"}}
	sliceObject := func(t *testing.T, obj map[string]any) {
		t.Helper()
		cmdtest.WantFields(t, obj, map[string]string{"apiVersion": "federate.dev/v1alpha1", "kind": "ResourceSlice", "metadata.name": "batch", "metadata.namespace": "federate-tenant-edge",
			"spec.clusterID": "edge", "spec.providerClusterID": "farm", "spec.slice": "batch", "spec.resources.cpu": "1", "spec.resources.memory": "1Gi"})
		if s, _ := cmdtest.FieldAt(obj, "spec.signature").(string); s == "" {
			t.Errorf("the request is not signed")
		}
	}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "a slice", World: cmdtest.WorldPaired, Args: create("batch", "--remote-cluster-id", "farm"),
			Stdout: cmdtest.WantStdout(""), Stderr: []string{"ResourceSlice batch submitted to the provider", `kubectl federate accept resourceslice batch --remote-cluster-id edge`},
			Writes: asked},
		{Name: "-o json", World: cmdtest.WorldPaired, Args: create("batch", "--remote-cluster-id", "farm", "-o", "json"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) { sliceObject(t, cmdtest.JSONObject(t, out)) }, Writes: asked},
		// --submit=false: recorded and printed for the provider's administrator, nothing sent to farm.
		{Name: "--submit=false -o yaml", World: cmdtest.WorldPaired, Args: create("batch", "--remote-cluster-id", "farm", "--submit=false", "-o", "yaml"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) { sliceObject(t, cmdtest.YAMLObject(t, out)) },
			Wrote:  map[string][]string{"edge": {"create secrets"}}},
		{Name: "with the provider's kubeconfig: all at once", World: cmdtest.WorldPaired, Args: create("batch", "--remote-kubeconfig", "farm"),
			Stdout: cmdtest.WantStdout(""), Stderr: []string{"(remote) Slice certificate issued", "(local) Identity federate-system/resource-farm.batch recorded", "Resource slice batch granted cpu=1,ephemeral-storage=2Gi,memory=1Gi,pods=4 in fs-edge-batch-"},
			Wrote: map[string][]string{
				"edge": {"create secrets", "patch resourceslices", "patch identities"},
				"farm": {"create certificatesigningrequests", "create namespaces", "patch rolebindings"},
			}},
		{Name: "a provider this cluster is not paired with", World: cmdtest.WorldPaired, Args: create("batch", "--remote-cluster-id", "lone"),
			Code: 1, Err: `this cluster is not paired with provider "lone" (no Secret federate-system/kubeconfig-controlplane-lone): authenticate first`},
		{Name: "a CPU that is no quantity", World: cmdtest.WorldPaired, Args: []string{"create", "resourceslice", "batch", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--cpu", "x", "--memory", "1Gi"},
			Code: 1, Usage: true, Err: `--cpu "x": is not a quantity`},
		{Name: "no CPU", World: cmdtest.WorldPaired, Args: []string{"create", "resourceslice", "batch", "--kubeconfig", "edge", "--remote-cluster-id", "farm"},
			Code: 1, Usage: true, Err: "--cpu: is required"},
		{Name: "no name", World: cmdtest.WorldPaired, Args: []string{"create", "resourceslice", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--cpu", "1", "--memory", "1Gi"},
			Code: 1, Usage: true, Err: "NAME: exactly 1 argument(s) required, got 0"},
	})
}

// create resourceslice-class applies a class on the provider, as kubectl says it: created, then configured
// when it changes, unchanged when it does not; bad maxima and policies are refused with nothing written.
func TestCommandTableCreateResourceSliceClass(t *testing.T) {
	class := func(more ...string) []string {
		return append([]string{"create", "resourceslice-class", "--kubeconfig", "farm"}, more...)
	}
	applied := map[string][]string{"farm": {"patch resourcesliceclasses"}}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "a class", World: cmdtest.WorldPaired, Args: class("small", "--max-cpu", "4", "--max-memory", "8Gi", "--auto-accept"),
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				if out != "resourcesliceclass/small created\n" {
					t.Errorf("stdout %q", out)
				}
				// What was stored is what -o yaml prints on the next run, which changes nothing.
				obj := cmdtest.YAMLObject(t, e.Must(t, class("small", "--max-cpu", "4", "--max-memory", "8Gi", "--auto-accept", "-o", "yaml")...).Stdout)
				cmdtest.WantFields(t, obj, map[string]string{"spec.max.cpu": "4", "spec.max.memory": "8Gi", "spec.autoAccept": "true"})
				if r := e.Must(t, class("small", "--max-cpu", "4", "--max-memory", "8Gi", "--auto-accept")...); r.Stdout != "resourcesliceclass/small unchanged\n" {
					t.Errorf("again: %q", r.Stdout)
				}
				if r := e.Must(t, class("small", "--max-cpu", "2", "--max-memory", "8Gi", "--auto-accept")...); r.Stdout != "resourcesliceclass/small configured\n" {
					t.Errorf("changed: %q", r.Stdout)
				}
			},
			Writes: map[string][]string{"farm": {"patch resourcesliceclasses", "patch resourcesliceclasses"}}},
		{Name: "-o yaml", World: cmdtest.WorldPaired, Args: class("small", "--max-cpu", "2", "--over-max", "deny", "-o", "yaml"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				cmdtest.WantFields(t, cmdtest.YAMLObject(t, out), map[string]string{"apiVersion": "federate.dev/v1alpha1", "kind": "ResourceSliceClass", "metadata.name": "small",
					"spec.max.cpu": "2", "spec.overMax": "Deny", "spec.clusterRole": "federate-tenant", "spec.podSecurity": "restricted"})
			}, Writes: applied},
		{Name: "-o json", World: cmdtest.WorldPaired, Args: class("gpu", "--pod-security", "baseline", "-o", "json"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				cmdtest.WantFields(t, cmdtest.JSONObject(t, out), map[string]string{"kind": "ResourceSliceClass", "metadata.name": "gpu", "spec.podSecurity": "baseline", "spec.overMax": "Clamp", "spec.max": "<absent>"})
			}, Writes: applied},
		{Name: "a quota a slice's namespace has not", World: cmdtest.WorldPaired, Args: class("x", "--max-quota", "foo=1"),
			Code: 1, Usage: true, Err: "--max-quota foo: is not a slice resource (cpu, memory, pods, ephemeral-storage) nor a quota a slice's namespace has"},
		{Name: "a maximum that is no quantity", World: cmdtest.WorldPaired, Args: class("x", "--max-cpu", "lots"),
			Code: 1, Usage: true, Err: `--max-cpu "lots": is not a quantity`},
		{Name: "an unknown --over-max", World: cmdtest.WorldPaired, Args: class("x", "--over-max", "maybe"),
			Code: 1, Usage: true, Err: `invalid argument "maybe" for "--over-max" flag: must be one of clamp, deny`},
		{Name: "a name that is no DNS label", World: cmdtest.WorldPaired, Args: class("Bad"),
			Code: 1, Usage: true, Err: `NAME "Bad": must be a DNS label`},
	})
}

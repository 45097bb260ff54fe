package cmd_test

import (
	"regexp"
	"testing"
)

// create nonce makes one unused nonce for a consumer (kept while unused), initializing the provider only
// with the --cluster-id it is given; its ID must match an initialized cluster's.
func TestCommandTableCreateNonce(t *testing.T) {
	farm := []string{"create", "nonce", "--kubeconfig", "farm"}
	line := func(consumer, verb string) func(t *testing.T, _ *tableEnv, out string) {
		re := regexp.MustCompile(`^nonce/` + consumer + ` ` + verb + ` \(expires \d{4}-\d\d-\d\dT\S+Z\)\n$`)
		return func(t *testing.T, _ *tableEnv, out string) {
			t.Helper()
			if !re.MatchString(out) {
				t.Errorf("stdout %q, want %s", out, re)
			}
		}
	}
	runTable(t, []tableRow{
		{name: "a nonce", world: worldPaired, args: append(farm, "--remote-cluster-id", "lone"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				line("lone", "created")(t, e, out)
				e.must(t, "get", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone")
			},
			stderr: []string{"Nonce ensured"}, writes: map[string][]string{"farm": {"create secrets"}}},
		{name: "an unused nonce exists", world: worldNonce, args: append(farm, "--remote-cluster-id", "lone"),
			stdout: line("lone", "unchanged"), stderr: []string{`An unused nonce for "lone" already exists`}},
		// A provider never initialized takes --cluster-id as its ID.
		{name: "a cluster never initialized, with --cluster-id", world: worldBare, args: []string{"create", "nonce", "--kubeconfig", "lone", "--remote-cluster-id", "edge", "--cluster-id", "lone"},
			stdout: line("edge", "created"), stderr: []string{"Cluster initialized", "Nonce ensured"},
			sent: map[string]func(*testing.T, []string){"lone": func(t *testing.T, got []string) {
				initWrites(t, got)
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
		{name: "a cluster never initialized, no ID", world: worldPaired, args: []string{"create", "nonce", "--kubeconfig", "lone", "--remote-cluster-id", "edge"},
			code: 1, err: "this cluster is not initialized for kubectl federate, and no cluster ID was given to initialize it with"},
		{name: "another ID than the cluster's", world: worldPaired, args: append(farm, "--remote-cluster-id", "lone", "--cluster-id", "other"),
			code: 1, err: `--cluster-id: cluster ID "other": this cluster is initialized with cluster ID "farm"`},
		{name: "a TTL under the minimum", world: worldPaired, args: append(farm, "--remote-cluster-id", "lone", "--ttl", "10s"),
			code: 1, usage: true, err: `invalid argument "10s" for "--ttl" flag: 10s is out of range: must be from 1m to 7d`},
		{name: "an ID that is no DNS label", world: worldPaired, args: append(farm, "--remote-cluster-id", "Bad"),
			code: 1, usage: true, err: `--remote-cluster-id "Bad": must be a DNS label`},
		{name: "no consumer named", world: worldPaired, args: farm,
			code: 1, usage: true, err: `required flag(s) "remote-cluster-id" not set`},
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
		wantFields(t, obj, map[string]string{"apiVersion": "federate.dev/v1alpha1", "kind": "ResourceSlice", "metadata.name": "batch", "metadata.namespace": "federate-tenant-edge",
			"spec.clusterID": "edge", "spec.providerClusterID": "farm", "spec.slice": "batch", "spec.resources.cpu": "1", "spec.resources.memory": "1Gi"})
		if s, _ := fieldAt(obj, "spec.signature").(string); s == "" {
			t.Errorf("the request is not signed")
		}
	}
	runTable(t, []tableRow{
		{name: "a slice", world: worldPaired, args: create("batch", "--remote-cluster-id", "farm"),
			stdout: wantStdout(""), stderr: []string{"ResourceSlice batch submitted to the provider", `kubectl federate accept resourceslice batch --remote-cluster-id edge`},
			writes: asked},
		{name: "-o json", world: worldPaired, args: create("batch", "--remote-cluster-id", "farm", "-o", "json"),
			stdout: func(t *testing.T, _ *tableEnv, out string) { sliceObject(t, jsonObject(t, out)) }, writes: asked},
		// --submit=false: recorded and printed for the provider's administrator, nothing sent to farm.
		{name: "--submit=false -o yaml", world: worldPaired, args: create("batch", "--remote-cluster-id", "farm", "--submit=false", "-o", "yaml"),
			stdout: func(t *testing.T, _ *tableEnv, out string) { sliceObject(t, yamlObject(t, out)) },
			wrote:  map[string][]string{"edge": {"create secrets"}}},
		{name: "with the provider's kubeconfig: all at once", world: worldPaired, args: create("batch", "--remote-kubeconfig", "farm"),
			stdout: wantStdout(""), stderr: []string{"(remote) Slice certificate issued", "(local) Identity federate-system/resource-farm.batch recorded", "Resource slice batch granted cpu=1,ephemeral-storage=2Gi,memory=1Gi,pods=4 in fs-edge-batch-"},
			wrote: map[string][]string{
				"edge": {"create secrets", "patch resourceslices", "patch identities"},
				"farm": {"create certificatesigningrequests", "create namespaces", "patch rolebindings"},
			}},
		{name: "a provider this cluster is not paired with", world: worldPaired, args: create("batch", "--remote-cluster-id", "lone"),
			code: 1, err: `this cluster is not paired with provider "lone" (no Secret federate-system/kubeconfig-controlplane-lone): authenticate first`},
		{name: "a CPU that is no quantity", world: worldPaired, args: []string{"create", "resourceslice", "batch", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--cpu", "x", "--memory", "1Gi"},
			code: 1, usage: true, err: `--cpu "x": is not a quantity`},
		{name: "no CPU", world: worldPaired, args: []string{"create", "resourceslice", "batch", "--kubeconfig", "edge", "--remote-cluster-id", "farm"},
			code: 1, usage: true, err: "--cpu: is required"},
		{name: "no name", world: worldPaired, args: []string{"create", "resourceslice", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--cpu", "1", "--memory", "1Gi"},
			code: 1, usage: true, err: "NAME: exactly 1 argument(s) required, got 0"},
	})
}

// create resourceslice-class applies a class on the provider (an apply: always "configured"); bad
// maxima and policies are refused with nothing written.
func TestCommandTableCreateResourceSliceClass(t *testing.T) {
	class := func(more ...string) []string {
		return append([]string{"create", "resourceslice-class", "--kubeconfig", "farm"}, more...)
	}
	applied := map[string][]string{"farm": {"patch resourcesliceclasses"}}
	runTable(t, []tableRow{
		{name: "a class", world: worldPaired, args: class("small", "--max-cpu", "4", "--max-memory", "8Gi", "--auto-accept"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				if out != "resourcesliceclass/small configured\n" {
					t.Errorf("stdout %q", out)
				}
				// What was stored is what -o yaml prints on the next run.
				obj := yamlObject(t, e.must(t, class("small", "--max-cpu", "4", "--max-memory", "8Gi", "--auto-accept", "-o", "yaml")...).Stdout)
				wantFields(t, obj, map[string]string{"spec.max.cpu": "4", "spec.max.memory": "8Gi", "spec.autoAccept": "true"})
			},
			writes: map[string][]string{"farm": {"patch resourcesliceclasses", "patch resourcesliceclasses"}}},
		{name: "-o yaml", world: worldPaired, args: class("small", "--max-cpu", "2", "--over-max", "deny", "-o", "yaml"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				wantFields(t, yamlObject(t, out), map[string]string{"apiVersion": "federate.dev/v1alpha1", "kind": "ResourceSliceClass", "metadata.name": "small",
					"spec.max.cpu": "2", "spec.overMax": "Deny", "spec.clusterRole": "federate-tenant", "spec.podSecurity": "restricted"})
			}, writes: applied},
		{name: "-o json", world: worldPaired, args: class("gpu", "--pod-security", "baseline", "-o", "json"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				wantFields(t, jsonObject(t, out), map[string]string{"kind": "ResourceSliceClass", "metadata.name": "gpu", "spec.podSecurity": "baseline", "spec.overMax": "Clamp", "spec.max": "<absent>"})
			}, writes: applied},
		{name: "a quota a slice's namespace has not", world: worldPaired, args: class("x", "--max-quota", "foo=1"),
			code: 1, usage: true, err: "--max-quota foo: is not a slice resource (cpu, memory, pods, ephemeral-storage) nor a quota a slice's namespace has"},
		{name: "a maximum that is no quantity", world: worldPaired, args: class("x", "--max-cpu", "lots"),
			code: 1, usage: true, err: `--max-cpu "lots": is not a quantity`},
		{name: "an unknown --over-max", world: worldPaired, args: class("x", "--over-max", "maybe"),
			code: 1, usage: true, err: `invalid argument "maybe" for "--over-max" flag: must be one of clamp, deny`},
		{name: "a name that is no DNS label", world: worldPaired, args: class("Bad"),
			code: 1, usage: true, err: `NAME "Bad": must be a DNS label`},
	})
}

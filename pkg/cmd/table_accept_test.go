package cmd_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// accept resourceslice lists the slices to answer, grants one (a sandbox, a certificate, the class's role
// bound there, the grant recorded in the slice's status), or every pending one of an auto-accept class;
// a slice never asked for is refused with nothing written.
func TestCommandTableAccept(t *testing.T) {
	accept := func(more ...string) []string {
		return append([]string{"accept", "resourceslice", "--kubeconfig", "farm"}, more...)
	}
	acceptedLine := func(name, granted string) func(t *testing.T, _ *tableEnv, out string) {
		line := regexp.MustCompile(`^resourceslice/` + name + ` accepted: ` + regexp.QuoteMeta(granted) + ` in namespace fs-edge-` + name + `-[0-9a-f]{8} for edge\n$`)
		return func(t *testing.T, _ *tableEnv, out string) {
			t.Helper()
			if !line.MatchString(out) {
				t.Errorf("stdout %q, want %s", out, line)
			}
		}
	}
	// A grant: the slice's certificate issued, its sandbox made, the class's role bound there, and the
	// grant recorded in the slice's status; nothing on the consumer.
	granted := map[string][]string{"farm": {"create certificatesigningrequests", "create namespaces", "patch rolebindings", "patch resourceslices"}}
	sliceObject := func(cpu string) func(t *testing.T, obj map[string]any) {
		return func(t *testing.T, obj map[string]any) {
			t.Helper()
			wantFields(t, obj, map[string]string{"kind": "ResourceSlice", "apiVersion": "federate.dev/v1alpha1", "metadata.name": "batch",
				"metadata.namespace": "federate-tenant-edge", "spec.clusterID": "edge", "spec.providerClusterID": "farm", "status.phase": "Accepted",
				"status.class": "default", "status.granted.cpu": cpu, "status.granted.memory": "1Gi", "status.credential": "Certificate"})
			if ns, _ := fieldAt(obj, "status.namespace").(string); !strings.HasPrefix(ns, "fs-edge-batch-") {
				t.Errorf("status.namespace %q, want the slice's sandbox", ns)
			}
			if u, _ := fieldAt(obj, "status.user").(string); !strings.HasPrefix(u, "kubectl-federate:edge:slice-batch:") {
				t.Errorf("status.user %q, want the slice's own user", u)
			}
		}
	}
	accepted := newWorld(func(t *testing.T) *tableEnv {
		e := tablePendingSlice(t)
		e.must(t, "accept", "resourceslice", "batch", "--kubeconfig", "farm", "--remote-cluster-id", "edge")
		return e
	})
	autoAccept := newWorld(func(t *testing.T) *tableEnv {
		e := tablePendingSlice(t)
		e.must(t, "create", "resourceslice-class", "auto", "--auto-accept", "--kubeconfig", "farm")
		e.must(t, "create", "resourceslice", "cron", "--class", "auto", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--cpu", "1", "--memory", "1Gi")
		return e
	})
	// handedOver is tablePaired with the slice batch recorded on edge and not submitted: its request is
	// a file ({file}, its -o yaml) the provider's administrator is handed.
	handedOver := newWorld(func(t *testing.T) *tableEnv {
		e := tablePaired(t)
		r := e.must(t, "create", "resourceslice", "batch", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--cpu", "1", "--memory", "1Gi", "--submit=false", "-o", "yaml")
		e.vars["file"] = tableFile(t, "slice.yaml", r.Stdout)
		return e
	})
	runTable(t, []tableRow{
		{name: "the slices to answer", world: worldPendingSlice, args: accept("--remote-cluster-id", "edge"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				rows := tableOf(t, out, "CONSUMER", "PROVIDER", "NAME", "CLASS", "PHASE", "REQUESTED", "GRANTED", "NAMESPACE", "AUTO-ACCEPT", "EXPIRES")
				if len(rows) != 1 {
					t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
				}
				wantRow(t, rows[0], map[string]string{"CONSUMER": "edge", "NAME": "batch", "PHASE": "Pending", "REQUESTED": "cpu=1,memory=1Gi", "GRANTED": "-"})
			}},
		{name: "the slices to answer, -o json", world: autoAccept, args: accept("-o", "json"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				list := jsonObject(t, out)
				if names := listNames(t, list); !slices.Equal(names, []string{"batch", "cron"}) {
					t.Fatalf("items %v, want [batch cron]", names)
				}
				wantFields(t, list, map[string]string{"items.0.kind": "ResourceSliceInfo", "items.0.status.phase": "Pending", "items.0.status.autoAccept": "<absent>",
					"items.1.status.class": "auto", "items.1.status.autoAccept": "true"})
			}},
		{name: "a slice", world: worldPendingSlice, args: accept("batch", "--remote-cluster-id", "edge"),
			stdout: acceptedLine("batch", "cpu=1,ephemeral-storage=2Gi,memory=1Gi,pods=4"),
			stderr: []string{"ResourceSlice batch verified (pinned key, signature, CSR)", "Slice certificate issued"}, wrote: granted},
		// --cpu lowers the grant, never raises it; the ResourceSlice printed is what the consumer imports.
		{name: "a slice with less CPU, -o json", world: worldPendingSlice, args: accept("batch", "--remote-cluster-id", "edge", "--cpu", "500m", "-o", "json"),
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				obj := jsonObject(t, out)
				sliceObject("500m")(t, obj)
				wantFields(t, obj, map[string]string{"status.reason": "cpu lowered from 1 to 500m by the provider"})
			},
			stderr: []string{"WARNING Resource slice batch: cpu lowered from 1 to 500m by the provider"}, wrote: granted},
		{name: "a slice, -o yaml", world: worldPendingSlice, args: accept("batch", "--remote-cluster-id", "edge", "-o", "yaml"),
			stdout: func(t *testing.T, _ *tableEnv, out string) { sliceObject("1")(t, yamlObject(t, out)) }, wrote: granted},
		// Accepting again keeps the credential: no new certificate, the rest converges.
		{name: "a slice accepted before", world: accepted, args: accept("batch", "--remote-cluster-id", "edge"),
			stdout: acceptedLine("batch", "cpu=1,ephemeral-storage=2Gi,memory=1Gi,pods=4"),
			stderr: []string{"Resource slice batch was already granted for this request: its credential is kept"},
			sent: map[string]func(*testing.T, []string){"farm": func(t *testing.T, got []string) {
				if slices.Contains(got, "create certificatesigningrequests") || slices.Contains(got, "create namespaces") {
					t.Errorf("farm was sent %v: a second certificate or namespace", got)
				}
			}}},
		{name: "a slice handed over as a file", world: handedOver, args: accept("batch", "--remote-cluster-id", "edge", "-f", "{file}", "-o", "yaml"),
			stdout: func(t *testing.T, _ *tableEnv, out string) { sliceObject("1")(t, yamlObject(t, out)) },
			wrote:  map[string][]string{"farm": {"create certificatesigningrequests", "create namespaces", "patch rolebindings"}}},
		{name: "--pending with an auto-accept class", world: autoAccept, args: accept("--pending"),
			stdout: acceptedLine("cron", "cpu=1,ephemeral-storage=2Gi,memory=1Gi,pods=4"), wrote: granted},
		{name: "--pending with none of an auto-accept class", world: worldPendingSlice, args: accept("--pending"),
			stdout: wantStdout(""), stderr: []string{"No pending slice of an auto-accept class"}},
		{name: "a slice the consumer never asked for", world: worldPendingSlice, args: accept("nope", "--remote-cluster-id", "edge"),
			code: 1, err: `consumer "edge" has left no ResourceSlice "nope" in federate-tenant-edge`, stderr: []string{"kubectl federate create resourceslice nope"}},
		{name: "a slice of a consumer never paired", world: worldPendingSlice, args: accept("batch", "--remote-cluster-id", "lone"),
			code: 1, err: `consumer "lone" has no active identity on this provider (no Tenant federate-tenant-lone/lone)`},
		{name: "a file of another kind", world: worldRulesPaths, args: accept("batch", "--remote-cluster-id", "edge", "-f", "{rules}"),
			code: 1, err: "rules.yaml: is a ClusterGatewayConfiguration, not a ResourceSlice"},
		{name: "a name without the consumer", world: worldPendingSlice, args: accept("batch"),
			code: 1, usage: true, err: "--remote-cluster-id: is required with NAME"},
		{name: "--pending with a name", world: worldPendingSlice, args: accept("batch", "--pending"),
			code: 1, usage: true, err: "--pending: accepts every pending slice, so it takes no NAME"},
		{name: "a grant without a name", world: worldPendingSlice, args: accept("--cpu", "1"),
			code: 1, usage: true, err: "NAME: is required with -f or a grant"},
		{name: "a grant of nothing", world: worldPendingSlice, args: accept("batch", "--remote-cluster-id", "edge", "--memory", "0"),
			code: 1, usage: true, err: "--memory 0: must be positive"},
		{name: "two names", world: worldPendingSlice, args: accept("batch", "cron", "--remote-cluster-id", "edge"),
			code: 1, usage: true, err: "NAME: at most 1 argument(s) accepted, got 2"},
		{name: "a name that is no DNS label", world: worldPendingSlice, args: accept("Batch", "--remote-cluster-id", "edge"),
			code: 1, usage: true, err: `NAME "Batch": must be a DNS label`},
	})
}

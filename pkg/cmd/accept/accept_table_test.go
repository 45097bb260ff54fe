package accept_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// accept resourceslice lists the slices to answer, grants one (a sandbox, a certificate, the class's role
// bound there, the grant recorded in the slice's status), or every pending one of an auto-accept class;
// a slice never asked for is refused with nothing written.
func TestCommandTableAccept(t *testing.T) {
	accept := func(more ...string) []string {
		return append([]string{"accept", "resourceslice", "--kubeconfig", "farm"}, more...)
	}
	acceptedLine := func(name, granted string) func(t *testing.T, _ *cmdtest.Env, out string) {
		line := regexp.MustCompile(`^resourceslice/` + name + ` accepted: ` + regexp.QuoteMeta(granted) + ` in namespace fs-edge-` + name + `-[0-9a-f]{8} for edge\n$`)
		return func(t *testing.T, _ *cmdtest.Env, out string) {
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
			cmdtest.WantFields(t, obj, map[string]string{"kind": "ResourceSlice", "apiVersion": "federate.dev/v1alpha1", "metadata.name": "batch",
				"metadata.namespace": "federate-tenant-edge", "spec.clusterID": "edge", "spec.providerClusterID": "farm", "status.phase": "Accepted",
				"status.class": "default", "status.granted.cpu": cpu, "status.granted.memory": "1Gi", "status.credential": "Certificate"})
			if ns, _ := cmdtest.FieldAt(obj, "status.namespace").(string); !strings.HasPrefix(ns, "fs-edge-batch-") {
				t.Errorf("status.namespace %q, want the slice's sandbox", ns)
			}
			if u, _ := cmdtest.FieldAt(obj, "status.user").(string); !strings.HasPrefix(u, "kubectl-federate:edge:slice-batch:") {
				t.Errorf("status.user %q, want the slice's own user", u)
			}
		}
	}
	accepted := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.PendingSlice(t)
		e.Must(t, "accept", "resourceslice", "batch", "--kubeconfig", "farm", "--remote-cluster-id", "edge")
		return e
	})
	autoAccept := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.PendingSlice(t)
		e.Must(t, "create", "resourceslice-class", "auto", "--auto-accept", "--kubeconfig", "farm")
		e.Must(t, "create", "resourceslice", "cron", "--class", "auto", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--cpu", "1", "--memory", "1Gi")
		return e
	})
	// handedOver is cmdtest.Paired with the slice batch recorded on edge and not submitted: its request is
	// a file ({file}, its -o yaml) the provider's administrator is handed.
	handedOver := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		r := e.Must(t, "create", "resourceslice", "batch", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--cpu", "1", "--memory", "1Gi", "--submit=false", "-o", "yaml")
		e.Vars["file"] = cmdtest.File(t, "slice.yaml", r.Stdout)
		return e
	})
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "the slices to answer", World: cmdtest.WorldPendingSlice, Args: accept("--remote-cluster-id", "edge"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				rows := cmdtest.TableOf(t, out, "CONSUMER", "PROVIDER", "NAME", "CLASS", "PHASE", "REQUESTED", "GRANTED", "NAMESPACE", "AUTO-ACCEPT", "EXPIRES")
				if len(rows) != 1 {
					t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
				}
				cmdtest.WantRow(t, rows[0], map[string]string{"CONSUMER": "edge", "NAME": "batch", "PHASE": "Pending", "REQUESTED": "cpu=1,memory=1Gi", "GRANTED": "-"})
			}},
		{Name: "the slices to answer, -o json", World: autoAccept, Args: accept("-o", "json"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				list := cmdtest.JSONObject(t, out)
				if names := cmdtest.ListNames(t, list); !slices.Equal(names, []string{"batch", "cron"}) {
					t.Fatalf("items %v, want [batch cron]", names)
				}
				cmdtest.WantFields(t, list, map[string]string{"items.0.kind": "ResourceSliceInfo", "items.0.status.phase": "Pending", "items.0.status.autoAccept": "<absent>",
					"items.1.status.class": "auto", "items.1.status.autoAccept": "true"})
			}},
		{Name: "a slice", World: cmdtest.WorldPendingSlice, Args: accept("batch", "--remote-cluster-id", "edge"),
			Stdout: acceptedLine("batch", "cpu=1,ephemeral-storage=2Gi,memory=1Gi,pods=4"),
			Stderr: []string{"ResourceSlice batch verified (pinned key, signature, CSR)", "Slice certificate issued"}, Wrote: granted},
		// --cpu lowers the grant, never raises it; the ResourceSlice printed is what the consumer imports.
		{Name: "a slice with less CPU, -o json", World: cmdtest.WorldPendingSlice, Args: accept("batch", "--remote-cluster-id", "edge", "--cpu", "500m", "-o", "json"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				obj := cmdtest.JSONObject(t, out)
				sliceObject("500m")(t, obj)
				cmdtest.WantFields(t, obj, map[string]string{"status.reason": "cpu lowered from 1 to 500m by the provider"})
			},
			Stderr: []string{"WARNING Resource slice batch: cpu lowered from 1 to 500m by the provider"}, Wrote: granted},
		{Name: "a slice, -o yaml", World: cmdtest.WorldPendingSlice, Args: accept("batch", "--remote-cluster-id", "edge", "-o", "yaml"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) { sliceObject("1")(t, cmdtest.YAMLObject(t, out)) }, Wrote: granted},
		// Accepting again keeps the credential: no new certificate, the rest converges.
		{Name: "a slice accepted before", World: accepted, Args: accept("batch", "--remote-cluster-id", "edge"),
			Stdout: acceptedLine("batch", "cpu=1,ephemeral-storage=2Gi,memory=1Gi,pods=4"),
			Stderr: []string{"Resource slice batch was already granted for this request: its credential is kept"},
			Sent: map[string]func(*testing.T, []string){"farm": func(t *testing.T, got []string) {
				if slices.Contains(got, "create certificatesigningrequests") || slices.Contains(got, "create namespaces") {
					t.Errorf("farm was sent %v: a second certificate or namespace", got)
				}
			}}},
		{Name: "a slice handed over as a file", World: handedOver, Args: accept("batch", "--remote-cluster-id", "edge", "-f", "{file}", "-o", "yaml"),
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) { sliceObject("1")(t, cmdtest.YAMLObject(t, out)) },
			Wrote:  map[string][]string{"farm": {"create certificatesigningrequests", "create namespaces", "patch rolebindings"}}},
		{Name: "--pending with an auto-accept class", World: autoAccept, Args: accept("--pending"),
			Stdout: acceptedLine("cron", "cpu=1,ephemeral-storage=2Gi,memory=1Gi,pods=4"), Wrote: granted},
		{Name: "--pending with none of an auto-accept class", World: cmdtest.WorldPendingSlice, Args: accept("--pending"),
			Stdout: cmdtest.WantStdout(""), Stderr: []string{"No pending slice of an auto-accept class"}},
		{Name: "a slice the consumer never asked for", World: cmdtest.WorldPendingSlice, Args: accept("nope", "--remote-cluster-id", "edge"),
			Code: 1, Err: `consumer "edge" has left no ResourceSlice "nope" in federate-tenant-edge`, Stderr: []string{"kubectl federate create resourceslice nope"}},
		{Name: "a slice of a consumer never paired", World: cmdtest.WorldPendingSlice, Args: accept("batch", "--remote-cluster-id", "lone"),
			Code: 1, Err: `consumer "lone" has no active identity on this provider (no Tenant federate-tenant-lone/lone)`},
		{Name: "a file of another kind", World: cmdtest.WorldRulesPaths, Args: accept("batch", "--remote-cluster-id", "edge", "-f", "{rules}"),
			Code: 1, Err: "rules.yaml: is a ClusterGatewayConfiguration, not a ResourceSlice"},
		{Name: "a name without the consumer", World: cmdtest.WorldPendingSlice, Args: accept("batch"),
			Code: 1, Usage: true, Err: "--remote-cluster-id: is required with NAME"},
		{Name: "--pending with a name", World: cmdtest.WorldPendingSlice, Args: accept("batch", "--pending"),
			Code: 1, Usage: true, Err: "--pending: accepts every pending slice, so it takes no NAME"},
		{Name: "a grant without a name", World: cmdtest.WorldPendingSlice, Args: accept("--cpu", "1"),
			Code: 1, Usage: true, Err: "NAME: is required with -f or a grant"},
		{Name: "a grant of nothing", World: cmdtest.WorldPendingSlice, Args: accept("batch", "--remote-cluster-id", "edge", "--memory", "0"),
			Code: 1, Usage: true, Err: "--memory 0: must be positive"},
		{Name: "two names", World: cmdtest.WorldPendingSlice, Args: accept("batch", "cron", "--remote-cluster-id", "edge"),
			Code: 1, Usage: true, Err: "NAME: at most 1 argument(s) accepted, got 2"},
		{Name: "a name that is no DNS label", World: cmdtest.WorldPendingSlice, Args: accept("Batch", "--remote-cluster-id", "edge"),
			Code: 1, Usage: true, Err: `NAME "Batch": must be a DNS label`},
	})
}

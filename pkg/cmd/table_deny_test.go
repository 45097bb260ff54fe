package cmd_test

import (
	"testing"
)

// deny resourceslice answers a consumer's pending slice with a refusal and its reason (again: the
// answer is rewritten); a slice already granted is not denied; one never asked for is NotFound.
func TestCommandTableDenyResourceSlice(t *testing.T) {
	deny := func(more ...string) []string {
		return append([]string{"deny", "resourceslice", "--kubeconfig", "farm"}, more...)
	}
	accepted := newWorld(func(t *testing.T) *tableEnv {
		e := tablePendingSlice(t)
		e.must(t, "accept", "resourceslice", "batch", "--kubeconfig", "farm", "--remote-cluster-id", "edge")
		return e
	})
	runTable(t, []tableRow{
		// The decision in the provider's ledger, then the slice's status; nothing created, nothing on edge.
		{name: "a pending slice", world: worldPendingSlice, args: deny("batch", "--remote-cluster-id", "edge", "--reason", "no capacity"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				wantStdout("resourceslice/batch denied\n")(t, e, out)
				list := jsonObject(t, e.must(t, "get", "resourceslices", "--kubeconfig", "farm", "-o", "json").Stdout)
				wantFields(t, list, map[string]string{"items.0.metadata.name": "batch", "items.0.status.phase": "Denied", "items.0.status.reason": "no capacity"})
			},
			stderr: []string{"ResourceSlice batch of edge denied"},
			writes: map[string][]string{"farm": {"create configmaps", "update configmaps", "patch resourceslices"}}},
		{name: "a slice already granted", world: accepted, args: deny("batch", "--remote-cluster-id", "edge", "--reason", "late"),
			code: 1, err: `resource slice "batch" of consumer "edge" is already granted: delete it to take its identity and namespace away`},
		{name: "a slice the consumer never asked for", world: worldPendingSlice, args: deny("nope", "--remote-cluster-id", "edge", "--reason", "x"),
			code: 1, err: `consumer "edge" has left no ResourceSlice "nope" in federate-tenant-edge`},
		{name: "a slice of another consumer", world: worldPendingSlice, args: deny("batch", "--remote-cluster-id", "lone", "--reason", "x"),
			code: 1, err: `consumer "lone" has left no ResourceSlice "batch" in federate-tenant-lone`},
		{name: "no reason", world: worldPendingSlice, args: deny("batch", "--remote-cluster-id", "edge"),
			code: 1, usage: true, err: `required flag(s) "reason" not set`},
		{name: "a name that is no DNS label", world: worldPendingSlice, args: deny("Batch", "--remote-cluster-id", "edge", "--reason", "x"),
			code: 1, usage: true, err: `NAME "Batch": must be a DNS label`},
	})
}

package cmd_test

import (
	"regexp"
	"strings"
	"testing"
)

// info shows a cluster's ID, its key's fingerprint, its tenants and its identities; it never writes; a
// cluster never initialized has none to show.
func TestCommandTableInfo(t *testing.T) {
	fingerprint := regexp.MustCompile(`^SHA256:[0-9a-f]{64}$`)
	runTable(t, []tableRow{
		{name: "the provider", world: worldPaired, args: []string{"info", "--kubeconfig", "farm"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				lines := strings.Split(out, "\n")
				if len(lines) < 9 || lines[0] != "Cluster ID:      farm" || !regexp.MustCompile(`^Handshake key:   SHA256:[0-9a-f]{64}$`).MatchString(lines[1]) ||
					lines[3] != "TENANTS (consumers of this cluster)" || !strings.Contains(out, "IDENTITIES (this cluster on providers)\n  none\n") {
					t.Fatalf("stdout:\n%s", out)
				}
				rows := tableOf(t, strings.TrimPrefix(lines[4], "  ")+"\n"+strings.TrimPrefix(lines[5], "  "), "CONSUMER", "NAMESPACE", "PHASE", "POD SECURITY", "QUOTA", "EXPIRES")
				wantRow(t, rows[0], map[string]string{"CONSUMER": "edge", "NAMESPACE": "federate-tenant-edge", "PHASE": "Active", "POD SECURITY": "restricted", "QUOTA": "cpu 4, memory 8Gi, pods 20"})
			}},
		{name: "the consumer, -o json", world: worldPaired, args: []string{"info", "--kubeconfig", "edge", "-o", "json"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				obj := jsonObject(t, out)
				wantFields(t, obj, map[string]string{"apiVersion": "federate.dev/v1alpha1", "kind": "ClusterInfo", "metadata.name": "edge", "status.clusterID": "edge",
					"status.tenants": "[]", "status.identities.0.providerID": "farm", "status.identities.0.type": "ControlPlane",
					"status.identities.0.apiServer": "https://farm.fake:6443", "status.identities.0.kubeconfigSecret": "kubeconfig-controlplane-farm"})
				if fp, _ := fieldAt(obj, "status.handshakeKeyFingerprint").(string); !fingerprint.MatchString(fp) {
					t.Errorf("handshakeKeyFingerprint %q", fp)
				}
			}},
		// -o yaml has the whole quota, not just its main amounts.
		{name: "the provider, -o yaml", world: worldPaired, args: []string{"info", "--kubeconfig", "farm", "-o", "yaml"},
			stdout: func(t *testing.T, _ *tableEnv, out string) {
				wantFields(t, yamlObject(t, out), map[string]string{"status.clusterID": "farm", "status.identities": "[]",
					"status.tenants.0.consumerID": "edge", "status.tenants.0.phase": "Active", "status.tenants.0.sandbox.podSecurity": "restricted",
					"status.tenants.0.sandbox.quota.requests\\.cpu": "4", "status.tenants.0.sandbox.quota.services\\.nodeports": "0"})
			}},
		{name: "a cluster never initialized", world: worldPaired, args: []string{"info", "--kubeconfig", "lone"},
			code: 1, err: "this cluster is not initialized for kubectl federate (no ConfigMap federate-system/federate-cluster); run kubectl federate init"},
		{name: "an unknown output format", world: worldPaired, args: []string{"info", "--kubeconfig", "farm", "-o", "xml"},
			code: 1, usage: true, err: `invalid argument "xml" for "-o, --output" flag`},
		{name: "a positional argument", world: worldPaired, args: []string{"info", "--kubeconfig", "farm", "edge"},
			code: 1, usage: true, err: `unknown command "edge" for "kubectl federate info"`},
	})
}

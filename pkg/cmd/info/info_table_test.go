package info_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// info shows a cluster's ID, its key's fingerprint, its tenants and its identities; it never writes; a
// cluster never initialized has none to show.
func TestCommandTableInfo(t *testing.T) {
	fingerprint := regexp.MustCompile(`^SHA256:[0-9a-f]{64}$`)
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "the provider", World: cmdtest.WorldPaired, Args: []string{"info", "--kubeconfig", "farm"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				lines := strings.Split(out, "\n")
				if len(lines) < 9 || lines[0] != "Cluster ID:      farm" || !regexp.MustCompile(`^Handshake key:   SHA256:[0-9a-f]{64}$`).MatchString(lines[1]) ||
					lines[3] != "TENANTS (consumers of this cluster)" || !strings.Contains(out, "IDENTITIES (this cluster on providers)\n  none\n") {
					t.Fatalf("stdout:\n%s", out)
				}
				rows := cmdtest.TableOf(t, strings.TrimPrefix(lines[4], "  ")+"\n"+strings.TrimPrefix(lines[5], "  "), "CONSUMER", "NAMESPACE", "PHASE", "POD SECURITY", "QUOTA", "EXPIRES")
				cmdtest.WantRow(t, rows[0], map[string]string{"CONSUMER": "edge", "NAMESPACE": "federate-tenant-edge", "PHASE": "Active", "POD SECURITY": "restricted", "QUOTA": "cpu 4, memory 8Gi, pods 20"})
			}},
		{Name: "the consumer, -o json", World: cmdtest.WorldPaired, Args: []string{"info", "--kubeconfig", "edge", "-o", "json"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				obj := cmdtest.JSONObject(t, out)
				cmdtest.WantFields(t, obj, map[string]string{"apiVersion": "federate.dev/v1alpha1", "kind": "ClusterInfo", "metadata.name": "edge", "status.clusterID": "edge",
					"status.tenants": "[]", "status.identities.0.providerID": "farm", "status.identities.0.type": "ControlPlane",
					"status.identities.0.apiServer": "https://farm.fake:6443", "status.identities.0.kubeconfigSecret": "kubeconfig-controlplane-farm"})
				if fp, _ := cmdtest.FieldAt(obj, "status.handshakeKeyFingerprint").(string); !fingerprint.MatchString(fp) {
					t.Errorf("handshakeKeyFingerprint %q", fp)
				}
			}},
		// -o yaml has the whole quota, not just its main amounts.
		{Name: "the provider, -o yaml", World: cmdtest.WorldPaired, Args: []string{"info", "--kubeconfig", "farm", "-o", "yaml"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				cmdtest.WantFields(t, cmdtest.YAMLObject(t, out), map[string]string{"status.clusterID": "farm", "status.identities": "[]",
					"status.tenants.0.consumerID": "edge", "status.tenants.0.phase": "Active", "status.tenants.0.sandbox.podSecurity": "restricted",
					"status.tenants.0.sandbox.quota.requests\\.cpu": "4", "status.tenants.0.sandbox.quota.services\\.nodeports": "0"})
			}},
		{Name: "a cluster never initialized", World: cmdtest.WorldPaired, Args: []string{"info", "--kubeconfig", "lone"},
			Code: 1, Err: "this cluster is not initialized for kubectl federate (no ConfigMap federate-system/federate-cluster); run kubectl federate init"},
		{Name: "an unknown output format", World: cmdtest.WorldPaired, Args: []string{"info", "--kubeconfig", "farm", "-o", "xml"},
			Code: 1, Usage: true, Err: `invalid argument "xml" for "-o, --output" flag`},
		{Name: "a positional argument", World: cmdtest.WorldPaired, Args: []string{"info", "--kubeconfig", "farm", "edge"},
			Code: 1, Usage: true, Err: `unknown command "edge" for "kubectl federate info"`},
	})
}

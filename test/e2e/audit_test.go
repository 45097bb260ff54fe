//go:build e2e

package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// Every grant and revocation is on the audit trail of the cluster where it happened (an import of a
// resource slice and a stored exchange credential on the consumer, a deleted slice and a revoked
// namespace on the provider), the trail lists cordon, uncordon and drain run within a second in the order
// they happened, and the provider sees the reason the consumer gave for a namespace.
func TestAuditTrailOfGrants(t *testing.T) {
	authenticate(t)
	defer unauthenticate(t)

	mustOn(t, consumer, "create", "resourceslice", "audited", "--remote-cluster-id", "provider", "--cpu", "100m", "--memory", "64Mi")
	mustOn(t, provider, "accept", "resourceslice", "audited", "--remote-cluster-id", "consumer")
	mustOn(t, consumer, "import", "resourceslice", "audited", "--remote-cluster-id", "provider")
	mustOn(t, provider, "delete", "resourceslice", "audited", "--remote-cluster-id", "consumer")

	mustOn(t, consumer, "request", "namespace", "consumer-audited", "--remote-cluster-id", "provider", "--reason", "audit \x1b[31mtrail")
	r := mustOn(t, provider, "grant", "namespace", "--remote-cluster-id", "consumer")
	if !strings.Contains(r.stdout, `"audit \x1b[31mtrail"`) || strings.ContainsRune(r.stdout, '\x1b') {
		t.Errorf("the provider's listing does not show the consumer's reason, quoted and escaped:\n%s", r.stdout)
	}
	if listed := itemsOf[grants.NamespaceInfo](t, mustOn(t, provider, "grant", "namespace", "--remote-cluster-id", "consumer", "-o", "json").stdout); !slices.ContainsFunc(listed, func(n grants.NamespaceInfo) bool { return n.RequestReason == "audit \x1b[31mtrail" }) {
		t.Errorf("grant namespace -o json lacks the request's reason: %+v", listed)
	}
	mustOn(t, provider, "grant", "namespace", "consumer-audited", "--remote-cluster-id", "consumer")
	mustOn(t, provider, "revoke", "namespace", "consumer-audited", "--remote-cluster-id", "consumer")

	rules := writeFile(t, "rules.yaml", "apiVersion: federate.dev/v1alpha1\nkind: ClusterGatewayConfiguration\nspec:\n  clientIdentityExchanger:\n    rules:\n"+
		"    - {name: audited, type: StaticMappingIdentityExchanger, source: {user: auditor}, target: {user: audited-target}, scope: {verbs: [get], resources: [configmaps], namespaces: ["+tenantNS+"]}}\n")
	mustOn(t, consumer, "exchange", "apply", "-f", rules)
	defer sh(t, "", `kubectl --kubeconfig "$C" -n federate-system delete configmap federate-exchange-rules >/dev/null`)
	mustRun(t, "", "get", "kubeconfig", "--remote-cluster-id", "provider", "--for-user", "auditor",
		"--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)

	for _, cmd := range []string{"cordon", "uncordon", "drain"} {
		mustOn(t, provider, cmd, "tenant", "consumer")
	}

	notes := func(h []handshake.HistoryEntry, reason string) string {
		var out []string
		for _, e := range h {
			if e.Reason == reason {
				out = append(out, e.Note)
			}
		}
		return strings.Join(out, "\n")
	}
	ch, ph := history(t, consumer), history(t, provider)
	for _, want := range []struct {
		side        string
		h           []handshake.HistoryEntry
		reason, has string
	}{
		{"consumer", ch, handshake.EventImported, "resource slice audited (Certificate) on provider provider imported"},
		{"consumer", ch, handshake.EventImported, "exchange credential audited-"},
		{"provider", ph, handshake.EventRevoked, "resource slice audited of consumer consumer revoked and removed"},
		{"provider", ph, handshake.EventRevoked, "namespace consumer-audited of consumer consumer revoked and removed"},
	} {
		if !strings.Contains(notes(want.h, want.reason), want.has) {
			t.Errorf("no %s Event noting %q on the %s:\n%s", want.reason, want.has, want.side, notes(want.h, want.reason))
		}
	}

	// Cordon, uncordon and drain (which cordons first), each a process of its own within about a second.
	var last []string
	for _, e := range ph {
		if e.RemoteClusterID == "consumer" && (e.Reason == handshake.EventCordoned || e.Reason == handshake.EventUncordoned || e.Reason == handshake.EventDrained) {
			last = append(last, e.Reason)
		}
	}
	if len(last) < 4 || strings.Join(last[len(last)-4:], " ") != "Cordoned Uncordoned Cordoned Drained" {
		t.Errorf("the trail lists cordon, uncordon, drain as %v", last)
	}
}

package status

import (
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// A slice's and an exchange credential's rows take the labels of their pairing's record (the Tenant on a
// provider, the Identity on a consumer) of the same role and remote cluster, never another pairing's;
// a row with labels of its own keeps them.
func TestPairingLabels(t *testing.T) {
	tenant := map[string]string{"team": "ml"}
	identity := map[string]string{"team": "ops"}
	own := map[string]string{"slice": "own"}
	all := []CredentialState{
		{RemoteClusterID: "edge", Role: member.RoleProvider, Kind: KindControlPlane, Labels: tenant},
		{RemoteClusterID: "edge", Role: member.RoleProvider, Kind: KindResourceSlice, Name: "batch"},
		{RemoteClusterID: "edge", Role: member.RoleProvider, Kind: KindExchange, Name: "ops-1"},
		{RemoteClusterID: "edge", Role: member.RoleConsumer, Kind: KindControlPlane, Labels: identity},
		{RemoteClusterID: "edge", Role: member.RoleConsumer, Kind: KindResourceSlice, Name: "gpu", Labels: own},
		{RemoteClusterID: "edge", Role: member.RoleConsumer, Kind: KindExchange, Name: "x"},
		{RemoteClusterID: "other", Role: member.RoleProvider, Kind: KindResourceSlice, Name: "batch"},
	}
	pairingLabels(all)
	want := []string{"ml", "ml", "ml", "ops", "", "ops", ""}
	for i, s := range all {
		if s.Labels["team"] != want[i] {
			t.Errorf("row %d (%s %s %s): team=%q, want %q", i, s.Role, s.Kind, s.RemoteClusterID, s.Labels["team"], want[i])
		}
	}
	if all[4].Labels["slice"] != "own" {
		t.Errorf("a row's own labels were replaced: %v", all[4].Labels)
	}
}

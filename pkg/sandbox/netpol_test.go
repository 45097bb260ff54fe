package sandbox

import (
	"net/netip"
	"testing"
)

// The egress exceptions are each inside their block (the API server refuses one that is not) and cover
// every cloud's metadata and host address.
func TestNetworkPolicyExceptsMetadata(t *testing.T) {
	np := sandboxNetworkPolicy("ns", "consumer")
	covered := map[netip.Addr]bool{}
	for _, peer := range np.Spec.Egress[0].To {
		if peer.IPBlock == nil {
			continue
		}
		block := netip.MustParsePrefix(peer.IPBlock.CIDR)
		for _, ex := range peer.IPBlock.Except {
			p, err := netip.ParsePrefix(ex)
			if err != nil || p != p.Masked() || !block.Contains(p.Addr()) || p.Bits() < block.Bits() {
				t.Errorf("except %s is not a canonical prefix inside %s (%v)", ex, block, err)
				continue
			}
			for _, a := range []string{"169.254.169.254", "169.254.170.23", "100.100.100.200", "168.63.129.16", "fe80::a9fe:a9fe",
				"fd00:ec2::254", "fd00:ec2::23", "fd20:ce::254", "fd00:c1::a9fe:a9fe", "fd00:a9fe:a9fe::1"} {
				if addr := netip.MustParseAddr(a); p.Contains(addr) {
					covered[addr] = true
				}
			}
		}
	}
	if len(covered) != 10 {
		t.Errorf("the egress exceptions cover only %v", covered)
	}
}

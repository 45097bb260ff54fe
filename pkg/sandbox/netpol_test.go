package sandbox

import (
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/pkg/kube/kubetest"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// The egress exceptions are each inside their block (the API server refuses one that is not) and cover
// every cloud's metadata and host address, and the cluster's pods.
func TestNetworkPolicyExceptsMetadataAndPods(t *testing.T) {
	np := NetworkPolicy("ns", "consumer", PodRanges{IPv4: []string{"10.244.0.0/16"}, IPv6: []string{"fd00:10:244::/56"}, From: "test"})
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
				"fd00:ec2::254", "fd00:ec2::23", "fd20:ce::254", "fd00:c1::a9fe:a9fe", "fd00:a9fe:a9fe::1", "10.244.7.9", "fd00:10:244::9"} {
				if addr := netip.MustParseAddr(a); p.Contains(addr) {
					covered[addr] = true
				}
			}
		}
	}
	if len(covered) != 12 {
		t.Errorf("the egress exceptions cover only %v", covered)
	}
	// Other namespaces' pods are no peer: the sandbox's own pods, and the cluster's DNS on port 53 only.
	for _, rule := range np.Spec.Egress {
		for _, peer := range rule.To {
			if peer.NamespaceSelector != nil && (peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "kube-system" || len(rule.Ports) != 2) {
				t.Errorf("egress to namespaces %v on ports %v", peer.NamespaceSelector, rule.Ports)
			}
		}
	}
}

// Pod ranges are read from kubeadm's configuration, else kube-proxy's, else the Nodes; none is unknown.
func TestDetectPodRanges(t *testing.T) {
	cm := func(name, key, data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"}, Data: map[string]string{key: data}}
	}
	node := func(name string, cidrs ...string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDRs: cidrs}}
	}
	for _, tc := range []struct {
		name       string
		objs       []any
		from       string
		ipv4, ipv6 []string
	}{
		{"kubeadm", []any{cm("kubeadm-config", "ClusterConfiguration", "networking:\n  podSubnet: 10.244.0.0/16,fd00:10:244::/56\n"), node("n1", "10.9.0.0/24")},
			"kubeadm-config", []string{"10.244.0.0/16"}, []string{"fd00:10:244::/56"}},
		{"kube-proxy", []any{cm("kube-proxy", "config.conf", "clusterCIDR: 192.168.0.0/16\n")}, "kube-proxy", []string{"192.168.0.0/16"}, nil},
		{"nodes", []any{node("n1", "10.1.0.0/24", "fd00::/64"), node("n2", "10.1.1.0/24")}, "the Nodes", []string{"10.1.0.0/24", "10.1.1.0/24"}, []string{"fd00::/64"}},
		{"none", nil, "", nil, nil},
	} {
		kube := fake.NewClientset()
		for _, o := range tc.objs {
			switch v := o.(type) {
			case *corev1.ConfigMap:
				_, _ = kube.CoreV1().ConfigMaps("kube-system").Create(t.Context(), v, metav1.CreateOptions{})
			case *corev1.Node:
				_, _ = kube.CoreV1().Nodes().Create(t.Context(), v, metav1.CreateOptions{})
			}
		}
		p, err := DetectPodRanges(t.Context(), &member.Cluster{Kube: kubetest.Wrap(kube)})
		if err != nil || p.From != tc.from || !slices.Equal(p.IPv4, tc.ipv4) || !slices.Equal(p.IPv6, tc.ipv6) {
			t.Errorf("%s: %+v %v", tc.name, p, err)
		}
	}
}

// A detection started early is the one every later caller waits for: its sources are read once. One
// that failed is read again by the next caller.
func TestPodRangesStartedEarlyAreReadOnce(t *testing.T) {
	kube := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{PodCIDRs: []string{"10.1.0.0/24"}}})
	var reads atomic.Int32
	fail := atomic.Bool{}
	fail.Store(true)
	kube.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		reads.Add(1)
		if fail.Load() {
			return true, nil, apierrors.NewServiceUnavailable("not yet")
		}
		return false, nil, nil
	})
	c := &member.Cluster{Kube: kubetest.Wrap(kube)}
	StartPodRanges(t.Context(), c)
	if _, err := DetectPodRanges(t.Context(), c); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("the failed detection: %v", err)
	}
	failed := reads.Load()
	fail.Store(false)
	StartPodRanges(t.Context(), c)
	p, err := DetectPodRanges(t.Context(), c)
	if err != nil || p.From != "the Nodes" {
		t.Fatalf("read again: %+v %v", p, err)
	}
	once := reads.Load() - failed
	for range 3 {
		StartPodRanges(t.Context(), c)
		if _, err := DetectPodRanges(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	if failed != 1 || once != 3 || reads.Load() != failed+once {
		t.Errorf("requests: %d for the failed detection (want 1), %d for the next (want 3: two ConfigMaps and the Nodes), %d in all", failed, once, reads.Load())
	}
}

package sandbox

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// A sandbox's pods may reach the world, but not the pods of the provider's other namespaces. NetworkPolicy
// has no "every pod" peer other than a namespace selector, and an ipBlock of 0.0.0.0/0 matches pod
// addresses too (kube-router and Calico apply it to them), so the sandbox's egress rule excepts the
// cluster's pod address ranges from its ipBlocks. The API publishes them only by convention: kubeadm's
// kubeadm-config (networking.podSubnet), kube-proxy's configuration (clusterCIDR), and each Node's
// spec.podCIDRs where the controller manager allocates them. They are detected, never assumed: a provider
// where none of these answers gets a sandbox whose pods may reach pods of namespaces with no policy of
// their own, which status --check says (PodRangesUnknown).

// PodRanges are a cluster's pod address ranges, and where they were read.
type PodRanges struct {
	IPv4, IPv6 []string
	From       string // "kubeadm-config", "kube-proxy", "the Nodes"; "" when unknown
}

// Known says whether any range was found.
func (p PodRanges) Known() bool { return p.From != "" }

// podRangesRun is one detection, shared by every caller in the process: started early (StartPodRanges),
// it runs while the rest of a run makes its first round trips.
type podRangesRun struct {
	done chan struct{}
	p    PodRanges
	err  error
}

var podRangesRuns sync.Map // *member.Cluster -> *podRangesRun: read once per process

// StartPodRanges starts reading the cluster's pod address ranges in the background, once per cluster and
// process. Their sources are read one after the other (the first that answers wins), three round trips
// where none but the Nodes answers: started with a run's first reads, they are known long before its
// sandbox's NetworkPolicy needs them.
func StartPodRanges(ctx context.Context, c *member.Cluster) { podRangesOf(ctx, c) }

func podRangesOf(ctx context.Context, c *member.Cluster) *podRangesRun {
	run := &podRangesRun{done: make(chan struct{})}
	if v, loaded := podRangesRuns.LoadOrStore(c, run); loaded {
		return v.(*podRangesRun)
	}
	go func() {
		defer close(run.done)
		if run.p, run.err = detectPodRanges(ctx, c); run.err != nil {
			podRangesRuns.CompareAndDelete(c, run) // a later caller reads again
		}
	}()
	return run
}

// DetectPodRanges reads the cluster's pod address ranges (see above), once per cluster and process, or
// waits for the reading StartPodRanges began. A source the caller may not read (an operator without get
// on kube-system's ConfigMaps) is skipped.
func DetectPodRanges(ctx context.Context, c *member.Cluster) (PodRanges, error) {
	run := podRangesOf(ctx, c)
	select {
	case <-run.done:
		return run.p, run.err
	case <-ctx.Done():
		return PodRanges{}, ctx.Err()
	}
}

func detectPodRanges(ctx context.Context, c *member.Cluster) (PodRanges, error) {
	cms := c.Kube.CoreV1().ConfigMaps("kube-system")
	skip := func(err error) bool { return apierrors.IsNotFound(err) || apierrors.IsForbidden(err) }
	if cm, err := cms.Get(ctx, "kubeadm-config", metav1.GetOptions{}); err == nil {
		var cfg struct {
			Networking struct {
				PodSubnet string `json:"podSubnet"`
			} `json:"networking"`
		}
		if yaml.Unmarshal([]byte(cm.Data["ClusterConfiguration"]), &cfg) == nil {
			if p := rangesOf(strings.Split(cfg.Networking.PodSubnet, ","), "kubeadm-config"); p.Known() {
				return p, nil
			}
		}
	} else if !skip(err) {
		return PodRanges{}, err
	}
	if cm, err := cms.Get(ctx, "kube-proxy", metav1.GetOptions{}); err == nil {
		var cfg struct {
			ClusterCIDR string `json:"clusterCIDR"`
		}
		if yaml.Unmarshal([]byte(cm.Data["config.conf"]), &cfg) == nil {
			if p := rangesOf(strings.Split(cfg.ClusterCIDR, ","), "kube-proxy"); p.Known() {
				return p, nil
			}
		}
	} else if !skip(err) {
		return PodRanges{}, err
	}
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if skip(err) {
		return PodRanges{}, nil
	}
	if err != nil {
		return PodRanges{}, err
	}
	var cidrs []string
	for _, n := range nodes.Items {
		cidrs = append(cidrs, n.Spec.PodCIDRs...)
		cidrs = append(cidrs, n.Spec.PodCIDR)
	}
	return rangesOf(cidrs, "the Nodes"), nil
}

// rangesOf parses CIDRs, keeping the valid ones, each once, sorted per family.
func rangesOf(cidrs []string, from string) PodRanges {
	var p PodRanges
	for _, s := range cidrs {
		pfx, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			continue
		}
		pfx = pfx.Masked()
		if pfx.Addr().Is4() {
			p.IPv4 = append(p.IPv4, pfx.String())
		} else {
			p.IPv6 = append(p.IPv6, pfx.String())
		}
	}
	p.IPv4, p.IPv6 = slices.Compact(slices.Sorted(slices.Values(p.IPv4))), slices.Compact(slices.Sorted(slices.Values(p.IPv6)))
	if len(p.IPv4)+len(p.IPv6) > 0 {
		p.From = from
	}
	return p
}

// PodRangesUnknown is what a provider's check says where no pod address range could be read.
const PodRangesUnknown = "this cluster's pod address ranges could not be read (kubeadm-config, kube-proxy's configuration, " +
	"the Nodes' podCIDRs): tenants' pods may reach the pods of the provider's namespaces that have no NetworkPolicy of their own"

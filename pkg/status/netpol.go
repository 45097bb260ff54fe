package status

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// NetworkPolicyEngines are the engines that enforce NetworkPolicy which the check recognizes, each by the
// name of its DaemonSet or of its container image: the sandbox's NetworkPolicy (no cloud metadata, no
// other tenant's pods) is a promise only where one of them runs. A network without one (the bridge or
// flannel CNI alone, as in many labs) accepts the policy and enforces nothing.
var NetworkPolicyEngines = []string{
	"calico-node",              // Calico, and Canal
	"cilium",                   // Cilium
	"kube-router",              // kube-router's firewall
	"antrea-agent",             // Antrea
	"weave-net",                // Weave Net
	"kube-network-policies",    // the network SIG's own
	"azure-npm",                // Azure Network Policy Manager
	"anetd",                    // GKE Dataplane V2
	"aws-network-policy-agent", // EKS, in the aws-node DaemonSet
	"ovnkube-node",             // OVN-Kubernetes (OpenShift)
	"kube-ovn-cni",             // Kube-OVN
}

// NetworkPolicyEngine names the engine that enforces NetworkPolicy on this cluster, read from its
// DaemonSets in every namespace ("" when none of NetworkPolicyEngines runs there). It is detected, never
// assumed: one list, no pod started. An engine the check does not know reads as none.
func NetworkPolicyEngine(ctx context.Context, c *member.Cluster) (string, error) {
	list, err := c.Kube.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing DaemonSets to find a NetworkPolicy engine: %w", err)
	}
	for i := range list.Items {
		if name := engineOf(&list.Items[i]); name != "" {
			return name, nil
		}
	}
	return "", nil
}

// engineOf says which known engine a DaemonSet runs, by its name or its containers' images.
func engineOf(ds *appsv1.DaemonSet) string {
	names := []string{ds.Name}
	for _, c := range ds.Spec.Template.Spec.Containers {
		image := path.Base(c.Image) // registry/org/name:tag -> name:tag
		if i := strings.IndexAny(image, ":@"); i >= 0 {
			image = image[:i]
		}
		names = append(names, image)
	}
	for _, engine := range NetworkPolicyEngines {
		if slices.Contains(names, engine) {
			return engine
		}
	}
	return ""
}

// NoEngineWarning is what the check says on a provider where no engine runs: the consequence, for the
// administrator to act on.
const NoEngineWarning = "no NetworkPolicy engine found on this cluster (none of " +
	"calico-node, cilium, kube-router, antrea-agent, weave-net, kube-network-policies, azure-npm, anetd, " +
	"aws-network-policy-agent, ovnkube-node, kube-ovn-cni runs as a DaemonSet): the sandbox's NetworkPolicy " +
	"is stored but not enforced, so tenants' pods can reach the cloud's metadata addresses, other tenants' " +
	"pods and this cluster's own pods; install a NetworkPolicy engine before tenants run workloads"

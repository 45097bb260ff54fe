package handshake

import (
	"context"
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// A consumer reaches its provider, with no help from the provider's administrator, only through the
// pairing's own identity: the kubeconfig it stored for that provider. Requests (ResourceSlices,
// NamespaceRequests) travel that way, so the provider's RBAC and quota bound them like anything else the
// tenant does.

// DialFunc builds the clients of a kubeconfig. Tests replace it; nil means real clients.
type DialFunc func(kubeconfig []byte) (*Cluster, error)

// dialKubeconfig is the real DialFunc.
func dialKubeconfig(data []byte) (*Cluster, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 50, 100
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Cluster{Kube: kube, Dynamic: dyn}, nil
}

func (c *Cluster) dial(data []byte) (*Cluster, error) {
	if c.Dial != nil {
		return c.Dial(data)
	}
	return dialKubeconfig(data)
}

// ViaPairing (consumer) returns the provider as this cluster's pairing identity sees it: a Cluster whose
// clients authenticate with the stored kubeconfig, reporting where this cluster reports.
func (c *Cluster) ViaPairing(ctx context.Context, providerID string) (*Cluster, error) {
	data, err := c.GetKubeconfig(ctx, providerID)
	if err != nil {
		return nil, err
	}
	p, err := c.dial(data)
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig stored for provider %q: %w", providerID, err)
	}
	p.Report, p.Now = c.Report, c.Now
	return p, nil
}

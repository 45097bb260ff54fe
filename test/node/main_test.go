//go:build e2e

// Package node is the node tier: the sandbox proven on running pods. A provider with one real node
// (kubelet, containerd and runc, the bridge CNI, kube-router's NetworkPolicy firewall) and three consumers
// that pair with it: consumer (the tenant the tests act as, with a resource slice), other (a neighbour
// tenant) and leaver (cordoned, drained and revoked). Every workload is created with the tenant's own
// kubeconfig, as a tenant would. The tier needs Linux and root; elsewhere it fails, saying why.
package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

var (
	consumer, other, leaver, provider *kubeenv.Cluster
	node                              *kubeenv.Node
	binDir                            string // kubectl and kubectl-federate, for PATH
	workDir                           string // the tenants' kubeconfigs
)

func TestMain(m *testing.M) {
	os.Exit(setup(m))
}

func setup(m *testing.M) int {
	if kubeenv.Listing() {
		return m.Run()
	}
	if err := kubeenv.NodeSupported(); err != nil {
		fmt.Fprintln(os.Stderr, "node tier: cannot run here:", err)
		return 1
	}
	clusters, dir, stop, err := kubeenv.StartForTests("consumer", "other", "leaver", "provider")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	consumer, other, leaver, provider = clusters[0], clusters[1], clusters[2], clusters[3]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	if node, err = provider.StartNode(ctx, kubeenv.NodeOptions{NetworkPolicy: true, Log: os.Stderr}); err != nil {
		fmt.Fprintln(os.Stderr, "node tier:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "kubeenv: node %s Ready in %s\n", node.Name, time.Since(start).Round(10*time.Millisecond))
	if binDir, err = kubeenv.ToolsPath(ctx, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	workDir = filepath.Join(dir, "work")
	if err := os.MkdirAll(workDir, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

//go:build tools

// Package tools pins the container runtime of the local test node: containerd 2.x (the kubelet of
// Kubernetes 1.36 and later asks the runtime for its cgroup driver, which containerd 1.x cannot answer),
// its runc shim, and ctr, which imports the locally built images.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)

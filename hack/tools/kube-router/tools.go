//go:build tools

// Package tools pins the NetworkPolicy engine of the local test node: kube-router, run with only its
// firewall (network policy controller), which enforces policies with iptables and ipset in the kernel.
package tools

import (
	_ "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"
)

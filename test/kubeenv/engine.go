package kubeenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The NetworkPolicy engine: kube-router's firewall (its network policy controller alone: no routing, no
// service proxy), built from the last kube-router on the Go module proxy, v2.1.0. That release gets dual
// stack wrong in two ways, fixed upstream later (kube-router#1653, #1665): its IPv6 rules name their sets
// without the inet6: prefix ipset gives them, so no IPv6 policy with a selector loads; and each family's
// half reads every set back after a sync (ipset save) and restores them all at the next, the other
// family's from that stale copy, so one family's sets lag a sync behind at random; and its pod chains
// refuse IPv6 neighbour discovery. Two shims first on its PATH (routerShims) mend these: an
// ip6tables-restore that adds the prefix and accepts neighbour solicitations and advertisements, and an
// ipset whose save shows no set, so that each half restores only the sets it computed.
const (
	cloudNetns  = "kubeenv-cloud"  // the metadata host's network namespace (CloudHost)
	cloudLink   = "kubeenv-cloud0" // the node's side of the link to it
	cloudHostV4 = "10.250.1.2"
	cloudNodeV4 = "10.250.1.1"
	cloudHostV6 = "fd00:fed:3::2"
	cloudNodeV6 = "fd00:fed:3::1"
	cloudLinkV4 = "/30"
	cloudLinkV6 = "/64"
	engineWait  = 90 * time.Second
	// serviceCIDRv6 is only for kube-router, which wants a service range of each family it runs (the API
	// servers here are single-stack, 10.0.0.0/24).
	serviceCIDRv6 = "fd00:fed:2::/112"
)

// StartNetworkPolicy starts kube-router's firewall and returns once its chains are in the kernel, for
// both families.
func (n *Node) StartNetworkPolicy(ctx context.Context) error {
	if n.router != nil {
		return nil
	}
	shims, err := n.routerShims()
	if err != nil {
		return err
	}
	p, err := spawnProc(n.Dir, n.cluster.Name, "kube-router", n.detached, []string{"PATH=" + shims + ":" + os.Getenv("PATH")},
		n.bins.KubeRouter, "--kubeconfig="+n.cluster.Kubeconfig, "--hostname-override="+n.Name,
		"--run-firewall=true", "--run-router=false", "--run-service-proxy=false", "--run-loadbalancer=false",
		"--enable-ipv4=true", "--enable-ipv6=true",
		"--service-cluster-ip-range=10.0.0.0/24", "--service-cluster-ip-range="+serviceCIDRv6,
		"--metrics-port=0", "--health-port=0", "--v=1")
	if err != nil {
		return err
	}
	n.router = p
	err = n.pollEngine(ctx, func() (bool, error) {
		select {
		case <-p.done:
			return false, n.failed(p, "exited")
		default:
		}
		for _, iptables := range []string{"iptables", "ip6tables"} {
			if exec.CommandContext(ctx, iptables, "-w", "-S", "KUBE-ROUTER-FORWARD").Run() != nil {
				return false, nil
			}
		}
		return true, nil
	}, "set up its chains")
	if err != nil {
		return err
	}
	return n.cluster.writeState()
}

// routerShims writes the directory put first on kube-router's PATH (see above).
func (n *Node) routerShims() (string, error) {
	dir := filepath.Join(n.Dir, "kube-router-shims")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	restore, err := exec.LookPath("ip6tables-restore")
	if err != nil {
		return "", err
	}
	ipset, err := exec.LookPath("ipset")
	if err != nil {
		return "", err
	}
	scripts := map[string]string{
		"ip6tables-restore": `#!/bin/sh
# Written by kubeenv: kube-router v2.1.0's IPv6 rules name their sets without ipset's inet6: prefix, and
# its pod chains refuse the neighbour discovery that IPv6 cannot work without (the pods' own solicitations
# and advertisements): add the prefix, and accept those two ICMPv6 types before any pod's chain.
sed -E 's/--match-set (KUBE-[A-Z0-9]+-[A-Z0-9]+)/--match-set inet6:\1/g' | awk '
	/^:KUBE-ROUTER-FORWARD / { ours = 1 }
	$1 == "COMMIT" && ours {
		split("KUBE-ROUTER-FORWARD KUBE-ROUTER-INPUT KUBE-ROUTER-OUTPUT", chains, " ")
		for (c in chains) for (t = 135; t <= 136; t++)
			print "-I " chains[c] " 1 -p ipv6-icmp -m icmp6 --icmpv6-type " t " -j ACCEPT"
	}
	{ print }' | ` + restore + ` "$@"
`,
		"ipset": `#!/bin/sh
# Written by kubeenv: kube-router v2.1.0 restores every set it saw in a save, another family's from a
# stale copy; with no set in a save, each family restores only the sets it computed.
[ "$1" = save ] && exit 0
exec ` + ipset + ` "$@"
`,
	}
	for name, script := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// StopNetworkPolicy stops kube-router and removes its rules and sets: the node then enforces no
// NetworkPolicy at all, as a bridge network alone does not.
func (n *Node) StopNetworkPolicy(context.Context) error {
	if n.router == nil {
		return nil
	}
	stopProc(n.router)
	n.router = nil
	if err := cleanupRouter(n.bins); err != nil {
		return err
	}
	return n.cluster.writeState()
}

// EnforcesNetworkPolicy says whether kube-router runs on the node.
func (n *Node) EnforcesNetworkPolicy() bool { return n.router != nil }

// pollEngine polls done every 200 ms (the kernel's tables offer nothing to watch) until it holds, within
// engineWait; what is the engine's part, for the error.
func (n *Node) pollEngine(ctx context.Context, done func() (bool, error), what string) error {
	ctx, cancel := context.WithTimeout(ctx, engineWait)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := done()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: kube-router did not %s within %s", n.Name, what, engineWait)
		case <-tick.C:
		}
	}
}

// WaitFirewall waits until kube-router has put the pod's rules in the kernel, for both families: a pod's
// packets pass unfiltered until then.
func (n *Node) WaitFirewall(ctx context.Context, namespace, pod string) error {
	if n.router == nil {
		return fmt.Errorf("node %s runs no NetworkPolicy engine", n.Name)
	}
	mark := "POD name:" + pod + " namespace: " + namespace + " to chain"
	return n.pollEngine(ctx, func() (bool, error) {
		for _, save := range []string{"iptables-save", "ip6tables-save"} {
			out, err := exec.CommandContext(ctx, save, "-t", "filter").Output()
			if err != nil || !strings.Contains(string(out), mark) {
				return false, nil
			}
		}
		return true, nil
	}, "put the rules of pod "+namespace+"/"+pod+" in place")
}

// cleanupRouter removes kube-router's chains and sets, if any are there.
func cleanupRouter(bins NodeBinaries) error {
	if exec.Command("iptables", "-w", "-S", "KUBE-ROUTER-FORWARD").Run() != nil &&
		exec.Command("ip6tables", "-w", "-S", "KUBE-ROUTER-FORWARD").Run() != nil {
		return nil
	}
	out, err := exec.Command(bins.KubeRouter, "--cleanup-config").CombinedOutput()
	if err != nil {
		return fmt.Errorf("kube-router --cleanup-config: %w: %s", err, tail(string(out), 10))
	}
	return nil
}

// CloudHost puts addresses (IPv4 or IPv6) on a host beyond the node, as a cloud's metadata service is:
// a network namespace of its own, linked to the node, which routes the addresses to it; there a probe
// answers HTTP on port 80 of each with "probe ...". The returned function removes it all.
func (n *Node) CloudHost(ctx context.Context, addrs ...string) (func(), error) {
	remove := func() { cleanupCloud() }
	steps := [][]string{
		{"netns", "add", cloudNetns},
		{"link", "add", cloudLink, "type", "veth", "peer", "name", "eth0", "netns", cloudNetns},
		{"addr", "add", cloudNodeV4 + cloudLinkV4, "dev", cloudLink},
		{"addr", "add", cloudNodeV6 + cloudLinkV6, "dev", cloudLink, "nodad"},
		{"link", "set", cloudLink, "up"},
		{"-n", cloudNetns, "addr", "add", cloudHostV4 + cloudLinkV4, "dev", "eth0"},
		{"-n", cloudNetns, "addr", "add", cloudHostV6 + cloudLinkV6, "dev", "eth0", "nodad"},
		{"-n", cloudNetns, "link", "set", "eth0", "up"},
		{"-n", cloudNetns, "link", "set", "lo", "up"},
		{"-n", cloudNetns, "route", "add", "default", "via", cloudNodeV4},
		{"-n", cloudNetns, "-6", "route", "add", "default", "via", cloudNodeV6},
	}
	for _, a := range addrs {
		ip := net.ParseIP(a)
		if ip == nil {
			remove()
			return nil, fmt.Errorf("CloudHost: %q is not an IP address", a)
		}
		if ip.To4() != nil {
			steps = append(steps, []string{"-n", cloudNetns, "addr", "add", a + "/32", "dev", "lo"},
				[]string{"route", "add", a + "/32", "via", cloudHostV4})
		} else {
			steps = append(steps, []string{"-n", cloudNetns, "addr", "add", a + "/128", "dev", "lo"},
				[]string{"-6", "route", "add", a + "/128", "via", cloudHostV6})
		}
	}
	for _, s := range steps {
		if out, err := exec.CommandContext(ctx, "ip", s...).CombinedOutput(); err != nil {
			remove()
			return nil, fmt.Errorf("ip %s: %w: %s", strings.Join(s, " "), err, out)
		}
	}
	probe := filepath.Join(n.Dir, "images", "probe")
	for _, a := range addrs {
		cmd := exec.Command("ip", "netns", "exec", cloudNetns, probe, "serve", net.JoinHostPort(a, "80"))
		cmd.SysProcAttr = procAttr(false)
		if err := cmd.Start(); err != nil {
			remove()
			return nil, err
		}
		go func() { _ = cmd.Wait() }()
	}
	// Up when each answers from the node.
	err := n.pollEngine(ctx, func() (bool, error) {
		for _, a := range addrs {
			conn, err := net.DialTimeout("tcp", net.JoinHostPort(a, "80"), time.Second)
			if err != nil {
				return false, nil
			}
			_ = conn.Close()
		}
		return true, nil
	}, "see the metadata host answer")
	if err != nil {
		remove()
		return nil, err
	}
	return remove, nil
}

// cleanupCloud removes the metadata host: its processes, its namespace and its link.
func cleanupCloud() {
	if out, err := exec.Command("ip", "netns", "pids", cloudNetns).Output(); err == nil {
		for _, f := range strings.Fields(string(out)) {
			var pid int
			if _, err := fmt.Sscan(f, &pid); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	_ = exec.Command("ip", "link", "del", cloudLink).Run()
	_ = exec.Command("ip", "netns", "del", cloudNetns).Run()
}

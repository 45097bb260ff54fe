package kubeenv

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The node's network, the same for every node: one node runs on a machine at a time (StartNode waits for
// the machine's node lock), since a node's kernel state (cgroups, bridge, iptables) is the machine's.
// Everything stays on this machine: the addresses live on links of the node's own.
const (
	// NodeIPv4 and NodeIPv6 are the node's addresses (its InternalIPs), on the link NodeLink.
	NodeIPv4 = "10.250.0.1"
	NodeIPv6 = "fd00:fed::1"
	// PodCIDRv4 and PodCIDRv6 are the pods' addresses: every pod has one of each (dual stack), on the
	// bridge nodeBridge, whose gateway addresses are the pods' default routes.
	PodCIDRv4 = "10.251.0.0/24"
	PodCIDRv6 = "fd00:fed:1::/64"
	// ClusterCIDRv4 and ClusterCIDRv6 are the cluster's pod ranges, from which the controller manager
	// gives each Node its own (the first: PodCIDRv4 and PodCIDRv6).
	ClusterCIDRv4 = "10.251.0.0/16"
	ClusterCIDRv6 = "fd00:fed:1::/56"
	// NodeLink is the link of the node's addresses (a bridge with no ports); BindLocal adds more to it.
	NodeLink   = "kubeenv0"
	nodeBridge = "kubeenv-br0"
	// nodeDirName marks everything a node mounts: a leftover mount below such a directory is a node's.
	nodeDirName = "kubeenv-node"
)

// NodeOptions configure StartNode.
type NodeOptions struct {
	// NetworkPolicy runs kube-router's firewall on the node, which enforces NetworkPolicy with iptables and
	// ipset; without it the bridge network enforces none, as many labs' and some clouds' networks do not.
	NetworkPolicy bool
	Log           io.Writer // progress lines; nil discards
}

// Node is a cluster's one real node: containerd and runc, the bridge CNI, a kubelet registered as
// Name, the cluster's scheduler, and (NetworkPolicy) kube-router's firewall.
type Node struct {
	Name string
	Dir  string

	cluster  *Cluster
	bins     NodeBinaries
	detached bool
	procs    []*proc // containerd, kubelet, kube-scheduler
	engine   bool    // kube-router's DaemonSet is installed
	sysctls  map[string]string
	unlock   func()
	log      io.Writer
}

// NodeSupported says why this machine cannot run a node (nil when it can): a node needs Linux and root.
func NodeSupported() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("a node runs only on Linux (this is %s): it needs containerd, runc, a bridge and iptables", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("a node needs root (running as uid %d): it mounts, makes cgroups, links and iptables rules", os.Geteuid())
	}
	return nil
}

// StartNode starts the cluster's node and returns when the Node is Ready (and, with NetworkPolicy, the
// engine enforces). It installs what it needs from Debian's packages when missing and says so, builds
// the binaries and images once per machine, and waits while another node runs on this machine.
func (c *Cluster) StartNode(ctx context.Context, o NodeOptions) (n *Node, err error) {
	if err := NodeSupported(); err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if c.node != nil {
		return nil, fmt.Errorf("cluster %s already has a node", c.Name)
	}
	n = &Node{Name: c.Name + "-node", Dir: filepath.Join(c.Dir, nodeDirName), cluster: c, detached: c.detached, log: o.Log}
	if n.bins, err = EnsureNodeBinaries(ctx, o.Log); err != nil {
		return nil, err
	}
	if err := ensurePackages(ctx, o.Log); err != nil {
		return nil, err
	}
	cache, err := CacheDir()
	if err != nil {
		return nil, err
	}
	if n.unlock, err = lockFile(ctx, filepath.Join(cache, "node.lock"), o.Log); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			n.Stop()
			n = nil
		}
	}()
	cleanupHost(n.bins, o.Log) // what a node that was killed left behind
	if err := os.MkdirAll(n.Dir, 0o700); err != nil {
		return n, err
	}
	if n.sysctls, err = setupKernel(); err != nil {
		return n, err
	}
	if err := setupLink(); err != nil {
		return n, err
	}
	if err := n.writeImages(ctx); err != nil {
		return n, err
	}
	if err := n.startContainerd(ctx); err != nil {
		return n, err
	}
	if err := n.startKubelet(ctx); err != nil {
		return n, err
	}
	if _, err := n.spawn("kube-scheduler", n.bins.Scheduler,
		"--kubeconfig="+c.Kubeconfig, "--authentication-kubeconfig="+c.Kubeconfig,
		"--authorization-kubeconfig="+c.Kubeconfig, "--leader-elect=false", "--secure-port=0"); err != nil {
		return n, err
	}
	if o.NetworkPolicy {
		if err := n.StartNetworkPolicy(ctx); err != nil {
			return n, err
		}
	}
	c.node = n
	return n, c.writeState()
}

// spawn starts one of the node's programs, its output in Dir/<name>.log.
func (n *Node) spawn(name, bin string, args ...string) (*proc, error) {
	p, err := spawnProc(n.Dir, n.cluster.Name, name, n.detached, nil, bin, args...)
	if err != nil {
		return nil, err
	}
	n.procs = append(n.procs, p)
	return p, nil
}

func (n *Node) failed(p *proc, what string) error {
	data, _ := os.ReadFile(p.log)
	return fmt.Errorf("node %s: %s %s; last lines of %s:\n%s", n.Name, p.name, what, p.log, tail(string(data), 25))
}

// writeImages builds the probe and writes the pause and probe images as OCI archives into Dir/images.
func (n *Node) writeImages(ctx context.Context) error {
	dir := filepath.Join(n.Dir, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	probe := filepath.Join(dir, "probe")
	if err := buildProbe(ctx, probe, n.log); err != nil {
		return err
	}
	program, err := os.ReadFile(probe)
	if err != nil {
		return err
	}
	specs := map[string]imageSpec{
		"pause.tar": {ref: PauseImage, path: "pause", entrypoint: []string{"/pause"}, user: "65535:65535"},
		"probe.tar": {ref: ProbeImage, path: "probe", entrypoint: []string{"/probe"}, cmd: []string{"serve"}, user: "65534:65534"},
	}
	for file, spec := range specs {
		if err := writeOCIArchive(filepath.Join(dir, file), runtime.GOARCH, program, spec); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) containerdSocket() string { return filepath.Join(n.Dir, "containerd.sock") }

// startContainerd writes the CNI and containerd configuration, starts containerd, and imports the images.
func (n *Node) startContainerd(ctx context.Context) error {
	cni := filepath.Join(n.Dir, "cni")
	if err := os.MkdirAll(cni, 0o755); err != nil {
		return err
	}
	// The bridge CNI: both families, the bridge as the pods' gateway, and no masquerade (pods reach only
	// this machine's addresses).
	conflist := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "kubeenv",
  "plugins": [{
    "type": "bridge", "bridge": %q, "isGateway": true, "isDefaultGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q}], [{"subnet": %q}]]}
  }]
}
`, nodeBridge, filepath.Join(n.Dir, "ipam"), PodCIDRv4, PodCIDRv6)
	if err := os.WriteFile(filepath.Join(cni, "10-kubeenv.conflist"), []byte(conflist), 0o644); err != nil {
		return err
	}
	runc, err := exec.LookPath("runc")
	if err != nil {
		return err
	}
	config := fmt.Sprintf(`version = 3
root = %q
state = %q
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %q

[ttrpc]
  address = %q

[debug]
  address = ""

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %q

[plugins.'io.containerd.cri.v1.runtime']
  disable_apparmor = true
  # No lower OOM score than containerd's own: a machine may withhold CAP_SYS_RESOURCE, so that the -998
  # of a pod sandbox (and the -997 of a Guaranteed pod) cannot be written.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = %q
      SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = %q

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`, filepath.Join(n.Dir, "containerd", "root"), filepath.Join(n.Dir, "containerd", "state"),
		n.containerdSocket(), n.containerdSocket()+".ttrpc", PauseImage, runc, cni)
	cfgPath := filepath.Join(n.Dir, "containerd.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		return err
	}
	p, err := spawnProc(n.Dir, n.cluster.Name, "containerd", n.detached,
		[]string{"PATH=" + n.bins.Dir() + ":" + os.Getenv("PATH")}, n.bins.Containerd, "--config="+cfgPath)
	if err != nil {
		return err
	}
	n.procs = append(n.procs, p)
	if err := n.waitSocket(ctx, p); err != nil {
		return err
	}
	for _, file := range []string{"pause.tar", "probe.tar"} {
		out, err := exec.CommandContext(ctx, n.bins.Ctr, "--address", n.containerdSocket(), "--namespace", "k8s.io",
			"images", "import", "--no-unpack", filepath.Join(n.Dir, "images", file)).CombinedOutput()
		if err != nil {
			return fmt.Errorf("node %s: importing %s into containerd: %w\n%s", n.Name, file, err, out)
		}
	}
	return nil
}

// waitSocket waits for containerd's socket to accept (nothing to watch before it listens).
func (n *Node) waitSocket(ctx context.Context, p *proc) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if conn, err := net.Dial("unix", n.containerdSocket()); err == nil {
			_ = conn.Close()
			return nil
		}
		select {
		case <-p.done:
			return n.failed(p, "exited")
		case <-ctx.Done():
			return n.failed(p, "did not listen in 60s")
		case <-tick.C:
		}
	}
}

// startKubelet writes the kubelet's credentials and configuration, starts it, and waits for the Node to be
// Ready. The kubelet authenticates the API server by the cluster CA and asks it (webhook) whether a caller
// may exec, attach, port-forward or read logs; the API server calls it with its kubelet client certificate.
func (n *Node) startKubelet(ctx context.Context) error {
	kubeletDir := filepath.Join(n.Dir, "kubelet")
	if err := os.MkdirAll(kubeletDir, 0o700); err != nil {
		return err
	}
	c := n.cluster
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthority: c.CAFile}
	cfg.AuthInfos["node"] = &clientcmdapi.AuthInfo{ClientCertificate: filepath.Join(c.Dir, "node.crt"), ClientKey: filepath.Join(c.Dir, "node.key")}
	cfg.Contexts["node"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "node"}
	cfg.CurrentContext = "node"
	kubeconfig := filepath.Join(n.Dir, "kubelet.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		return err
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %d
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%s
podLogsDir: %q
resolvConf: ""
enableServer: true
registerNode: true
maxPods: 50
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
nodeStatusReportFrequency: 10s
oomScoreAdj: 0
`, NodeIPv4, ports[0], c.CAFile, n.containerdSocket(), filepath.Join(n.Dir, "pod-logs"))
	cfgPath := filepath.Join(n.Dir, "kubelet.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		return err
	}
	p, err := n.spawn("kubelet", n.bins.Kubelet, "--config="+cfgPath, "--kubeconfig="+kubeconfig,
		"--root-dir="+kubeletDir, "--cert-dir="+filepath.Join(kubeletDir, "pki"),
		"--hostname-override="+n.Name, "--node-ip="+NodeIPv4+","+NodeIPv6)
	if err != nil {
		return err
	}
	return n.waitReady(ctx, p)
}

// waitReady watches the Node until its Ready condition is True.
func (n *Node) waitReady(ctx context.Context, kubelet *proc) error {
	cs, err := kubernetes.NewForConfig(n.cluster.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	sel := fields.OneTermEqualSelector("metadata.name", n.Name).String()
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return err
	}
	for i := range list.Items {
		if nodeReady(&list.Items[i]) {
			return nil
		}
	}
	w, err := cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return n.failed(kubelet, "watch of its Node closed before it was Ready")
			}
			if node, ok := ev.Object.(*corev1.Node); ok && ev.Type != watch.Deleted && nodeReady(node) {
				return nil
			}
		case <-kubelet.done:
			return n.failed(kubelet, "exited")
		case <-n.procs[0].done:
			return n.failed(n.procs[0], "exited")
		case <-ctx.Done():
			return n.failed(kubelet, "did not make its Node Ready in 120s")
		}
	}
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WaitNoContainers waits until containerd on the node holds no container of a pod in namespace: the
// kubelet has killed and removed what ran there. It polls containerd (every 200 ms, within 60 s).
func (n *Node) WaitNoContainers(ctx context.Context, namespace string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	filter := fmt.Sprintf(`labels."io.kubernetes.pod.namespace"==%s`, namespace)
	var out []byte
	for {
		var err error
		out, err = exec.CommandContext(ctx, n.bins.Ctr, "--address", n.containerdSocket(), "--namespace", "k8s.io",
			"containers", "list", "--quiet", filter).Output()
		if err == nil && strings.TrimSpace(string(out)) == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s still holds containers of namespace %s after 60s: %s", n.Name, namespace, strings.Fields(string(out)))
		case <-tick.C:
		}
	}
}

// BindLocal adds addresses (IPv4 or IPv6, without a prefix length) to the node's link NodeLink, so that a pod
// reaching one reaches this machine; the returned function removes them again.
func (n *Node) BindLocal(addrs ...string) (func(), error) {
	var added []string
	remove := func() {
		for _, a := range added {
			_ = exec.Command("ip", "addr", "del", a, "dev", NodeLink).Run()
		}
	}
	for _, a := range addrs {
		ip := net.ParseIP(a)
		if ip == nil {
			remove()
			return nil, fmt.Errorf("BindLocal: %q is not an IP address", a)
		}
		cidr := a + "/32"
		args := []string{"addr", "add", cidr, "dev", NodeLink}
		if ip.To4() == nil {
			cidr = a + "/128"
			args = []string{"addr", "add", cidr, "dev", NodeLink, "nodad"}
		}
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			remove()
			return nil, fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
		added = append(added, cidr)
	}
	return remove, nil
}

// Stop stops the node's programs, kills its pods, and removes what it set up on the machine (mounts,
// links, cgroups, kube-router's rules and sets, the kernel settings it changed). Safe to call more than once.
func (n *Node) Stop() {
	for i := len(n.procs) - 1; i >= 0; i-- {
		stopProc(n.procs[i])
	}
	n.procs = nil
	cleanupHost(n.bins, n.log)
	for key, value := range n.sysctls {
		_ = writeSysctl(key, value)
	}
	n.sysctls = nil
	if n.unlock != nil {
		n.unlock()
		n.unlock = nil
	}
	if n.cluster != nil && n.cluster.node == n {
		n.cluster.node = nil
	}
}

func stopProc(p *proc) {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// setupKernel loads the modules a node needs and sets the kernel's forwarding and bridge filtering,
// returning the values it changed, for Stop to put back.
func setupKernel() (map[string]string, error) {
	filesystems, _ := os.ReadFile("/proc/filesystems")
	present := map[string]bool{ // built in or loaded
		"br_netfilter": dirExists("/proc/sys/net/bridge"),
		"overlay":      strings.Contains(string(filesystems), "\toverlay\n"),
	}
	for mod, ok := range present {
		if !ok {
			if out, err := exec.Command("modprobe", mod).CombinedOutput(); err != nil {
				return nil, fmt.Errorf("a node needs the kernel module %s: modprobe %s: %w: %s", mod, mod, err, out)
			}
		}
	}
	want := map[string]string{
		"net/ipv4/ip_forward":                 "1",
		"net/ipv6/conf/all/forwarding":        "1",
		"net/bridge/bridge-nf-call-iptables":  "1",
		"net/bridge/bridge-nf-call-ip6tables": "1",
		// The kubelet sets these three itself (it expects them); Stop puts them back.
		"vm/overcommit_memory": "1",
		"kernel/panic":         "10",
		"kernel/panic_on_oops": "1",
	}
	changed := map[string]string{}
	for key, value := range want {
		old, err := os.ReadFile("/proc/sys/" + key)
		if err != nil {
			return changed, err
		}
		if strings.TrimSpace(string(old)) == value {
			continue
		}
		changed[key] = strings.TrimSpace(string(old))
		if err := writeSysctl(key, value); err != nil {
			return changed, err
		}
	}
	return changed, nil
}

func dirExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func writeSysctl(key, value string) error {
	return os.WriteFile("/proc/sys/"+key, []byte(value), 0o644)
}

// setupLink makes the link of the node's addresses.
func setupLink() error {
	steps := [][]string{
		{"link", "add", NodeLink, "type", "bridge"}, // a bridge with no ports: this kernel may lack dummy links
		{"addr", "add", NodeIPv4 + "/32", "dev", NodeLink},
		{"addr", "add", NodeIPv6 + "/128", "dev", NodeLink, "nodad"},
		{"link", "set", NodeLink, "up"},
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(s, " "), err, out)
		}
	}
	return nil
}

// cleanupHost removes what a node leaves on the machine, whether it stopped or was killed: its pods'
// processes (in the kubelet's cgroups) and containerd shims (our shim binary), its mounts, its links, its
// cgroups, kube-router's rules and sets. It is called with the node lock held.
func cleanupHost(bins NodeBinaries, log io.Writer) {
	killed := killCgroupProcs() + killByExe(bins.Shim) + killByExe(bins.Containerd) + killByExe(bins.Kubelet) + killByExe(bins.KubeRouter)
	if killed > 0 {
		fmt.Fprintf(log, "kubeenv: node: killed %d of its processes (pods, shims, daemons)\n", killed)
	}
	unmountBelow(nodeDirName)
	for _, link := range []string{NodeLink, nodeBridge} {
		if _, err := net.InterfaceByName(link); err == nil {
			_ = exec.Command("ip", "link", "del", link).Run()
		}
	}
	removeCgroups()
	_ = cleanupChains(nodeChains)
}

// cgroupHierarchies are the mounted cgroup v1 hierarchies (and the v2 one), where the kubelet makes
// kubepods.
func cgroupHierarchies() []string {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*")
	dirs = append(dirs, "/sys/fs/cgroup")
	return dirs
}

// killCgroupProcs kills every process in a kubepods cgroup and returns how many.
func killCgroupProcs() int {
	killed := 0
	for _, h := range cgroupHierarchies() {
		_ = filepath.WalkDir(filepath.Join(h, "kubepods"), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
					killed++
				}
			}
			return nil
		})
	}
	return killed
}

// killByExe kills the processes running the binary at path (the node's own, from the build cache) and
// waits for them to be gone.
func killByExe(path string) int {
	if path == "" {
		return 0
	}
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == path {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				pids = append(pids, pid)
			}
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return len(pids)
}

// unmountBelow detaches every mount whose path has a directory named marker, deepest first.
func unmountBelow(marker string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.Contains(f[4], "/"+marker+"/") {
			points = append(points, f[4])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		_ = syscall.Unmount(points[i], syscall.MNT_DETACH)
	}
}

// removeCgroups removes the kubelet's kubepods cgroups, deepest first (empty by now).
func removeCgroups() {
	for _, h := range cgroupHierarchies() {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, "kubepods"), func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = os.Remove(dirs[i])
		}
	}
}

// ensurePackages installs from Debian's packages what a node runs and does not build: runc, the CNI
// plugins, iptables and ipset (kube-router's). It says what it installs; it fails where it cannot.
func ensurePackages(ctx context.Context, log io.Writer) error {
	need := map[string]string{ // a file each package installs -> the package
		"runc":                "runc",
		"/usr/lib/cni/bridge": "containernetworking-plugins",
		"iptables":            "iptables",
		"ip6tables":           "iptables",
		"ipset":               "ipset",
		"ip":                  "iproute2",
	}
	var missing []string
	seen := map[string]bool{}
	for file, pkg := range need {
		var err error
		if filepath.IsAbs(file) {
			_, err = os.Stat(file)
		} else {
			_, err = exec.LookPath(file)
		}
		if err != nil && !seen[pkg] {
			seen[pkg] = true
			missing = append(missing, pkg)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("a node needs %s, missing here, and this machine has no apt-get to install them", strings.Join(missing, ", "))
	}
	cache, err := CacheDir()
	if err != nil {
		return err
	}
	unlock, err := lockFile(ctx, filepath.Join(cache, "apt.lock"), log)
	if err != nil {
		return err
	}
	defer unlock()
	fmt.Fprintf(log, "kubeenv: installing %s from Debian's packages (missing on this machine)\n", strings.Join(missing, ", "))
	install := append([]string{"install", "-y", "-q", "--no-install-recommends"}, missing...)
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	for _, args := range [][]string{{"update", "-q"}, install} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %w\n%s", strings.Join(args, " "), err, tail(string(out), 15))
		}
	}
	return nil
}

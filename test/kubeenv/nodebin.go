package kubeenv

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// NodeBinaries are the programs of a cluster's node: built from the Go module proxy once per machine, like
// the control plane, but only when a test or the demo starts a node (see StartNode).
type NodeBinaries struct {
	Kubelet    string
	Scheduler  string
	Containerd string
	Shim       string // containerd-shim-runc-v2, found by containerd on its PATH
	Ctr        string // imports the node's images
	KubeRouter string // the NetworkPolicy engine: kube-router with its firewall alone
}

// Dir is the directory holding the node's binaries (containerd finds its shim there).
func (b NodeBinaries) Dir() string { return filepath.Dir(b.Kubelet) }

// nodeModule is a tools module under hack/tools and the version of the one module it builds from.
type nodeModule struct{ dir, module string }

var (
	containerdModule = nodeModule{"containerd", "github.com/containerd/containerd/v2"}
	kubeRouterModule = nodeModule{"kube-router", "github.com/cloudnativelabs/kube-router/v2"}
)

// version reads the module's required version from the tools module's go.mod.
func (m nodeModule) version(toolsRoot string) (string, error) {
	data, err := os.ReadFile(filepath.Join(toolsRoot, m.dir, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == m.module {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("hack/tools/%s/go.mod requires no %s", m.dir, m.module)
}

// EnsureNodeBinaries returns the node's cached binaries, building them first if the cache lacks them. The
// cache directory is named after every version it holds, so a change to any of them builds anew, and the
// control plane's cache (EnsureBinaries) is left as it is.
func EnsureNodeBinaries(ctx context.Context, log io.Writer) (NodeBinaries, error) {
	bins, l, err := nodeBinaries()
	if err != nil {
		return NodeBinaries{}, err
	}
	return bins, buildCached(ctx, l.cache, l.dir, l.key, l.builds, log)
}

// nodeLayout is where the node's binaries are cached and how each is built.
type nodeLayout struct {
	cache, dir, key string
	builds          []goBuild
}

// nodeBinaries names the node's binaries in the cache without building them.
func nodeBinaries() (NodeBinaries, nodeLayout, error) {
	var l nodeLayout
	cache, err := CacheDir()
	if err != nil {
		return NodeBinaries{}, l, err
	}
	kubeTools, err := toolsModuleDir()
	if err != nil {
		return NodeBinaries{}, l, err
	}
	root := filepath.Dir(kubeTools)
	ctrdVersion, err := containerdModule.version(root)
	if err != nil {
		return NodeBinaries{}, l, err
	}
	routerVersion, err := kubeRouterModule.version(root)
	if err != nil {
		return NodeBinaries{}, l, err
	}
	key := fmt.Sprintf("node-%s-containerd-%s-kube-router-%s", KubeVersion, ctrdVersion, routerVersion)
	dir := filepath.Join(cache, key)
	bins := NodeBinaries{
		Kubelet:    filepath.Join(dir, "kubelet"),
		Scheduler:  filepath.Join(dir, "kube-scheduler"),
		Containerd: filepath.Join(dir, "containerd"),
		Shim:       filepath.Join(dir, "containerd-shim-runc-v2"),
		Ctr:        filepath.Join(dir, "ctr"),
		KubeRouter: filepath.Join(dir, "kube-router"),
	}
	static := []string{"CGO_ENABLED=0"}
	ctrdFlags := "-s -w -X github.com/containerd/containerd/v2/version.Version=" + ctrdVersion
	builds := []goBuild{
		{dir: kubeTools, pkg: "k8s.io/kubernetes/cmd/kubelet", out: bins.Kubelet, ldflags: kubeLDFlags()},
		{dir: kubeTools, pkg: "k8s.io/kubernetes/cmd/kube-scheduler", out: bins.Scheduler, ldflags: kubeLDFlags()},
		// Without cgo: the snapshotters that need it (btrfs, devmapper, zfs) are left out; the node uses overlayfs.
		{dir: filepath.Join(root, containerdModule.dir), pkg: containerdModule.module + "/cmd/containerd", out: bins.Containerd,
			ldflags: ctrdFlags, tags: "no_btrfs no_devmapper no_zfs", env: static},
		{dir: filepath.Join(root, containerdModule.dir), pkg: containerdModule.module + "/cmd/containerd-shim-runc-v2", out: bins.Shim,
			ldflags: ctrdFlags, env: static},
		{dir: filepath.Join(root, containerdModule.dir), pkg: containerdModule.module + "/cmd/ctr", out: bins.Ctr,
			ldflags: ctrdFlags, env: static},
		{dir: filepath.Join(root, kubeRouterModule.dir), pkg: kubeRouterModule.module + "/cmd/kube-router", out: bins.KubeRouter,
			ldflags: "-s -w -X " + kubeRouterModule.module + "/pkg/version.Version=" + routerVersion, env: static},
	}
	return bins, nodeLayout{cache: cache, dir: dir, key: key, builds: builds}, nil
}

// buildProbe builds the probe of the node's images (test/kubeenv/probe) into out: static, for this machine's
// architecture. It is this repository's code, so it is built for each node (seconds, from the build cache).
func buildProbe(ctx context.Context, out string, log io.Writer) error {
	kubeTools, err := toolsModuleDir()
	if err != nil {
		return err
	}
	probe := goBuild{dir: filepath.Dir(filepath.Dir(filepath.Dir(kubeTools))), pkg: "./test/kubeenv/probe", out: out,
		ldflags: "-s -w", env: []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + runtime.GOARCH}}
	return probe.run(ctx, log, time.Now())
}

// buildCached runs builds (whose outputs lie in dir) once per machine: under a file lock, into a temporary
// directory renamed to dir when all succeeded, marked complete by a stamp file.
func buildCached(ctx context.Context, cache, dir, key string, builds []goBuild, log io.Writer) error {
	stamp := filepath.Join(dir, ".complete")
	if _, err := os.Stat(stamp); err == nil {
		return nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	unlock, err := lockFile(ctx, filepath.Join(cache, key+".lock"), log)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(stamp); err == nil { // another process built them while we waited
		return nil
	}
	tmp, err := os.MkdirTemp(cache, "build-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	var names []string
	for _, b := range builds {
		names = append(names, filepath.Base(b.out))
	}
	fmt.Fprintf(log, "kubeenv: building %s from the Go module proxy into %s\n", strings.Join(names, ", "), dir)
	fmt.Fprintf(log, "kubeenv: this happens once per machine and takes several minutes on 2 cores\n")
	for _, b := range builds {
		b.out = filepath.Join(tmp, filepath.Base(b.out))
		if err := b.run(ctx, log, start); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	if err := os.WriteFile(stamp, []byte(key+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(log, "kubeenv: built in %s\n", time.Since(start).Round(time.Second))
	return nil
}

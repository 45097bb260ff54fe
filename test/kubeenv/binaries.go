// Package kubeenv builds and runs real, throwaway Kubernetes control planes (etcd, kube-apiserver and
// kube-controller-manager) on loopback, for the end-to-end tests and the demo.
//
// The binaries are built once per Kubernetes version from the Go module proxy, through the separate tools
// module in hack/tools/kube, and cached outside the repository.
package kubeenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// KubeVersion is the Kubernetes release the local clusters run. It must match hack/tools/kube/go.mod.
const KubeVersion = "v1.37.2"

// Binaries are the absolute paths of the control-plane programs.
type Binaries struct {
	Etcd              string
	APIServer         string
	ControllerManager string
	Kubectl           string
}

// Dir is the directory holding all binaries, for PATH.
func (b Binaries) Dir() string { return filepath.Dir(b.APIServer) }

// CacheDir is where built binaries live: $KUBEENV_CACHE_DIR, else <user cache dir>/kubectl-federate (or a
// per-user directory under the temporary directory when there is no home).
func CacheDir() (string, error) {
	if d := os.Getenv("KUBEENV_CACHE_DIR"); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir()
	if err != nil { // no $HOME: still cache, per user, in the temporary directory
		return filepath.Join(os.TempDir(), fmt.Sprintf("kubectl-federate-cache-%d", os.Getuid())), nil
	}
	return filepath.Join(d, "kubectl-federate"), nil
}

// component is one binary of the tools module: its output name and Go package.
type component struct{ name, pkg string }

var components = []component{
	{"etcd", "go.etcd.io/etcd/server/v3"},
	{"kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver"},
	{"kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager"},
	{"kubectl", "k8s.io/kubernetes/cmd/kubectl"},
}

// EnsureBinaries returns the cached binaries for KubeVersion, building them first if the cache lacks them.
// Progress of a build goes to log. Concurrent callers (parallel test binaries) wait on a file lock so the
// build happens once.
func EnsureBinaries(ctx context.Context, log io.Writer) (Binaries, error) {
	cache, err := CacheDir()
	if err != nil {
		return Binaries{}, err
	}
	dir := filepath.Join(cache, "kube-"+KubeVersion)
	bins := Binaries{
		Etcd:              filepath.Join(dir, "etcd"),
		APIServer:         filepath.Join(dir, "kube-apiserver"),
		ControllerManager: filepath.Join(dir, "kube-controller-manager"),
		Kubectl:           filepath.Join(dir, "kubectl"),
	}
	stamp := filepath.Join(dir, ".complete")
	if _, err := os.Stat(stamp); err == nil {
		return bins, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return Binaries{}, err
	}
	unlock, err := lockFile(ctx, filepath.Join(cache, "kube-"+KubeVersion+".lock"), log)
	if err != nil {
		return Binaries{}, err
	}
	defer unlock()
	if _, err := os.Stat(stamp); err == nil { // another process built it while we waited
		return bins, nil
	}
	toolsDir, err := toolsModuleDir()
	if err != nil {
		return Binaries{}, err
	}
	tmp, err := os.MkdirTemp(cache, "build-*")
	if err != nil {
		return Binaries{}, err
	}
	defer os.RemoveAll(tmp)

	ldflags := kubeLDFlags()
	start := time.Now()
	fmt.Fprintf(log, "kubeenv: building etcd, kube-apiserver, kube-controller-manager and kubectl %s from the Go module proxy into %s\n", KubeVersion, dir)
	fmt.Fprintf(log, "kubeenv: this happens once per machine and takes about 13 minutes on 2 idle cores (longer when they are busy)\n")
	for _, c := range components {
		b := goBuild{dir: toolsDir, pkg: c.pkg, out: filepath.Join(tmp, c.name), ldflags: ldflags}
		if err := b.run(ctx, log, start); err != nil {
			return Binaries{}, err
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return Binaries{}, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return Binaries{}, err
	}
	if err := os.WriteFile(stamp, []byte(KubeVersion+"\n"), 0o644); err != nil {
		return Binaries{}, err
	}
	fmt.Fprintf(log, "kubeenv: built in %s\n", time.Since(start).Round(time.Second))
	return bins, nil
}

// kubeLDFlags stamps the Kubernetes version into a binary: without it the servers report
// v0.0.0-master+$Format:%H$, which breaks kubectl version and client-side version checks.
func kubeLDFlags() string {
	minor := strings.Split(strings.TrimPrefix(KubeVersion, "v"), ".")[1]
	return strings.Join([]string{
		"-s", "-w",
		"-X", "k8s.io/component-base/version.gitVersion=" + KubeVersion,
		"-X", "k8s.io/component-base/version.gitMajor=1",
		"-X", "k8s.io/component-base/version.gitMinor=" + minor,
		"-X", "k8s.io/component-base/version.gitTreeState=clean",
		"-X", "k8s.io/client-go/pkg/version.gitVersion=" + KubeVersion,
	}, " ")
}

// goBuild is one `go build` in a tools module: the package, where the binary goes, and how it is built.
type goBuild struct {
	dir, pkg, out, ldflags string
	tags                   string   // -tags, if any
	env                    []string // added to the environment (CGO_ENABLED=0 for a static binary)
}

func (b goBuild) run(ctx context.Context, log io.Writer, start time.Time) error {
	args := []string{"build", "-trimpath", "-ldflags", b.ldflags, "-o", b.out}
	if b.tags != "" {
		args = append(args, "-tags", b.tags)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, b.pkg)...)
	cmd.Dir = b.dir
	cmd.Env = append(os.Environ(), b.env...)
	var output strings.Builder
	cmd.Stdout = &output
	cmd.Stderr = &output
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("go build %s: %w", b.pkg, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	fmt.Fprintf(log, "kubeenv: building %s ...\n", filepath.Base(b.out))
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("go build %s: %w\n%s", b.pkg, err, tail(output.String(), 30))
			}
			return nil
		case <-tick.C:
			fmt.Fprintf(log, "kubeenv: still building %s (%s elapsed)\n", filepath.Base(b.out), time.Since(start).Round(time.Second))
		}
	}
}

// toolsModuleDir finds hack/tools/kube by walking up from the working directory.
func toolsModuleDir() (string, error) {
	if d := os.Getenv("KUBEENV_TOOLS_DIR"); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		candidate := filepath.Join(d, "hack", "tools", "kube")
		if _, err := os.Stat(filepath.Join(candidate, "go.mod")); err == nil {
			return candidate, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("hack/tools/kube/go.mod not found above the working directory (set KUBEENV_TOOLS_DIR)")
		}
	}
}

// lockFile takes an exclusive flock on path, waiting (and saying so) while another process holds it.
func lockFile(ctx context.Context, path string, log io.Writer) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		fmt.Fprintf(log, "kubeenv: another process is building the binaries; waiting for it\n")
		locked := make(chan error, 1)
		go func() { locked <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
		select {
		case err := <-locked:
			if err != nil {
				f.Close()
				return nil, err
			}
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		}
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Command bench measures kubectl federate on throwaway local control planes and writes one table to
// docs/benchmarks.md with the machine it ran on (make bench). The issue's targets are in the table; nothing
// here is asserted: wall times depend on the machine, so they are measured here and never in tests.
package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// oneWay is the latency the proxy adds in each direction: a 50 ms round trip.
const oneWay = 25 * time.Millisecond

type row struct{ what, value, target, met string }

func main() {
	out := flag.String("out", "docs/benchmarks.md", "where to write the table")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	ctx := context.Background()
	// Startup first, with no control plane running to compete for the CPU.
	bins, err := kubeenv.EnsureBinaries(ctx, io.Discard)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "federate-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	pluginBin, err := kubeenv.PluginBinary(tmp)
	if err != nil {
		return err
	}
	ours, theirs := startups(pluginBin, bins.Kubectl)
	fi, err := os.Stat(pluginBin)
	if err != nil {
		return err
	}
	// Each part runs on just the control planes it needs, so that idle ones do not take the CPU from
	// what is measured (7 control planes on 2 cores would).
	b := &bench{bin: pluginBin, dir: tmp}
	var rows []row

	// 1. First pairing and renewal, locally, then the same through a proxy adding 25 ms each way.
	if err := b.phase([]string{"m1", "m2"}, func(clusters []*kubeenv.Cluster) error {
		first := b.federate("authenticate", "--kubeconfig", clusters[0].Kubeconfig, "--remote-kubeconfig", clusters[1].Kubeconfig,
			"--cluster-id", "m1", "--remote-cluster-id", "m2")
		var renewals []result
		for range 5 {
			renewals = append(renewals, b.federate("authenticate", "--kubeconfig", clusters[0].Kubeconfig, "--remote-kubeconfig", clusters[1].Kubeconfig))
		}
		renew := median(renewals)
		rows = append(rows,
			row{"`authenticate`, first pairing (local, initializing both clusters)", first.String(), "", ""},
			row{"`authenticate`, renewal (local, median of 5)", renew.String(), "≤ 0.5 s, ≤ 40 requests per cluster", met(renew.wall <= 500*time.Millisecond && renew.consumer <= 40 && renew.provider <= 40)},
		)
		// Unpaired again, the two (initialized) clusters pair through the slow link: a first pairing.
		b.federate("unauthenticate", "--kubeconfig", clusters[0].Kubeconfig, "--remote-kubeconfig", clusters[1].Kubeconfig)
		pc, err := b.proxied(clusters[0])
		if err != nil {
			return err
		}
		pp, err := b.proxied(clusters[1])
		if err != nil {
			return err
		}
		slowFirst := b.federate("authenticate", "--kubeconfig", pc, "--remote-kubeconfig", pp)
		var slowRenewals []result
		for range 3 {
			slowRenewals = append(slowRenewals, b.federate("authenticate", "--kubeconfig", pc, "--remote-kubeconfig", pp))
		}
		slowRenew := median(slowRenewals)
		rt := func(r result) float64 { return r.wall.Seconds() / (2 * oneWay).Seconds() }
		rows = append(rows,
			row{"first pairing through a 50 ms round-trip link (both clusters initialized)", fmt.Sprintf("%s = %.0f round trips", slowFirst.wall.Round(10*time.Millisecond), rt(slowFirst)), "≤ 15 round trips", met(rt(slowFirst) <= 15)},
			row{"renewal through a 50 ms round-trip link (median of 3)", fmt.Sprintf("%s = %.0f round trips", slowRenew.wall.Round(10*time.Millisecond), rt(slowRenew)), "≤ 12 round trips", met(rt(slowRenew) <= 12)},
		)
		return nil
	}); err != nil {
		return err
	}

	// 2. A mesh of six clusters: 30 directed pairs.
	names := []string{"m1", "m2", "m3", "m4", "m5", "m6"}
	if err := b.phase(names, func(clusters []*kubeenv.Cluster) error {
		var files []string
		for i, c := range clusters {
			files = append(files, c.Kubeconfig)
			b.federate("init", "--kubeconfig", c.Kubeconfig, "--cluster-id", names[i])
		}
		meshRun := b.federate("mesh", "--kubeconfigs", strings.Join(files, ","), "--parallel", "8")
		paired := strings.Count(meshRun.stdout, " paired ")
		rows = append(rows, row{"`mesh` of 6 clusters (30 directed pairs, --parallel 8)", fmt.Sprintf("%s (%d paired)", meshRun.wall.Round(10*time.Millisecond), paired), "≤ 10 s", met(meshRun.wall <= 10*time.Second && paired == 30)})
		return nil
	}); err != nil {
		return err
	}

	// 3. The 1st and the 100th tenant's issuance on one provider, in process (100 consumers signed here),
	// then status over those 100 pairings.
	if err := b.phase([]string{"p100"}, func(clusters []*kubeenv.Cluster) error {
		firstT, hundredth, err := b.hundredTenants(ctx, clusters[0])
		if err != nil {
			return err
		}
		ratio := hundredth.Seconds() / firstT.Seconds()
		rows = append(rows, row{"issuance of the 1st and the 100th tenant on one provider", fmt.Sprintf("%s, %s (%.2f×)", firstT.Round(time.Millisecond), hundredth.Round(time.Millisecond), ratio), "100th ≤ 1.2× the 1st", met(ratio <= 1.2)})
		var statuses []result
		for range 5 {
			statuses = append(statuses, b.federate("status", "--kubeconfig", clusters[0].Kubeconfig, "-o", "json"))
		}
		st := median(statuses)
		rows = append(rows, row{"`status` over 100 pairings (median of 5)", st.wall.Round(time.Millisecond).String(), "< 1 s", met(st.wall < time.Second)})
		return nil
	}); err != nil {
		return err
	}

	// 6. Startup (measured first) and size.
	rows = append(rows,
		row{"`--help` startup (median of 30, interleaved) beside kubectl's", fmt.Sprintf("%s vs %s (%.2f×)", ours.Round(100*time.Microsecond), theirs.Round(100*time.Microsecond), ours.Seconds()/theirs.Seconds()), "≤ 0.3× kubectl's", met(ours.Seconds() <= 0.3*theirs.Seconds())},
		row{"binary size", fmt.Sprintf("%.1f MB", float64(fi.Size())/1e6), "≤ 50 MB", met(fi.Size() <= 50e6)},
	)
	return write(out, rows)
}

type bench struct{ bin, dir string }

// phase starts the named control planes, runs fn on them and stops them.
func (b *bench) phase(names []string, fn func([]*kubeenv.Cluster) error) error {
	fmt.Fprintf(os.Stderr, "bench: starting %d local control planes\n", len(names))
	clusters, _, stop, err := kubeenv.StartForTests(names...)
	if err != nil {
		return err
	}
	defer stop()
	return fn(clusters)
}

type result struct {
	wall               time.Duration
	consumer, provider int
	stdout             string
}

func (r result) String() string {
	if r.consumer == 0 && r.provider == 0 {
		return r.wall.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%s, %d + %d requests", r.wall.Round(time.Millisecond), r.consumer, r.provider)
}

var doneLine = regexp.MustCompile(`Done in \S+ with (\d+) API requests to the consumer and (\d+) to the provider`)

// federate runs the plugin and measures it; a failure ends the benchmark.
func (b *bench) federate(args ...string) result {
	cmd := exec.Command(b.bin, args...)
	cmd.Env = []string{"HOME=" + b.dir, "NO_COLOR=1", "PATH=/usr/bin:/bin"}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{wall: time.Since(start), stdout: stdout.String()}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: kubectl-federate %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		os.Exit(1)
	}
	if m := doneLine.FindStringSubmatch(stderr.String()); m != nil {
		r.consumer, _ = strconv.Atoi(m[1])
		r.provider, _ = strconv.Atoi(m[2])
	}
	fmt.Fprintf(os.Stderr, "bench: %s: %s\n", strings.Join(args[:min(2, len(args))], " "), r)
	return r
}

func median(rs []result) result {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b result) int { return int(a.wall - b.wall) })
	return s[len(s)/2]
}

// proxied returns a kubeconfig for c that goes through a local TCP proxy adding oneWay in each direction.
func (b *bench) proxied(c *kubeenv.Cluster) (string, error) {
	u, err := url.Parse(c.Server)
	if err != nil {
		return "", err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = in.Close() }()
				up, err := net.Dial("tcp", u.Host)
				if err != nil {
					return
				}
				defer func() { _ = up.Close() }()
				var wg sync.WaitGroup
				wg.Add(2)
				go func() { defer wg.Done(); delayCopy(up, in) }()
				go func() { defer wg.Done(); delayCopy(in, up) }()
				wg.Wait()
			}()
		}
	}()
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		return "", err
	}
	for _, cl := range cfg.Clusters {
		cl.Server = "https://" + l.Addr().String()
	}
	path := filepath.Join(b.dir, c.Name+"-slow.kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// delayCopy copies src to dst, each chunk oneWay after it was read: a constant latency that does not
// slow a stream down (a delay line, not a sleep per chunk).
func delayCopy(dst io.WriteCloser, src io.Reader) {
	type chunk struct {
		data []byte
		at   time.Time
	}
	ch := make(chan chunk, 1024)
	go func() {
		defer close(ch)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				ch <- chunk{append([]byte(nil), buf[:n]...), time.Now().Add(oneWay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		time.Sleep(time.Until(c.at))
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

// hundredTenants issues identities to 100 consumers on one provider, as generate identity does, from
// requests signed here (each its own handshake key, nonce and CSR), and returns the 1st and the 100th
// issuance's wall time, each the median of its neighbourhood (1-10, 91-100) to damp noise.
func (b *bench) hundredTenants(ctx context.Context, p *kubeenv.Cluster) (time.Duration, time.Duration, error) {
	newCluster := func() (*handshake.Cluster, error) {
		kube, err := kubernetes.NewForConfig(p.Config)
		if err != nil {
			return nil, err
		}
		dyn, err := dynamic.NewForConfig(p.Config)
		if err != nil {
			return nil, err
		}
		return &handshake.Cluster{Kube: kube, Dynamic: dyn}, nil
	}
	c, err := newCluster()
	if err != nil {
		return 0, 0, err
	}
	self, err := c.Init(ctx, "p100")
	if err != nil {
		return 0, 0, err
	}
	var walls []time.Duration
	for i := 1; i <= 100; i++ {
		id := fmt.Sprintf("t%03d", i)
		c, err := newCluster() // a fresh process's view, as each generate identity has
		if err != nil {
			return 0, 0, err
		}
		n, _, err := c.CreateNonce(ctx, handshake.NonceOptions{ConsumerID: id, TTL: time.Hour})
		if err != nil {
			return 0, 0, err
		}
		key, err := handshake.NewClientKey("ecdsa-p256")
		if err != nil {
			return 0, 0, err
		}
		csr, err := handshake.NewCSR(handshake.ExpectedUser(id, n.Value), key)
		if err != nil {
			return 0, 0, err
		}
		der, err := handshake.DecodePEM("csr", csr, "CERTIFICATE REQUEST")
		if err != nil {
			return 0, 0, err
		}
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return 0, 0, err
		}
		tenant := &v1alpha1.Tenant{Spec: v1alpha1.TenantSpec{ClusterID: id, ProviderClusterID: self.ClusterID, PublicKey: pub, CSR: csr,
			Signature: handshake.Sign(priv, handshake.Message(self.ClusterID, id, n.Value, der, ""))}}
		start := time.Now()
		if _, err := c.IssueIdentity(ctx, handshake.IssueOptions{ConsumerID: id, Tenant: tenant, APIServer: p.Server}); err != nil {
			return 0, 0, fmt.Errorf("tenant %s: %w", id, err)
		}
		walls = append(walls, time.Since(start))
	}
	med := func(ws []time.Duration) time.Duration {
		s := slices.Clone(ws)
		slices.Sort(s)
		return s[len(s)/2]
	}
	return med(walls[:10]), med(walls[90:]), nil
}

// startup is the median wall time of 20 runs of bin with args.
// startups measures both binaries' `--help`, their runs interleaved (so that whatever else the machine
// does weighs on both alike) after a few unmeasured runs that bring each into the page cache, and returns
// the medians of 30.
func startups(ours, theirs string) (time.Duration, time.Duration) {
	run := func(bin string) time.Duration {
		cmd := exec.Command(bin, "--help")
		cmd.Env = []string{"HOME=" + os.TempDir(), "NO_COLOR=1"}
		start := time.Now()
		_ = cmd.Run()
		return time.Since(start)
	}
	for range 3 {
		run(ours)
		run(theirs)
	}
	var a, b []time.Duration
	for range 30 {
		a = append(a, run(ours))
		b = append(b, run(theirs))
	}
	med := func(ws []time.Duration) time.Duration {
		slices.Sort(ws)
		return ws[len(ws)/2]
	}
	return med(a), med(b)
}

func met(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func write(path string, rows []row) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmarks\n\nWritten by `make bench` (`go run ./hack/bench`), which starts local control planes (Kubernetes %s,\n", kubeenv.KubeVersion)
	fmt.Fprintf(&b, "`test/kubeenv`) and runs the plugin against them. Wall times depend on the machine; nothing here is\nasserted by a test.\n\n")
	fmt.Fprintf(&b, "Machine: %s, %d CPUs, %s, %s/%s, %s, %s.\n\n", cpuModel(), runtime.NumCPU(), memTotal(), runtime.GOOS, runtime.GOARCH, runtime.Version(), time.Now().UTC().Format("2006-01-02"))
	b.WriteString("| measure | value | target | met |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.what, r.value, r.target, r.met)
	}
	b.WriteString(`
How each is measured:
- requests are the command's own count (its closing "Done in ... with N API requests to the consumer and M to
  the provider" line); a renewal is authenticate run again on a paired couple;
- the slow link is a TCP proxy in front of each API server that delays every chunk by 25 ms in each direction
  (a delay line, so streams are not slowed further); round trips = wall time / 50 ms;
- the 100 tenants are issued in one process from requests signed there (each its own handshake key, nonce and
  CSR), each by a fresh client as a separate generate identity would be; 1st and 100th are the medians of
  issuances 1-10 and 91-100;
- status runs on that provider, 100 Tenants, -o json;
- --help is the median of 30 runs of each binary, interleaved, after 3 unmeasured runs each, before any
  control plane starts;
- each part runs on just the control planes it needs (2 for the pairings, 6 for the mesh, 1 for the 100
  tenants), started for it and stopped after; the slow first pairing is the same two clusters, unpaired
  again, so both are initialized and enforce their admission policies.
`)
	fmt.Print(b.String())
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func memTotal() string {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "memory unknown"
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.Atoi(f[1])
			return fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
		}
	}
	return "memory unknown"
}

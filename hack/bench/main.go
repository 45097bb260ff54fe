// Command bench measures kubectl federate on throwaway local control planes and writes its tables to
// docs/benchmarks.md with the machine it ran on (make bench). The issues' targets are in the tables;
// nothing here is asserted: wall times depend on the machine, so they are measured here and never in tests.
//
// -parts runs some parts only (startup, pairing, burst, tenants, verify, mesh) and prints their rows, leaving
// docs/benchmarks.md alone unless -out is given: the loop while working on one measure.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

type row struct{ what, value, target, met string }

type trace struct{ what, stderr string }

// rounds is a measure taken locally through the proxy twice: with no added delay and through the 50 ms link.
type rounds struct {
	what         string
	fast, slow   time.Duration // the medians of each
	diff         time.Duration // the median of the differences of runs made one after the other
	target       float64
	fastRequests string
}

func (r rounds) count() float64 { return r.diff.Seconds() / (2 * oneWay).Seconds() }

// pairedRuns runs fast and slow one after the other n times and returns both medians and the median of
// the differences: a run's local time (the API servers', this process's) moves by tens of milliseconds
// from run to run, and moves the two of a pair alike.
func pairedRuns(n int, fast, slow func() result) (result, result, time.Duration) {
	var fs, ss []result
	var diffs []time.Duration
	for range n {
		f, s := fast(), slow()
		fs, ss = append(fs, f), append(ss, s)
		diffs = append(diffs, s.wall-f.wall)
	}
	return median(fs), median(ss), medianDuration(diffs)
}

var allParts = []string{"startup", "pairing", "burst", "tenants", "verify", "mesh"}

func main() {
	out := flag.String("out", "", "where to write the tables (default: docs/benchmarks.md when every part runs, else nowhere)")
	parts := flag.String("parts", strings.Join(allParts, ","), "the parts to run: "+strings.Join(allParts, ", "))
	tenants := flag.Int("tenants", 1000, "how many tenants the tenants part issues on one provider")
	meshSize := flag.Int("mesh", 10, "how many clusters the mesh part pairs")
	hold := flag.Bool("hold", false, "keep the tenants part's provider up once its tenants are issued, printing its kubeconfig, until stdin is closed or a line is read (for profiling by hand)")
	verifyTenants := flag.Int("verify-tenants", 100, "how many tenants the verify part verifies on one provider")
	flag.Parse()
	chosen := strings.Split(*parts, ",")
	for _, p := range chosen {
		if !slices.Contains(allParts, p) {
			fmt.Fprintf(os.Stderr, "bench: -parts: unknown part %q (known: %s)\n", p, strings.Join(allParts, ", "))
			os.Exit(2)
		}
	}
	if *out == "" && len(chosen) == len(allParts) {
		*out = "docs/benchmarks.md"
	}
	b := &bench{tenants: *tenants, meshSize: *meshSize, verifyTenants: *verifyTenants, parts: chosen, hold: *hold}
	if err := b.run(chosen); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if err := b.write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type bench struct {
	bin, dir          string
	tenants, meshSize int
	kubectl           string
	hold              bool
	verifyTenants     int
	parts             []string
	rows              []row
	rounds            []rounds
	traces            []trace // runs through the slow link, FEDERATE_TRACE=1
	closers           []func() error
}

func (b *bench) run(parts []string) error {
	ctx := context.Background()
	bins, err := kubeenv.EnsureBinaries(ctx, io.Discard)
	if err != nil {
		return err
	}
	if b.dir, err = os.MkdirTemp("", "federate-bench-"); err != nil {
		return err
	}
	defer os.RemoveAll(b.dir)
	if b.bin, err = kubeenv.PluginBinary(b.dir); err != nil {
		return err
	}
	b.kubectl = bins.Kubectl
	do := map[string]func() error{
		// Startup first, with no control plane running to compete for the CPU.
		"startup": func() error { return b.startup(bins.Kubectl) },
		"pairing": b.pairing,
		"burst":   b.burst,
		"tenants": b.manyTenants,
		"verify":  b.verify,
		"mesh":    b.mesh,
	}
	for _, p := range allParts {
		if slices.Contains(parts, p) {
			if err := do[p](); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
	}
	return nil
}

// phase starts the named control planes, runs fn on them and stops them: each part runs on just the
// control planes it needs, so that idle ones do not take the CPU from what is measured.
func (b *bench) phase(names []string, fn func([]*kubeenv.Cluster) error) error {
	fmt.Fprintf(os.Stderr, "bench: starting %d local control planes\n", len(names))
	clusters, _, stop, err := kubeenv.StartForTests(names...)
	if err != nil {
		return err
	}
	defer stop()
	defer func() {
		for _, c := range b.closers {
			_ = c()
		}
		b.closers = nil
	}()
	return fn(clusters)
}

func (b *bench) startup(kubectl string) error {
	ours, theirs := startups(b.bin, kubectl)
	fi, err := os.Stat(b.bin)
	if err != nil {
		return err
	}
	b.rows = append(b.rows,
		row{"`--help` startup (median of 30, interleaved) beside kubectl's", fmt.Sprintf("%s vs %s (%.2f×)", ours.Round(100*time.Microsecond), theirs.Round(100*time.Microsecond), ours.Seconds()/theirs.Seconds()), "≤ 0.25× kubectl's", met(ours.Seconds() <= 0.25*theirs.Seconds())},
		row{"binary size (make build: -trimpath -ldflags -s -w, as dist builds)", fmt.Sprintf("%.1f MB", float64(fi.Size())/1e6), "≤ 40 MB", met(fi.Size() <= 40e6)},
	)
	return nil
}

// pairing: the first pairing and renewals locally; then the first pairing of the two (initialized)
// clusters and renewals through the proxy with no added delay and through the 50 ms link.
func (b *bench) pairing() error {
	// Never-initialized pairs, each on control planes of its own; the last is the one measured on below.
	fresh, err := b.freshPairs(4)
	if err != nil {
		return err
	}
	return b.phase([]string{"m1", "m2"}, func(cl []*kubeenv.Cluster) error {
		c, p := cl[0].Kubeconfig, cl[1].Kubeconfig
		fresh = append(fresh, b.federate(nil, "authenticate", "--kubeconfig", c, "--remote-kubeconfig", p, "--cluster-id", "m1", "--remote-cluster-id", "m2"))
		first := median(fresh)
		var all []time.Duration
		for _, r := range fresh {
			all = append(all, r.wall)
		}
		refresh, err := policyRefresh(context.Background(), cl[1], 8)
		if err != nil {
			return err
		}
		renew := b.median(5, "authenticate", "--kubeconfig", c, "--remote-kubeconfig", p)
		b.rows = append(b.rows,
			row{fmt.Sprintf("`authenticate`, first pairing of two never-initialized clusters (local, median of %d pairs, each on fresh control planes: %s)", len(fresh), durations(all)),
				first.String(), "≤ 1.3 s", met(first.wall <= 1300*time.Millisecond)},
			row{fmt.Sprintf("a new admission policy enforced after (the API server's policy refresh; median of %d: %s)", len(refresh), durations(refresh)),
				medianDuration(refresh).Round(10 * time.Millisecond).String(), "the floor of the row above", ""},
			row{"`authenticate`, renewal (local, median of 5)", renew.String(), "≤ 0.5 s, ≤ 40 requests per cluster", met(renew.wall <= 500*time.Millisecond && renew.consumer <= 40 && renew.provider <= 40)},
		)
		var fastC, fastP, slowC, slowP string
		for _, x := range []struct {
			to    *string
			c     *kubeenv.Cluster
			delay time.Duration
		}{{&fastC, cl[0], 0}, {&fastP, cl[1], 0}, {&slowC, cl[0], oneWay}, {&slowP, cl[1], oneWay}} {
			if *x.to, err = b.proxied(x.c, x.delay); err != nil {
				return err
			}
		}
		unpair := func() { b.federate(nil, "unauthenticate", "--kubeconfig", c, "--remote-kubeconfig", p) }
		// First pairings, each of the clusters unpaired again (both stay initialized), and renewals: each
		// without delay and through the link, one after the other.
		firstRun := func(kc, kp string) func() result {
			return func() result {
				unpair()
				return b.federate(nil, "authenticate", "--kubeconfig", kc, "--remote-kubeconfig", kp)
			}
		}
		renewal := func(kc, kp string) func() result {
			return func() result { return b.federate(nil, "authenticate", "--kubeconfig", kc, "--remote-kubeconfig", kp) }
		}
		fastFirst, slowFirst, firstDiff := pairedRuns(5, firstRun(fastC, fastP), firstRun(slowC, slowP))
		fastRenew, slowRenew, renewDiff := pairedRuns(9, renewal(fastC, fastP), renewal(slowC, slowP))
		b.traces = append(b.traces, trace{"One renewal", b.federate([]string{"FEDERATE_TRACE=1"}, "authenticate", "--kubeconfig", slowC, "--remote-kubeconfig", slowP).stderr})
		unpair()
		b.traces = append(b.traces, trace{"One first pairing of the two initialized clusters", b.federate([]string{"FEDERATE_TRACE=1"}, "authenticate", "--kubeconfig", slowC, "--remote-kubeconfig", slowP).stderr})
		b.rounds = append(b.rounds,
			rounds{"first pairing (both clusters initialized; 5 pairs of runs)", fastFirst.wall, slowFirst.wall, firstDiff, 6, fastFirst.requests()},
			rounds{"renewal (9 pairs of runs)", fastRenew.wall, slowRenew.wall, renewDiff, 4, fastRenew.requests()},
		)
		return nil
	})
}

// burst: 20 consumers issued at once by one provider.
func (b *bench) burst() error {
	ctx := context.Background()
	return b.phase([]string{"burst"}, func(cl []*kubeenv.Cluster) error {
		p, err := newProvider(ctx, cl[0])
		if err != nil {
			return err
		}
		wall, err := p.issueConcurrent(ctx, ids("b", 1, 20), 20)
		if err != nil {
			return err
		}
		b.rows = append(b.rows, row{"20 concurrent issuances on one provider (requests prepared first)", wall.Round(10 * time.Millisecond).String(), "≤ 7 s", met(wall <= 7*time.Second)})
		return nil
	})
}

// manyTenants: one provider with b.tenants tenants. The first and the last ten are issued one at a time
// and measured; those between are issued eight at a time, unmeasured, to get there.
func (b *bench) manyTenants() error {
	ctx := context.Background()
	n := b.tenants
	return b.phase([]string{"tenants"}, func(cl []*kubeenv.Cluster) error {
		p, err := newProvider(ctx, cl[0])
		if err != nil {
			return err
		}
		kc := cl[0].Kubeconfig
		first, err := p.issueSequential(ctx, ids("t", 1, 10))
		if err != nil {
			return err
		}
		revokeFew := b.revokes(kc, 3, 4, 5)
		hundredth := first
		if n >= 100 {
			if _, err := p.issueConcurrent(ctx, ids("t", 11, 90), 8); err != nil {
				return err
			}
			if hundredth, err = p.issueSequential(ctx, ids("t", 91, 100)); err != nil {
				return err
			}
		}
		last := hundredth
		if n > 100 {
			if _, err := p.issueConcurrent(ctx, ids("t", 101, n-10), 8); err != nil {
				return err
			}
			if last, err = p.issueSequential(ctx, ids("t", n-9, n)); err != nil {
				return err
			}
		}
		revokeMany := b.revokes(kc, n-5, n-4, n-3)
		if b.hold {
			fmt.Fprintf(os.Stderr, "bench: holding the provider with %d tenants: --kubeconfig %s (a line on stdin ends it)\n", n, kc)
			_, _ = fmt.Fscanln(os.Stdin)
		}
		st := b.median(5, "status", "--kubeconfig", kc, "-o", "json")
		table, kTable := b.paired(11, []string{"status", "--kubeconfig", kc}, []string{"get", "tenants", "-A", "--kubeconfig", kc})
		asJSON, kJSON := b.paired(11, []string{"status", "--kubeconfig", kc, "-o", "json"}, []string{"get", "tenants", "-A", "--kubeconfig", kc, "-o", "json"})
		f, h, l := medianDuration(first), medianDuration(hundredth), medianDuration(last)
		if n > 100 {
			b.rows = append(b.rows, row{fmt.Sprintf("issuance of the %dth tenant (median of the last 10) beside the 1st", n), fmt.Sprintf("%s (%.2f×)", l.Round(time.Millisecond), l.Seconds()/f.Seconds()), fmt.Sprintf("%dth ≤ 1.2× the 1st", n), met(l.Seconds() <= 1.2*f.Seconds())})
		}
		b.rows = append(b.rows,
			row{"issuance of the 1st and the 100th tenant on one provider (medians of 1-10, 91-100)", fmt.Sprintf("%s, %s (%.2f×)", f.Round(time.Millisecond), h.Round(time.Millisecond), h.Seconds()/f.Seconds()), "100th ≤ 1.2× the 1st", met(h.Seconds() <= 1.2*f.Seconds())},
			row{fmt.Sprintf("`status` over %d pairings (median of 5)", n), st.wall.Round(time.Millisecond).String(), "< 1 s", met(st.wall < time.Second)},
			row{fmt.Sprintf("`status` over %d pairings beside `kubectl get tenants -A` (medians of 11, interleaved)", n), ratio(table, kTable), "≤ 1.0× kubectl's", met(table <= kTable)},
			row{fmt.Sprintf("`status -o json` over %d pairings beside `kubectl get tenants -A -o json` (medians of 11, interleaved)", n), ratio(asJSON, kJSON), "≤ 1.0× kubectl's", met(asJSON <= kJSON)},
			row{fmt.Sprintf("`revoke` of one tenant among 10, and among %d (medians of 3)", n), fmt.Sprintf("%s, %d requests; %s, %d requests", revokeFew.wall.Round(time.Millisecond), revokeFew.traced(), revokeMany.wall.Round(time.Millisecond), revokeMany.traced()),
				"unaffected by the others (as many requests, ≤ 1.2× the time)", met(revokeMany.traced() <= revokeFew.traced() && revokeMany.wall.Seconds() <= 1.2*revokeFew.wall.Seconds())},
		)
		return nil
	})
}

// verify: b.verifyTenants tenants on one provider, then `verify` of them all: the escape corpus as each
// tenant, its bindings, its sandbox's objects.
func (b *bench) verify() error {
	ctx := context.Background()
	n := b.verifyTenants
	return b.phase([]string{"verify"}, func(cl []*kubeenv.Cluster) error {
		p, err := newProvider(ctx, cl[0])
		if err != nil {
			return err
		}
		if _, err := p.issueConcurrent(ctx, ids("v", 1, n), 8); err != nil {
			return err
		}
		r := b.median(3, "verify", "--kubeconfig", cl[0].Kubeconfig)
		rows := strings.Count(r.stdout, "\n") - 1
		b.rows = append(b.rows, row{fmt.Sprintf("`verify` of %d tenants, every check (%d rows; median of 3)", n, rows), r.wall.Round(time.Millisecond).String(),
			"seconds (≤ 10 s)", met(r.wall <= 10*time.Second)})
		return nil
	})
}

// revokes revokes the tenants numbered ns on the provider kc, one at a time, and returns the median run.
func (b *bench) revokes(kc string, ns ...int) result {
	var rs []result
	for _, n := range ns {
		rs = append(rs, b.federate([]string{"FEDERATE_TRACE=1"}, "revoke", "--kubeconfig", kc, "--remote-cluster-id", fmt.Sprintf("t%04d", n)))
	}
	return median(rs)
}

// mesh: b.meshSize clusters, every directed pair.
func (b *bench) mesh() error {
	var names []string
	for i := 1; i <= b.meshSize; i++ {
		names = append(names, fmt.Sprintf("m%d", i))
	}
	return b.phase(names, func(clusters []*kubeenv.Cluster) error {
		var files []string
		for i, c := range clusters {
			files = append(files, c.Kubeconfig)
			b.federate(nil, "init", "--kubeconfig", c.Kubeconfig, "--cluster-id", names[i])
		}
		pairs := len(names) * (len(names) - 1)
		run := b.federate(nil, "mesh", "--kubeconfigs", strings.Join(files, ","), "--parallel", "8")
		paired := strings.Count(run.stdout, " paired ")
		b.rows = append(b.rows, row{fmt.Sprintf("`mesh` of %d clusters (%d directed pairs, --parallel 8)", len(names), pairs), fmt.Sprintf("%s (%d paired)", run.wall.Round(10*time.Millisecond), paired), "≤ 20 s", met(run.wall <= 20*time.Second && paired == pairs)})
		return nil
	})
}

type result struct {
	wall               time.Duration
	consumer, provider int
	stdout, stderr     string
}

func (r result) String() string {
	if r.consumer == 0 && r.provider == 0 {
		return r.wall.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%s, %s requests", r.wall.Round(time.Millisecond), r.requests())
}

func (r result) requests() string { return fmt.Sprintf("%d + %d", r.consumer, r.provider) }

// traced is the number of API requests a run with FEDERATE_TRACE=1 made: one trace line each.
func (r result) traced() int {
	n := 0
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "trace ") {
			n++
		}
	}
	return n
}

var doneLine = regexp.MustCompile(`Done in \S+ with (\d+) API requests to the consumer and (\d+) to the provider`)

// federate runs the plugin with env added and measures it; a failure ends the benchmark.
func (b *bench) federate(env []string, args ...string) result {
	cmd := exec.Command(b.bin, args...)
	cmd.Env = append([]string{"HOME=" + b.dir, "NO_COLOR=1", "PATH=/usr/bin:/bin"}, env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{wall: time.Since(start), stdout: stdout.String(), stderr: stderr.String()}
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

// median runs the plugin n times and returns the run of median wall time.
func (b *bench) median(n int, args ...string) result {
	var rs []result
	for range n {
		rs = append(rs, b.federate(nil, args...))
	}
	return median(rs)
}

func median(rs []result) result {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b result) int { return int(a.wall - b.wall) })
	return s[len(s)/2]
}

// paired runs the plugin with ours and kubectl with theirs, n times each, interleaved (so that whatever
// else the machine does weighs on both alike), and returns the two medians.
func (b *bench) paired(n int, ours, theirs []string) (time.Duration, time.Duration) {
	var a, k []time.Duration
	for range n {
		a = append(a, b.federate(nil, ours...).wall)
		cmd := exec.Command(b.kubectl, theirs...)
		cmd.Env = []string{"HOME=" + b.dir, "NO_COLOR=1", "PATH=/usr/bin:/bin"}
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "bench: kubectl %s: %v\n%s", strings.Join(theirs, " "), err, out)
			os.Exit(1)
		}
		k = append(k, time.Since(start))
	}
	return medianDuration(a), medianDuration(k)
}

func ratio(ours, theirs time.Duration) string {
	return fmt.Sprintf("%s vs %s (%.2f×)", ours.Round(time.Millisecond), theirs.Round(time.Millisecond), ours.Seconds()/theirs.Seconds())
}

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
	return medianDuration(a), medianDuration(b)
}

func met(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

package linkcheck

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The plugin links no call that looks a method up by name: the linker's dead method elimination stays on.
func TestNoMethodLookupByNameIsLinked(t *testing.T) {
	if testing.Short() {
		t.Skip("links the plugin (seconds)")
	}
	out, errOut := buildPlugin(t, filepath.Join(t.TempDir(), "kubectl-federate"), "-ldflags=-dumpdep")
	callers := map[string][]string{} // callee -> callers, from the linker's dependency dump
	var marked []string
	sc := bufio.NewScanner(joined(errOut, out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		from, to, ok := strings.Cut(sc.Text(), " -> ")
		if !ok {
			continue
		}
		if strings.HasSuffix(from, " <ReflectMethod>") {
			from = strings.TrimSuffix(from, " <ReflectMethod>")
			marked = append(marked, from)
		}
		to = strings.TrimSuffix(to, " <ReflectMethod>")
		callers[to] = append(callers[to], from)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range marked {
		if seen[m] {
			continue
		}
		seen[m] = true
		t.Errorf("%s looks methods up by name and is linked, so every exported method of every type is kept: %s", m, chain(callers, m))
	}
}

// chain is the shortest path of callers from our module's code to fn.
func chain(callers map[string][]string, fn string) string {
	prev := map[string]string{fn: ""}
	queue := []string{fn}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, c := range callers[n] {
			if _, ok := prev[c]; ok {
				continue
			}
			prev[c] = n
			if strings.HasPrefix(c, "github.com/federate-dev/") {
				path := []string{c}
				for x := n; x != ""; x = prev[x] {
					path = append(path, x)
				}
				return strings.Join(path, " -> ")
			}
			queue = append(queue, c)
		}
	}
	return "(no caller in this module found)"
}

func joined(bufs ...bytes.Buffer) *bytes.Reader {
	var all []byte
	for _, b := range bufs {
		all = append(all, b.Bytes()...)
	}
	return bytes.NewReader(all)
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

// buildPlugin builds the plugin into bin as a release is built (static, -trimpath), with the extra build
// flags, and returns what the build printed on stdout and stderr.
func buildPlugin(t *testing.T, bin string, flags ...string) (stdout, stderr bytes.Buffer) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{"build", "-trimpath"}, flags...), "-o", bin, "./cmd/kubectl-federate")
	cmd := exec.Command(goCommand(), args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, tail(stderr.String()))
	}
	return stdout, stderr
}

func goCommand() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// `--help` runs no garbage collection: internal/startup sets the collector's start-up pace before the
// packages that allocate most are initialized (see its doc comment for why that order holds).
func TestHelpRunsNoCollection(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin (seconds)")
	}
	bin := filepath.Join(t.TempDir(), "kubectl-federate")
	buildPlugin(t, bin)
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GOGC=") && !strings.HasPrefix(e, "GODEBUG=") {
			env = append(env, e)
		}
	}
	run := exec.Command(bin, "--help")
	run.Env = append(env, "GODEBUG=gctrace=1,inittrace=1")
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("kubectl-federate --help: %v\n%s", err, tail(stderr.String()))
	}
	// inittrace lines: init PACKAGE @T ms, C ms clock, B bytes, A allocs
	found, before := false, 0
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.HasPrefix(line, "gc ") {
			t.Errorf("--help ran a garbage collection: %s", line)
		}
		fields := strings.Fields(line)
		if len(fields) < 9 || fields[0] != "init" || found {
			continue
		}
		if fields[1] == "github.com/federate-dev/kubectl-federate/internal/startup" {
			found = true
			continue
		}
		n, err := strconv.Atoi(fields[7])
		if err != nil || fields[8] != "bytes," {
			t.Fatalf("an init trace line not understood: %q", line)
		}
		before += n
	}
	if !found {
		t.Fatalf("the init trace names no internal/startup:\n%s", tail(stderr.String()))
	}
	if before >= 1<<20 {
		t.Errorf("the packages initialized before internal/startup allocate %d bytes, a quarter of the collector's first goal or more", before)
	}
	if !strings.Contains(stdout.String(), "Usage:") {
		t.Errorf("--help printed no usage:\n%s", tail(stdout.String()))
	}
}

// unlinked are packages the plugin must not link, with why: each initializes much, or pulls in what does,
// in every process, `--help` included.
var unlinked = map[string]string{
	"k8s.io/client-go/kubernetes/scheme":       "registers every type of every API group at start-up (1.3 ms); pkg/kube builds a scheme of the groups it uses, when a client is made",
	"k8s.io/client-go/kubernetes":              "the clientset: its typed clients import the scheme of every group; use pkg/kube",
	"k8s.io/client-go/discovery":               "imports the scheme of every group; pkg/kube has the discovery the plugin asks",
	"k8s.io/cli-runtime/pkg/genericclioptions": "its print and kubeconfig flags reach discovery, kustomize and OpenAPI; pkg/cmd/printers and cmdutil.KubeconfigFlags stand in",
	"k8s.io/client-go/testing":                 "the fakes' plumbing (managed fields, structured merge diff); tests only",
}

// The plugin links none of the packages above; a failure names the chain of imports that brings one in.
func TestNoSchemeOfEveryGroupIsLinked(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goCommand(), "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./cmd/kubectl-federate")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, tail(stderr.String()))
	}
	imports := map[string][]string{}
	var main string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		imports[f[0]] = f[1:]
		if strings.HasSuffix(f[0], "/cmd/kubectl-federate") {
			main = f[0]
		}
	}
	if main == "" || len(imports) < 50 {
		t.Fatalf("go list named no plugin, or too few packages (%d): %s", len(imports), tail(string(out)))
	}
	// Breadth first from main: the first path found to a package is a shortest one.
	via := map[string]string{main: ""}
	queue := []string{main}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, q := range imports[p] {
			if _, seen := via[q]; !seen {
				via[q] = p
				queue = append(queue, q)
			}
		}
	}
	for pkg, why := range unlinked {
		if _, linked := via[pkg]; !linked {
			continue
		}
		path := []string{pkg}
		for p := via[pkg]; p != ""; p = via[p] {
			path = append(path, p)
		}
		t.Errorf("the plugin links %s, which %s; imported by: %s", pkg, why, strings.Join(path[1:], " <- "))
	}
}

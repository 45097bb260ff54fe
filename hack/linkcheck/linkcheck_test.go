package linkcheck

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The plugin links no call that looks a method up by name: the linker's dead method elimination stays on.
func TestNoMethodLookupByNameIsLinked(t *testing.T) {
	if testing.Short() {
		t.Skip("links the plugin (seconds)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goCommand(), "build", "-trimpath", "-ldflags=-dumpdep", "-o", filepath.Join(t.TempDir(), "kubectl-federate"), "./cmd/kubectl-federate")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build -ldflags=-dumpdep: %v\n%s", err, tail(errOut.String()))
	}
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

func goCommand() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

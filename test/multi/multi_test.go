//go:build e2e

// Package multi runs one provider and five consumer clusters: five consumers authenticating to one
// provider at the same time.
package multi

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

var (
	clusters []*kubeenv.Cluster // [0] is the provider
	bin      string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if kubeenv.Listing() {
		return m.Run()
	}
	var dir string
	var stop func()
	var err error
	clusters, dir, stop, err = kubeenv.StartForTests("provider", "edge-1", "edge-2", "edge-3", "edge-4", "edge-5")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	if bin, err = kubeenv.PluginBinary(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func TestFiveConsumersAtOnce(t *testing.T) {
	provider := clusters[0]
	consumers := clusters[1:]
	var wg sync.WaitGroup
	outs := make([]string, len(consumers))
	errs := make([]error, len(consumers))
	start := time.Now()
	for i, c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(t.Context(), bin, "authenticate", "--kubeconfig", c.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig,
				"--cluster-id", c.Name, "--remote-cluster-id", "provider")
			cmd.Env = []string{"HOME=" + t.TempDir(), "NO_COLOR=1", "PATH=/usr/bin:/bin"}
			out, err := cmd.CombinedOutput()
			outs[i], errs[i] = string(out), err
		}()
	}
	wg.Wait()
	t.Logf("5 concurrent authenticate runs against one provider: %s wall", time.Since(start).Round(time.Millisecond))
	for i, c := range consumers {
		if errs[i] != nil {
			t.Errorf("%s: %v\n%s", c.Name, errs[i], outs[i])
			continue
		}
		// Each consumer's kubeconfig works, in its own namespace only.
		cmd := exec.CommandContext(t.Context(), bin, "get", "kubeconfig", "--kubeconfig", c.Kubeconfig, "--remote-cluster-id", "provider")
		data, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
		if err != nil {
			t.Fatal(err)
		}
		cs := kubernetes.NewForConfigOrDie(cfg)
		if _, err := cs.CoreV1().ConfigMaps("federate-tenant-"+c.Name).List(t.Context(), metav1.ListOptions{}); err != nil {
			t.Errorf("%s in its namespace: %v", c.Name, err)
		}
		other := consumers[(i+1)%len(consumers)].Name
		if _, err := cs.CoreV1().ConfigMaps("federate-tenant-"+other).List(t.Context(), metav1.ListOptions{}); err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("%s reads %s's namespace: %v", c.Name, other, err)
		}
	}
}

// federate runs kubectl-federate with args and returns its stdout, failing the test on a non-zero exit.
func federate(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "NO_COLOR=1", "PATH=/usr/bin:/bin"}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl-federate %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// mesh pairs four clusters in every direction (12 directed pairs): each consumer's identity on each
// provider works in its own tenant namespace and nowhere else; a re-run keeps everything; unmesh removes
// every pairing between them (the provider's pairings with the five consumers, from the test above, stay).
func TestMeshOfFour(t *testing.T) {
	four := clusters[1:5]
	var files []string
	for _, c := range four {
		// The IDs the test above gave them; a fresh cluster would get one of its own.
		federate(t, "init", "--kubeconfig", c.Kubeconfig, "--cluster-id", c.Name)
		files = append(files, c.Kubeconfig)
	}
	kubeconfigs := strings.Join(files, ",")
	start := time.Now()
	table := federate(t, "mesh", "--kubeconfigs", kubeconfigs, "--parallel", "6")
	t.Logf("mesh of 4 clusters (12 directed pairs) in %s", time.Since(start).Round(time.Millisecond))
	if n := strings.Count(table, " paired "); n != 12 {
		t.Fatalf("%d pairs paired, want 12:\n%s", n, table)
	}
	for _, c := range four {
		for _, p := range four {
			if c == p {
				continue
			}
			data := federate(t, "get", "kubeconfig", "--kubeconfig", c.Kubeconfig, "--remote-cluster-id", p.Name)
			cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(data))
			if err != nil {
				t.Fatal(err)
			}
			as := kubernetes.NewForConfigOrDie(cfg)
			own := "federate-tenant-" + c.Name
			if _, err := as.CoreV1().ConfigMaps(own).List(t.Context(), metav1.ListOptions{}); err != nil {
				t.Errorf("%s on %s: its own namespace: %v", c.Name, p.Name, err)
			}
			for _, other := range four {
				if other == c || other == p {
					continue
				}
				if _, err := as.CoreV1().ConfigMaps("federate-tenant-"+other.Name).List(t.Context(), metav1.ListOptions{}); err == nil {
					t.Errorf("%s on %s reads %s's namespace", c.Name, p.Name, other.Name)
				}
			}
			if _, err := as.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{}); err == nil {
				t.Errorf("%s on %s reads default", c.Name, p.Name)
			}
		}
	}
	again := federate(t, "mesh", "--kubeconfigs", kubeconfigs)
	if n := strings.Count(again, "already paired"); n != 12 {
		t.Errorf("a re-run re-paired: %d of 12 kept:\n%s", n, again)
	}
	removed := federate(t, "unmesh", "--kubeconfigs", kubeconfigs, "--parallel", "6")
	if n := strings.Count(removed, " removed "); n != 12 {
		t.Errorf("%d pairs removed, want 12:\n%s", n, removed)
	}
	for _, c := range four {
		cs := kubernetes.NewForConfigOrDie(c.Config)
		for _, p := range four {
			if c == p {
				continue
			}
			if _, err := cs.CoreV1().Namespaces().Get(t.Context(), "federate-tenant-"+p.Name, metav1.GetOptions{}); err == nil {
				t.Errorf("unmesh left federate-tenant-%s on %s", p.Name, c.Name)
			}
		}
	}
}

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

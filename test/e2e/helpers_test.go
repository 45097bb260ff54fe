//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// result is one run of a command.
type result struct {
	stdout, stderr string
	code           int
	wall           time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// cli runs kubectl-federate with args, stdin and a clean environment (no colour, no default kubeconfig).
func cli(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return runIn(t, "", stdin, federateBin, args...)
}

// sh runs a bash script with kubectl and kubectl-federate on PATH and the clusters' kubeconfigs in
// $C and $P, in dir.
func sh(t *testing.T, dir, script string, env ...string) result {
	t.Helper()
	return runEnv(t, dir, "", env, "bash", "-euo", "pipefail", "-c", script)
}

func runIn(t *testing.T, dir, stdin, name string, args ...string) result {
	t.Helper()
	return runEnv(t, dir, stdin, nil, name, args...)
}

func runEnv(t *testing.T, dir, stdin string, env []string, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	env = append([]string{"C=" + consumer.Kubeconfig, "P=" + provider.Kubeconfig}, env...)
	return newCommand(ctx, t.TempDir(), env, name, args...).in(dir).input(stdin).run(t)
}

// command is a command of the tests: the one way they start a process, in the one environment they run
// it in (our binaries first on PATH, a home of its own so that no default kubeconfig applies, no
// colour), with its output kept.
type command struct {
	cmd         *exec.Cmd
	out, errOut bytes.Buffer
	start       time.Time
}

// newCommand is name with args, run in a clean environment with home as $HOME, plus env.
func newCommand(ctx context.Context, home string, env []string, name string, args ...string) *command {
	c := &command{cmd: exec.CommandContext(ctx, name, args...)}
	c.cmd.Env = append([]string{"PATH=" + binDir + ":/usr/bin:/bin", "HOME=" + home, "NO_COLOR=1"}, env...)
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.errOut
	return c
}

// in sets the working directory.
func (c *command) in(dir string) *command { c.cmd.Dir = dir; return c }

// input sets what the command reads on stdin.
func (c *command) input(stdin string) *command { c.cmd.Stdin = strings.NewReader(stdin); return c }

// begin starts the command without waiting for it.
func (c *command) begin() error {
	c.start = time.Now()
	return c.cmd.Start()
}

// end waits for a begun command and returns its result: an exit code, or -1 with the reason when it did
// not exit by itself (killed at its deadline).
func (c *command) end() result {
	err := c.cmd.Wait()
	r := result{stdout: c.out.String(), stderr: c.errOut.String(), wall: time.Since(c.start), code: c.cmd.ProcessState.ExitCode()}
	if err != nil && r.code == 0 {
		r.code, r.stderr = -1, r.stderr+err.Error()
	}
	return r
}

// run runs the command to its end; a command that cannot start fails the test.
func (c *command) run(t *testing.T) result {
	t.Helper()
	if err := c.begin(); err != nil {
		t.Fatalf("running %s: %v", c.cmd.Path, err)
	}
	return c.end()
}

// mustRun fails the test unless the command exits 0.
func mustRun(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	r := cli(t, stdin, args...)
	if r.code != 0 {
		t.Fatalf("kubectl-federate %s: %s", strings.Join(args, " "), r)
	}
	return r
}

func authenticate(t *testing.T, extra ...string) result {
	t.Helper()
	return mustRun(t, "", append([]string{"authenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig,
		"--cluster-id", "consumer", "--remote-cluster-id", "provider"}, extra...)...)
}

func unauthenticate(t *testing.T) {
	t.Helper()
	mustRun(t, "", "unauthenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig, "--ignore-not-found")
}

func dyn(t *testing.T, c *kubeenv.Cluster) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// watched are the resources the tests count objects of.
var watched = []schema.GroupVersionResource{
	{Version: "v1", Resource: "namespaces"},
	{Version: "v1", Resource: "secrets"},
	{Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "serviceaccounts"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	{Group: "certificates.k8s.io", Version: "v1", Resource: "certificatesigningrequests"},
	{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"},
	{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
	{Group: "federate.dev", Version: "v1alpha1", Resource: "tenants"},
	{Group: "federate.dev", Version: "v1alpha1", Resource: "identities"},
}

// snapshot maps "cluster resource namespace/name" to resourceVersion, for the watched resources of both
// clusters.
type snapshot map[string]string

func takeSnapshot(t *testing.T) snapshot {
	t.Helper()
	s := snapshot{}
	for _, c := range []*kubeenv.Cluster{consumer, provider} {
		d := dyn(t, c)
		// A namespace an earlier test deleted may still be terminating: it and what it holds go away on
		// their own, so they are left out (a namespace the command under test deletes is not terminating
		// in the first snapshot, and so shows as removed).
		terminating := map[string]bool{}
		nss, err := kubernetes.NewForConfigOrDie(c.Config).CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range nss.Items {
			if ns.DeletionTimestamp != nil {
				terminating[ns.Name] = true
			}
		}
		for _, gvr := range watched {
			list, err := d.Resource(gvr).List(t.Context(), metav1.ListOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range list.Items {
				if o.GetNamespace() == "kube-system" || o.GetNamespace() == "kube-node-lease" {
					continue // the control plane's own heartbeats
				}
				if terminating[o.GetNamespace()] || gvr.Resource == "namespaces" && terminating[o.GetName()] {
					continue
				}
				s[fmt.Sprintf("%s %s %s/%s", c.Name, gvr.Resource, o.GetNamespace(), o.GetName())] = o.GetResourceVersion()
			}
		}
	}
	return s
}

// diff lists what was added, changed or removed between two snapshots.
func (s snapshot) diff(after snapshot) []string {
	var d []string
	for k, v := range after {
		if old, ok := s[k]; !ok {
			d = append(d, "added "+k)
		} else if old != v {
			d = append(d, "changed "+k)
		}
	}
	for k := range s {
		if _, ok := after[k]; !ok {
			d = append(d, "removed "+k)
		}
	}
	sort.Strings(d)
	return d
}

// pairingObjects lists the objects labelled with a remote cluster ID on a cluster.
func pairingObjects(t *testing.T, c *kubeenv.Cluster, remoteID string) []string {
	t.Helper()
	d := dyn(t, c)
	var out []string
	for _, gvr := range watched {
		list, err := d.Resource(gvr).List(t.Context(), metav1.ListOptions{LabelSelector: member.LabelRemoteClusterID + "=" + remoteID})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			out = append(out, fmt.Sprintf("%s %s/%s", gvr.Resource, o.GetNamespace(), o.GetName()))
		}
	}
	slices.Sort(out)
	return out
}

// kubeconfigFile writes the consumer's stored kubeconfig for the provider into a file and returns its
// REST config.
func issuedConfig(t *testing.T) (string, *rest.Config) {
	t.Helper()
	r := mustRun(t, "", "get", "kubeconfig", "--kubeconfig", consumer.Kubeconfig, "--remote-cluster-id", "provider")
	path := filepath.Join(t.TempDir(), "provider.kubeconfig")
	if err := os.WriteFile(path, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	return path, cfg
}

// bareNonce returns the nonce of the line get nonce printed for consumer "consumer" on provider
// "provider", after checking that the line names both.
func bareNonce(t *testing.T, text string) string {
	t.Helper()
	tk, err := nonce.ParseTicket(text)
	if err != nil || tk.ProviderID != "provider" || tk.ConsumerID != "consumer" {
		t.Fatalf("get nonce printed %q: %+v %v", text, tk, err)
	}
	return tk.Nonce
}

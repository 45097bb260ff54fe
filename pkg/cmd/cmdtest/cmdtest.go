// Package cmdtest runs kubectl federate's commands against fake clusters (internal/fakeapi), as kubectl
// tests its own: the real command tree, through a factory whose Connector is a World, so that a command's
// --kubeconfig names a fake cluster instead of a file. A test checks what a command prints on stdout and
// stderr, its exit code, and what it sent to each cluster.
//
// One job per file:
//
//	cmdtest.go  a World of fake clusters, and running one command line in it
//	dryrun.go   the dry-run component in front of the fakes, as the transport puts it in front of a cluster
//	table.go    the table runner: a Row per command line, its exit code, error line, output and writes
//	worlds.go   the worlds rows start from, each made by the product's own commands
//	decode.go   reading what a command printed: JSON, YAML, tables, kubeconfigs
//	checks.go   checks several tests share: one error line, nothing written, key material, YAML streams
package cmdtest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/internal/fakeapi"
	"github.com/federate-dev/kubectl-federate/pkg/cmd"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/kube/kubetest"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// World is a set of fake clusters, each reached by its name as --kubeconfig (or --context).
type World struct {
	t        testing.TB
	clusters map[string]*fakeapi.Server

	mu      sync.Mutex
	running *cmdutil.Factory // the running command's factory, whose dry run the fakes honour
}

// NewWorld returns a world of fake clusters named names, none initialized. The fakes' clock is now, so
// that what a command issues is valid by the command's clock.
func NewWorld(t testing.TB, names ...string) *World {
	t.Helper()
	fakeapi.Now = time.Now()
	w := &World{t: t, clusters: map[string]*fakeapi.Server{}}
	for _, n := range names {
		w.clusters[n] = fakeapi.New(t)
		w.teachDryRun(n, w.clusters[n])
	}
	return w
}

// Cluster is the fake cluster of that name.
func (w *World) Cluster(name string) *fakeapi.Server {
	s, ok := w.clusters[name]
	if !ok {
		w.t.Fatalf("no fake cluster %q", name)
	}
	return s
}

// Domain is the domain's view of a fake cluster, for setting a test up through the product's own steps.
func (w *World) Domain(name string) *member.Cluster {
	s := w.Cluster(name)
	return &member.Cluster{Kube: kubetest.Wrap(s.Clientset), Dynamic: s.DynamicClient, Impersonation: &member.ImpersonationSupport{Constrained: true, Reason: "a fake"}}
}

// Init initializes a fake cluster with a cluster ID, as `init --cluster-id` does.
func (w *World) Init(name, id string) {
	w.t.Helper()
	if _, err := sandbox.Init(w.t.Context(), w.Domain(name), id); err != nil {
		w.t.Fatalf("init %s: %v", name, err)
	}
}

// Connect reaches the fake cluster a command's --kubeconfig (or --context) names (cmdutil.Connector).
func (w *World) Connect(kubeconfig, context string) (*cmdutil.Clients, error) {
	name := kubeconfig
	if name == "" {
		name = context
	}
	s, ok := w.clusters[name]
	if !ok {
		return nil, fmt.Errorf("cannot connect: no cluster %q (a fake world has %s)", name, strings.Join(w.names(), ", "))
	}
	return &cmdutil.Clients{Config: &rest.Config{Host: "https://" + name + ".fake:6443"}, Kube: kubetest.Wrap(s.Clientset), Dynamic: s.DynamicClient}, nil
}

// Dial reaches the fake cluster a stored kubeconfig points at (its server is https://NAME.fake:6443, as
// Connect gives every fake), with the kubeconfig's own credentials ignored: a fake has no authentication.
func (w *World) Dial(kubeconfig []byte) (*cmdutil.Clients, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(strings.TrimPrefix(cfg.Host, "https://"), ".fake:6443")
	return w.Connect(name, "")
}

func (w *World) names() []string {
	var out []string
	for n := range w.clusters {
		out = append(out, n)
	}
	return out
}

// Result is one run of a command.
type Result struct {
	Stdout, Stderr string
	Code           int
}

func (r Result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
}

// Run runs `kubectl federate args...` in the world, as main would: the error printed once, the exit code.
func (w *World) Run(args ...string) Result {
	w.t.Helper()
	in := &bytes.Buffer{}
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	streams := genericiooptions.IOStreams{In: in, Out: out, ErrOut: errOut}
	f := cmdutil.NewFactory(streams)
	f.Connector = w
	w.mu.Lock()
	w.running = f
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.running = nil
		w.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(w.t.Context(), time.Minute)
	defer cancel()
	// --color=never first, so that the last word stays the user's (cobra's __complete completes it).
	line := append([]string{"--color=never"}, args...)
	if len(args) > 0 && args[0] == "__complete" {
		line = append([]string{"__complete", "--color=never"}, args[1:]...)
	}
	code := cmd.Execute(ctx, cmd.NewRootCmdWithFactory(streams, f), streams, line)
	return Result{Stdout: out.String(), Stderr: errOut.String(), Code: code}
}

// Writes lists what a fake cluster was sent that changes something ("create secrets",
// "delete rolebindings", ...), through either client, since the mark (a number of actions from Marks).
func (w *World) Writes(name string, since Mark) []string {
	s := w.Cluster(name)
	var out []string
	for i, a := range s.Clientset.Actions() {
		if i >= since.kube && isWrite(a) {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	for i, a := range s.DynamicClient.Actions() {
		if i >= since.dyn && isWrite(a) {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

// Mark is a point in a fake cluster's recorded actions.
type Mark struct{ kube, dyn int }

// Mark returns the current point of a fake cluster's recorded actions.
func (w *World) Mark(name string) Mark {
	s := w.Cluster(name)
	return Mark{kube: len(s.Clientset.Actions()), dyn: len(s.DynamicClient.Actions())}
}

// isWrite tells whether an action changes what the cluster stores: not a read, not an access review, not
// a dry run.
func isWrite(a clienttesting.Action) bool {
	switch a.GetVerb() {
	case "get", "list", "watch":
		return false
	}
	if strings.HasSuffix(a.GetResource().Resource, "accessreviews") || strings.HasSuffix(a.GetResource().Resource, "subjectreviews") {
		return false
	}
	switch act := a.(type) {
	case clienttesting.CreateActionImpl:
		return len(act.CreateOptions.DryRun) == 0
	case clienttesting.UpdateActionImpl:
		return len(act.UpdateOptions.DryRun) == 0
	case clienttesting.PatchActionImpl:
		return len(act.PatchOptions.DryRun) == 0
	}
	return true
}

//go:build e2e

// Package docs runs the shell examples of README.md and docs/*.md as a newcomer would type them, on two
// clusters of its own, so that every example keeps working as written.
//
// The pages name each administrator's kubeconfig by a file in the working directory: consumer.kubeconfig
// (the cluster the docs call edge-1) and provider.kubeconfig (gpu-farm). That is the only thing this test
// provides; everything else a page needs, it shows. Each page runs, block after block, in one bash with
// set -euo pipefail, in a fresh directory with no default kubeconfig, and stops at the first command that
// exits unexpectedly; the failure names the page, the line and the command. Between pages both clusters
// are reset to never initialized (see reset). The markers a page may carry are documented in
// hack/doctest.
//
// DOCTEST_UPDATE=1 rewrites the output blocks that differ from this run instead of failing.
package docs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/federate-dev/kubectl-federate/hack/doctest"
	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

var (
	consumer, provider *kubeenv.Cluster
	binDir             string              // kubectl and kubectl-federate, for PATH
	initial            map[string][]string // per cluster, the cluster-scoped objects a fresh cluster has
)

// kubeconfigs are the files a page's working directory holds, by the cluster they reach.
func kubeconfigs() map[string]*kubeenv.Cluster {
	return map[string]*kubeenv.Cluster{"consumer.kubeconfig": consumer, "provider.kubeconfig": provider}
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if kubeenv.Listing() {
		return m.Run()
	}
	// Each cluster its own ServiceAccount token issuer, at its API server (as docs/federated.md asks of a
	// consumer): a provider never trusts an issuer it shares.
	clusters, dir, stop, err := kubeenv.StartForTestsWith(kubeenv.Options{Names: []string{"consumer", "provider"}, IssuerAtServer: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	consumer, provider = clusters[0], clusters[1]
	if binDir, err = kubeenv.ToolsPath(context.Background(), dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	initial = map[string][]string{}
	for _, c := range clusters {
		names, err := clusterScoped(context.Background(), c)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		initial[c.Name] = names
	}
	return m.Run()
}

// pages are README.md and docs/*.md, in that order.
func pages(t *testing.T) (root string, names []string) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(docs)
	names = []string{"README.md"}
	for _, d := range docs {
		names = append(names, filepath.Join("docs", filepath.Base(d)))
	}
	return root, names
}

func TestDocs(t *testing.T) {
	root, names := pages(t)
	update := os.Getenv("DOCTEST_UPDATE") == "1"
	var ran, skipped, failedPages int
	var skips []string
	dirty := false // the clusters are no longer fresh
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := doctest.Parse(string(data))
		if err != nil {
			t.Errorf("%s:%v", name, err)
			continue
		}
		runnable := 0
		for _, b := range blocks {
			switch {
			case b.Skip != "":
				skipped++
				skips = append(skips, fmt.Sprintf("%s:%d (%s)", name, b.Line, b.Skip))
			case b.Runs():
				runnable++
			}
		}
		if runnable == 0 {
			continue
		}
		ok := t.Run(name, func(t *testing.T) {
			ran += runPage(t, root, name, string(data), blocks, update, &dirty)
		})
		if !ok {
			failedPages++
		}
	}
	summary := fmt.Sprintf("doc test: %d blocks ran, %d skipped, on %d pages (%d failed)\n", ran, skipped, len(names), failedPages)
	for _, s := range skips {
		summary += "  skipped " + s + "\n"
	}
	t.Log(summary)
	// go test shows a passing package's log only with -v: make e2e prints this file instead.
	if path := os.Getenv("DOCTEST_SUMMARY"); path != "" {
		if err := os.WriteFile(path, []byte(summary), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// runPage runs a page's blocks, one bash per segment (see doctest.Segments), each on clusters reset to
// never initialized, and returns how many blocks ran as they should.
func runPage(t *testing.T, root, name, page string, blocks []*doctest.Block, update bool, dirty *bool) int {
	work := t.TempDir()
	for file, c := range kubeconfigs() {
		data, err := os.ReadFile(c.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, file), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	all := &doctest.Result{Outputs: map[*doctest.Block]string{}}
	start := time.Now()
	for _, seg := range doctest.Segments(blocks) {
		if *dirty {
			reset(t, seg[0].Fresh)
		}
		*dirty = true
		r, out := runSegment(t, work, seg)
		all.Ran = append(all.Ran, r.Ran...)
		for b, f := range r.Outputs {
			all.Outputs[b] = f
		}
		if r.Failed != nil {
			where := fmt.Sprintf("%s:%d", name, r.Failed.Line)
			if r.Line > 0 {
				where = fmt.Sprintf("%s:%d", name, r.Line)
			}
			t.Errorf("%s: %s\n  in the block at line %d\n  command: %s\noutput of the page so far:\n%s",
				where, r.Reason, r.Failed.Line, r.Command, tail(out, 60))
			return len(all.Ran)
		}
	}
	t.Logf("%s: %d blocks ran in %s", name, len(all.Ran), time.Since(start).Round(100*time.Millisecond))
	checkOutputs(t, root, name, page, blocks, all, update)
	return len(all.Ran)
}

// runSegment runs blocks in one bash with set -euo pipefail, in work, with kubectl and the plugin on PATH
// and no default kubeconfig, so that a command that does not say which cluster it is for fails.
func runSegment(t *testing.T, work string, blocks []*doctest.Block) (*doctest.Result, string) {
	meta := t.TempDir()
	trace := filepath.Join(meta, "trace")
	script := doctest.NewScript(blocks, trace, meta)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.Text)
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + binDir + ":/usr/bin:/bin", "HOME=" + meta, "NO_COLOR=1", "LANG=C.UTF-8"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	exited := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		exited = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	traceText, _ := os.ReadFile(trace)
	return script.Read(blocks, string(traceText), exited), out.String()
}

// checkOutputs compares each output block of the page with what its block printed, or, with update,
// rewrites them from this run.
func checkOutputs(t *testing.T, root, name, page string, blocks []*doctest.Block, r *doctest.Result, update bool) {
	replace := map[int]string{}
	for _, b := range blocks {
		if b.Output == nil {
			continue
		}
		file, ok := r.Outputs[b]
		if !ok {
			t.Errorf("%s:%d: the output of the block at line %d was not kept", name, b.Output.Line, b.Line)
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		got := string(data)
		same := doctest.Normalize(got) == doctest.Normalize(b.Output.Body)
		if update {
			if !same { // only what changed: new digests and times alone are no change
				replace[b.Output.Line] = got
			}
			continue
		}
		if !same {
			t.Errorf("%s:%d: the page shows output that differs from this run's (timestamps, hex digests and numbers aside);\n"+
				"regenerate it with: DOCTEST_UPDATE=1 make doctest\nthe page:\n%s\nthis run:\n%s",
				name, b.Output.Line, b.Output.Body, got)
		}
	}
	if len(replace) > 0 {
		if err := os.WriteFile(filepath.Join(root, name), []byte(doctest.ReplaceOutputs(page, replace)), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: rewrote %d output blocks", name, len(replace))
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// What reset deletes: cluster-scoped objects a fresh cluster did not have (the namespaces with all they
// hold, the CSRs, RBAC and resource slice classes the pages made), except what init installs once per
// cluster (the CRDs, the sandbox's admission policies and the tenant role): without federate-system the
// cluster is never initialized again, and keeping the installed kinds spares each page the quota
// controller's wait to learn them.
var resetKinds = []schema.GroupVersionResource{
	{Version: "v1", Resource: "namespaces"},
	{Group: "certificates.k8s.io", Version: "v1", Resource: "certificatesigningrequests"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	{Group: "federate.dev", Version: "v1alpha1", Resource: "resourcesliceclasses"},
}

// installed tells whether a cluster-scoped object is part of what init installs once per cluster: it is
// kubectl federate's and belongs to no pairing.
func installed(labels map[string]string) bool {
	_, pairing := labels["federate.dev/remote-cluster-id"]
	return labels["app.kubernetes.io/managed-by"] == "kubectl-federate" && !pairing
}

func clusterScoped(ctx context.Context, c *kubeenv.Cluster) ([]string, error) {
	d, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, gvr := range resetKinds {
		list, err := d.Resource(gvr).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue // resource slice classes before the first init
		}
		if err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			names = append(names, gvr.Resource+"/"+o.GetName())
		}
	}
	return names, nil
}

// installKinds are what init installs once per cluster, besides the tenant ClusterRole: a full reset
// deletes them too (the CRDs with every object of their kinds).
var installKinds = []schema.GroupVersionResource{
	{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
}

// reset brings both clusters back to never initialized: every namespace, CSR, ClusterRole,
// ClusterRoleBinding and ResourceSliceClass a fresh cluster did not have is deleted, except init's, and
// the namespaces are waited for (with a watch) until they are gone. full, for a block marked fresh,
// deletes what init installs as well, so that the block runs as on a cluster kubectl federate never saw.
func reset(t *testing.T, full bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	deleted := make([]int, 2)
	for i, c := range []*kubeenv.Cluster{consumer, provider} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deleted[i], errs[i] = resetOne(ctx, c, full)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("resetting the clusters between pages: %v", err)
	}
	what := "reset"
	if full {
		what = "full reset"
	}
	t.Logf("%s: %d objects deleted in %s", what, deleted[0]+deleted[1], time.Since(start).Round(100*time.Millisecond))
}

func resetOne(ctx context.Context, c *kubeenv.Cluster, full bool) (deleted int, err error) {
	d, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return 0, err
	}
	var namespaces []string
	for _, gvr := range resetKinds {
		list, err := d.Resource(gvr).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return deleted, err
		}
		for _, o := range list.Items {
			if slices.Contains(initial[c.Name], gvr.Resource+"/"+o.GetName()) || (gvr.Resource != "namespaces" && installed(o.GetLabels())) {
				continue
			}
			if o.GetDeletionTimestamp() == nil {
				if err := d.Resource(gvr).Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return deleted, fmt.Errorf("cluster %s: deleting %s %s: %w", c.Name, gvr.Resource, o.GetName(), err)
				}
				deleted++
			}
			if gvr.Resource == "namespaces" {
				namespaces = append(namespaces, o.GetName())
			}
		}
	}
	if err := waitGone(ctx, c, namespaces); err != nil || !full {
		return deleted, err
	}
	for _, gvr := range installKinds {
		list, err := d.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			return deleted, err
		}
		for _, o := range list.Items {
			ours := installed(o.GetLabels())
			if gvr.Resource == "customresourcedefinitions" {
				ours = strings.HasSuffix(o.GetName(), ".federate.dev") // the CRDs carry no label of ours
			}
			if !ours {
				continue
			}
			if err := d.Resource(gvr).Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return deleted, fmt.Errorf("cluster %s: deleting %s %s: %w", c.Name, gvr.Resource, o.GetName(), err)
			}
			deleted++
			if gvr.Resource == "customresourcedefinitions" {
				if err := waitDeleted(ctx, d.Resource(gvr), o.GetName()); err != nil {
					return deleted, fmt.Errorf("cluster %s: CRD %s: %w", c.Name, o.GetName(), err)
				}
			}
		}
	}
	return deleted, nil
}

// waitDeleted waits, with a watch, until the cluster-scoped object name is gone.
func waitDeleted(ctx context.Context, r dynamic.ResourceInterface, name string) error {
	w, err := r.Watch(ctx, metav1.SingleObject(metav1.ObjectMeta{Name: name}))
	if err != nil {
		return err
	}
	defer w.Stop()
	if _, err := r.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return nil
	}
	for ev := range w.ResultChan() {
		if ev.Type == watch.Deleted {
			return nil
		}
	}
	return fmt.Errorf("still there (%w)", ctx.Err())
}

// waitGone waits, with a watch, until none of the namespaces exists.
func waitGone(ctx context.Context, c *kubeenv.Cluster, names []string) error {
	if len(names) == 0 {
		return nil
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	left := map[string]bool{}
	for _, ns := range list.Items {
		if slices.Contains(names, ns.Name) {
			left[ns.Name] = true
		}
	}
	if len(left) == 0 {
		return nil
	}
	w, err := cs.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type != watch.Deleted {
			continue
		}
		if ns, ok := ev.Object.(metav1.Object); ok {
			delete(left, ns.GetName())
		}
		if len(left) == 0 {
			return nil
		}
	}
	return fmt.Errorf("cluster %s: namespaces still terminating: %v (%w)", c.Name, left, ctx.Err())
}

//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// requestLog is what a long-running client saw: one entry per request.
type requestLog struct {
	mu     sync.Mutex
	sent   int
	failed []time.Time
	errs   []string
	lastOK time.Time
}

func (l *requestLog) add(at time.Time, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent++
	if err != nil {
		l.failed = append(l.failed, at)
		l.errs = append(l.errs, at.Format(time.RFC3339Nano)+" "+err.Error())
	} else {
		l.lastOK = at
	}
}

func (l *requestLog) snapshot() (sent int, failed []time.Time, errs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent, append([]time.Time(nil), l.failed...), append([]string(nil), l.errs...)
}

// longRunning is a client built once and kept, as a controller keeps it: one request a second, each
// logged, until ctx ends.
func longRunning(ctx context.Context, cfg *rest.Config, ns string, every time.Duration) *requestLog {
	k := kubernetes.NewForConfigOrDie(cfg)
	log := &requestLog{}
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			at := time.Now()
			_, err := k.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
			if ctx.Err() != nil {
				return
			}
			log.add(at, err)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return log
}

var overlapLine = regexp.MustCompile(`(?m)^pairing/provider previous credential\(s\) (\S+) authorized until (\S+) \(--overlap (\S+)\)`)

// Done (issue 38, 1): a client built once from the exported exec kubeconfig (the plugin on its PATH, the
// consumer's kubeconfig in its environment, as a pod would have them), one request a second, makes no
// failed request across three renew runs with the defaults (the plugin's 30 s horizon, renew's 45 s
// overlap), while a copy of the old credential that is never read again stops working no later than the
// bound renew prints; after revoke the client fails from its first request after revoke returns.
func TestCredentialPluginFollowsRenewals(t *testing.T) {
	defer unauthenticate(t)
	authenticate(t)
	ctx := t.Context()
	k := kubernetes.NewForConfigOrDie(consumer.Config)
	if _, err := k.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clients"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	defer func() { _ = k.CoreV1().Namespaces().Delete(context.Background(), "clients", metav1.DeleteOptions{}) }()
	mustOn(t, consumer, "export", "kubeconfig", "--exec", "--remote-cluster-id", "provider", "-n", "clients")
	s, err := k.CoreV1().Secrets("clients").Get(ctx, "provider-kubeconfig", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "exec.kubeconfig")
	if err := os.WriteFile(path, s.Data["kubeconfig"], 0o600); err != nil {
		t.Fatal(err)
	}
	// client-go runs the plugin in this process's environment.
	t.Setenv("PATH", binDir+":"+os.Getenv("PATH"))
	t.Setenv("KUBECONFIG", consumer.Kubeconfig)
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ExecProvider == nil || len(cfg.CertData) != 0 {
		t.Fatalf("the exported kubeconfig holds a credential or runs no plugin: %+v", cfg.ExecProvider)
	}
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	log := longRunning(cctx, cfg, tenantNS, time.Second)

	for i := range 3 {
		_, before := issuedConfig(t) // the credential held now: a copy never read again
		octx, ostop := context.WithCancel(ctx)
		old := longRunning(octx, before, tenantNS, 250*time.Millisecond)
		start := time.Now()
		r := mustRun(t, "", "renew", "--remote-cluster-id", "provider", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
		end := time.Now()
		m := overlapLine.FindStringSubmatch(r.stdout)
		if m == nil || !strings.Contains(r.stdout, "pairing/provider previous credential(s) "+m[1]+" refused") {
			t.Fatalf("renew %d says no overlap: %s", i+1, r)
		}
		until, err := time.Parse(time.RFC3339, m[2])
		if err != nil || m[3] != "45s" {
			t.Fatalf("renew %d's bound %q (--overlap %s): %v", i+1, m[2], m[3], err)
		}
		// The copy that is never read again: it works into the overlap, and is refused from the bound on.
		time.Sleep(time.Second)
		ostop()
		_, failed, _ := old.snapshot()
		if len(failed) == 0 {
			t.Errorf("renew %d: the old credential still works after renew returned", i+1)
		} else {
			// until is printed with second precision (rounded down).
			if refused := failed[0]; refused.After(until.Add(time.Second + 2*time.Second)) {
				t.Errorf("renew %d: the old credential was refused at %s, after the bound %s", i+1, refused.Format(time.RFC3339Nano), m[2])
			} else if refused.Before(until.Add(-5 * time.Second)) {
				t.Errorf("renew %d: the old credential was refused at %s, long before the overlap's end %s", i+1, refused.Format(time.RFC3339Nano), m[2])
			}
			t.Logf("renew %d: ran %s; old credential refused %s after the bound %s (overlap ended by renew at its exit, %s)",
				i+1, end.Sub(start).Round(time.Millisecond), failed[0].Sub(until).Round(time.Millisecond), m[2], end.Format(time.RFC3339Nano))
		}
	}
	sent, failed, errs := log.snapshot()
	t.Logf("the long-running client: %d requests, %d failed, across 3 renewals", sent, len(failed))
	if len(failed) != 0 {
		t.Errorf("the long-running client failed %d of %d requests across 3 renewals:\n%s", len(failed), sent, strings.Join(errs, "\n"))
	}
	if sent < 100 {
		t.Errorf("the long-running client sent only %d requests", sent)
	}

	// Revocation: refused from the moment revoke returns; the client's next request fails.
	revokeStart := time.Now()
	mustOn(t, provider, "revoke", "--remote-cluster-id", "consumer")
	revoked := time.Now()
	deadline := time.After(30 * time.Second)
	for {
		_, failed, _ := log.snapshot()
		if len(failed) > 0 {
			first := failed[0]
			t.Logf("revoke ran %s; the client's first failure %s after revoke returned (its requests are 1 s apart)",
				revoked.Sub(revokeStart).Round(time.Millisecond), first.Sub(revoked).Round(time.Millisecond))
			if first.After(revoked.Add(1100 * time.Millisecond)) {
				t.Errorf("the first failure came %s after revoke returned: a request sent after it succeeded", first.Sub(revoked))
			}
			break
		}
		select {
		case <-deadline:
			t.Fatal("the long-running client never failed after revoke")
		case <-time.After(100 * time.Millisecond):
		}
	}
	// Nothing it sends afterwards succeeds.
	time.Sleep(3 * time.Second)
	log.mu.Lock()
	lastOK, n := log.lastOK, len(log.failed)
	log.mu.Unlock()
	if !lastOK.Before(revoked) || n < 3 {
		t.Errorf("after revoke: a request sent at %s succeeded (revoke returned at %s); %d failed", lastOK.Format(time.RFC3339Nano), revoked.Format(time.RFC3339Nano), n)
	}
}

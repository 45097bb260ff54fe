//go:build e2e

package e2e

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// faultProxy sits between the CLI and one API server on loopback. After `allow` requests it cuts every
// further request (the stream is reset), or, in hang mode, never answers them.
type faultProxy struct {
	srv     *httptest.Server
	allow   atomic.Int64 // -1: no fault
	count   atomic.Int64
	hang    atomic.Bool
	kubecfg string
}

func newFaultProxy(t *testing.T, c *kubeenv.Cluster) *faultProxy {
	t.Helper()
	target, _ := url.Parse(c.Server)
	transport, err := rest.TransportFor(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     transport,
		FlushInterval: -1, // watches stream
	}
	p := &faultProxy{}
	p.allow.Store(-1)
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := p.count.Add(1)
		if allow := p.allow.Load(); allow >= 0 && n > allow {
			if p.hang.Load() {
				<-r.Context().Done()
				return
			}
			panic(http.ErrAbortHandler) // the link is gone
		}
		rp.ServeHTTP(w, r)
	}))
	p.srv.EnableHTTP2 = true
	p.srv.StartTLS()
	t.Cleanup(p.srv.Close)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxied"] = &clientcmdapi.Cluster{Server: p.srv.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})}
	cfg.AuthInfos["proxied"] = &clientcmdapi.AuthInfo{Token: "the proxy authenticates as admin"}
	cfg.Contexts["proxied"] = &clientcmdapi.Context{Cluster: "proxied", AuthInfo: "proxied"}
	cfg.CurrentContext = "proxied"
	p.kubecfg = filepath.Join(t.TempDir(), "proxied.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p.kubecfg); err != nil {
		t.Fatal(err)
	}
	return p
}

// arm resets the count and cuts (or hangs) after allow requests; -1 disarms.
func (p *faultProxy) arm(allow int64, hang bool) {
	p.count.Store(0)
	p.hang.Store(hang)
	p.allow.Store(allow)
}

func authArgs(consumerKC, providerKC string, extra ...string) []string {
	return append([]string{"authenticate", "--kubeconfig", consumerKC, "--remote-kubeconfig", providerKC,
		"--cluster-id", "consumer", "--remote-cluster-id", "provider"}, extra...)
}

func unauthArgs(consumerKC, providerKC string) []string {
	return []string{"unauthenticate", "--kubeconfig", consumerKC, "--remote-kubeconfig", providerKC, "--keep-namespaces"}
}

// For every request along authenticate's and unauthenticate's paths, on either cluster: a cut there fails
// fast with a clear error, and a plain re-run converges to the state an uninterrupted run leaves.
func TestFaultPointsConverge(t *testing.T) {
	unauthenticate(t)
	authenticate(t) // both clusters initialized: the path a renewal or a retry takes
	mustRun(t, "", unauthArgs(consumer.Kubeconfig, provider.Kubeconfig)...)
	authenticate(t)
	wantC, wantP := pairingObjects(t, consumer, "provider"), pairingObjects(t, provider, "consumer")
	mustRun(t, "", unauthArgs(consumer.Kubeconfig, provider.Kubeconfig)...)
	for _, side := range []string{"provider", "consumer"} {
		target := provider
		if side == "consumer" {
			target = consumer
		}
		p := newFaultProxy(t, target)
		kc := func() (string, string) {
			if side == "consumer" {
				return p.kubecfg, provider.Kubeconfig
			}
			return consumer.Kubeconfig, p.kubecfg
		}
		// How many requests an uninterrupted authenticate sends to this side.
		p.arm(-1, false)
		ck, pk := kc()
		mustRun(t, "", authArgs(ck, pk)...)
		total := p.count.Load()
		mustRun(t, "", unauthArgs(consumer.Kubeconfig, provider.Kubeconfig)...)
		converged := 0
		for k := int64(0); k < total; k++ {
			p.arm(k, false)
			r := cli(t, "", authArgs(ck, pk, "--timeout", "20s")...)
			p.arm(-1, false)
			if r.code == 0 {
				continue // the cut fell on a request whose failure the run did not need (a best-effort cleanup)
			}
			if r.code != 1 || !strings.Contains(r.stderr, "error: ") || r.wall > 10*time.Second {
				t.Errorf("%s cut after %d requests: want a prompt exit 1 with an error, got %s in %s", side, k, r, r.wall)
			}
			authenticate(t)
			if got := pairingObjects(t, consumer, "provider"); !slices.Equal(got, wantC) {
				t.Errorf("%s cut after %d: consumer after re-run:\n%v\nwant\n%v", side, k, got, wantC)
			}
			if got := pairingObjects(t, provider, "consumer"); !slices.Equal(got, wantP) {
				t.Errorf("%s cut after %d: provider after re-run:\n%v\nwant\n%v", side, k, got, wantP)
			}
			_, cfg := issuedConfig(t)
			if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps(tenantNS).List(t.Context(), metav1.ListOptions{}); err != nil {
				t.Errorf("%s cut after %d: kubeconfig after re-run: %v", side, k, err)
			}
			converged++
			mustRun(t, "", unauthArgs(consumer.Kubeconfig, provider.Kubeconfig)...)
		}
		t.Logf("authenticate, %s side: %d requests, %d fault points failed cleanly and converged on re-run", side, total, converged)

		// unauthenticate's path.
		authenticate(t)
		p.arm(-1, false)
		ck, pk = kc()
		mustRun(t, "", unauthArgs(ck, pk)...)
		utotal := p.count.Load()
		uconverged := 0
		for k := int64(0); k < utotal; k++ {
			authenticate(t)
			p.arm(k, false)
			r := cli(t, "", unauthArgs(ck, pk)...)
			p.arm(-1, false)
			if r.code != 0 && (r.code != 1 || !strings.Contains(r.stderr, "error: ")) {
				t.Errorf("unauthenticate, %s cut after %d: %s", side, k, r)
			}
			mustRun(t, "", unauthArgs(consumer.Kubeconfig, provider.Kubeconfig)...)
			left := append(pairingObjects(t, consumer, "provider"), pairingObjects(t, provider, "consumer")...)
			left = slices.DeleteFunc(left, func(s string) bool { return strings.HasPrefix(s, "namespaces ") })
			if len(left) > 0 {
				t.Errorf("unauthenticate, %s cut after %d: re-run left %v", side, k, left)
			}
			uconverged++
		}
		t.Logf("unauthenticate, %s side: %d requests, %d fault points converged on re-run", side, utotal, uconverged)
	}
}

// A side that stops answering makes the command give up at --timeout with exit code 124.
func TestHangHitsTimeout(t *testing.T) {
	unauthenticate(t)
	mustRun(t, "", "init", "--kubeconfig", consumer.Kubeconfig, "--cluster-id", "consumer")
	mustRun(t, "", "init", "--kubeconfig", provider.Kubeconfig, "--cluster-id", "provider")
	p := newFaultProxy(t, provider)
	for _, k := range []int64{0, 4, 9} {
		p.arm(k, true)
		r := cli(t, "", authArgs(consumer.Kubeconfig, p.kubecfg, "--timeout", "2s")...)
		p.arm(-1, false)
		if r.code != 124 || !strings.Contains(r.stderr, "timed out") || r.wall > 5*time.Second {
			t.Errorf("hang after %d: want exit 124 within ~2s, got %s after %s", k, r, r.wall)
		}
		authenticate(t)
		mustRun(t, "", unauthArgs(consumer.Kubeconfig, provider.Kubeconfig)...)
	}
	_ = os.Remove(p.kubecfg)
}

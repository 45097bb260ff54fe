//go:build e2e

package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// metadataV4 and metadataV6 are addresses the sandbox's NetworkPolicy names: the instance metadata
// service of most clouds and AWS's over IPv6. The tests bind them to the node, as a cloud's host answers
// them, with a server that says "metadata".
const (
	metadataV4 = "169.254.169.254"
	metadataV6 = "fd00:ec2::254"
)

// hostServers binds the addresses to the node for the test and answers HTTP on their port 80.
func hostServers(t *testing.T, answer string, addrs ...string) {
	t.Helper()
	unbind, err := node.BindLocal(addrs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unbind)
	serveHTTP(t, answer, addrs...)
}

// serveHTTP answers HTTP on port 80 of each address of the node with answer, until the test ends.
func serveHTTP(t *testing.T, answer string, addrs ...string) {
	t.Helper()
	for _, a := range addrs {
		l, err := net.Listen("tcp", net.JoinHostPort(a, "80"))
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintln(w, answer)
		})}
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(func() { _ = srv.Close() })
	}
}

// fetch GETs url from inside a pod (as the tenant, through exec) within 3 s and returns what the probe
// printed and its exit code: 0 answered, 1 refused (or another error), 2 no answer in time.
func fetch(t *testing.T, who *tenant, pod *corev1.Pod, url string) (string, int) {
	t.Helper()
	r := kubectl(t, who.kubeconfig, "exec", "-n", pod.Namespace, pod.Name, "--", "/probe", "get", url, "3s")
	if r.code != 0 && !strings.Contains(r.stderr, "probe:") {
		t.Fatalf("exec into %s/%s failed before the probe ran: %s", pod.Namespace, pod.Name, r)
	}
	return r.stdout + r.stderr, r.code
}

func url(ip string, port int) string {
	return fmt.Sprintf("http://%s/", net.JoinHostPort(ip, fmt.Sprint(port)))
}

// TestNetworkPolicy sends packets from a tenant pod and checks what the sandbox's NetworkPolicy, enforced
// by the node's engine, lets through: the tenant's own pods (both families) and the node itself answer;
// the metadata addresses (v4 and v6), another tenant's pod and a pod in a provider namespace do not. Each
// refused target is shown listening first (it answers the node, or a pod allowed to reach it).
func TestNetworkPolicy(t *testing.T) {
	tn, nb := pair(t, consumer), pair(t, other)
	ctx := t.Context()
	hostServers(t, "metadata", metadataV4, metadataV6)
	serveHTTP(t, "node", kubeenv.NodeIPv4, kubeenv.NodeIPv6)
	client := startPod(t, tn.client, tn.kubeconfig, tn.namespace, probePod("net-client"))
	server := startPod(t, tn.client, tn.kubeconfig, tn.namespace, probePod("net-server"))
	neighbour := startPod(t, nb.client, nb.kubeconfig, nb.namespace, probePod("net-neighbour"))
	providerNamespace(t, "provider-apps")
	own := startPod(t, admin(t), provider.Kubeconfig, "provider-apps", probePod("net-own"))
	for _, p := range []*corev1.Pod{client, server, neighbour} {
		if err := node.WaitFirewall(ctx, p.Namespace, p.Name); err != nil {
			t.Fatal(err)
		}
	}
	serverV4, serverV6 := podIPs(t, server)
	neighbourV4, neighbourV6 := podIPs(t, neighbour)
	ownV4, ownV6 := podIPs(t, own)

	// Every target listens: the node (outside any policy) reaches each.
	for _, u := range []string{url(serverV4, 8080), url(neighbourV4, 8080), url(ownV4, 8080), url(metadataV4, 80)} {
		if err := getFromNode(ctx, u); err != nil {
			t.Fatalf("the node cannot reach %s: %v; the test proves nothing", u, err)
		}
	}

	cases := []struct {
		name, url string
		reach     bool
	}{
		{"own pod over IPv4", url(serverV4, 8080), true},
		{"own pod over IPv6", url(serverV6, 8080), true},
		{"the node over IPv4", url(kubeenv.NodeIPv4, 80), true},
		{"the node over IPv6", url(kubeenv.NodeIPv6, 80), true},
		{"metadata over IPv4 (" + metadataV4 + ")", url(metadataV4, 80), false},
		{"metadata over IPv6 (" + metadataV6 + ")", url(metadataV6, 80), false},
		{"another tenant's pod over IPv4", url(neighbourV4, 8080), false},
		{"another tenant's pod over IPv6", url(neighbourV6, 8080), false},
		{"a provider namespace's pod over IPv4", url(ownV4, 8080), false},
		{"a provider namespace's pod over IPv6", url(ownV6, 8080), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, code := fetch(t, tn, client, c.url)
			switch {
			case c.reach && code != 0:
				t.Errorf("%s: not reached (exit %d): %s", c.url, code, out)
			case !c.reach && code == 0:
				t.Errorf("%s: reached, want dropped by the sandbox's NetworkPolicy: %s", c.url, out)
			case !c.reach && (strings.Contains(out, "probe ") || strings.Contains(out, "metadata")):
				t.Errorf("%s: answered: %s", c.url, out)
			}
		})
	}
	// The neighbour reaches its own pods, not ours: the policy is each tenant's, both ways.
	if out, code := fetch(t, nb, neighbour, url(serverV4, 8080)); code == 0 {
		t.Errorf("another tenant's pod reached ours: %s", out)
	}
	if !strings.Contains(strings.Join(sandbox.MetadataExceptIPv4, " "), "169.254.0.0/16") ||
		!strings.Contains(strings.Join(sandbox.MetadataExceptIPv6, " "), metadataV6) {
		t.Errorf("the addresses tested are no longer in the policy (%v, %v)", sandbox.MetadataExceptIPv4, sandbox.MetadataExceptIPv6)
	}
}

// getFromNode GETs url from the test process (on the node, outside any pod).
func getFromNode(ctx context.Context, u string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}

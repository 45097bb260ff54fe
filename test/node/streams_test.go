//go:build e2e

package node

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestStreams: exec, logs and port-forward through the tenant's (and a slice's) own credential. The API
// server authorizes each (pods/exec, pods/log, pods/portforward) and the kubelet authorizes the API
// server; both hold only in the identity's own namespaces. Refused elsewhere: a pod in a provider
// namespace, a pod of another tenant, and for the slice, the pairing's tenant namespace. Attach is refused
// everywhere: the tenant role does not grant pods/attach.
func TestStreams(t *testing.T) {
	tn, sl, nb := pair(t, consumer), slice(t), pair(t, other)
	mine := startPod(t, tn.client, tn.kubeconfig, tn.namespace, streamPod("stream-mine"))
	sliced := startPod(t, sl.client, sl.kubeconfig, sl.namespace, streamPod("stream-sliced"))
	neighbour := startPod(t, nb.client, nb.kubeconfig, nb.namespace, streamPod("stream-neighbour"))
	providerNamespace(t, "provider-streams")
	own := startPod(t, admin(t), provider.Kubeconfig, "provider-streams", streamPod("stream-own"))

	allowed := []struct {
		who *tenant
		pod *corev1.Pod
	}{{tn, mine}, {sl, sliced}}
	for _, c := range allowed {
		t.Run("allowed/"+c.who.namespace, func(t *testing.T) {
			ns, name := c.pod.Namespace, c.pod.Name
			if out := mustKubectl(t, c.who.kubeconfig, "exec", "-n", ns, name, "--", "/probe", "echo", "inside"); strings.TrimSpace(out.stdout) != "inside" {
				t.Errorf("exec printed %q, want \"inside\"", out.stdout)
			}
			if out := mustKubectl(t, c.who.kubeconfig, "logs", "-n", ns, name); !strings.Contains(out.stdout, "probe: serving on :8080") {
				t.Errorf("logs: %q, want the probe's first line", out.stdout)
			}
			if got := portForward(t, c.who.kubeconfig, ns, name); got != "probe "+name+"\n" {
				t.Errorf("port-forward answered %q, want \"probe %s\"", got, name)
			}
			r := kubectl(t, c.who.kubeconfig, "attach", "-n", ns, name)
			if r.code == 0 || !strings.Contains(r.stderr, `cannot create resource "pods/attach"`) {
				t.Errorf("attach in its own namespace: %s; want Forbidden (the tenant role grants no pods/attach)", r)
			}
		})
	}

	refused := []struct {
		name string
		who  *tenant
		pod  *corev1.Pod
	}{
		{"tenant in a provider namespace", tn, own},
		{"tenant in another tenant's namespace", tn, neighbour},
		{"slice in the pairing's tenant namespace", sl, mine},
		{"slice in a provider namespace", sl, own},
	}
	for _, c := range refused {
		t.Run("refused/"+c.name, func(t *testing.T) {
			ns, name := c.pod.Namespace, c.pod.Name
			for verb, args := range map[string][]string{
				"exec":         {"exec", "-n", ns, name, "--", "/probe", "echo", "inside"},
				"attach":       {"attach", "-n", ns, name},
				"logs":         {"logs", "-n", ns, name},
				"port-forward": {"port-forward", "-n", ns, "pod/" + name, "0:8080"},
			} {
				r := kubectl(t, c.who.kubeconfig, args...)
				if r.code == 0 || !strings.Contains(r.stderr, "forbidden") {
					t.Errorf("%s as %s in %s: %s; want Forbidden", verb, c.who.id, ns, r)
				}
				if strings.Contains(r.stdout, "inside") || strings.Contains(r.stdout, "serving") {
					t.Errorf("%s as %s in %s reached the pod: %q", verb, c.who.id, ns, r.stdout)
				}
			}
		})
	}
}

// streamPod is a probe server that keeps stdin open, as a pod one would attach to does.
func streamPod(name string) *corev1.Pod {
	p := probePod(name)
	p.Spec.Containers[0].Stdin = true
	return p
}

// portForward forwards a free local port to the pod's 8080 with the kubeconfig, GETs it once, and returns
// the answer.
func portForward(t *testing.T, kubeconfig, ns, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := command(ctx, t, "kubectl", "--kubeconfig", kubeconfig, "port-forward", "-n", ns, "pod/"+name, "0:8080")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// kubectl says "Forwarding from 127.0.0.1:PORT -> 8080" once it listens.
	forwarding := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`)
	lines := bufio.NewScanner(stdout)
	port := ""
	for port == "" && lines.Scan() {
		if m := forwarding.FindStringSubmatch(lines.Text()); m != nil {
			port = m[1]
		}
	}
	if port == "" {
		t.Fatalf("port-forward to %s/%s never listened; stderr: %s", ns, name, stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+port+"/", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET through port-forward: %v (kubectl: %s)", err, stderr.String())
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// session is an interactive kubectl exec or attach: lines written to its stdin, lines read from its
// stdout.
type session struct {
	t      *testing.T
	cancel context.CancelFunc
	in     io.WriteCloser
	lines  chan string
	done   chan struct{}
	stderr *strings.Builder
	ended  time.Time
}

// openSession starts kubectl with the kubeconfig and args (exec -i or attach -i).
func openSession(t *testing.T, kubeconfig string, args ...string) *session {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	cmd := command(ctx, t, "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, cancel: cancel, in: in, lines: make(chan string, 16), done: make(chan struct{}), stderr: &strings.Builder{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		_ = cmd.Wait()
		s.ended = time.Now()
		close(s.done)
	}()
	return s
}

// roundTrip writes line and waits for the next line the session prints.
func (s *session) roundTrip(line string, timeout time.Duration) (string, error) {
	if _, err := fmt.Fprintln(s.in, line); err != nil {
		return "", fmt.Errorf("writing to the session: %w (stderr: %s)", err, s.stderr.String())
	}
	select {
	case got := <-s.lines:
		return got, nil
	case <-s.done:
		return "", fmt.Errorf("the session ended (stderr: %s)", s.stderr.String())
	case <-time.After(timeout):
		return "", fmt.Errorf("no answer within %s (stderr: %s)", timeout, s.stderr.String())
	}
}

func (s *session) close() {
	_ = s.in.Close()
	s.cancel()
	<-s.done
}

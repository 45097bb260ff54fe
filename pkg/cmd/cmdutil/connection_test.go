package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
)

func TestCauses(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED), "connection refused"},
		{&net.DNSError{Name: "nowhere.example", Err: "no such host"}, `DNS: the host name "nowhere.example" does not resolve`},
		{errUnauthorized, "401 Unauthorized"},
		{errors.New("something else"), "something else"},
	} {
		if got := cause(c.err); !strings.Contains(got, c.want) {
			t.Errorf("cause(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// A 401 to the kubeconfig's own credentials becomes a ConnectionError naming the flag and the server.
func TestUnauthorizedNamesTheFlag(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) }))
	defer srv.Close()
	f := NewFactory(genericiooptions.NewTestIOStreamsDiscard())
	f.prefix = "remote-"
	cfg := f.Flags.WrapConfigFn(&rest.Config{Host: srv.URL})
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/version", nil)
	resp, err := client.Do(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	var conn *ConnectionError
	if !errors.As(err, &conn) || conn.Flag != "--remote-kubeconfig" || !strings.Contains(conn.Error(), srv.URL) || !strings.Contains(conn.Error(), "401") {
		t.Errorf("a 401: %v", err)
	}
}

// A command that knows the way on (unauthenticate's --force) says it after the cause, on the same line.
func TestConnectionErrorNext(t *testing.T) {
	e := &ConnectionError{Flag: "--remote-kubeconfig", Server: "https://127.0.0.1:1", Cause: "connection refused", Next: "add --force"}
	if got, want := e.Error(), "cannot reach the cluster of --remote-kubeconfig (https://127.0.0.1:1): connection refused; add --force"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

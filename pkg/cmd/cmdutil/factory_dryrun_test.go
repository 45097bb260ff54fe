package cmdutil

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/dryrun"
)

// seen is what a test API server received.
type seen struct {
	mu       sync.Mutex
	requests []string // "METHOD path?query body"
}

func (s *seen) add(r *http.Request) []byte {
	body, _ := io.ReadAll(r.Body)
	defer func() { r.Body = io.NopCloser(bytes.NewReader(body)) }()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r.Method+" "+r.URL.RequestURI()+" "+string(body))
	return body
}

func (s *seen) writes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.requests {
		if !strings.HasPrefix(r, "GET ") {
			out = append(out, r)
		}
	}
	return out
}

// apiServer answers every GET with a Secret "s", a create by echoing it, and a deletion with the Secret.
func apiServer(t *testing.T, s *seen) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := s.add(r)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/secrets") && strings.Contains(r.URL.Path, "/namespaces/new-ns/"):
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
		case strings.HasSuffix(r.URL.Path, "/subjectaccessreviews"):
			_, _ = w.Write([]byte(`{"kind":"SubjectAccessReview","apiVersion":"authorization.k8s.io/v1","status":{"allowed":true}}`))
		case r.Method == http.MethodPost:
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(body)
		default:
			_, _ = w.Write([]byte(`{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","namespace":"ns","uid":"u2"},"data":{"k":"dg=="}}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Client mode sends no write at all: creates, updates, patches and deletions are answered by the dry-run
// layer and printed; reads and access reviews (which store nothing) still reach the server; the request
// counter counts only what was sent.
func TestClientDryRunSendsNoWrite(t *testing.T) {
	var s seen
	f, _ := factoryFor(t, apiServer(t, &s))
	f.dry.Strategy = dryrun.Client
	ctx := t.Context()
	c, err := f.Clients()
	if err != nil {
		t.Fatal(err)
	}
	secrets := c.Kube.CoreV1().Secrets("ns")
	created, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "new"}, StringData: map[string]string{"a": "hunter2-private"}}, metav1.CreateOptions{})
	if err != nil || created.Name != "new" {
		t.Fatalf("create answered %v, %v", created, err)
	}
	if _, err := secrets.Patch(ctx, "s", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := secrets.Delete(ctx, "s", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := s.writes()
	if len(w) != 1 || !strings.Contains(w[0], "subjectaccessreviews") {
		t.Fatalf("the server received writes: %v", w)
	}
	// Sent: the patch's and the deletion's reads of the object, and the review.
	if n := f.Requests.Load(); n != 3 {
		t.Errorf("counted %d requests, want the 3 sent", n)
	}
	var out bytes.Buffer
	if err := f.dry.Print(&out); err != nil {
		t.Fatal(err)
	}
	// A Secret's values never reach stdout: each is its length; a deletion shows no contents at all.
	for _, want := range []string{"would create secret/new in ns, its values redacted (dry run)", "a: '<redacted: 15 bytes>'",
		"would patch secret/s in ns, its values redacted (dry run)", "x: \"y\"", "k: '<redacted: 1 bytes>'", "would delete secret/s in ns (dry run)\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed records lack %q:\n%s", want, out.String())
		}
	}
	for _, secret := range []string{"hunter2-private", "dg=="} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("a Secret's value %q reached the printed records:\n%s", secret, out.String())
		}
	}
}

// Server mode sends every write with dryRun=All (a DELETE also in its body, where the API server reads a
// deletion's options); a write into a namespace this run would create is not sent, and is said to be
// unchecked, instead of failing with the server's NotFound.
func TestServerDryRunSendsDryRunAll(t *testing.T) {
	var s seen
	f, _ := factoryFor(t, apiServer(t, &s))
	f.dry.Strategy = dryrun.Server
	c, err := f.Clients()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := c.Kube.CoreV1().Secrets("ns").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Kube.CoreV1().Secrets("ns").Delete(ctx, "s", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "new-ns"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.CoreV1().Secrets("new-ns").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "inside"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a write into a namespace the run would create: %v", err)
	}
	w := s.writes()
	if len(w) != 3 {
		t.Fatalf("want 3 writes sent (the write into new-ns not), got %v", w)
	}
	for _, r := range w {
		if !strings.Contains(r, "dryRun=All") {
			t.Errorf("sent without dryRun=All: %s", r)
		}
	}
	var opts metav1.DeleteOptions
	body := w[1][strings.Index(w[1], " {")+1:]
	if err := json.Unmarshal([]byte(body), &opts); err != nil || len(opts.DryRun) != 1 || opts.DryRun[0] != metav1.DryRunAll {
		t.Errorf("the DELETE's body does not ask for a dry run: %s (%v)", body, err)
	}
	if u := f.dry.Unchecked()[f.ClusterName()]; len(u) != 1 || u[0] != "secret/inside in new-ns" {
		t.Errorf("unchecked: %v", f.dry.Unchecked())
	}
}

// A server behind a path prefix (a gateway's https://gw/k8s/clusters/c1) is dry-run like any other, and
// the reads a dry run makes for a write go as that write would have: under the same --as.
func TestDryRunReadsKeepPrefixAndImpersonation(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" as="+r.Header.Get("Impersonate-User"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","namespace":"ns","uid":"u2"}}`))
	}))
	t.Cleanup(srv.Close)
	kc := filepath.Join(t.TempDir(), "kc")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "+srv.URL+"/k8s/clusters/c1}}]\n"+
		"contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := NewFactory(genericiooptions.NewTestIOStreamsDiscard())
	as := "alice"
	f.Flags.KubeConfig, f.Flags.Impersonate = &kc, &as
	f.dry.Strategy = dryrun.Client
	c, err := f.Clients()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.CoreV1().Secrets("ns").Patch(t.Context(), "s", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("a dry-run patch behind a path prefix: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != "GET /k8s/clusters/c1/api/v1/namespaces/ns/secrets/s as=alice" {
		t.Errorf("the server received %q, want only the read of the object, under the prefix, as alice", got)
	}
}

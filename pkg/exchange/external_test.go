package exchange

import (
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// service starts a TLS exchange service answering with h, and an External rule trusting it.
func service(t *testing.T, h http.HandlerFunc) *Rule {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	r := &Rule{Name: "ext", Type: External, URL: srv.URL + "/exchange", CABundle: ca, Source: Source{UserPattern: "ext-.*"}}
	if err := r.validate("rule"); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestExternalAnswers(t *testing.T) {
	var got Request
	r := service(t, func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/exchange" || req.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request", 400)
			return
		}
		body, _ := io.ReadAll(req.Body)
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		_, _ = w.Write([]byte(`{"user": "alice@corp", "groups": ["dev", "ops"]}`))
	})
	tgt, err := Client{}.Exchange(t.Context(), r, Request{User: "ext-alice", Groups: []string{"g"}, UID: "7", Cluster: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if tgt.User != "alice@corp" || strings.Join(tgt.Groups, ",") != "dev,ops" {
		t.Errorf("target %+v", tgt)
	}
	if got.User != "ext-alice" || got.UID != "7" || got.Cluster != "p" || len(got.Groups) != 1 {
		t.Errorf("the service was sent %+v", got)
	}
}

func TestExternalRefuses(t *testing.T) {
	big := `{"user": "a", "groups": ["` + strings.Repeat("x", MaxExternalResponse) + `"]}`
	for _, c := range []struct {
		name, answer string
		status       int
		delay        time.Duration
		redirect     bool
		want         string
	}{
		{name: "500", answer: `{"user": "a"}`, status: 500, want: "answered HTTP 500"},
		{name: "404", answer: `{"user": "a"}`, status: 404, want: "answered HTTP 404"},
		{name: "malformed", answer: `{"user": `, want: "is not the JSON object"},
		{name: "not an object", answer: `["a"]`, want: "is not the JSON object"},
		{name: "unknown field", answer: `{"user": "a", "admin": true}`, want: "unknown field"},
		{name: "two values", answer: `{"user": "a"} {"user": "b"}`, want: "more than one JSON value"},
		{name: "no user", answer: `{"groups": ["g"]}`, want: "answer.user: must not be empty"},
		{name: "system user", answer: `{"user": "system:admin"}`, want: `answer.user "system:admin"`},
		{name: "system group", answer: `{"user": "a", "groups": ["system:masters"]}`, want: `answer.groups[0] "system:masters"`},
		{name: "oversize", answer: big, want: "larger than 65536 bytes"},
		// The service never answers (until the test ends): the client's own deadline is what fires.
		{name: "timeout", answer: `{"user": "a"}`, delay: time.Hour, want: "did not answer within 300ms"},
		{name: "redirect", redirect: true, want: "redirects are refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan struct{})
			defer close(done)
			r := service(t, func(w http.ResponseWriter, req *http.Request) {
				if c.redirect {
					http.Redirect(w, req, "/elsewhere", http.StatusFound)
					return
				}
				select {
				case <-time.After(c.delay):
				case <-done:
					return
				}
				if c.status != 0 {
					w.WriteHeader(c.status)
				}
				_, _ = w.Write([]byte(c.answer))
			})
			// A deadline only where the case is about it: elsewhere a busy machine's TLS handshake and a
			// 64 KiB answer must not race a clock.
			timeout := time.Minute
			if c.name == "timeout" {
				timeout = 300 * time.Millisecond
			}
			_, err := Client{Timeout: timeout}.Exchange(t.Context(), r, Request{User: "ext-a"})
			var ee *ExternalError
			if !errors.As(err, &ee) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an ExternalError containing %q", err, c.want)
			}
		})
	}
}

func TestExternalTrust(t *testing.T) {
	r := service(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"user": "a"}`)) })
	untrusted := *r
	untrusted.CABundle = nil
	if _, err := (Client{}).Exchange(t.Context(), &untrusted, Request{User: "ext-a"}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a service outside the trusted roots: %v", err)
	}
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"user": "a"}`)) }))
	defer plain.Close()
	local := Rule{Name: "l", Type: External, URL: plain.URL}
	if tgt, err := (Client{}).Exchange(t.Context(), &local, Request{User: "x"}); err != nil || tgt.User != "a" {
		t.Errorf("http to loopback: %v %v", tgt, err)
	}
	remote := Rule{Name: "r", Type: External, URL: "http://exchanger.example/"}
	if _, err := (Client{}).Exchange(t.Context(), &remote, Request{User: "x"}); err == nil || !strings.Contains(err.Error(), "must be https") {
		t.Errorf("http to a non-loopback host: %v", err)
	}
	if _, err := (Client{}).Exchange(t.Context(), &Rule{Name: "p", Type: Privileged}, Request{User: "x"}); err == nil {
		t.Error("a privileged rule was sent to a service")
	}
}

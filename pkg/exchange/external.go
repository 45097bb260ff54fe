package exchange

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Bounds on an external exchange service: it is asked while someone waits for a kubeconfig, and its
// answer decides an identity, so a slow, chatty or odd answer is refused, never worked around.
const (
	ExternalTimeout     = 5 * time.Second
	MaxExternalResponse = 64 << 10
)

// Client asks external exchange services. The zero value is ready; tests shorten Timeout.
type Client struct {
	Timeout time.Duration // 0 means ExternalTimeout
}

// ExternalError is a refusal by, or a failure to reach, an external service. Any error refuses the
// exchange: there is no fallback to a lower, or more privileged, rule.
type ExternalError struct {
	Rule string
	Err  error
}

func (e *ExternalError) Error() string {
	return fmt.Sprintf("exchange rule %q: the external service refused or failed, no identity is handed out: %v", e.Rule, e.Err)
}

func (e *ExternalError) Unwrap() error { return e.Err }

// Exchange posts req to an External rule's service and returns the target it answers.
func (c Client) Exchange(ctx context.Context, r *Rule, req Request) (*Target, error) {
	t, err := c.exchange(ctx, r, req)
	if err != nil {
		return nil, &ExternalError{Rule: r.Name, Err: err}
	}
	return t, nil
}

func (c Client) exchange(ctx context.Context, r *Rule, req Request) (*Target, error) {
	if r.Type != External {
		return nil, fmt.Errorf("is a %s rule, not an %s rule", r.Type, External)
	}
	// Checked again here, not only at Parse: a Config may have been built by hand.
	if err := ValidateURL("url", r.URL); err != nil {
		return nil, err
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if len(r.CABundle) > 0 && !roots.AppendCertsFromPEM(r.CABundle) {
		return nil, errors.New("caBundle: holds no PEM certificate")
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = ExternalTimeout
	}
	client := &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:           http.ProxyFromEnvironment,
			TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		},
		// A redirect would send the user's name to a URL nobody reviewed in the rule file.
		CheckRedirect: func(*http.Request, []*http.Request) error { return errors.New("redirects are refused") },
	}
	defer client.CloseIdleConnections()
	if req.Groups == nil {
		req.Groups = []string{}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	resp, err := client.Do(hreq)
	if err != nil {
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			return nil, fmt.Errorf("did not answer within %s", timeout)
		}
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxExternalResponse+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("answered HTTP %d", resp.StatusCode)
	}
	if len(data) > MaxExternalResponse {
		return nil, fmt.Errorf("the answer is larger than %d bytes", MaxExternalResponse)
	}
	var answer struct {
		User   string   `json:"user"`
		Groups []string `json:"groups"`
		UID    string   `json:"uid"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&answer); err != nil {
		return nil, fmt.Errorf("the answer is not the JSON object {\"user\": ..., \"groups\": [...]}: %w", err)
	}
	if dec.More() {
		return nil, errors.New("the answer holds more than one JSON value")
	}
	t := &Target{User: answer.User, Groups: answer.Groups, UID: answer.UID}
	if err := ValidateTarget("answer", *t); err != nil {
		return nil, err
	}
	return t, nil
}

func certPool(pemData []byte) (*x509.CertPool, error) {
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pemData) {
		return nil, errors.New("holds no PEM certificate")
	}
	return p, nil
}

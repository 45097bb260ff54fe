package kubeenv

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// Structured authentication on a local control plane: a provider whose API server trusts another
// cluster's ServiceAccount tokens reads an AuthenticationConfiguration file and reloads it when it changes
// (fsnotify, and once a minute), but only once every JWT authenticator in it is healthy, which can take its
// ten-second health poll; a file it cannot load or validate is refused and the previous one stays.

// EmptyAuthenticationConfig is a structured authentication configuration with no JWT authenticator.
const EmptyAuthenticationConfig = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt: []\n"

// authenticationArgs are the API server's issuer and authentication flags for the options.
func (c *Cluster) authenticationArgs(o Options) ([]string, error) {
	var args []string
	if o.IssuerAtServer {
		// The discovery document and the keys at the issuer itself, which is what a JWT authenticator
		// fetches (<issuer>/.well-known/openid-configuration, then its jwks_uri).
		c.Issuer = c.Server
		args = append(args, "--service-account-jwks-uri="+c.Server+"/openid/v1/jwks")
	}
	args = append(args, "--service-account-issuer="+c.Issuer)
	if o.AuthenticationConfig {
		c.AuthenticationConfigFile = filepath.Join(c.Dir, "authentication-config.yaml")
		if err := os.WriteFile(c.AuthenticationConfigFile, []byte(EmptyAuthenticationConfig), 0o600); err != nil {
			return nil, err
		}
		args = append(args, "--authentication-config="+c.AuthenticationConfigFile)
	}
	return args, nil
}

// WriteAuthenticationConfig replaces the API server's authentication configuration (as an administrator
// edits it: the whole file, at once) and waits until the API server has loaded exactly it. A configuration
// it refuses (invalid, or an issuer it cannot reach within its one-minute reload) is an error naming the
// reason its log gives.
func (c *Cluster) WriteAuthenticationConfig(ctx context.Context, data []byte) error {
	if c.AuthenticationConfigFile == "" {
		return fmt.Errorf("cluster %s: started without an authentication configuration (Options.AuthenticationConfig)", c.Name)
	}
	before, err := c.Metrics(ctx)
	if err != nil {
		return err
	}
	failedBefore := before.Sum("apiserver_authentication_config_controller_automatic_reloads_total", map[string]string{"status": "failure"})
	// Renamed into place, so that the API server never reads half a file.
	tmp := c.AuthenticationConfigFile + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, c.AuthenticationConfigFile); err != nil {
		return err
	}
	want := fmt.Sprintf("sha256:%x", sha256.Sum256(data))
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	// Nothing to watch: the reload shows only in the API server's metrics, polled with a growing pause.
	for pause := 100 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		m, err := c.Metrics(ctx)
		if err == nil {
			if m.Has("apiserver_authentication_config_controller_last_config_info", map[string]string{"hash": want}) {
				return nil
			}
			if m.Sum("apiserver_authentication_config_controller_automatic_reloads_total", map[string]string{"status": "failure"}) > failedBefore {
				return fmt.Errorf("cluster %s: the API server refused the authentication configuration; last lines of its log:\n%s", c.Name, c.logTail("kube-apiserver", 10))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster %s: the API server did not load the authentication configuration: %w; last lines of its log:\n%s", c.Name, ctx.Err(), c.logTail("kube-apiserver", 10))
		case <-time.After(pause):
		}
	}
}

func (c *Cluster) logTail(component string, n int) string {
	data, _ := os.ReadFile(filepath.Join(c.Dir, component+".log"))
	return tail(string(data), n)
}

// Metrics are the samples of an API server's /metrics, by metric name.
type Metrics map[string][]Sample

// Sample is one sample: its labels and value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Metrics reads the API server's /metrics as its administrator.
func (c *Cluster) Metrics(ctx context.Context) (Metrics, error) {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	data, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: reading /metrics: %w", c.Name, err)
	}
	return ParseMetrics(data), nil
}

// ParseMetrics reads the Prometheus text format, enough for the samples of an API server.
func ParseMetrics(data []byte) Metrics {
	m := Metrics{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, labels := line, "", map[string]string{}
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				continue
			}
			name, rest = line[:i], line[j+1:]
			for _, kv := range splitLabels(line[i+1 : j]) {
				k, v, _ := strings.Cut(kv, "=")
				labels[k] = strings.Trim(v, `"`)
			}
		} else if i := strings.IndexByte(line, ' '); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		m[name] = append(m[name], Sample{Labels: labels, Value: v})
	}
	return m
}

// splitLabels splits a label list at the commas outside quotes.
func splitLabels(s string) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// Has tells whether a sample of the metric carries every label given.
func (m Metrics) Has(name string, labels map[string]string) bool {
	for _, s := range m[name] {
		if matches(s, labels) {
			return true
		}
	}
	return false
}

// Sum adds the values of the metric's samples that carry every label given.
func (m Metrics) Sum(name string, labels map[string]string) float64 {
	var sum float64
	for _, s := range m[name] {
		if matches(s, labels) {
			sum += s.Value
		}
	}
	return sum
}

func matches(s Sample, labels map[string]string) bool {
	for k, v := range labels {
		if s.Labels[k] != v {
			return false
		}
	}
	return true
}

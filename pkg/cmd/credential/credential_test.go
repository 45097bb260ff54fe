package credential_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
)

// paired is edge holding a pairing's credential on farm, and the same kubeconfig in a Secret of the
// namespace tools.
func paired(t *testing.T) (*cmdtest.World, []byte) {
	t.Helper()
	w := cmdtest.NewWorld(t, "edge", "farm")
	if r := w.Run("authenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "farm", "--cluster-id", "edge", "--remote-cluster-id", "farm"); r.Code != 0 {
		t.Fatalf("authenticate: %s", r)
	}
	r := w.Run("get", "kubeconfig", "--kubeconfig", "edge", "--remote-cluster-id", "farm")
	if r.Code != 0 {
		t.Fatalf("get kubeconfig: %s", r)
	}
	kc := []byte(r.Stdout)
	k := w.Cluster("edge").Clientset
	if _, err := k.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tools"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.CoreV1().Secrets("tools").Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "farm", Namespace: "tools"},
		Data: map[string][]byte{"credential": kc}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return w, kc
}

type execCredential struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Status     struct {
		ExpirationTimestamp   time.Time `json:"expirationTimestamp"`
		ClientCertificateData string    `json:"clientCertificateData"`
		ClientKeyData         string    `json:"clientKeyData"`
		Token                 string    `json:"token"`
	} `json:"status"`
}

// The plugin prints the held credential as an ExecCredential, in the version the client asks, with an
// expirationTimestamp --refresh-after ahead; it reads what every source names, refuses to choose between
// two, and writes nothing anywhere.
func TestCommandTableCredential(t *testing.T) {
	w, kc := paired(t)
	held, err := kubeconfig.Parse(kc)
	if err != nil {
		t.Fatal(err)
	}
	execInfo := func(version, config string) string {
		cluster := ""
		if config != "" {
			cluster = `,"cluster":{"server":"https://farm","config":` + config + `}`
		}
		return `{"apiVersion":"client.authentication.k8s.io/` + version + `","kind":"ExecCredential","spec":{"interactive":false` + cluster + `}}`
	}
	base := []string{"credential", "--kubeconfig", "edge"}
	for _, row := range []struct {
		name, env string
		args      []string
		code      int
		version   string
		refresh   time.Duration
		stderr    string
	}{
		{name: "the pairing's, by hand", args: []string{"--remote-cluster-id", "farm"}, version: "v1", refresh: 30 * time.Second},
		{name: "asked in v1beta1", env: execInfo("v1beta1", ""), args: []string{"--remote-cluster-id", "farm"}, version: "v1beta1", refresh: 30 * time.Second},
		{name: "a shorter horizon", args: []string{"--remote-cluster-id", "farm", "--refresh-after", "5s"}, version: "v1", refresh: 5 * time.Second},
		{name: "from a Secret", args: []string{"--secret", "farm", "--key", "credential", "-n", "tools"}, version: "v1", refresh: 30 * time.Second},
		{name: "from the cluster's config", env: execInfo("v1", `{"name":"farm","key":"credential","namespace":"tools"}`), version: "v1", refresh: 30 * time.Second},
		{name: "config and a flag", env: execInfo("v1", `{"name":"farm","key":"credential"}`), args: []string{"--remote-cluster-id", "farm"}, code: 1,
			stderr: "error: --remote-cluster-id and --secret: the client provides the cluster's configuration"},
		{name: "a config without key", env: execInfo("v1", `{"name":"farm"}`), code: 1, stderr: "spec.cluster.config.key: the Secret's data key must be given"},
		{name: "a config with a stranger field", env: execInfo("v1", `{"name":"farm","key":"k","token":"x"}`), code: 1, stderr: `unknown field "token"`},
		{name: "an unknown version", env: `{"apiVersion":"client.authentication.k8s.io/v2","kind":"ExecCredential"}`, args: []string{"--remote-cluster-id", "farm"}, code: 1,
			stderr: `apiVersion "client.authentication.k8s.io/v2": this plugin speaks`},
		{name: "no source", code: 1, stderr: "error: --remote-cluster-id or --secret: one is required"},
		{name: "both sources", args: []string{"--remote-cluster-id", "farm", "--secret", "farm"}, code: 1, stderr: "error: --remote-cluster-id and --secret: give one"},
		{name: "a provider not held", args: []string{"--remote-cluster-id", "other"}, code: 1, stderr: `provider "other" not found among the providers this cluster holds an identity of`},
		{name: "a Secret not there", args: []string{"--secret", "nope", "-n", "tools"}, code: 1, stderr: "secret tools/nope not found on this cluster"},
		{name: "a key not there", args: []string{"--secret", "farm", "-n", "tools"}, code: 1, stderr: `secret tools/farm has no "kubeconfig" key`},
	} {
		t.Run(row.name, func(t *testing.T) {
			t.Setenv(kubeconfig.ExecInfoEnv, row.env)
			before := w.Mark("edge")
			start := time.Now().Truncate(time.Second)
			r := w.Run(append(append([]string{}, base...), row.args...)...)
			if r.Code != row.code || !strings.Contains(r.Stderr, row.stderr) {
				t.Fatalf("want exit %d and %q: %s", row.code, row.stderr, r)
			}
			if writes := w.Writes("edge", before); len(writes) != 0 {
				t.Errorf("the plugin wrote: %v", writes)
			}
			if row.code != 0 {
				if r.Stdout != "" {
					t.Errorf("a refusal printed on stdout: %q", r.Stdout)
				}
				return
			}
			var ec execCredential
			if err := json.Unmarshal([]byte(r.Stdout), &ec); err != nil {
				t.Fatalf("stdout is not an ExecCredential: %v\n%s", err, r.Stdout)
			}
			if ec.APIVersion != "client.authentication.k8s.io/"+row.version || ec.Kind != "ExecCredential" {
				t.Errorf("answered %s %s", ec.APIVersion, ec.Kind)
			}
			if ec.Status.ClientCertificateData != string(held.CertPEM) || ec.Status.ClientKeyData != string(held.KeyPEM) || ec.Status.Token != "" {
				t.Error("the credential printed is not the one held")
			}
			if exp := ec.Status.ExpirationTimestamp; exp.Before(start.Add(row.refresh-time.Second)) || exp.After(time.Now().Add(row.refresh)) {
				t.Errorf("expirationTimestamp %s, want %s from %s", exp, row.refresh, start)
			}
		})
	}
}

// A credential that expires before the horizon is handed out until its own expiry; an expired one is
// refused, naming when.
func TestRefreshAt(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	cert := func(notAfter time.Time) kubeconfig.Params {
		der := selfSigned(t, notAfter)
		return kubeconfig.Params{CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	}
	if at, err := kubeconfig.RefreshAt(cert(now.Add(time.Hour)), now, 30*time.Second); err != nil || !at.Equal(now.Add(30*time.Second)) {
		t.Errorf("a certificate valid for an hour: %s %v", at, err)
	}
	if at, err := kubeconfig.RefreshAt(cert(now.Add(10*time.Second)), now, 30*time.Second); err != nil || !at.Equal(now.Add(10*time.Second)) {
		t.Errorf("a certificate valid for 10s: %s %v", at, err)
	}
	if _, err := kubeconfig.RefreshAt(cert(now.Add(-time.Second)), now, 30*time.Second); err == nil || !strings.Contains(err.Error(), "expired (at 2026-11-25T09:59:59Z)") {
		t.Errorf("an expired certificate: %v", err)
	}
	// A token's exp, read from the JWT; a token that is no JWT says nothing.
	jwt := "e30." + b64(`{"exp":`+itoa(now.Add(5*time.Second).Unix())+`}`) + ".sig"
	if at, err := kubeconfig.RefreshAt(kubeconfig.Params{Token: jwt}, now, 30*time.Second); err != nil || !at.Equal(now.Add(5*time.Second)) {
		t.Errorf("a token valid for 5s: %s %v", at, err)
	}
	if at, err := kubeconfig.RefreshAt(kubeconfig.Params{Token: "opaque"}, now, 30*time.Second); err != nil || !at.Equal(now.Add(30*time.Second)) {
		t.Errorf("an opaque token: %s %v", at, err)
	}
}

// Only an inline credential is handed out: a kubeconfig whose user would make the plugin run or read
// something else is refused.
func TestParseInlineRefuses(t *testing.T) {
	for name, user := range map[string]string{
		"exec":      "exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, interactiveMode: Never}",
		"file":      "client-certificate: /etc/passwd\n    client-key: /etc/shadow",
		"tokenFile": "tokenFile: /var/run/token",
		"basic":     "username: a\n    password: b",
		"nothing":   "{}",
	} {
		kc := "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: c, cluster: {server: 'https://x'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\nusers:\n- name: u\n  user:\n    " + user + "\n"
		if _, err := kubeconfig.ParseInline([]byte(kc), ""); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func selfSigned(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "u"}, NotBefore: notAfter.Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

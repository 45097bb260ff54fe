//go:build e2e

package e2e

// Finding 3 of issue 8: the files exchanged in the manual flow can be altered in transit. identity.yaml
// must be refused, naming the field, when any field the consumer acts on was changed; tenant.yaml's
// signature must cover the proxy URL; and the documented provider step must never be `kubectl apply` of a
// file received from another party.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// manualFlow is one run of the documented manual flow, through files in dir.
type manualFlow struct {
	dir    string
	nonce  string
	tenant string // path of the consumer's genuine tenant.yaml
}

// startManualFlow resets the pair and runs the manual flow up to the consumer's tenant.yaml:
// create nonce, get nonce (provider), generate tenant (consumer). extra goes to generate tenant.
func startManualFlow(t *testing.T, extra ...string) *manualFlow {
	t.Helper()
	unauthenticate(t)
	mustRun(t, "", "init", "--kubeconfig", consumer.Kubeconfig, "--cluster-id", "consumer")
	mustRun(t, "", "init", "--kubeconfig", provider.Kubeconfig, "--cluster-id", "provider")
	settle(t, consumer, "federate-system")
	settle(t, provider, "federate-system")
	return nextManualFlow(t, extra...)
}

// nextManualFlow runs the manual flow up to tenant.yaml again with a new nonce, without resetting the
// pair (a renewal when an identity was issued before).
func nextManualFlow(t *testing.T, extra ...string) *manualFlow {
	t.Helper()
	m := &manualFlow{dir: t.TempDir()}
	mustRun(t, "", "create", "nonce", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", "consumer")
	text := mustRun(t, "", "get", "nonce", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", "consumer").stdout
	m.nonce = bareNonce(t, text)
	m.write(t, "nonce.txt", text+"\n")
	tenant := mustRun(t, "", append([]string{"generate", "tenant", "--kubeconfig", consumer.Kubeconfig, "--remote-cluster-id", "provider", "--nonce", m.nonce}, extra...)...).stdout
	m.tenant = m.write(t, "tenant.yaml", tenant)
	return m
}

func (m *manualFlow) write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(m.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// generateIdentity is the provider's step on a tenant file.
func (m *manualFlow) generateIdentity(t *testing.T, tenantPath string, extra ...string) result {
	t.Helper()
	return cli(t, "", append([]string{"generate", "identity", "--kubeconfig", provider.Kubeconfig, "--remote-cluster-id", "consumer", "-f", tenantPath}, extra...)...)
}

// editYAML decodes a document into a generic map (so fields this test does not know survive), lets mut
// change it and returns the new document.
func editYAML(t *testing.T, doc string, mut func(spec map[string]any)) string {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("decoding %q: %v", doc, err)
	}
	spec, ok := m["spec"].(map[string]any)
	if !ok {
		t.Fatalf("no spec in %q", doc)
	}
	mut(spec)
	out, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// selfSignedPEM returns a fresh, valid self-signed certificate (a CA if isCA).
func selfSignedPEM(t *testing.T, cn string, isCA bool) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		BasicConstraintsValid: true, IsCA: isCA,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	if !isCA {
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// lastLine is the last non-empty line of a command's stderr (its error, on failure).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// An identity.yaml altered in transit is refused, naming the altered field, and nothing changes on either
// cluster; the genuine file then imports.
func TestTamperedIdentityIsRefused(t *testing.T) {
	m := startManualFlow(t)
	r := m.generateIdentity(t, m.tenant)
	if r.code != 0 {
		t.Fatalf("generate identity -f tenant.yaml: %s", r)
	}
	genuine := r.stdout
	identityPath := m.write(t, "identity.yaml", genuine)
	settle(t, provider, tenantNS)

	// A certificate that is valid in every way but the MAC: signed by the provider's own CA, for the
	// consumer's real client key and user (the same CSR), but not the one the provider issued.
	var tenantDoc map[string]any
	tenantText, err := os.ReadFile(m.tenant)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(tenantText, &tenantDoc); err != nil {
		t.Fatal(err)
	}
	csrPEM, err := base64.StdEncoding.DecodeString(tenantDoc["spec"].(map[string]any)["csr"].(string))
	if err != nil {
		t.Fatal(err)
	}
	otherCert := issue(t, kubernetes.NewForConfigOrDie(provider.Config), "e2e-tamper-other-cert", csrPEM, 600)
	otherCA := selfSignedPEM(t, "attacker-ca", true)

	cases := []struct {
		field string
		mut   func(s map[string]any)
	}{
		{"spec.apiServer", func(s map[string]any) { s["apiServer"] = consumer.Server }},
		{"spec.ca", func(s map[string]any) { s["ca"] = b64(otherCA) }},
		{"spec.proxyURL", func(s map[string]any) { s["proxyURL"] = "http://127.0.0.1:3128" }},
		{"spec.namespace", func(s map[string]any) { s["namespace"] = "federate-tenant-attacker" }},
		{"spec.certificate", func(s map[string]any) { s["certificate"] = b64(otherCert) }},
		{"spec.integrity", func(s map[string]any) { delete(s, "integrity") }},
	}
	if !strings.Contains(genuine, "integrity") {
		t.Errorf("identity.yaml carries no integrity field:\n%s", genuine)
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			altered := editYAML(t, genuine, tc.mut)
			if altered == editYAML(t, genuine, func(map[string]any) {}) {
				t.Fatalf("the alteration of %s changed nothing", tc.field)
			}
			path := m.write(t, "identity-"+strings.TrimPrefix(tc.field, "spec.")+".yaml", altered)
			before := takeSnapshot(t)
			r := cli(t, "", "import", "identity", "--kubeconfig", consumer.Kubeconfig, "-f", path)
			after := takeSnapshot(t)
			t.Logf("%s", lastLine(r.stderr))
			if r.code != 1 || !strings.Contains(r.stderr, tc.field) {
				t.Errorf("import of an identity.yaml with %s altered: want exit 1 naming %s: %s", tc.field, tc.field, r)
			}
			if r.stdout != "" {
				t.Errorf("stdout not empty on refusal: %q", r.stdout)
			}
			if d := before.diff(after); len(d) > 0 {
				t.Errorf("a refused import changed the clusters:\n%s", strings.Join(d, "\n"))
			}
		})
	}

	// The refusals consumed nothing: the genuine file imports, and the kubeconfig points where the
	// provider said.
	r = cli(t, "", "import", "identity", "--kubeconfig", consumer.Kubeconfig, "-f", identityPath)
	if r.code != 0 {
		t.Fatalf("genuine identity.yaml after the refusals: %s", r)
	}
	_, cfg := issuedConfig(t)
	if cfg.Host != provider.Server {
		t.Errorf("kubeconfig server %q, want %q", cfg.Host, provider.Server)
	}
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps(tenantNS).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Errorf("the genuine identity does not work: %v", err)
	}
}

// A tenant.yaml whose proxy URL was altered or removed in transit is refused by the signature check, and
// creates nothing on the provider and does not use the nonce up: the genuine file still issues, with the
// consumer's own proxy URL.
func TestTamperedTenantProxyIsRefused(t *testing.T) {
	const proxy = "http://127.0.0.1:3128"
	m := startManualFlow(t, "--proxy-url", proxy)
	genuine, err := os.ReadFile(m.tenant)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(genuine), proxy) {
		t.Fatalf("generate tenant --proxy-url %s: the proxy is not in tenant.yaml:\n%s", proxy, genuine)
	}
	cases := []struct {
		name string
		mut  func(s map[string]any)
	}{
		{"changed", func(s map[string]any) { s["proxyURL"] = "http://127.0.0.1:8081" }},
		{"removed", func(s map[string]any) { delete(s, "proxyURL") }},
		{"socks", func(s map[string]any) { s["proxyURL"] = "socks5://127.0.0.1:1080" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := m.write(t, "tenant-"+tc.name+".yaml", editYAML(t, string(genuine), tc.mut))
			before := takeSnapshot(t)
			r := m.generateIdentity(t, path)
			after := takeSnapshot(t)
			t.Logf("%s", lastLine(r.stderr))
			if r.code != 1 || !strings.Contains(r.stderr, "spec.signature") {
				t.Errorf("generate identity of a tenant.yaml with its proxy URL %s: want exit 1 naming spec.signature: %s", tc.name, r)
			}
			if r.stdout != "" {
				t.Errorf("stdout not empty on refusal: %q", r.stdout)
			}
			if d := before.diff(after); len(d) > 0 {
				t.Errorf("a refused request changed the clusters (the nonce must stay unused):\n%s", strings.Join(d, "\n"))
			}
		})
	}
	// The nonce is still unused: the genuine request issues, and the consumer's proxy lands in its
	// kubeconfig.
	r := m.generateIdentity(t, m.tenant)
	if r.code != 0 {
		t.Fatalf("the genuine tenant.yaml after the refusals: %s", r)
	}
	mustRun(t, "", "import", "identity", "--kubeconfig", consumer.Kubeconfig, "-f", m.write(t, "identity.yaml", r.stdout))
	kc := mustRun(t, "", "get", "kubeconfig", "--kubeconfig", consumer.Kubeconfig, "--remote-cluster-id", "provider").stdout
	cfg, err := clientcmd.Load([]byte(kc))
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range cfg.Clusters {
		if c.ProxyURL != proxy {
			t.Errorf("kubeconfig cluster %s: proxy-url %q, want the consumer's %q", name, c.ProxyURL, proxy)
		}
	}
}

// applyTenant matches every way of writing `kubectl apply` of a tenant file: -f or --filename, with
// or without "=", with flags in between.
var applyTenant = regexp.MustCompile(`(?i)\bapply\b[^\n|;&]*?(-f|--filename)[ =]\s*\S*tenant`)

// The documented provider step reads the Tenant with kubectl federate (generate identity -f), never with
// kubectl apply of a file received from another party.
func TestTamperDocsNeverApplyTenant(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	if len(files) < 3 {
		t.Fatalf("found only %v", files)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "kubectl apply -f tenant.yaml") || strings.Contains(line, "apply -f tenant") || applyTenant.MatchString(line) {
				t.Errorf("%s:%d tells the provider to kubectl apply a received file: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
	// The provider's step that replaces it is documented, with the file.
	for _, f := range []string{filepath.Join(root, "README.md"), filepath.Join(root, "docs", "manual-flow.md")} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		joined := regexp.MustCompile(`\\\n\s*`).ReplaceAllString(string(data), " ") // shell line continuations
		if !regexp.MustCompile(`generate identity[^\n]*(-f|--filename)[ =]\s*\S*tenant`).MatchString(joined) {
			t.Errorf("%s does not show `kubectl federate generate identity ... -f tenant.yaml`", f)
		}
	}
}

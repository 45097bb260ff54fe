//go:build e2e

package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// operatorKubeconfig issues a client certificate for user on c (through its CSR API) and writes a
// kubeconfig with it.
func operatorKubeconfig(t *testing.T, c *kubeenv.Cluster, user string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: user}}, key)
	if err != nil {
		t.Fatal(err)
	}
	cert := issue(t, kubernetes.NewForConfigOrDie(c.Config), "operator-"+user, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), 3600)
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	admin, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.Name] = admin.Clusters[c.Name]
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})}
	cfg.Contexts[user] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: user}
	cfg.CurrentContext = user
	path := filepath.Join(t.TempDir(), user+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// The whole manual flow, authenticate and unauthenticate work with operators bound only to the roles
// shipped in docs/rbac, after a cluster-admin ran init once.
func TestOperatorLeastPrivilege(t *testing.T) {
	unauthenticate(t)
	mustRun(t, "", "init", "--kubeconfig", consumer.Kubeconfig, "--cluster-id", "consumer")
	mustRun(t, "", "init", "--kubeconfig", provider.Kubeconfig, "--cluster-id", "provider")
	rbac, _ := filepath.Abs(filepath.Join("..", "..", "docs", "rbac"))
	setup := sh(t, "", `
		kubectl --kubeconfig "$P" apply -f `+rbac+`/provider-operator.yaml
		kubectl --kubeconfig "$P" create clusterrolebinding federate-provider-operator --clusterrole federate-provider-operator --user alice --dry-run=client -o yaml | kubectl --kubeconfig "$P" apply -f -
		kubectl --kubeconfig "$P" -n federate-system create rolebinding federate-provider-operator --role federate-provider-operator --user alice --dry-run=client -o yaml | kubectl --kubeconfig "$P" apply -f -
		kubectl --kubeconfig "$C" apply -f `+rbac+`/consumer-operator.yaml
		kubectl --kubeconfig "$C" create clusterrolebinding federate-consumer-operator --clusterrole federate-consumer-operator --user bob --dry-run=client -o yaml | kubectl --kubeconfig "$C" apply -f -
		kubectl --kubeconfig "$C" -n federate-system create rolebinding federate-consumer-operator --role federate-consumer-operator --user bob --dry-run=client -o yaml | kubectl --kubeconfig "$C" apply -f -
	`)
	if setup.code != 0 {
		t.Fatalf("applying docs/rbac: %s", setup)
	}
	alice := operatorKubeconfig(t, provider, "alice")
	bob := operatorKubeconfig(t, consumer, "bob")
	env := []string{"OP=" + alice, "OC=" + bob}

	// The consumer operator is not cluster-admin equivalent: it reads no Secret outside federate-system,
	// binds nothing cluster-wide and cannot approve certificates. (The provider operator is, by
	// design, and docs/rbac says so: approving kube-apiserver-client CSRs mints any user.)
	for _, check := range [][]string{
		{"get", "secrets", "-n", "kube-system"}, {"list", "secrets", "-n", "default"}, {"create", "clusterrolebindings"},
		{"create", "rolebindings", "-n", "default"}, {"update", "certificatesigningrequests/approval"}, {"create", "pods", "-n", "default"},
		{"impersonate", "users"}, {"escalate", "clusterroles"}, {"*", "*", "--all-namespaces"},
	} {
		r := runEnv(t, "", "", env, "kubectl", append([]string{"--kubeconfig", bob, "auth", "can-i"}, check...)...)
		if r.code != 1 || strings.TrimSpace(r.stdout) != "no" {
			t.Errorf("consumer operator: can-i %v: %s", check, r)
		}
	}
	for _, check := range [][]string{{"get", "secrets", "-n", "federate-system"}, {"create", "identities.federate.dev", "-n", "federate-system"}} {
		r := runEnv(t, "", "", env, "kubectl", append([]string{"--kubeconfig", bob, "auth", "can-i"}, check...)...)
		if r.code != 0 || strings.TrimSpace(r.stdout) != "yes" {
			t.Errorf("consumer operator: can-i %v: %s", check, r)
		}
	}
	if r := runEnv(t, "", "", env, "kubectl", "--kubeconfig", alice, "auth", "can-i", "*", "*", "--all-namespaces"); r.code != 1 {
		t.Errorf("provider operator holds every verb on everything: %s", r)
	}

	dir := t.TempDir()
	rules := "apiVersion: federate.dev/v1alpha1\nkind: ClusterGatewayConfiguration\nspec:\n  clientIdentityExchanger:\n    rules:\n" +
		"    - {name: mapping, type: StaticMappingIdentityExchanger, source: {user: user-12345}, target: {user: user-34567}}\n"
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	r := sh(t, dir, `
		kubectl federate create nonce --remote-cluster-id consumer --kubeconfig "$OP"
		kubectl federate get nonce --remote-cluster-id consumer --kubeconfig "$OP" | kubectl federate generate tenant --remote-cluster-id provider --nonce-file - --kubeconfig "$OC" > tenant.yaml
		kubectl federate generate identity --remote-cluster-id consumer -f tenant.yaml --kubeconfig "$OP" > identity.yaml
		kubectl federate import identity -f identity.yaml --kubeconfig "$OC"
		kubectl federate get kubeconfig --remote-cluster-id provider --kubeconfig "$OC" > provider.kubeconfig
		kubectl --kubeconfig provider.kubeconfig auth can-i create pods
		kubectl federate info --kubeconfig "$OP" -o json > /dev/null
		kubectl federate revoke --remote-cluster-id consumer --kubeconfig "$OP"
		kubectl federate unauthenticate --kubeconfig "$OC" --remote-kubeconfig "$OP"
		kubectl federate authenticate --kubeconfig "$OC" --remote-kubeconfig "$OP"
		kubectl federate verify --kubeconfig "$OP" > /dev/null
		kubectl federate exchange apply -f rules.yaml --kubeconfig "$OC"
		kubectl federate get kubeconfig --remote-cluster-id provider --for-user user-12345 --kubeconfig "$OC" --remote-kubeconfig "$OP" > exchange.kubeconfig
		kubectl --kubeconfig exchange.kubeconfig auth whoami
		kubectl federate unauthenticate --kubeconfig "$OC" --remote-kubeconfig "$OP"
		kubectl --kubeconfig "$C" -n federate-system delete configmap federate-exchange-rules
	`, env...)
	if r.code != 0 || !strings.Contains(r.stdout, "yes") || !strings.Contains(r.stdout, "user-34567") {
		t.Fatalf("operators with docs/rbac roles: %s", r)
	}
	if left := append(pairingObjects(t, consumer, "provider"), pairingObjects(t, provider, "consumer")...); len(left) > 0 {
		t.Errorf("left after the operators' unauthenticate: %v", left)
	}
}

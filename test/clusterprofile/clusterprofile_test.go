//go:build e2e

package clusterprofile

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"

	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

var (
	consumer, provider *kubeenv.Cluster
	federateBin        string
	secretReaderBin    string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	clusters, dir, stop, err := kubeenv.StartForTests("consumer", "provider")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	consumer, provider = clusters[0], clusters[1]
	if federateBin, err = kubeenv.PluginBinary(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The reference plugin, built from its own Go module (this module's requirement).
	secretReaderBin = filepath.Join(dir, "kubeconfig-secretreader")
	if out, err := exec.Command("go", "build", "-o", secretReaderBin, "sigs.k8s.io/cluster-inventory-api/plugins/kubeconfig-secretreader/cmd/plugin").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building kubeconfig-secretreader: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

func federate(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, federateBin, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("kubectl-federate %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}

const tenantNS = "federate-tenant-consumer"

// profile is the ClusterProfile a cluster manager would write for the export's Secret: two access
// providers, this tool's plugin and kubeconfig-secretreader, with the same cluster and the same config
// (the Secret, the key holding the credential, its namespace). It holds no secret.
func profile(t *testing.T, server string, ca []byte) *v1alpha1.ClusterProfile {
	t.Helper()
	config, err := json.Marshal(map[string]string{"name": "provider-kubeconfig", "key": "credential", "namespace": "inventory"})
	if err != nil {
		t.Fatal(err)
	}
	cluster := clientcmdv1.Cluster{Server: server, CertificateAuthorityData: ca,
		Extensions: []clientcmdv1.NamedExtension{{Name: "client.authentication.k8s.io/exec", Extension: runtime.RawExtension{Raw: config}}}}
	return &v1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: "inventory"},
		Spec: v1alpha1.ClusterProfileSpec{ClusterManager: v1alpha1.ClusterManager{Name: "kubectl-federate"}},
		Status: v1alpha1.ClusterProfileStatus{AccessProviders: []v1alpha1.AccessProvider{
			{Name: "kubectl-federate", Cluster: cluster}, {Name: "kubeconfig-secretreader", Cluster: cluster}}}}
}

// providerFile is what a consumer's administrator writes for pkg/access: one provider, run with the
// consumer's kubeconfig (a pod would use its service account).
func providerFile(name, command string, args ...string) *access.Config {
	return access.New([]access.Provider{{Name: name, ExecConfig: &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: command, Args: args, ProvideClusterInfo: true,
		Env: []clientcmdapi.ExecEnvVar{{Name: "KUBECONFIG", Value: consumer.Kubeconfig}}}}})
}

// pluginRun runs a plugin as client-go runs it for the ClusterProfile's cluster (provideClusterInfo).
func pluginRun(bin string, cp *v1alpha1.ClusterProfile) (string, error) {
	c := cp.Status.AccessProviders[0].Cluster
	info := fmt.Sprintf(`{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false,"cluster":{"server":%q,"config":%s}}}`,
		c.Server, c.Extensions[0].Extension.Raw)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "KUBERNETES_EXEC_INFO="+info, "KUBECONFIG="+consumer.Kubeconfig)
	out, err := cmd.Output()
	return string(out), err
}

// runPlugin is pluginRun that must succeed; it returns the client certificate printed.
func runPlugin(t *testing.T, bin string, cp *v1alpha1.ClusterProfile) string {
	t.Helper()
	out, err := pluginRun(bin, cp)
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	var ec struct {
		Status struct {
			ClientCertificateData string `json:"clientCertificateData"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &ec); err != nil || ec.Status.ClientCertificateData == "" {
		t.Fatalf("%s printed no certificate: %v", bin, err)
	}
	return ec.Status.ClientCertificateData
}

func listConfigMaps(t *testing.T, k kubernetes.Interface) error {
	t.Helper()
	_, err := k.CoreV1().ConfigMaps(tenantNS).List(t.Context(), metav1.ListOptions{})
	return err
}

// Done (issue 38, 2): pkg/access turns a ClusterProfile naming an exec export's Secret into a working
// rest.Config, through this tool's plugin and through kubeconfig-secretreader; a client built once
// through this tool's plugin follows renew; kubeconfig-secretreader, which sets no expiry, follows it only
// in a new process; after unauthenticate, neither plugin yields a credential.
func TestClusterProfileAccessProviders(t *testing.T) {
	ctx := t.Context()
	federate(t, "authenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig, "--cluster-id", "consumer", "--remote-cluster-id", "provider")
	k := kubernetes.NewForConfigOrDie(consumer.Config)
	if _, err := k.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "inventory"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	federate(t, "export", "kubeconfig", "--exec", "--kubeconfig", consumer.Kubeconfig, "--remote-cluster-id", "provider", "-n", "inventory")
	cp := profile(t, provider.Config.Host, provider.Config.CAData)

	ours := providerFile("kubectl-federate", federateBin, "credential")
	reference := providerFile("kubeconfig-secretreader", secretReaderBin)
	build := func(c *access.Config, what string) kubernetes.Interface {
		t.Helper()
		cfg, err := c.BuildConfigFromCP(cp)
		if err != nil {
			t.Fatalf("%s: BuildConfigFromCP: %v", what, err)
		}
		return kubernetes.NewForConfigOrDie(cfg)
	}
	kept := build(ours, "this tool's plugin")
	for what, c := range map[string]*access.Config{"this tool's plugin": ours, "kubeconfig-secretreader": reference} {
		if err := listConfigMaps(t, build(c, what)); err != nil {
			t.Errorf("%s: a request through the ClusterProfile: %v", what, err)
		}
	}

	federate(t, "renew", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig, "--remote-cluster-id", "provider")
	// renew returned: the overlap is over, the old credential refused. The client built before renew
	// through this tool's plugin has read the new one (its expirationTimestamp was 30 s ahead, the overlap
	// 45 s); one built now through either plugin reads the new one.
	if err := listConfigMaps(t, kept); err != nil {
		t.Errorf("the client built before renew through this tool's plugin: %v", err)
	}
	if err := listConfigMaps(t, build(ours, "this tool's plugin")); err != nil {
		t.Errorf("this tool's plugin after renew: %v", err)
	}
	// kubeconfig-secretreader sets no expirationTimestamp: client-go keeps what it returned for the life of
	// the process (its exec authenticators are cached per config, so even a client built anew gets the old
	// credential), and a renewed-away credential is refused with a 403, which makes client-go read nothing
	// again. That is why this tool's plugin sets one.
	if err := listConfigMaps(t, build(reference, "kubeconfig-secretreader")); !apierrors.IsForbidden(err) {
		t.Errorf("kubeconfig-secretreader in the same process after renew: %v, want Forbidden (its credential has no expiry)", err)
	}
	// Run anew (another process), it reads the rewritten Secret: the new credential.
	held := federate(t, "get", "kubeconfig", "--kubeconfig", consumer.Kubeconfig, "--remote-cluster-id", "provider")
	if got := runPlugin(t, secretReaderBin, cp); !strings.Contains(held, base64.StdEncoding.EncodeToString([]byte(got))) {
		t.Error("kubeconfig-secretreader run after renew does not print the credential now held")
	}

	federate(t, "unauthenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
	if err := listConfigMaps(t, build(ours, "this tool's plugin")); err == nil {
		t.Error("this tool's plugin after unauthenticate: a request succeeded")
	}
	if out, err := pluginRun(secretReaderBin, cp); err == nil {
		t.Errorf("kubeconfig-secretreader after unauthenticate printed a credential: %.80s", out)
	}
	if err := listConfigMaps(t, kept); err == nil {
		t.Error("the client built before through this tool's plugin still works after unauthenticate")
	}
}

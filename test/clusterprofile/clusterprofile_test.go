//go:build e2e

package clusterprofile

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	cpclient "sigs.k8s.io/cluster-inventory-api/client/clientset/versioned/typed/apis/v1alpha1"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"
	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

var (
	consumer, provider *kubeenv.Cluster
	federateBin        string
	secretReaderBin    string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if kubeenv.Listing() {
		return m.Run()
	}
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

// kubectlFederate runs the binary under test; stdout, stderr and whether it exited 0.
func kubectlFederate(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, federateBin, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "HOME="+t.TempDir())
	out, err := cmd.Output()
	stderr := ""
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
	}
	return string(out), stderr, err
}

func federate(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, err := kubectlFederate(t, args...)
	if err != nil {
		t.Fatalf("kubectl-federate %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return out
}

const tenantNS = "federate-tenant-consumer"

// The CRD as the cluster inventory's administrator installs it: config/crd/bases of
// sigs.k8s.io/cluster-inventory-api, the very module (and version) this test's pkg/access comes from.
var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

const crdName = "clusterprofiles.multicluster.x-k8s.io"

func installClusterProfileCRD(t *testing.T, crds dynamic.NamespaceableResourceInterface) {
	t.Helper()
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-inventory-api").Output()
	if err != nil {
		t.Fatalf("locating sigs.k8s.io/cluster-inventory-api: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "config", "crd", "bases", "multicluster.x-k8s.io_clusterprofiles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &crd.Object); err != nil {
		t.Fatal(err)
	}
	if crd.GetName() != crdName {
		t.Fatalf("the module's CRD is %q", crd.GetName())
	}
	if _, err := crds.Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = crds.Delete(context.Background(), crdName, metav1.DeleteOptions{}) })
	// Served once Established: watched.
	w, err := crds.Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + crdName})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
				return
			}
		}
	}
	t.Fatal("the ClusterProfile CRD was never established")
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

// checkProfile checks what `export clusterprofile` wrote, as the typed client of the cluster inventory reads
// it: this tool as cluster manager (label and spec), the member's ID, two access providers (this tool's
// plugin and kubeconfig-secretreader) with the provider's server and CA and the Secret as the plugin's
// configuration, and no byte of the credential.
func checkProfile(t *testing.T, cp *v1alpha1.ClusterProfile, held string) {
	t.Helper()
	if cp.Labels[v1alpha1.LabelClusterManagerKey] != "kubectl-federate" || cp.Spec.ClusterManager.Name != "kubectl-federate" ||
		cp.Labels["multicluster.x-k8s.io/inventory-member-id"] != "provider" {
		t.Errorf("the ClusterProfile's cluster manager or member: labels %v, spec %+v", cp.Labels, cp.Spec)
	}
	var names []string
	for _, ap := range cp.Status.AccessProviders {
		names = append(names, ap.Name)
		var ref map[string]string
		if len(ap.Cluster.Extensions) != 1 || ap.Cluster.Extensions[0].Name != "client.authentication.k8s.io/exec" ||
			json.Unmarshal(ap.Cluster.Extensions[0].Extension.Raw, &ref) != nil {
			t.Fatalf("access provider %s: extensions %+v", ap.Name, ap.Cluster.Extensions)
		}
		if ap.Cluster.Server == "" || len(ap.Cluster.CertificateAuthorityData) == 0 ||
			ref["name"] != "provider-kubeconfig" || ref["key"] != "credential" || ref["namespace"] != "inventory" {
			t.Errorf("access provider %s: server %q, %d bytes of CA, plugin config %v", ap.Name, ap.Cluster.Server, len(ap.Cluster.CertificateAuthorityData), ref)
		}
	}
	if !slices.Equal(names, []string{"kubectl-federate", "kubeconfig-secretreader"}) {
		t.Errorf("access providers %v", names)
	}
	whole, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"client-certificate-data", "client-key-data"} {
		for _, line := range strings.Split(held, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+": "); ok && strings.Contains(string(whole), v) {
				t.Errorf("the ClusterProfile holds the credential's %s", field)
			}
		}
	}
}

// Done (issue 38, 2): `export clusterprofile` refuses a cluster without the ClusterProfile CRD (naming it,
// installing nothing); with the CRD (from the cluster inventory's own module) it writes a ClusterProfile
// that pkg/access turns into a working rest.Config, through this tool's plugin and through
// kubeconfig-secretreader. A client built once through this tool's plugin follows renew;
// kubeconfig-secretreader, which sets no expiry, follows it only in a new process; renew leaves the
// profile as it was (the provider did not move); unauthenticate deletes the profile and its Secret, and
// neither plugin yields a credential after it.
func TestClusterProfileExport(t *testing.T) {
	ctx := t.Context()
	federate(t, "authenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig, "--cluster-id", "consumer", "--remote-cluster-id", "provider")
	k := kubernetes.NewForConfigOrDie(consumer.Config)
	if _, err := k.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "inventory"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crds := dynamic.NewForConfigOrDie(consumer.Config).Resource(crdGVR)
	export := []string{"export", "clusterprofile", "--kubeconfig", consumer.Kubeconfig, "--remote-cluster-id", "provider", "-n", "inventory"}
	nothingWritten := func(what string) {
		t.Helper()
		if l, err := k.CoreV1().Secrets("inventory").List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
			t.Errorf("%s wrote %d Secret(s) in inventory (%v)", what, len(l.Items), err)
		}
	}

	// No CRD: refused with its name, and nothing is written or installed.
	out, stderr, err := kubectlFederate(t, export...)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || out != "" || !strings.Contains(stderr, "serves no ClusterProfile API ("+crdName) {
		t.Errorf("export clusterprofile without its CRD: %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	nothingWritten("the refused export")
	if _, err := crds.Get(ctx, crdName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused export installed the CRD: %v", err)
	}

	installClusterProfileCRD(t, crds)
	profiles := cpclient.NewForConfigOrDie(consumer.Config).ClusterProfiles("inventory")
	// A server-side dry run: the API server's own answer, and nothing stored.
	federate(t, append(export, "--dry-run=server")...)
	nothingWritten("a dry run")
	if l, err := profiles.List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("a dry run stored %d ClusterProfile(s) (%v)", len(l.Items), err)
	}

	if out := federate(t, export...); out != "secret/provider-kubeconfig created (namespace inventory)\nclusterprofile.multicluster.x-k8s.io/provider created (namespace inventory)\n" {
		t.Errorf("export clusterprofile: %q", out)
	}
	if out := federate(t, export...); out != "secret/provider-kubeconfig unchanged (namespace inventory)\nclusterprofile.multicluster.x-k8s.io/provider unchanged (namespace inventory)\n" {
		t.Errorf("export clusterprofile again: %q", out)
	}
	if out := federate(t, "status", "--kubeconfig", consumer.Kubeconfig, "-o", `jsonpath={range .items[?(@.kind=="Export")]}{.metadata.name}{"\t"}{.status.format}{"\n"}{end}`); !strings.Contains(out, "\tclusterprofile\n") {
		t.Errorf("status does not list the export: %q", out)
	}
	held := federate(t, "get", "kubeconfig", "--kubeconfig", consumer.Kubeconfig, "--remote-cluster-id", "provider")
	cp, err := profiles.Get(ctx, "provider", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkProfile(t, cp, held)

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
	// The provider did not move: the profile is as it was (not even rewritten), and still leads to the
	// credential, now the new one.
	if after, err := profiles.Get(ctx, "provider", metav1.GetOptions{}); err != nil || after.ResourceVersion != cp.ResourceVersion {
		t.Errorf("renew rewrote the ClusterProfile though the provider did not move: %v", err)
	}
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
	renewed := federate(t, "get", "kubeconfig", "--kubeconfig", consumer.Kubeconfig, "--remote-cluster-id", "provider")
	if renewed == held {
		t.Fatal("renew did not replace the credential")
	}
	if got := runPlugin(t, secretReaderBin, cp); !strings.Contains(renewed, base64.StdEncoding.EncodeToString([]byte(got))) {
		t.Error("kubeconfig-secretreader run after renew does not print the credential now held")
	}

	federate(t, "unauthenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
	if _, err := profiles.Get(ctx, "provider", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ClusterProfile after unauthenticate: %v", err)
	}
	if _, err := k.CoreV1().Secrets("inventory").Get(ctx, "provider-kubeconfig", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the export's Secret after unauthenticate: %v", err)
	}
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

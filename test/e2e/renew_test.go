//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// renew gives every credential of a pairing a new key and user, keeps what the provider decided (the
// sandbox's quota, the slice's grant), and the old credentials are refused afterwards; renew --all renews
// what is due from a directory of provider kubeconfigs and says what it could not.
func TestRenew(t *testing.T) {
	defer unauthenticate(t)
	authenticate(t, "--quota", "pods=7")
	mustRun(t, "", "create", "resourceslice", "renew-s1", "--cpu", "1", "--memory", "1Gi",
		"--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
	// The slice's name completes on both sides, from what each cluster holds.
	for _, side := range [][]string{{consumer.Kubeconfig, "provider"}, {provider.Kubeconfig, "consumer"}} {
		if r := cli(t, "", "__complete", "delete", "resourceslice", "--kubeconfig", side[0], "--remote-cluster-id", side[1], ""); !strings.Contains(r.stdout, "renew-s1\n") {
			t.Errorf("completion of a slice name with --remote-cluster-id %s: %s", side[1], r)
		}
	}
	_, oldCfg := issuedConfig(t)
	oldSlice := sliceKubeconfig(t, "renew-s1")
	sliceNS := member.SliceNamespace("consumer", "renew-s1")
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	// The sandbox's quota is the tenant's total less what its grants carved (the slice): compared as a
	// whole before and after, since the renewal must change none of it.
	before, err := admin.CoreV1().ResourceQuotas(tenantNS).Get(t.Context(), sandbox.SandboxName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recorded := tenantStatus(t, provider).Sandbox

	r := mustRun(t, "", "renew", "--overlap", "0", "--remote-cluster-id", "provider", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
	if !strings.Contains(r.stdout, "pairing/provider renewed: ") || !strings.Contains(r.stdout, "1 resource slice(s)") {
		t.Errorf("renew: %s", r)
	}
	_, newCfg := issuedConfig(t)
	newSlice := sliceKubeconfig(t, "renew-s1")
	for what, pair := range map[string][2]*clientConfig{
		"the pairing": {{oldCfg.CertData, oldCfg.KeyData, tenantNS}, {newCfg.CertData, newCfg.KeyData, tenantNS}},
		"the slice":   {{oldSlice.CertData, oldSlice.KeyData, sliceNS}, {newSlice.CertData, newSlice.KeyData, sliceNS}},
	} {
		old, cur := pair[0], pair[1]
		if string(old.cert) == string(cur.cert) {
			t.Errorf("%s kept its certificate", what)
			continue
		}
		if _, err := cur.client(t).CoreV1().ConfigMaps(cur.ns).List(t.Context(), metav1.ListOptions{}); err != nil {
			t.Errorf("%s's new credential: %v", what, err)
		}
		if _, err := old.client(t).CoreV1().ConfigMaps(old.ns).List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("%s's old credential after renew: %v, want Forbidden", what, err)
		}
	}
	q, err := admin.CoreV1().ResourceQuotas(tenantNS).Get(t.Context(), sandbox.SandboxName, metav1.GetOptions{})
	if err != nil || !equality.Semantic.DeepEqual(q.Spec.Hard, before.Spec.Hard) {
		t.Errorf("the renewal changed the sandbox's quota: %v -> %v %v", before.Spec.Hard, q.Spec.Hard, err)
	}
	if got := tenantStatus(t, provider).Sandbox; !equality.Semantic.DeepEqual(got, recorded) || recorded.Quota["pods"] != "7" {
		t.Errorf("the renewal changed the recorded sandbox: %+v -> %+v (pods=7 asked)", recorded, got)
	}
	if q, err := admin.CoreV1().ResourceQuotas(sliceNS).Get(t.Context(), sandbox.SandboxName, metav1.GetOptions{}); err != nil ||
		q.Spec.Hard.Name(corev1.ResourceLimitsCPU, "").String() != "1" {
		t.Errorf("the renewal changed the slice's grant: %v %v", q, err)
	}

	// --all: nothing due within an hour; everything within 200 days, from the directory; a provider with no
	// kubeconfig there is reported and fails the run.
	dir := t.TempDir()
	all := []string{"renew", "--overlap", "0", "--all", "--remote-kubeconfig-dir", dir, "--kubeconfig", consumer.Kubeconfig}
	if r := cli(t, "", append(all, "--expiring-within", "4800h")...); r.code != 1 || !strings.Contains(r.stdout, "pairing/provider failed: no kubeconfig for it") {
		t.Errorf("renew --all without the provider's kubeconfig: %s", r)
	}
	data, err := os.ReadFile(provider.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "provider.kubeconfig"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := mustRun(t, "", append(all, "--expiring-within", "1h")...); !strings.Contains(r.stdout, "pairing/provider not due") {
		t.Errorf("renew --all --expiring-within 1h: %s", r)
	}
	if r := mustRun(t, "", append(all, "--expiring-within", "4800h")...); !strings.Contains(r.stdout, "pairing/provider renewed") {
		t.Errorf("renew --all --expiring-within 4800h: %s", r)
	}
	if _, again := issuedConfig(t); string(again.CertData) == string(newCfg.CertData) {
		t.Error("renew --all did not renew the pairing")
	}
}

type clientConfig struct {
	cert, key []byte
	ns        string
}

func (c *clientConfig) client(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg := *provider.Config
	cfg.CertData, cfg.KeyData = c.cert, c.key
	return kubernetes.NewForConfigOrDie(&cfg)
}

func sliceKubeconfig(t *testing.T, slice string) *clientcmdConfig {
	t.Helper()
	r := mustOn(t, consumer, "get", "kubeconfig", "--remote-cluster-id", "provider", "--resource-slice", slice)
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	return &clientcmdConfig{CertData: cfg.CertData, KeyData: cfg.KeyData}
}

type clientcmdConfig struct{ CertData, KeyData []byte }

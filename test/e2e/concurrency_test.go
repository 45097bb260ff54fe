//go:build e2e

package e2e

import (
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Two authenticate runs for the same pair at once, on clusters never initialized for the pair, both
// succeed and leave one Tenant, one binding and one working kubeconfig.
func TestConcurrentAuthenticate(t *testing.T) {
	unauthenticate(t)
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = cli(t, "", "authenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig,
				"--cluster-id", "consumer", "--remote-cluster-id", "provider")
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 {
			t.Errorf("run %d: %s", i, r)
		}
	}
	objs := strings.Join(pairingObjects(t, provider, "consumer"), "\n")
	for _, want := range []string{"tenants federate-tenant-consumer/consumer", "rolebindings federate-tenant-consumer/federate-tenant"} {
		if strings.Count(objs, want) != 1 {
			t.Errorf("want exactly one %q on the provider, have:\n%s", want, objs)
		}
	}
	rbs, err := kubernetes.NewForConfigOrDie(provider.Config).RbacV1().RoleBindings(tenantNS).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(rbs.Items) != 1 || len(rbs.Items[0].Subjects) != 1 {
		t.Fatalf("bindings: %v %v", rbs, err)
	}
	_, cfg := issuedConfig(t)
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Pods(tenantNS).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Errorf("the stored kubeconfig does not work: %v", err)
	}
}

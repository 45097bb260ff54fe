//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
)

// The line get nonce prints carries both cluster IDs: generate tenant needs none typed, refuses a nonce
// made for another consumer (naming both IDs) and an edited line, each before writing anything, and a
// provider named by another ID than its own is refused. (On clusters never initialized, the doc test runs
// the README's and docs/manual-flow.md's flows as printed.)
func TestNonceNamesBothClusters(t *testing.T) {
	unauthenticate(t)
	P, C := provider.Kubeconfig, consumer.Kubeconfig
	mustRun(t, "", "init", "--kubeconfig", C, "--cluster-id", "consumer")
	mustRun(t, "", "init", "--kubeconfig", P, "--cluster-id", "provider")

	r := cli(t, "", "create", "nonce", "--kubeconfig", P, "--cluster-id", "gpu-farm", "--remote-cluster-id", "consumer")
	if r.code != 1 || !strings.Contains(r.stderr, `--cluster-id: cluster ID "gpu-farm": this cluster is initialized with cluster ID "provider"`) {
		t.Errorf("create nonce naming the provider by another ID: %s", r)
	}

	// A nonce for another consumer, brought to this one.
	const other = "e2e-ticket-peer"
	t.Cleanup(func() {
		_ = kubernetes.NewForConfigOrDie(provider.Config).CoreV1().Secrets(member.SystemNamespace).Delete(context.Background(), nonce.SecretName(other), metav1.DeleteOptions{})
	})
	mustRun(t, "", "create", "nonce", "--kubeconfig", P, "--cluster-id", "provider", "--remote-cluster-id", other)
	foreign := mustRun(t, "", "get", "nonce", "--kubeconfig", P, "--remote-cluster-id", other).stdout
	mustRun(t, "", "create", "nonce", "--kubeconfig", P, "--remote-cluster-id", "consumer")
	genuine := mustRun(t, "", "get", "nonce", "--kubeconfig", P, "--remote-cluster-id", "consumer").stdout
	bareNonce(t, genuine)
	for _, tc := range []struct{ name, text, want string }{
		{"made for another consumer", foreign, `the nonce in --nonce-file - was made for consumer "` + other + `", but this cluster is initialized as "consumer"`},
		{"an edited consumer ID", strings.Replace(genuine, ".consumer.", ".intruder.", 1), "its cluster IDs do not match its MAC"},
		{"an edited provider ID", strings.Replace(genuine, ".provider.", ".gpu-farm.", 1), "its cluster IDs do not match its MAC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			settle(t, consumer, member.SystemNamespace)
			before := takeSnapshot(t)
			r := cli(t, tc.text, "generate", "tenant", "--kubeconfig", C, "--nonce-file", "-")
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
				t.Errorf("want exit 1 saying %q and nothing on stdout: %s", tc.want, r)
			}
			if d := before.diff(takeSnapshot(t)); len(d) > 0 {
				t.Errorf("the refused request changed the clusters:\n%s", strings.Join(d, "\n"))
			}
		})
	}

	// The genuine line: no ID typed on the consumer's side, and the identity works.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nonce.txt"), []byte(genuine), 0o600); err != nil {
		t.Fatal(err)
	}
	r = sh(t, dir, `
		kubectl federate generate tenant --nonce-file nonce.txt --kubeconfig "$C" > tenant.yaml
		kubectl federate generate identity --remote-cluster-id consumer -f tenant.yaml --kubeconfig "$P" > identity.yaml
		kubectl federate import identity -f identity.yaml --kubeconfig "$C"
		kubectl federate get kubeconfig --remote-cluster-id provider --kubeconfig "$C" > provider.kubeconfig
		kubectl --kubeconfig provider.kubeconfig auth whoami -o jsonpath='{.status.userInfo.username}' > user.txt
	`)
	user, _ := os.ReadFile(filepath.Join(dir, "user.txt"))
	if r.code != 0 || !strings.HasPrefix(string(user), "kubectl-federate:consumer:") {
		t.Fatalf("the manual flow with the nonce's IDs: %s", r)
	}
	unauthenticate(t)
}

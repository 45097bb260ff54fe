package cmd_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
	"github.com/federate-dev/kubectl-federate/pkg/lifecycle"
)

// export through the command tree: a missing namespace names -n and writes nothing, -o yaml prints and
// writes nothing, a write says what it did and a re-run that nothing changed, and admiralty without its API
// says what is missing and what to do.
func TestExportCommand(t *testing.T) {
	w := cmdtest.NewWorld(t, "edge", "farm")
	if _, err := lifecycle.Authenticate(t.Context(), w.Domain("edge"), w.Domain("farm"), lifecycle.AuthenticateOptions{
		ConsumerID: "edge", ProviderID: "farm", APIServer: "https://farm.example:6443", Expiration: time.Hour}); err != nil {
		t.Fatal(err)
	}
	args := []string{"export", "argocd", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "argocd"}
	m := cmdtest.Marks(w, "edge", "farm")
	cmdtest.Expect(t, w, w.Run(args...), 1, nil, []string{`error: -n argocd: namespace "argocd" not found on this cluster (an export never creates a tool's namespace); nothing was written; create it first (kubectl create namespace argocd), or choose another`}, m)
	cmdtest.Expect(t, w, w.Run(append(args, "-o", "yaml")...), 0, []string{"kind: Secret", "argocd.argoproj.io/secret-type: cluster", "federate.dev/export-format: argocd",
		"namespace: argocd", "name: farm"}, nil, m)

	if _, err := w.Cluster("edge").Clientset.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cmdtest.Expect(t, w, w.Run(args...), 0, []string{"secret/farm created (namespace argocd)\n"}, nil, nil)
	m = cmdtest.Marks(w, "edge", "farm")
	cmdtest.Expect(t, w, w.Run(args...), 0, []string{"secret/farm unchanged (namespace argocd)\n"}, nil, m)
	cmdtest.Expect(t, w, w.Run("export", "admiralty", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "argocd"), 1, nil,
		[]string{"FORMAT admiralty: this cluster serves no Target API (targets.multicluster.admiralty.io/v1alpha1): Admiralty is not installed here", "(-o yaml prints them); nothing was written"}, m)
	cmdtest.Expect(t, w, w.Run("export", "admiralty", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "-n", "argocd", "-o", "json"), 0,
		[]string{`"kind": "List"`, `"kind": "Target"`, `"name": "farm-kubeconfig"`}, nil, m)
}

package lifecycle

import (
	"errors"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// Cordon labels every namespace of the consumer and returns only once admission refuses the cordon probe
// there; uncordon, once it admits it again; drain cordons, then deletes what runs. A consumer with no
// Tenant is refused with nothing changed.
func TestCordonConfirmsAdmission(t *testing.T) {
	consumer, provider := fakePair(t)
	tenant, _ := manualFlow(t, consumer, provider)
	if _, err := handshake.IssueIdentity(t.Context(), provider.Cluster, issueOptions(tenant)); err != nil {
		t.Fatal(err)
	}
	ns := member.TenantNamespace("consumer")
	if out, err := Cordon(t.Context(), provider.Cluster, "consumer"); err != nil || out != handshake.Done {
		t.Fatalf("Cordon: %v %v", out, err)
	}
	writes := len(provider.Clientset.Actions())
	if out, err := Cordon(t.Context(), provider.Cluster, "consumer"); err != nil || out != handshake.Already {
		t.Fatalf("Cordon again: %v %v, want Already", out, err)
	}
	for _, a := range provider.Clientset.Actions()[writes:] {
		if v := a.GetVerb(); v == "patch" || v == "update" {
			t.Errorf("cordon again wrote: %s %s", v, a.GetResource().Resource)
		}
	}
	got, err := provider.kube.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil || got.Labels[sandbox.LabelCordoned] != "true" {
		t.Fatalf("namespace after cordon: %v %v", got.Labels, err)
	}
	if !provider.tenant(t).Status.Cordoned {
		t.Error("the Tenant does not record the cordon")
	}
	probes := provider.count("create", "pods")
	if probes == 0 {
		t.Error("cordon sent no probe")
	}
	if out, err := Uncordon(t.Context(), provider.Cluster, "consumer"); err != nil || out != handshake.Done {
		t.Fatalf("Uncordon: %v %v", out, err)
	}
	got, _ = provider.kube.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if _, still := got.Labels[sandbox.LabelCordoned]; still || provider.tenant(t).Status.Cordoned {
		t.Errorf("after uncordon: labels %v, status cordoned %v", got.Labels, provider.tenant(t).Status.Cordoned)
	}
	if err := Drain(t.Context(), provider.Cluster, "consumer"); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if !slices.Contains(provider.actions(), "delete-collection pods") {
		t.Errorf("drain deleted no pods: %v", provider.actions())
	}
	before := len(provider.kube.Actions())
	var nf *handshake.NotFoundError
	if _, err := Cordon(t.Context(), provider.Cluster, "consumr"); !errors.As(err, &nf) || !strings.Contains(err.Error(), `did you mean "consumer"?`) {
		t.Errorf("cordon of an unknown consumer: %v", err)
	}
	for _, a := range provider.kube.Actions()[before:] {
		if v := a.GetVerb(); v != "get" && v != "list" {
			t.Errorf("cordon of an unknown consumer sent %s %s", v, a.GetResource().Resource)
		}
	}
}

package handshake

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cordon labels every namespace of the consumer and returns only once admission refuses the cordon probe
// there; uncordon, once it admits it again; drain cordons, then deletes what runs. A consumer with no
// Tenant is refused with nothing changed.
func TestCordonConfirmsAdmission(t *testing.T) {
	consumer, provider := fakePair(t)
	tenant, _ := manualFlow(t, consumer, provider)
	if _, err := provider.IssueIdentity(t.Context(), issueOptions(tenant)); err != nil {
		t.Fatal(err)
	}
	ns := TenantNamespace("consumer")
	if err := provider.Cordon(t.Context(), "consumer"); err != nil {
		t.Fatalf("Cordon: %v", err)
	}
	got, err := provider.kube.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil || got.Labels[LabelCordoned] != "true" {
		t.Fatalf("namespace after cordon: %v %v", got.Labels, err)
	}
	if !provider.tenant(t).Status.Cordoned {
		t.Error("the Tenant does not record the cordon")
	}
	probes := provider.count("create", "pods")
	if probes == 0 {
		t.Error("cordon sent no probe")
	}
	if err := provider.Uncordon(t.Context(), "consumer"); err != nil {
		t.Fatalf("Uncordon: %v", err)
	}
	got, _ = provider.kube.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if _, still := got.Labels[LabelCordoned]; still || provider.tenant(t).Status.Cordoned {
		t.Errorf("after uncordon: labels %v, status cordoned %v", got.Labels, provider.tenant(t).Status.Cordoned)
	}
	if err := provider.Drain(t.Context(), "consumer"); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if !slices.Contains(provider.actions(), "delete-collection pods") {
		t.Errorf("drain deleted no pods: %v", provider.actions())
	}
	before := len(provider.kube.Actions())
	if err := provider.Cordon(t.Context(), "nobody"); err == nil {
		t.Error("cordon of an unknown consumer succeeded")
	}
	for _, a := range provider.kube.Actions()[before:] {
		if v := a.GetVerb(); v != "get" && v != "list" {
			t.Errorf("cordon of an unknown consumer sent %s %s", v, a.GetResource().Resource)
		}
	}
}

package status

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/federate-dev/kubectl-federate/pkg/kube/kubetest"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

func daemonSet(ns, name string, images ...string) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, image := range images {
		ds.Spec.Template.Spec.Containers = append(ds.Spec.Template.Spec.Containers, corev1.Container{Name: "c", Image: image})
	}
	return ds
}

func TestNetworkPolicyEngine(t *testing.T) {
	cases := []struct {
		name string
		sets []*appsv1.DaemonSet
		want string
	}{
		{"no DaemonSet", nil, ""},
		{"only a CNI without policies", []*appsv1.DaemonSet{daemonSet("kube-system", "kube-flannel-ds", "docker.io/flannel/flannel:v0.26.1")}, ""},
		{"by name", []*appsv1.DaemonSet{daemonSet("kube-system", "kube-router", "example.org/anything:v1")}, "kube-router"},
		{"by image, elsewhere", []*appsv1.DaemonSet{daemonSet("calico-system", "node", "quay.io/calico/calico-node:v3.28.0")}, "calico-node"},
		{"by a second container's image, with a digest", []*appsv1.DaemonSet{daemonSet("kube-system", "aws-node",
			"602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.18.0",
			"602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon/aws-network-policy-agent@sha256:0123")}, "aws-network-policy-agent"},
		{"a name that only contains an engine's", []*appsv1.DaemonSet{daemonSet("default", "not-cilium-at-all", "example.org/cilium-lookalike:v1")}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := fake.NewClientset()
			for _, ds := range c.sets {
				if _, err := cs.AppsV1().DaemonSets(ds.Namespace).Create(t.Context(), ds, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := NetworkPolicyEngine(t.Context(), &member.Cluster{Kube: kubetest.Wrap(cs)})
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
	for _, engine := range NetworkPolicyEngines {
		if !strings.Contains(NoEngineWarning, engine) {
			t.Errorf("the warning does not name %s", engine)
		}
	}
}

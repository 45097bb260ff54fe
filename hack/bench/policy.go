package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// policyRefresh measures how long the API server takes to enforce a new ValidatingAdmissionPolicy: a
// policy and its binding are created, then a dry-run create it refuses is sent every 5 ms until it is
// refused. The API server compiles its policies on a one-second ticker (policyRefreshInterval in
// k8s.io/apiserver/pkg/admission/plugin/policy/generic), so the wait is anywhere from nothing to about a
// second, depending on where the ticker stands: this is the floor of a pairing on a never-initialized
// provider, whose sandbox may be bound only once its policies are enforced.
func policyRefresh(ctx context.Context, c *kubeenv.Cluster, n int) ([]time.Duration, error) {
	kube, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	var waits []time.Duration
	fail := admissionv1.Fail
	for i := range n {
		name := fmt.Sprintf("bench-refresh-%d", i)
		vap := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionv1.ValidatingAdmissionPolicySpec{FailurePolicy: &fail,
				MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Create},
						Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}},
				Validations: []admissionv1.Validation{{Expression: fmt.Sprintf("object.metadata.name != %q", name), Message: "refused by " + name}}}}
		binding := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}}}
		if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, vap, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		stored := time.Now()
		for {
			_, err := kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}},
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if apierrors.IsInvalid(err) && strings.Contains(err.Error(), "refused by "+name) {
				break
			}
			if err != nil {
				return nil, err
			}
			if time.Since(stored) > 10*time.Second {
				return nil, fmt.Errorf("policy %s not enforced after 10s", name)
			}
			time.Sleep(5 * time.Millisecond)
		}
		waits = append(waits, time.Since(stored))
		// Apart by a fraction of the ticker, so the samples fall on different phases of it.
		time.Sleep(time.Duration(i%4) * 250 * time.Millisecond)
	}
	return waits, nil
}

// freshPairs pairs n couples of never-initialized clusters, each on control planes started for it.
func (b *bench) freshPairs(n int) ([]result, error) {
	var rs []result
	for i := range n {
		err := b.phase([]string{fmt.Sprintf("f%d", 2*i), fmt.Sprintf("f%d", 2*i+1)}, func(cl []*kubeenv.Cluster) error {
			rs = append(rs, b.federate(nil, "authenticate", "--kubeconfig", cl[0].Kubeconfig, "--remote-kubeconfig", cl[1].Kubeconfig,
				"--cluster-id", "m1", "--remote-cluster-id", "m2"))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return rs, nil
}

func durations(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = d.Round(10 * time.Millisecond).String()
	}
	return strings.Join(parts, ", ")
}

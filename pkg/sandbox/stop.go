package sandbox

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// StopTenant deletes what runs in the sandbox and the tokens it could use: workloads and token Secrets at
// once, then the pods, then the default ServiceAccount, which is recreated without token automount.
func StopTenant(ctx context.Context, c *member.Cluster, ns string) error {
	tokens := make(chan error, 1)
	go func() {
		tokens <- objects.IgnoreNotFound(c.Kube.CoreV1().Secrets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("type", "kubernetes.io/service-account-token").String(),
		}))
	}()
	errs := []error{DeleteRunners(ctx, c, ns), <-tokens}
	// A Token credential dies with its ServiceAccount: from now on it does not even authenticate.
	errs = append(errs, credential.DeleteCredentialAccounts(ctx, c, ns, ""))
	sas := c.Kube.CoreV1().ServiceAccounts(ns)
	if err := objects.IgnoreNotFound(sas.Delete(ctx, "default", metav1.DeleteOptions{})); err != nil {
		errs = append(errs, err)
	} else if err := c.ApplyTyped(ctx, ServiceAccountGVR, ns, ServiceAccount(ns)); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("recreating ServiceAccount %s/default: %w", ns, err))
	}
	return errors.Join(errs...)
}

// DeleteRunners deletes every workload of a namespace at once, then its pods with no grace period: their
// containers are killed and every stream into them ends, and nothing respawns them.
func DeleteRunners(ctx context.Context, c *member.Cluster, ns string) error {
	background := metav1.DeletePropagationBackground
	all := metav1.ListOptions{}
	jobs := make([]func() error, len(workloadGVRs))
	for i, gvr := range workloadGVRs {
		jobs[i] = func() error {
			return objects.IgnoreNotFound(c.Dynamic.Resource(gvr).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, all))
		}
	}
	err := parallel.All(jobs...)
	zero := int64(0)
	return errors.Join(err, objects.IgnoreNotFound(c.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, all)))
}

// workloadGVRs are what can (re)create pods in a sandbox: they go before the pods, so nothing respawns.
var workloadGVRs = []schema.GroupVersionResource{
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "apps", Version: "v1", Resource: "daemonsets"},
	{Group: "apps", Version: "v1", Resource: "replicasets"},
	{Group: "batch", Version: "v1", Resource: "cronjobs"},
	{Group: "batch", Version: "v1", Resource: "jobs"},
	{Version: "v1", Resource: "replicationcontrollers"},
}

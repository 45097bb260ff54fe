package handshake

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
)

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

// Revoke (provider) takes a consumer's rights away at once, on this cluster alone, in every namespace it
// was granted (its tenant namespace, its slices' and its extra namespaces): the RoleBindings go first, so
// from that moment its certificates are authorized for nothing more than any authenticated user; then
// everything it runs is stopped (workloads, then pods, which ends its open exec, attach and port-forward
// streams), the service-account tokens it could hold are invalidated (token Secrets deleted, the default
// ServiceAccount replaced, so tokens bound to the old one fail, and the credential ServiceAccount of a
// Token identity deleted, so its token no longer authenticates), and the Tenant is marked Revoked. The
// namespaces and their data stay for inspection. Safe to re-run.
func (c *Cluster) Revoke(ctx context.Context, consumerID string) error {
	ns := TenantNamespace(consumerID)
	r := c.report()
	granted, err := c.grantedNamespaces(ctx, consumerID)
	if err != nil {
		return err
	}
	names := []string{ns}
	for _, g := range granted {
		names = append(names, g.Name)
	}
	what := ns
	if len(granted) > 0 {
		what = fmt.Sprintf("%s and %d more namespace%s", ns, len(granted), map[bool]string{true: "s"}[len(granted) > 1])
	}
	if err := step(r, "Removing the RoleBindings of "+consumerID, "No RoleBinding left for "+consumerID+": its certificates grant nothing in "+what, func() error {
		jobs := make([]func() error, len(names))
		for i, name := range names {
			jobs[i] = func() error { return c.deleteRoleBinding(ctx, name, consumerID) }
		}
		if err := parallel(jobs...); err != nil {
			return err
		}
		return c.removeExchanges(ctx, consumerID) // exchange.go
	}); err != nil {
		return err
	}
	if err := step(r, "Stopping the tenant's workloads and tokens", "Workloads, pods and tokens of "+consumerID+" removed", func() error {
		jobs := []func() error{func() error { return c.stopIn(ctx, ns, tenantOwner(consumerID)) }}
		for _, g := range granted {
			jobs = append(jobs, func() error { return c.stopIn(ctx, g.Name, ownerOf(g.Labels)) })
		}
		return parallel(jobs...)
	}); err != nil {
		return err
	}
	return step(r, "Marking the Tenant revoked", "Tenant "+ns+"/"+consumerID+" marked "+PhaseRevoked, func() error {
		// A merge patch of the phase alone: the pinned key, the expiry and the sandbox stay on record.
		_, err := c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(ns).Patch(ctx, consumerID, types.MergePatchType,
			[]byte(`{"status":{"phase":"`+PhaseRevoked+`"}}`), metav1.PatchOptions{FieldManager: FieldManager}, "status")
		if apierrors.IsNotFound(err) {
			return nil // nothing was ever issued, or it was removed
		}
		if err == nil {
			c.audit(ctx, tenantObject(consumerID), EventRevoked, "every credential of consumer "+consumerID+" revoked in "+what, nil)
		}
		return err
	})
}

// deleteRoleBinding deletes the tenant RoleBinding of a namespace if kubectl federate made it for
// consumerID; another one of that name is left in place, with an error.
func (c *Cluster) deleteRoleBinding(ctx context.Context, ns, consumerID string) error {
	rbs := c.Kube.RbacV1().RoleBindings(ns)
	rb, err := rbs.Get(ctx, RoleBindingName, metav1.GetOptions{})
	if err != nil {
		return ignoreNotFound(err)
	}
	if rb.Labels[LabelManagedBy] != ManagedBy || rb.Labels[LabelRemoteClusterID] != consumerID {
		return fmt.Errorf("RoleBinding %s/%s %w for consumer %q: left in place", ns, RoleBindingName, ErrNotOurs, consumerID)
	}
	return ignoreNotFound(rbs.Delete(ctx, RoleBindingName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &rb.UID}}))
}

// stopIn stops what runs in a namespace created for owner; a namespace of another owner is not touched.
func (c *Cluster) stopIn(ctx context.Context, ns string, owner nsOwner) error {
	live, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if live.DeletionTimestamp != nil {
		return nil // the namespace controller is already removing everything in it
	}
	if !owner.owns(live.Labels) {
		return fmt.Errorf("namespace %s %w for %s: nothing in it was touched", ns, ErrNotOurs, owner)
	}
	return c.stopTenant(ctx, ns)
}

// revokeNamespace takes one granted namespace's rights away and stops what runs there.
func (c *Cluster) revokeNamespace(ctx context.Context, ns string, owner nsOwner) error {
	live, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !owner.owns(live.Labels) {
		return fmt.Errorf("namespace %s %w for %s: left in place", ns, ErrNotOurs, owner)
	}
	if err := c.deleteRoleBinding(ctx, ns, owner.consumerID); err != nil {
		return err
	}
	if live.DeletionTimestamp != nil {
		return nil
	}
	return c.stopTenant(ctx, ns)
}

// stopTenant deletes what runs in the sandbox and the tokens it could use: workloads and token Secrets at
// once, then the pods, then the default ServiceAccount, which is recreated without token automount.
func (c *Cluster) stopTenant(ctx context.Context, ns string) error {
	tokens := make(chan error, 1)
	go func() {
		tokens <- ignoreNotFound(c.Kube.CoreV1().Secrets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("type", "kubernetes.io/service-account-token").String(),
		}))
	}()
	errs := []error{c.deleteRunners(ctx, ns), <-tokens}
	// A Token credential dies with its ServiceAccount: from now on it does not even authenticate.
	errs = append(errs, c.deleteCredentialAccounts(ctx, ns, ""))
	sas := c.Kube.CoreV1().ServiceAccounts(ns)
	if err := ignoreNotFound(sas.Delete(ctx, "default", metav1.DeleteOptions{})); err != nil {
		errs = append(errs, err)
	} else if err := c.applyTyped(ctx, serviceAccountGVR, ns, sandboxServiceAccount(ns)); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("recreating ServiceAccount %s/default: %w", ns, err))
	}
	return errors.Join(errs...)
}

// deleteRunners deletes every workload of a namespace at once, then its pods with no grace period: their
// containers are killed and every stream into them ends, and nothing respawns them.
func (c *Cluster) deleteRunners(ctx context.Context, ns string) error {
	background := metav1.DeletePropagationBackground
	all := metav1.ListOptions{}
	jobs := make([]func() error, len(workloadGVRs))
	for i, gvr := range workloadGVRs {
		jobs[i] = func() error {
			return ignoreNotFound(c.Dynamic.Resource(gvr).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, all))
		}
	}
	err := parallel(jobs...)
	zero := int64(0)
	return errors.Join(err, ignoreNotFound(c.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, all)))
}

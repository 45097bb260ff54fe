package handshake

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
)

// LabelCordoned marks the namespaces of a cordoned consumer; the cordon admission policies are bound to
// the sandboxes that carry it.
const LabelCordoned = "federate.dev/cordoned"

// Cordon (provider) keeps a consumer from starting new workloads in every namespace it was granted, while
// what runs keeps running: its namespaces get LabelCordoned, which the cordon admission policies select,
// and the Tenant records it. It takes effect with the labels; safe to re-run.
func (c *Cluster) Cordon(ctx context.Context, consumerID string) error {
	return c.setCordon(ctx, consumerID, true)
}

// Uncordon (provider) lifts Cordon.
func (c *Cluster) Uncordon(ctx context.Context, consumerID string) error {
	return c.setCordon(ctx, consumerID, false)
}

// Drain (provider) cordons a consumer, then deletes every workload and pod it runs, in every namespace it
// was granted. Its identities keep their rights: it can see and clean up what is left, and starts nothing
// until it is uncordoned.
func (c *Cluster) Drain(ctx context.Context, consumerID string) error {
	if err := c.Cordon(ctx, consumerID); err != nil {
		return err
	}
	names, err := c.consumerNamespaces(ctx, consumerID)
	if err != nil {
		return err
	}
	return step(c.report(), "Deleting the workloads and pods of "+consumerID, "Workloads and pods of "+consumerID+" deleted", func() error {
		jobs := make([]func() error, len(names))
		for i, ns := range names {
			jobs[i] = func() error { return c.deleteRunners(ctx, ns) }
		}
		if err := parallel(jobs...); err != nil {
			return err
		}
		c.audit(ctx, tenantObject(consumerID), EventDrained, "consumer "+consumerID+" drained: workloads and pods deleted in "+strings.Join(names, ", "), nil)
		return nil
	})
}

// consumerNamespaces are the tenant namespace and every namespace granted to the consumer, once the
// consumer is known to have a Tenant here.
func (c *Cluster) consumerNamespaces(ctx context.Context, consumerID string) ([]string, error) {
	// The cordon policies must exist before a namespace is labelled for them.
	if _, err := c.loadCurrent(ctx); err != nil {
		return nil, err
	}
	ns := TenantNamespace(consumerID)
	if _, err := c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(ns).Get(ctx, consumerID, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("consumer %q has no Tenant on this cluster (%s/%s): nothing to cordon or drain", consumerID, ns, consumerID)
		}
		return nil, err
	}
	granted, err := c.grantedNamespaces(ctx, consumerID)
	if err != nil {
		return nil, err
	}
	names := []string{ns}
	for _, g := range granted {
		if g.DeletionTimestamp == nil {
			names = append(names, g.Name)
		}
	}
	return names, nil
}

func (c *Cluster) setCordon(ctx context.Context, consumerID string, on bool) error {
	names, err := c.consumerNamespaces(ctx, consumerID)
	if err != nil {
		return err
	}
	running, done := "Uncordoning "+consumerID, consumerID+" uncordoned: it may start workloads again"
	label := `null` // a merge patch removes the label
	if on {
		running, done = "Cordoning "+consumerID, consumerID+" cordoned in "+strconv.Itoa(len(names))+" namespace(s): it starts no new workloads, what runs keeps running"
		label = `"true"`
	}
	return step(c.report(), running, done, func() error {
		patch := []byte(`{"metadata":{"labels":{"` + LabelCordoned + `":` + label + `}}}`)
		jobs := make([]func() error, 0, len(names)+1)
		for _, ns := range names {
			jobs = append(jobs, func() error {
				_, err := c.Kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
				if apierrors.IsNotFound(err) {
					return nil
				}
				return err
			})
		}
		jobs = append(jobs, func() error {
			_, err := c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(TenantNamespace(consumerID)).Patch(ctx, consumerID, types.MergePatchType,
				[]byte(`{"status":{"cordoned":`+strconv.FormatBool(on)+`}}`), metav1.PatchOptions{FieldManager: FieldManager}, "status")
			return err
		})
		err := parallel(jobs...)
		if err != nil && on {
			return errors.Join(err, errors.New("the consumer may be cordoned in some namespaces only: run the command again"))
		}
		if err != nil {
			return err
		}
		reason := EventUncordoned
		if on {
			reason = EventCordoned
		}
		c.audit(ctx, tenantObject(consumerID), reason, "consumer "+consumerID+" "+strings.ToLower(reason)+" in "+strings.Join(names, ", "), nil)
		return nil
	})
}

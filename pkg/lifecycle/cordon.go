package lifecycle

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// Cordon (provider) keeps a consumer from starting new workloads in every namespace it was granted, while
// what runs keeps running: its namespaces get LabelCordoned, which the cordon admission policies select,
// and the Tenant records it. It takes effect with the labels; safe to re-run.
func Cordon(ctx context.Context, c *member.Cluster, consumerID string) (handshake.Outcome, error) {
	return setCordon(ctx, c, consumerID, true)
}

// Uncordon (provider) lifts Cordon.
func Uncordon(ctx context.Context, c *member.Cluster, consumerID string) (handshake.Outcome, error) {
	return setCordon(ctx, c, consumerID, false)
}

// Drain (provider) cordons a consumer, then deletes every workload and pod it runs, in every namespace it
// was granted. Its identities keep their rights: it can see and clean up what is left, and starts nothing
// until it is uncordoned. Cordon returns once admission refuses the tenant's new pods everywhere, so the
// one sweep after it leaves nothing the tenant made.
func Drain(ctx context.Context, c *member.Cluster, consumerID string) error {
	if _, err := Cordon(ctx, c, consumerID); err != nil {
		return err
	}
	names, _, err := consumerNamespaces(ctx, c, consumerID)
	if err != nil {
		return err
	}
	return member.Step(c.Reporter(), "Deleting the workloads and pods of "+consumerID, "Workloads and pods of "+consumerID+" deleted", func() error {
		jobs := make([]func() error, len(names))
		for i, ns := range names {
			jobs[i] = func() error { return sandbox.DeleteRunners(ctx, c, ns) }
		}
		if err := parallel.All(jobs...); err != nil {
			return err
		}
		handshake.Audit(ctx, c, handshake.TenantObject(consumerID), handshake.EventDrained, "consumer "+consumerID+" drained: workloads and pods deleted in "+strings.Join(names, ", "), nil)
		return nil
	})
}

// consumerNamespaces are the tenant namespace and every namespace granted to the consumer, once the
// consumer is known to have a Tenant here (else a *NotFoundError), and whether all of them are cordoned.
func consumerNamespaces(ctx context.Context, c *member.Cluster, consumerID string) ([]string, bool, error) {
	// The cordon policies must exist before a namespace is labelled for them.
	if _, err := sandbox.LoadCurrent(ctx, c); err != nil {
		return nil, false, err
	}
	ns := member.TenantNamespace(consumerID)
	var granted []corev1.Namespace
	var own *corev1.Namespace
	var tenantErr, nsErr error
	if err := parallel.All(
		func() error { _, tenantErr = readTenant(ctx, c, consumerID); return nil },
		func() error { own, nsErr = c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); return nil },
		func() error { var err error; granted, err = grants.GrantedNamespaces(ctx, c, consumerID); return err },
	); err != nil {
		return nil, false, err
	}
	if apierrors.IsNotFound(tenantErr) {
		known, err := consumerIDs(ctx, c)
		if err != nil {
			return nil, false, err
		}
		return nil, false, handshake.NotFound("consumer", consumerID, "on this cluster (no Tenant "+ns+"/"+consumerID+")", known)
	}
	if tenantErr != nil {
		return nil, false, tenantErr
	}
	names := []string{ns}
	cordoned := nsErr == nil && own.Labels[sandbox.LabelCordoned] == "true"
	for _, g := range granted {
		if g.DeletionTimestamp == nil {
			names = append(names, g.Name)
			cordoned = cordoned && g.Labels[sandbox.LabelCordoned] == "true"
		}
	}
	return names, cordoned, nil
}

func setCordon(ctx context.Context, c *member.Cluster, consumerID string, on bool) (handshake.Outcome, error) {
	names, cordoned, err := consumerNamespaces(ctx, c, consumerID)
	if err != nil {
		return handshake.Done, err
	}
	if cordoned == on {
		// Already so: admission is confirmed again (a re-run heals a namespace whose label reached admission
		// late), and nothing is written.
		probes := make([]func() error, len(names))
		for i, ns := range names {
			probes[i] = func() error { return sandbox.WaitCordoned(ctx, c, ns, on) }
		}
		return handshake.Already, parallel.All(probes...)
	}
	running, done := "Uncordoning "+consumerID, consumerID+" uncordoned: it may start workloads again"
	label := `null` // a merge patch removes the label
	if on {
		running, done = "Cordoning "+consumerID, consumerID+" cordoned in "+strconv.Itoa(len(names))+" namespace(s): it starts no new workloads, what runs keeps running"
		label = `"true"`
	}
	return handshake.Done, member.Step(c.Reporter(), running, done, func() error {
		patch := []byte(`{"metadata":{"labels":{"` + sandbox.LabelCordoned + `":` + label + `}}}`)
		jobs := make([]func() error, 0, len(names)+1)
		for _, ns := range names {
			jobs = append(jobs, func() error {
				_, err := c.Kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: member.FieldManager})
				if apierrors.IsNotFound(err) {
					return nil
				}
				return err
			})
		}
		jobs = append(jobs, func() error {
			_, err := c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(member.TenantNamespace(consumerID)).Patch(ctx, consumerID, types.MergePatchType,
				[]byte(`{"status":{"cordoned":`+strconv.FormatBool(on)+`}}`), metav1.PatchOptions{FieldManager: member.FieldManager}, "status")
			return err
		})
		err := parallel.All(jobs...)
		if err == nil {
			// A namespace granted while this ran may have read the Tenant before it changed: now that it
			// has, the consumer's namespaces are listed again, and each follows (a grant that reads the
			// Tenant after this follows it by itself).
			names, err = labelLate(ctx, c, consumerID, names, patch)
		}
		if err != nil && on {
			return errors.Join(err, errors.New("the consumer may be cordoned in some namespaces only: run the command again"))
		}
		if err != nil {
			return err
		}
		// Admission sees a namespace's labels through a cache: until it refuses the probe, the tenant could
		// still start something. Only then is the consumer cordoned (or, uncordoning, free again).
		probes := make([]func() error, len(names))
		for i, ns := range names {
			probes[i] = func() error { return sandbox.WaitCordoned(ctx, c, ns, on) }
		}
		if err := parallel.All(probes...); err != nil {
			return err
		}
		reason := handshake.EventUncordoned
		if on {
			reason = handshake.EventCordoned
		}
		handshake.Audit(ctx, c, handshake.TenantObject(consumerID), reason, "consumer "+consumerID+" "+strings.ToLower(reason)+" in "+strings.Join(names, ", "), nil)
		return nil
	})
}

// labelLate patches the cordon label onto the consumer's namespaces that names (those labelled) misses,
// and returns them all.
func labelLate(ctx context.Context, c *member.Cluster, consumerID string, names []string, patch []byte) ([]string, error) {
	granted, err := grants.GrantedNamespaces(ctx, c, consumerID)
	if err != nil || c.DryRun {
		return names, err
	}
	var jobs []func() error
	for _, g := range granted {
		if g.DeletionTimestamp != nil || slices.Contains(names, g.Name) {
			continue
		}
		names = append(names, g.Name)
		jobs = append(jobs, func() error {
			_, err := c.Kube.CoreV1().Namespaces().Patch(ctx, g.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: member.FieldManager})
			return objects.IgnoreNotFound(err)
		})
	}
	return names, parallel.All(jobs...)
}

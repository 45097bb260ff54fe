package handshake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
)

// RemoveTenant (provider) revokes a consumer (see Revoke: binding first, then its workloads and tokens)
// and removes its Tenant (and with it the pinned key), nonce, leftover CSRs and, unless keepNamespace, its
// sandbox namespace, waiting until they are gone. It succeeds when there is nothing left to remove.
func (c *Cluster) RemoveTenant(ctx context.Context, consumerID string, keepNamespace bool) error {
	// Nothing left to revoke (NotFound) is fine here: what remains of the pairing is still removed.
	if _, err := c.Revoke(ctx, consumerID); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	r := c.report()
	ns := TenantNamespace(consumerID)
	granted, err := c.grantedNamespaces(ctx, consumerID)
	if err != nil {
		return err
	}
	shown := ns
	if len(granted) > 0 && !keepNamespace {
		shown = fmt.Sprintf("%s and %d more", ns, len(granted))
	}
	return step(r, "Removing tenant "+consumerID, "Tenant "+consumerID+" removed (Tenant, nonce, CSRs, slice decisions, grants ledger"+nsNote(keepNamespace, shown)+")", func() error {
		errs := []error{
			ignoreNotFound(c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(ns).Delete(ctx, consumerID, metav1.DeleteOptions{})),
			c.nonces().Delete(ctx, consumerID),
			ignoreNotFound(c.Kube.CoreV1().ConfigMaps(SystemNamespace).Delete(ctx, sliceDecisionsName(consumerID), metav1.DeleteOptions{})),
			// A later pairing makes the ledger up again from whatever namespaces are kept.
			ignoreNotFound(c.Kube.CoreV1().ConfigMaps(SystemNamespace).Delete(ctx, GrantsLedgerName(consumerID), metav1.DeleteOptions{})),
			ignoreNotFound(c.Kube.CoordinationV1().Leases(SystemNamespace).Delete(ctx, "authenticate-"+consumerID, metav1.DeleteOptions{})),
			ignoreNotFound(c.Kube.CertificatesV1().CertificateSigningRequests().DeleteCollection(ctx, metav1.DeleteOptions{},
				metav1.ListOptions{LabelSelector: labels.SelectorFromSet(TenantLabels(consumerID)).String()})),
		}
		if !keepNamespace {
			// Every namespace at once: the tenant's, its slices' and its extra ones.
			jobs := []func() error{func() error { return c.deleteNamespace(ctx, TenantNamespace(consumerID), consumerID) }}
			for _, g := range granted {
				jobs = append(jobs, func() error { return c.deleteNamespace(ctx, g.Name, consumerID) })
			}
			errs = append(errs, parallel(jobs...))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		return c.recordRemoved(ctx, RemovedConsumer, consumerID, consumerID)
	})
}

// RemoveIdentity (consumer) forgets a provider: every Identity, kubeconfig Secret, waiting client key and
// ResourceSlice record this cluster holds for it (the pairing's and its slices'), all in federate-system,
// found by their labels. Nothing of the other direction of a two-way pairing is touched: those carry the
// provider role.
func (c *Cluster) RemoveIdentity(ctx context.Context, providerID string) error {
	r := c.report()
	return step(r, "Removing identity for "+providerID, "Identities for "+providerID+" removed (Identities, kubeconfigs, keys, slice records)", func() error {
		sel := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(IdentityLabels(providerID)).String()}
		// The exports first, wherever they are: the collection below takes only federate-system's Secrets.
		if err := errors.Join(
			c.deleteExports(ctx, providerID, ""),
			ignoreNotFound(c.Dynamic.Resource(v1alpha1.IdentityGVR).Namespace(SystemNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, sel)),
			ignoreNotFound(c.Dynamic.Resource(v1alpha1.ResourceSliceGVR).Namespace(SystemNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, sel)),
			ignoreNotFound(c.Kube.CoreV1().Secrets(SystemNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, sel)),
		); err != nil {
			return err
		}
		return c.recordRemoved(ctx, RemovedProvider, providerID, providerID)
	})
}

func nsNote(keep bool, ns string) string {
	if keep {
		return "; namespace " + ns + " kept"
	}
	return ", namespace " + ns
}

// deleteNamespace deletes a sandbox namespace this tool created for consumerID (never another one of the
// same name) and watches until the namespace controller has finished with it.
func (c *Cluster) deleteNamespace(ctx context.Context, name, consumerID string) error {
	nss := c.Kube.CoreV1().Namespaces()
	ns, err := nss.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.Labels[LabelManagedBy] != ManagedBy || ns.Labels[LabelRemoteClusterID] != consumerID {
		return fmt.Errorf("namespace %s %w for consumer %q: left in place", name, ErrNotOurs, consumerID)
	}
	if ns.DeletionTimestamp == nil {
		if err := nss.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &ns.UID}}); err != nil {
			return ignoreNotFound(err)
		}
	}
	// The namespace controller usually finishes in seconds. An object whose finalizer no controller will
	// ever remove (a tenant can orphan one: see docs/security.md) would keep the namespace terminating
	// forever; by now nobody but this run acts there, so after a while its finalizers are removed.
	wctx, cancel := context.WithTimeout(ctx, stuckNamespaceAfter)
	err = c.waitDeleted(wctx, deletable[*corev1.Namespace](nss), name, ns.ResourceVersion)
	cancel()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("waiting for namespace %s to be deleted: %w", name, err)
	}
	c.report().Warn(fmt.Sprintf("Namespace %s is still terminating after %s: removing the finalizers left on its objects", name, stuckNamespaceAfter))
	if err := c.stripFinalizers(ctx, name); err != nil {
		return fmt.Errorf("namespace %s: removing leftover finalizers: %w", name, err)
	}
	left, err := nss.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.waitDeleted(ctx, deletable[*corev1.Namespace](nss), name, left.ResourceVersion); err != nil {
		return fmt.Errorf("waiting for namespace %s to be deleted: %w", name, err)
	}
	return nil
}

// stuckNamespaceAfter is how long a namespace may take to be deleted before its objects' finalizers are
// removed; the namespace controller takes about 5 s on an idle cluster.
const stuckNamespaceAfter = 30 * time.Second

// stripFinalizers removes the finalizers of every object left in a terminating namespace, through
// discovery of its namespaced kinds.
func (c *Cluster) stripFinalizers(ctx context.Context, ns string) error {
	lists, err := c.Kube.Discovery().ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return err
	}
	var errs []error
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "patch") || strings.Contains(r.Name, "/") {
				continue
			}
			client := c.Dynamic.Resource(gv.WithResource(r.Name)).Namespace(ns)
			items, err := client.List(ctx, metav1.ListOptions{})
			if err != nil {
				continue // a kind that cannot be listed holds nothing this run can clear
			}
			for _, it := range items.Items {
				if len(it.GetFinalizers()) == 0 {
					continue
				}
				_, err := client.Patch(ctx, it.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					errs = append(errs, fmt.Errorf("%s %s: %w", r.Name, it.GetName(), err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// UnauthenticateOptions configure Unauthenticate.
type UnauthenticateOptions struct {
	KeepNamespaces bool
	// Force cleans the reachable side when the other cannot be reached, and then fails naming what was
	// left. ConsumerID and ProviderID name an unreachable side's cluster ID.
	Force                  bool
	ConsumerID, ProviderID string
}

// SwappedError says that there is no pairing in the direction asked, but there is one the other way round:
// the two clusters were given in each other's place.
type SwappedError struct{ ConsumerID, ProviderID string }

func (e *SwappedError) Error() string {
	return fmt.Sprintf("no pairing in which %q consumes from %q, but there is one the other way round (%q consumes from %q): the two clusters were named in each other's place; nothing was removed",
		e.ConsumerID, e.ProviderID, e.ProviderID, e.ConsumerID)
}

// Unauthenticate removes a pairing on both sides, both at once, and returns both sides' errors. A pairing
// neither side has anything of is Already if either remembers removing it, a *SwappedError if it exists
// the other way round, and otherwise a *NotFoundError; in each case nothing is changed.
func Unauthenticate(ctx context.Context, consumer, provider *Cluster, o UnauthenticateOptions) (Outcome, error) {
	cID, cErr := clusterID(ctx, consumer, o.ConsumerID, "consumer")
	pID, pErr := clusterID(ctx, provider, o.ProviderID, "provider")
	if errors.Is(cErr, ErrNotInitialized) || errors.Is(pErr, ErrNotInitialized) {
		r := consumer.report()
		if errors.Is(pErr, ErrNotInitialized) {
			r = provider.report()
		}
		r.Info("This cluster was never initialized: there is no pairing to remove")
		return Already, nil
	}
	if cErr != nil || pErr != nil {
		if !o.Force || (cErr != nil && pErr != nil) {
			return Done, errors.Join(wrapSide("consumer", cErr), wrapSide("provider", pErr))
		}
		if cID == "" || pID == "" {
			// Said as one error, the missing ID first: the unreachable side is expected under --force, and
			// its cause is kept as text so that it does not stand in for the error the user can act on.
			side, sErr := "consumer", cErr
			if pErr != nil {
				side, sErr = "provider", pErr
			}
			return Done, fmt.Errorf("%w (the %s: %s)", ErrNeedUnreachableID, side, sErr.Error())
		}
	}
	if cID == pID {
		return Done, fmt.Errorf("%w: both have cluster ID %q", ErrSameCluster, cID)
	}
	if cErr == nil && pErr == nil {
		if outcome, err := pairingExists(ctx, consumer, provider, cID, pID); err != nil || outcome == Already {
			return outcome, err
		}
	}
	// Both sides at once: neither depends on the other. The provider's RoleBinding is the first thing its
	// side deletes; only the provider has a namespace to wait for.
	var providerErr, consumerErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if pErr != nil {
			providerErr = fmt.Errorf("provider: not cleaned, unreachable (%w); left there: RoleBinding, workloads, Tenant, nonce, CSRs and namespace %s of consumer %q",
				pErr, TenantNamespace(cID), cID)
			provider.report().Warn(providerErr.Error())
			return
		}
		providerErr = wrapSide("provider", provider.RemoveTenant(ctx, cID, o.KeepNamespaces))
	}()
	if cErr != nil {
		consumerErr = fmt.Errorf("consumer: not cleaned, unreachable (%w); left there: Identity, kubeconfig Secret and keys of provider %q in namespace %s",
			cErr, pID, SystemNamespace)
		consumer.report().Warn(consumerErr.Error())
	} else {
		consumerErr = wrapSide("consumer", consumer.RemoveIdentity(ctx, pID))
	}
	<-done
	return Done, errors.Join(providerErr, consumerErr)
}

// pairingExists checks, before anything is removed, that the pairing consumer -> provider left something
// on either side; Done means there is something to remove.
func pairingExists(ctx context.Context, consumer, provider *Cluster, cID, pID string) (Outcome, error) {
	var fwdTenant, fwdIdentity, revTenant, revIdentity bool
	var provRemoved, consRemoved bool
	var known []string
	// Only the forward reads decide whether there is something to remove; the others word the answer when
	// there is not, so an operator whose role does not reach them (the reverse pairing, the tombstones)
	// still removes the pairing: for those, Forbidden reads as "nothing there".
	hint := func(err error) error {
		if apierrors.IsForbidden(err) {
			return nil
		}
		return err
	}
	err := parallel(
		func() error { var err error; fwdTenant, err = provider.holdsTenant(ctx, cID); return err },
		func() error { var err error; fwdIdentity, err = consumer.holdsIdentity(ctx, pID); return err },
		func() error { var err error; revTenant, err = consumer.holdsTenant(ctx, pID); return hint(err) },
		func() error { var err error; revIdentity, err = provider.holdsIdentity(ctx, cID); return hint(err) },
		func() error {
			var err error
			provRemoved, _, err = provider.removed(ctx, RemovedConsumer, cID, cID)
			return hint(err)
		},
		func() error {
			var err error
			consRemoved, _, err = consumer.removed(ctx, RemovedProvider, pID, pID)
			return hint(err)
		},
		func() error { var err error; known, err = provider.consumerIDs(ctx); return hint(err) },
	)
	switch {
	case err != nil:
		return Done, err
	case fwdTenant || fwdIdentity:
		return Done, nil
	case revTenant || revIdentity:
		return Done, &SwappedError{ConsumerID: cID, ProviderID: pID}
	case provRemoved || consRemoved:
		return Already, nil
	}
	return Done, notFound("consumer", cID, "on the provider "+pID+" (no Tenant, and the consumer holds no identity for it)", known)
}

// holdsTenant tells whether this cluster, as a provider, has anything of consumerID: its Tenant or its
// sandbox namespace.
func (c *Cluster) holdsTenant(ctx context.Context, consumerID string) (bool, error) {
	_, err := c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(TenantNamespace(consumerID)).Get(ctx, consumerID, metav1.GetOptions{})
	if err == nil {
		return true, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, err
	}
	ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, TenantNamespace(consumerID), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil && tenantOwner(consumerID).owns(ns.Labels), err
}

// holdsIdentity tells whether this cluster, as a consumer, holds anything for providerID: an Identity, a
// kubeconfig, a waiting key, the record of an export.
func (c *Cluster) holdsIdentity(ctx context.Context, providerID string) (bool, error) {
	l, err := c.Kube.CoreV1().Secrets(SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(IdentityLabels(providerID)).String()})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil || len(l.Items) > 0 {
		return err == nil, err
	}
	// An export left by a run that could not read its namespace is still something to remove.
	records, err := c.exportRecords(ctx, providerID, "", false)
	return len(records) > 0, err
}

// clusterID reads a cluster's ID; if that fails, it returns the ID given (if any) and the error.
func clusterID(ctx context.Context, c *Cluster, given, side string) (string, error) {
	self, err := c.Load(ctx)
	if err != nil {
		return given, err
	}
	if given != "" && given != self.ClusterID {
		return "", &IDConflictError{Side: side, Want: given, Have: self.ClusterID}
	}
	return self.ClusterID, nil
}

package handshake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/federate-dev/kubectl-federate/pkg/sandbox"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// RemoveTenant (provider) revokes a consumer (see Revoke: binding first, then its workloads and tokens)
// and removes its Tenant (and with it the pinned key), nonce, leftover CSRs and, unless keepNamespace, its
// sandbox namespace, waiting until they are gone. It succeeds when there is nothing left to remove.
func RemoveTenant(ctx context.Context, c *member.Cluster, consumerID string, keepNamespace bool) error {
	// Nothing left to revoke (NotFound) is fine here: what remains of the pairing is still removed.
	if _, err := Revoke(ctx, c, consumerID); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	r := c.Reporter()
	ns := member.TenantNamespace(consumerID)
	granted, err := grantedNamespaces(ctx, c, consumerID)
	if err != nil {
		return err
	}
	shown := ns
	if len(granted) > 0 && !keepNamespace {
		shown = fmt.Sprintf("%s and %d more", ns, len(granted))
	}
	return member.Step(r, "Removing tenant "+consumerID, "Tenant "+consumerID+" removed (Tenant, nonce, CSRs, slice decisions, grants ledger"+nsNote(keepNamespace, shown)+")", func() error {
		errs := []error{
			member.IgnoreNotFound(c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(ns).Delete(ctx, consumerID, metav1.DeleteOptions{})),
			c.Nonces().Delete(ctx, consumerID),
			member.IgnoreNotFound(c.Kube.CoreV1().ConfigMaps(member.SystemNamespace).Delete(ctx, sliceDecisionsName(consumerID), metav1.DeleteOptions{})),
			// A later pairing makes the ledger up again from whatever namespaces are kept.
			member.IgnoreNotFound(c.Kube.CoreV1().ConfigMaps(member.SystemNamespace).Delete(ctx, sandbox.GrantsLedgerName(consumerID), metav1.DeleteOptions{})),
			member.IgnoreNotFound(c.Kube.CoordinationV1().Leases(member.SystemNamespace).Delete(ctx, "authenticate-"+consumerID, metav1.DeleteOptions{})),
			member.IgnoreNotFound(c.Kube.CertificatesV1().CertificateSigningRequests().DeleteCollection(ctx, metav1.DeleteOptions{},
				metav1.ListOptions{LabelSelector: labels.SelectorFromSet(member.TenantLabels(consumerID)).String()})),
		}
		if !keepNamespace {
			// Every namespace at once: the tenant's, its slices' and its extra ones.
			jobs := []func() error{func() error { return deleteNamespace(ctx, c, member.TenantNamespace(consumerID), consumerID) }}
			for _, g := range granted {
				jobs = append(jobs, func() error { return deleteNamespace(ctx, c, g.Name, consumerID) })
			}
			errs = append(errs, member.Parallel(jobs...))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		return recordRemoved(ctx, c, RemovedConsumer, consumerID, consumerID)
	})
}

// RemoveIdentity (consumer) forgets a provider: every Identity, kubeconfig Secret, waiting client key and
// ResourceSlice record this cluster holds for it (the pairing's and its slices'), all in federate-system,
// found by their labels. Nothing of the other direction of a two-way pairing is touched: those carry the
// provider role.
func RemoveIdentity(ctx context.Context, c *member.Cluster, providerID string) error {
	r := c.Reporter()
	return member.Step(r, "Removing identity for "+providerID, "Identities for "+providerID+" removed (Identities, kubeconfigs, keys, slice records)", func() error {
		sel := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(member.IdentityLabels(providerID)).String()}
		// The exports first, wherever they are: the collection below takes only federate-system's Secrets.
		if err := errors.Join(
			deleteExports(ctx, c, providerID, ""),
			member.IgnoreNotFound(c.Dynamic.Resource(v1alpha1.IdentityGVR).Namespace(member.SystemNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, sel)),
			member.IgnoreNotFound(c.Dynamic.Resource(v1alpha1.ResourceSliceGVR).Namespace(member.SystemNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, sel)),
			member.IgnoreNotFound(c.Kube.CoreV1().Secrets(member.SystemNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, sel)),
		); err != nil {
			return err
		}
		return recordRemoved(ctx, c, RemovedProvider, providerID, providerID)
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
func deleteNamespace(ctx context.Context, c *member.Cluster, name, consumerID string) error {
	nss := c.Kube.CoreV1().Namespaces()
	ns, err := nss.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.Labels[member.LabelManagedBy] != member.ManagedBy || ns.Labels[member.LabelRemoteClusterID] != consumerID {
		return fmt.Errorf("namespace %s %w for consumer %q: left in place", name, member.ErrNotOurs, consumerID)
	}
	if ns.DeletionTimestamp == nil {
		if err := nss.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &ns.UID}}); err != nil {
			return member.IgnoreNotFound(err)
		}
	}
	// The namespace controller usually finishes in seconds. An object whose finalizer no controller will
	// ever remove (a tenant can orphan one: see docs/security.md) would keep the namespace terminating
	// forever; by now nobody but this run acts there, so after a while its finalizers are removed.
	wctx, cancel := context.WithTimeout(ctx, stuckNamespaceAfter)
	err = c.WaitDeleted(wctx, member.Deletable[*corev1.Namespace](nss), name, ns.ResourceVersion)
	cancel()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("waiting for namespace %s to be deleted: %w", name, err)
	}
	c.Reporter().Warn(fmt.Sprintf("Namespace %s is still terminating after %s: removing the finalizers left on its objects", name, stuckNamespaceAfter))
	if err := stripFinalizers(ctx, c, name); err != nil {
		return fmt.Errorf("namespace %s: removing leftover finalizers: %w", name, err)
	}
	left, err := nss.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.WaitDeleted(ctx, member.Deletable[*corev1.Namespace](nss), name, left.ResourceVersion); err != nil {
		return fmt.Errorf("waiting for namespace %s to be deleted: %w", name, err)
	}
	return nil
}

// stuckNamespaceAfter is how long a namespace may take to be deleted before its objects' finalizers are
// removed; the namespace controller takes about 5 s on an idle cluster.
const stuckNamespaceAfter = 30 * time.Second

// stripFinalizers removes the finalizers of every object left in a terminating namespace, through
// discovery of its namespaced kinds.
func stripFinalizers(ctx context.Context, c *member.Cluster, ns string) error {
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
func Unauthenticate(ctx context.Context, consumer, provider *member.Cluster, o UnauthenticateOptions) (Outcome, error) {
	cID, cErr := clusterID(ctx, consumer, o.ConsumerID, "consumer")
	pID, pErr := clusterID(ctx, provider, o.ProviderID, "provider")
	if errors.Is(cErr, member.ErrNotInitialized) || errors.Is(pErr, member.ErrNotInitialized) {
		r := consumer.Reporter()
		if errors.Is(pErr, member.ErrNotInitialized) {
			r = provider.Reporter()
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
			return Done, fmt.Errorf("%w (the %s: %s)", member.ErrNeedUnreachableID, side, sErr.Error())
		}
	}
	if cID == pID {
		return Done, fmt.Errorf("%w: both have cluster ID %q", member.ErrSameCluster, cID)
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
				pErr, member.TenantNamespace(cID), cID)
			provider.Reporter().Warn(providerErr.Error())
			return
		}
		providerErr = wrapSide("provider", RemoveTenant(ctx, provider, cID, o.KeepNamespaces))
	}()
	if cErr != nil {
		consumerErr = fmt.Errorf("consumer: not cleaned, unreachable (%w); left there: Identity, kubeconfig Secret and keys of provider %q in namespace %s",
			cErr, pID, member.SystemNamespace)
		consumer.Reporter().Warn(consumerErr.Error())
	} else {
		consumerErr = wrapSide("consumer", RemoveIdentity(ctx, consumer, pID))
	}
	<-done
	return Done, errors.Join(providerErr, consumerErr)
}

// pairingExists checks, before anything is removed, that the pairing consumer -> provider left something
// on either side; Done means there is something to remove.
func pairingExists(ctx context.Context, consumer, provider *member.Cluster, cID, pID string) (Outcome, error) {
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
	err := member.Parallel(
		func() error { var err error; fwdTenant, err = holdsTenant(ctx, provider, cID); return err },
		func() error { var err error; fwdIdentity, err = holdsIdentity(ctx, consumer, pID); return err },
		func() error { var err error; revTenant, err = holdsTenant(ctx, consumer, pID); return hint(err) },
		func() error { var err error; revIdentity, err = holdsIdentity(ctx, provider, cID); return hint(err) },
		func() error {
			var err error
			provRemoved, _, err = removed(ctx, provider, RemovedConsumer, cID, cID)
			return hint(err)
		},
		func() error {
			var err error
			consRemoved, _, err = removed(ctx, consumer, RemovedProvider, pID, pID)
			return hint(err)
		},
		func() error { var err error; known, err = consumerIDs(ctx, provider); return hint(err) },
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
func holdsTenant(ctx context.Context, c *member.Cluster, consumerID string) (bool, error) {
	_, err := c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(member.TenantNamespace(consumerID)).Get(ctx, consumerID, metav1.GetOptions{})
	if err == nil {
		return true, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, err
	}
	ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, member.TenantNamespace(consumerID), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil && sandbox.TenantOwner(consumerID).Owns(ns.Labels), err
}

// holdsIdentity tells whether this cluster, as a consumer, holds anything for providerID: an Identity, a
// kubeconfig, a waiting key, the record of an export.
func holdsIdentity(ctx context.Context, c *member.Cluster, providerID string) (bool, error) {
	l, err := c.Kube.CoreV1().Secrets(member.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(member.IdentityLabels(providerID)).String()})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil || len(l.Items) > 0 {
		return err == nil, err
	}
	// An export left by a run that could not read its namespace is still something to remove.
	records, err := exportRecords(ctx, c, providerID, "", false)
	return len(records) > 0, err
}

// clusterID reads a cluster's ID; if that fails, it returns the ID given (if any) and the error.
func clusterID(ctx context.Context, c *member.Cluster, given, side string) (string, error) {
	self, err := c.Load(ctx)
	if err != nil {
		return given, err
	}
	if given != "" && given != self.ClusterID {
		return "", &member.IDConflictError{Side: side, Want: given, Have: self.ClusterID}
	}
	return self.ClusterID, nil
}

package lifecycle

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// RemoveTenant (provider) revokes a consumer (see Revoke: binding first, then its workloads and tokens)
// and removes its Tenant (and with it the pinned key), nonce, leftover CSRs and, unless keepNamespace, its
// sandbox namespace, waiting until they are gone. It succeeds when there is nothing left to remove.
func RemoveTenant(ctx context.Context, c *member.Cluster, consumerID string, keepNamespace bool) error {
	// Nothing left to revoke (NotFound) is fine here: what remains of the pairing is still removed.
	if _, err := Revoke(ctx, c, consumerID); err != nil && !errors.Is(err, handshake.ErrNotFound) {
		return err
	}
	r := c.Reporter()
	ns := member.TenantNamespace(consumerID)
	granted, err := grants.GrantedNamespaces(ctx, c, consumerID)
	if err != nil {
		return err
	}
	shown := ns
	if len(granted) > 0 && !keepNamespace {
		shown = fmt.Sprintf("%s and %d more", ns, len(granted))
	}
	return member.Step(r, "Removing tenant "+consumerID, "Tenant "+consumerID+" removed (Tenant, nonce, CSRs, slice decisions, grants ledger"+nsNote(keepNamespace, shown)+")", func() error {
		errs := []error{
			objects.IgnoreNotFound(c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(ns).Delete(ctx, consumerID, metav1.DeleteOptions{})),
			c.Nonces().Delete(ctx, consumerID),
			objects.IgnoreNotFound(c.Kube.CoreV1().ConfigMaps(member.SystemNamespace).Delete(ctx, grants.SliceDecisionsName(consumerID), metav1.DeleteOptions{})),
			// A later pairing makes the ledger up again from whatever namespaces are kept.
			objects.IgnoreNotFound(c.Kube.CoreV1().ConfigMaps(member.SystemNamespace).Delete(ctx, sandbox.GrantsLedgerName(consumerID), metav1.DeleteOptions{})),
			objects.IgnoreNotFound(c.Kube.CoordinationV1().Leases(member.SystemNamespace).Delete(ctx, "authenticate-"+consumerID, metav1.DeleteOptions{})),
			objects.IgnoreNotFound(c.Kube.CertificatesV1().CertificateSigningRequests().DeleteCollection(ctx, metav1.DeleteOptions{},
				metav1.ListOptions{LabelSelector: labels.SelectorFromSet(member.TenantLabels(consumerID)).String()})),
		}
		if !keepNamespace {
			// Every namespace at once: the tenant's, its slices' and its extra ones.
			jobs := []func() error{func() error { return grants.DeleteNamespace(ctx, c, member.TenantNamespace(consumerID), consumerID) }}
			for _, g := range granted {
				jobs = append(jobs, func() error { return grants.DeleteNamespace(ctx, c, g.Name, consumerID) })
			}
			errs = append(errs, parallel.All(jobs...))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		return handshake.RecordRemoved(ctx, c, handshake.RemovedConsumer, consumerID, consumerID)
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
			handshake.DeleteExports(ctx, c, providerID, ""),
			objects.IgnoreNotFound(c.Dynamic.Resource(v1alpha1.IdentityGVR).Namespace(member.SystemNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, sel)),
			objects.IgnoreNotFound(c.Dynamic.Resource(v1alpha1.ResourceSliceGVR).Namespace(member.SystemNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, sel)),
			objects.IgnoreNotFound(c.Kube.CoreV1().Secrets(member.SystemNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, sel)),
		); err != nil {
			return err
		}
		return handshake.RecordRemoved(ctx, c, handshake.RemovedProvider, providerID, providerID)
	})
}

func nsNote(keep bool, ns string) string {
	if keep {
		return "; namespace " + ns + " kept"
	}
	return ", namespace " + ns
}

// UnauthenticateOptions configure Unauthenticate.
type UnauthenticateOptions struct {
	KeepNamespaces bool
	// Force cleans the reachable side when the other cannot be reached, and then fails naming what was
	// left. ConsumerID and ProviderID name an unreachable side's cluster ID.
	Force                  bool
	ConsumerID, ProviderID string
	// Authenticator, if set, gets the provider's authenticator entry of a federated pairing once the
	// provider's side is removed: its administrator removes it from the API server's configuration.
	Authenticator func(*handshake.JWTAuthenticator)
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
func Unauthenticate(ctx context.Context, consumer, provider *member.Cluster, o UnauthenticateOptions) (handshake.Outcome, error) {
	cID, cErr := clusterID(ctx, consumer, o.ConsumerID, "consumer")
	pID, pErr := clusterID(ctx, provider, o.ProviderID, "provider")
	if errors.Is(cErr, member.ErrNotInitialized) || errors.Is(pErr, member.ErrNotInitialized) {
		// A cluster never initialized takes part in no pairing: kubectl's NotFound, as for any pairing
		// neither side has a record of (--ignore-not-found accepts it), and nothing is changed.
		side, id, where := "consumer", o.ConsumerID, "on the provider "+pID
		if errors.Is(pErr, member.ErrNotInitialized) {
			side, id, where = "provider", o.ProviderID, "for the consumer "+cID
		}
		if id == "" {
			id = "(no cluster ID)"
		}
		return handshake.Done, handshake.NotFound(side, id, where+" (the "+side+" cluster was never initialized: it takes part in no pairing)", nil)
	}
	if cErr != nil || pErr != nil {
		if !o.Force || (cErr != nil && pErr != nil) {
			return handshake.Done, errors.Join(wrapSide("consumer", cErr), wrapSide("provider", pErr))
		}
		if cID == "" || pID == "" {
			// Said as one error, the missing ID first: the unreachable side is expected under --force, and
			// its cause is kept as text so that it does not stand in for the error the user can act on.
			side, sErr := "consumer", cErr
			if pErr != nil {
				side, sErr = "provider", pErr
			}
			return handshake.Done, fmt.Errorf("%w (the %s: %s)", member.ErrNeedUnreachableID, side, sErr.Error())
		}
	}
	if cID == pID {
		return handshake.Done, fmt.Errorf("%w: both have cluster ID %q", member.ErrSameCluster, cID)
	}
	if cErr == nil && pErr == nil {
		if outcome, err := pairingExists(ctx, consumer, provider, cID, pID); err != nil || outcome == handshake.Already {
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
		// Read before the Tenant goes: the entry is made from its record.
		var entry *handshake.JWTAuthenticator
		if o.Authenticator != nil && !provider.DryRun {
			if t, err := handshake.FederatedTenant(ctx, provider, cID); err == nil && t != nil {
				entry, _ = handshake.Authenticator(t)
			}
		}
		providerErr = wrapSide("provider", RemoveTenant(ctx, provider, cID, o.KeepNamespaces))
		if providerErr == nil && entry != nil {
			o.Authenticator(entry)
		}
	}()
	if cErr != nil {
		consumerErr = fmt.Errorf("consumer: not cleaned, unreachable (%w); left there: Identity, kubeconfig Secret and keys of provider %q in namespace %s",
			cErr, pID, member.SystemNamespace)
		consumer.Reporter().Warn(consumerErr.Error())
	} else {
		consumerErr = wrapSide("consumer", RemoveIdentity(ctx, consumer, pID))
	}
	<-done
	return handshake.Done, errors.Join(providerErr, consumerErr)
}

// pairingExists checks, before anything is removed, that the pairing consumer -> provider left something
// on either side; Done means there is something to remove.
func pairingExists(ctx context.Context, consumer, provider *member.Cluster, cID, pID string) (handshake.Outcome, error) {
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
	err := parallel.All(
		func() error { var err error; fwdTenant, err = holdsTenant(ctx, provider, cID); return err },
		func() error { var err error; fwdIdentity, err = holdsIdentity(ctx, consumer, pID); return err },
		func() error { var err error; revTenant, err = holdsTenant(ctx, consumer, pID); return hint(err) },
		func() error { var err error; revIdentity, err = holdsIdentity(ctx, provider, cID); return hint(err) },
		func() error {
			var err error
			provRemoved, _, err = handshake.Removed(ctx, provider, handshake.RemovedConsumer, cID, cID)
			return hint(err)
		},
		func() error {
			var err error
			consRemoved, _, err = handshake.Removed(ctx, consumer, handshake.RemovedProvider, pID, pID)
			return hint(err)
		},
		func() error { var err error; known, err = consumerIDs(ctx, provider); return hint(err) },
	)
	switch {
	case err != nil:
		return handshake.Done, err
	case fwdTenant || fwdIdentity:
		return handshake.Done, nil
	case revTenant || revIdentity:
		return handshake.Done, &SwappedError{ConsumerID: cID, ProviderID: pID}
	case provRemoved || consRemoved:
		return handshake.Already, nil
	}
	return handshake.Done, handshake.NotFound("consumer", cID, "on the provider "+pID+" (no Tenant, and the consumer holds no identity for it)", known)
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
	records, err := handshake.ExportRecords(ctx, c, providerID, "", false)
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

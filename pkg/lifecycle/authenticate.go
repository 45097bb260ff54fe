package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// AuthenticateOptions configure a one-shot handshake.
type AuthenticateOptions struct {
	ConsumerID   string // initializes the consumer with this ID if it never was; "" for the default
	ProviderID   string // likewise for the provider
	NonceTTL     time.Duration
	ProxyURL     string
	KeyAlgorithm string
	APIServer    string // what the consumer's kubeconfig will point at
	CA           []byte
	Expiration   time.Duration
	ClusterRole  string
	Sandbox      sandbox.Options
	// Credential, SignerTimeout, MaxExpiration and Given: as in IssueOptions; Given also names the proxy
	// URL (SettingProxyURL), which a renewal otherwise keeps.
	Credential    string
	SignerTimeout time.Duration
	MaxExpiration time.Duration
	Given         handshake.Given
	// KeepCurrent and Kept: as in IssueOptions (a renewal's overlap).
	KeepCurrent bool
	Kept        func(user string)
	// Federated asks for a federated identity (the consumer's ServiceAccount, trusted by the provider's
	// API server) instead of a credential. A re-run of a federated pairing without it keeps the recorded
	// ServiceAccount, unless another credential kind is given.
	Federated *handshake.FederatedOptions
}

// Authenticate runs the manual flow's four steps in one process: the provider creates a nonce, the
// consumer generates its Tenant, the provider issues the Identity, the consumer imports it.
func Authenticate(ctx context.Context, consumer, provider *member.Cluster, o AuthenticateOptions) (*handshake.Imported, error) {
	// Through a slow link a run costs its dependent round trips, so it sends every request as soon as it
	// can: the operators' SelfSubjectReviews (for the audit Events at the end) now, both clusters'
	// initialization at once, every read either side will need with the pair's lock, and each write
	// alongside the others that do not depend on it.
	handshake.StartOperator(ctx, consumer)
	handshake.StartOperator(ctx, provider)
	sandbox.StartPodRanges(ctx, provider)
	var pSelf *member.Self
	pDone := make(chan error, 1)
	go func() {
		var err error
		pSelf, err = sandbox.Init(ctx, provider, o.ProviderID)
		pDone <- wrapSide("provider", err)
	}()
	// The consumer issues nothing here: its own sandbox objects are not this run's concern.
	cSelf, cFresh, cErr := sandbox.InitializeCreated(ctx, consumer, o.ConsumerID, false)
	if err := errors.Join(wrapSide("consumer", cErr), <-pDone); err != nil {
		return nil, err
	}
	if cSelf.ClusterID == pSelf.ClusterID {
		return nil, fmt.Errorf("%w: both have cluster ID %q", member.ErrSameCluster, cSelf.ClusterID)
	}
	defer provider.ForgetReads()
	defer consumer.ForgetReads()
	handshake.PrefetchIssue(ctx, provider, cSelf.ClusterID)
	handshake.PrefetchImport(ctx, consumer, pSelf.ClusterID)
	// The certificate request goes with those reads, before the run knows it can use it (a nonce of its
	// own, the pair's lock at once, a certificate asked for, the lifetime it asked): if it cannot, the CSR
	// is deleted, never approved.
	var ahead *handshake.AheadRequest
	if o.Federated == nil && o.Credential != credential.CredentialToken {
		var sb *sandbox.Options
		if v, err := o.Sandbox.Validate(); err == nil {
			sb = &v
		}
		var err error
		if ahead, err = handshake.StartAheadRequest(ctx, provider, cSelf.ClusterID, o.KeyAlgorithm, o.Expiration, sb); err != nil {
			return nil, err
		}
		defer func() { ahead.Discard(ctx, provider) }()
	}
	// One run per pair at a time; a run that dies leaves a lease that expires with its --timeout.
	lease := 2 * time.Minute
	if d, ok := ctx.Deadline(); ok {
		lease = time.Until(d) + 5*time.Second
	}
	unlock, contended, err := provider.LockPair(ctx, cSelf.ClusterID, lease)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if contended {
		// Read while another run held the pair: they may predate its writes, and its cleanup may have
		// taken the request made ahead for a stale one.
		ahead.Forget()
		ahead.Discard(ctx, provider)
		ahead = nil
		provider.ForgetReads()
		consumer.ForgetReads()
		handshake.PrefetchIssue(ctx, provider, cSelf.ClusterID)
		handshake.PrefetchImport(ctx, consumer, pSelf.ClusterID)
	}
	ttl := o.NonceTTL
	if ttl == 0 {
		ttl = handshake.DefaultNonceTTL
	}
	var value string
	if ahead != nil {
		value = ahead.Nonce
	}
	n, created, pruned, err := handshake.PrepareNonce(ctx, provider, cSelf.ClusterID, ttl, value)
	if err != nil {
		return nil, errors.Join(err, pruned())
	}
	res, err := authenticate(ctx, consumer, provider, o, cSelf, pSelf, n.Value, created, unlock, ahead, !cFresh)
	if perr := pruned(); perr != nil {
		provider.Reporter().Warn(perr.Error())
	}
	return res, err
}

// authenticate is the handshake once the pair is locked and the nonce known. A new nonce (created) is
// used at once, so the consumer's client key stays in memory: nobody else will ever import the answer.
// A nonce that was there already belongs to a manual handshake in progress, whose key waits in a Secret.
//
// identityEarly says the consumer's Identity may be made while the provider binds: not on a consumer this
// run initialized, whose API server holds a create of a just-registered resource for about two seconds
// (measured on Kubernetes 1.37; an apply is not held), far more than the round trip it would save.
func authenticate(ctx context.Context, consumer, provider *member.Cluster, o AuthenticateOptions, cSelf, pSelf *member.Self, nonceValue string, created bool, unlock func(),
	ahead *handshake.AheadRequest, identityEarly bool) (*handshake.Imported, error) {
	o, proxyChange := keepRoute(ctx, provider, cSelf.ClusterID, o)
	tenant, held, err := handshake.GenerateTenantHeld(ctx, consumer, handshake.TenantOptions{
		ProviderID: pSelf.ClusterID, Nonce: nonceValue, ProxyURL: o.ProxyURL, KeyAlgorithm: o.KeyAlgorithm, Federated: o.Federated, Ahead: ahead,
	}, created)
	if err != nil {
		return nil, err
	}
	// The consumer stores the identity as soon as the provider has bound its user, while the provider
	// records it; the pair's lock goes with those last writes (a run waiting for it reads afresh only once
	// it holds it, by when writes sent alongside its release have landed).
	// A first pairing's Identity is made (its spec) while the provider binds, so that its status goes with
	// the kubeconfig; made but never imported (the binding failed), it is removed again.
	var imported, identityAhead func() error
	var aheadMade *unstructured.Unstructured
	var res *handshake.Imported
	identity, err := handshake.IssueIdentity(ctx, provider, handshake.IssueOptions{
		ConsumerID: cSelf.ClusterID, Tenant: tenant, APIServer: o.APIServer, CA: o.CA,
		Expiration: o.Expiration, ClusterRole: o.ClusterRole, Sandbox: o.Sandbox,
		Credential: o.Credential, SignerTimeout: o.SignerTimeout, MaxExpiration: o.MaxExpiration, Given: o.Given,
		KeepCurrent: o.KeepCurrent, Kept: o.Kept, Ahead: ahead,
		Issued: func(id *v1alpha1.Identity) {
			if !identityEarly {
				return
			}
			identityAhead = parallel.Background(func() error {
				var err error
				aheadMade, err = handshake.IdentityAhead(ctx, consumer, id, held)
				return err
			})
		},
		Bound: func(id *v1alpha1.Identity) {
			wait := identityAhead
			imported = parallel.Background(func() error {
				if wait != nil {
					_ = wait() // not made ahead (its error is the import's to meet): the import makes it
				}
				var err error
				res, err = handshake.ImportIdentityHeld(ctx, consumer, id, held, unlock)
				return err
			})
		},
	})
	if imported == nil && identityAhead != nil {
		_ = identityAhead()
		err = errors.Join(err, handshake.RemoveIdentityAhead(ctx, consumer, aheadMade))
	}
	if err == nil && proxyChange != nil {
		consumer.Reporter().Info(proxyChange.String())
	}
	if imported != nil {
		// Bound, so the consumer's side ran: its outcome counts whatever the provider's record did.
		if err = errors.Join(err, imported()); err != nil {
			return res, err
		}
		return res, finishFederated(ctx, consumer, provider, tenant, identity, res, held.Findings())
	}
	if errors.Is(err, credential.ErrNoCertificate) && created {
		// Nothing was issued, and this run made the request (a new nonce, a key held in memory): take the
		// nonce back, so that the clusters are as they were. A nonce it found (a manual flow in progress)
		// stays, restored, with its waiting key.
		return nil, errors.Join(err, provider.Nonces().Delete(ctx, cSelf.ClusterID))
	}
	if err != nil {
		return nil, err
	}
	// Returned without binding (a concurrent run for the same nonce issued it): store it now.
	if res, err = handshake.ImportIdentityHeld(ctx, consumer, identity, held, unlock); err != nil {
		return res, err
	}
	return res, finishFederated(ctx, consumer, provider, tenant, identity, res, held.Findings())
}

// keepRoute is o for a renewal, which keeps the consumer's route to the provider (its proxy URL, signed
// into the Tenant) unless another was given, and a federated identity's settings; with the change of
// route given, if any. The provider's Tenant was read ahead with the pair's lock.
func keepRoute(ctx context.Context, provider *member.Cluster, consumerID string, o AuthenticateOptions) (AuthenticateOptions, *handshake.Change) {
	var change *handshake.Change
	u, err := provider.ObjectRead(v1alpha1.TenantGVR, member.TenantNamespace(consumerID), consumerID).Peek(ctx, provider)
	if err != nil {
		return o, nil
	}
	var recorded v1alpha1.Tenant
	if objects.FromUnstructured(u, &recorded) != nil || recorded.Status.User == "" {
		return o, nil
	}
	if !o.Given[handshake.SettingProxyURL] {
		o.ProxyURL = recorded.Spec.ProxyURL
	} else if o.ProxyURL != recorded.Spec.ProxyURL {
		change = &handshake.Change{Setting: handshake.SettingProxyURL, Old: recorded.Spec.ProxyURL, New: o.ProxyURL}
	}
	o.Federated = keepFederated(o, &recorded)
	return o, change
}

// wrapSide names the side an error comes from, also on an ID conflict, so a command can name its flag.
func wrapSide(side string, err error) error {
	if err == nil {
		return nil
	}
	var ic *member.IDConflictError
	if errors.As(err, &ic) && ic.Side == "" {
		ic.Side = side
	}
	return fmt.Errorf("%s: %w", side, err)
}

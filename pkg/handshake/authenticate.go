package handshake

import (
	"context"
	"errors"
	"fmt"
	"time"
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
	Sandbox      SandboxOptions
}

// Authenticate runs the manual flow's four steps in one process: the provider creates a nonce, the
// consumer generates its Tenant, the provider issues the Identity, the consumer imports it.
func Authenticate(ctx context.Context, consumer, provider *Cluster, o AuthenticateOptions) (*Imported, error) {
	// The two clusters' initialization does not depend on each other: both at once.
	var pSelf *Self
	pDone := make(chan error, 1)
	go func() {
		var err error
		pSelf, err = provider.Init(ctx, o.ProviderID)
		pDone <- wrapSide("provider", err)
	}()
	cSelf, cErr := consumer.Init(ctx, o.ConsumerID)
	if err := errors.Join(wrapSide("consumer", cErr), <-pDone); err != nil {
		return nil, err
	}
	if cSelf.ClusterID == pSelf.ClusterID {
		return nil, fmt.Errorf("%w: both have cluster ID %q", ErrSameCluster, cSelf.ClusterID)
	}
	// One run per pair at a time; a run that dies leaves a lease that expires with its --timeout.
	lease := 2 * time.Minute
	if d, ok := ctx.Deadline(); ok {
		lease = time.Until(d) + 5*time.Second
	}
	unlock, err := provider.lockPair(ctx, cSelf.ClusterID, lease)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ttl := o.NonceTTL
	if ttl == 0 {
		ttl = DefaultNonceTTL
	}
	n, _, err := provider.CreateNonce(ctx, cSelf.ClusterID, ttl)
	if err != nil {
		return nil, err
	}
	tenant, err := consumer.GenerateTenant(ctx, TenantOptions{
		ProviderID: pSelf.ClusterID, Nonce: n.Value, ProxyURL: o.ProxyURL, KeyAlgorithm: o.KeyAlgorithm,
	})
	if err != nil {
		return nil, err
	}
	identity, err := provider.IssueIdentity(ctx, IssueOptions{
		ConsumerID: cSelf.ClusterID, Tenant: tenant, APIServer: o.APIServer, CA: o.CA,
		Expiration: o.Expiration, ClusterRole: o.ClusterRole, Sandbox: o.Sandbox,
	})
	if err != nil {
		return nil, err
	}
	return consumer.ImportIdentity(ctx, identity)
}

// UnauthenticateOptions configure Unauthenticate.
type UnauthenticateOptions struct {
	KeepNamespaces bool
	// Force cleans the reachable side when the other cannot be reached, and then fails naming what was
	// left. ConsumerID and ProviderID name an unreachable side's cluster ID.
	Force                  bool
	ConsumerID, ProviderID string
}

// Unauthenticate removes a pairing on both sides, both at once, and returns both sides' errors.
func Unauthenticate(ctx context.Context, consumer, provider *Cluster, o UnauthenticateOptions) error {
	cID, cErr := clusterID(ctx, consumer, o.ConsumerID, "consumer")
	pID, pErr := clusterID(ctx, provider, o.ProviderID, "provider")
	if errors.Is(cErr, ErrNotInitialized) || errors.Is(pErr, ErrNotInitialized) {
		r := consumer.report()
		if errors.Is(pErr, ErrNotInitialized) {
			r = provider.report()
		}
		r.Info("This cluster was never initialized: there is no pairing to remove")
		return nil
	}
	if cErr != nil || pErr != nil {
		if !o.Force || (cErr != nil && pErr != nil) {
			return errors.Join(wrapSide("consumer", cErr), wrapSide("provider", pErr))
		}
		if cID == "" || pID == "" {
			return errors.Join(wrapSide("consumer", cErr), wrapSide("provider", pErr), ErrNeedUnreachableID)
		}
	}
	if cID == pID {
		return fmt.Errorf("%w: both have cluster ID %q", ErrSameCluster, cID)
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
	return errors.Join(providerErr, consumerErr)
}

// ErrNeedUnreachableID means a forced removal cannot name the unreachable side's objects without its ID.
var ErrNeedUnreachableID = errors.New("with one cluster unreachable, its cluster ID must be given")

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

// wrapSide names the side an error comes from, also on an ID conflict, so a command can name its flag.
func wrapSide(side string, err error) error {
	if err == nil {
		return nil
	}
	var ic *IDConflictError
	if errors.As(err, &ic) && ic.Side == "" {
		ic.Side = side
	}
	return fmt.Errorf("%s: %w", side, err)
}

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
}

// Authenticate runs the manual flow's four steps in one process: the provider creates a nonce, the
// consumer generates its Tenant, the provider issues the Identity, the consumer imports it.
func Authenticate(ctx context.Context, consumer, provider *Cluster, o AuthenticateOptions) (*Imported, error) {
	cSelf, err := consumer.Init(ctx, o.ConsumerID)
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	pSelf, err := provider.Init(ctx, o.ProviderID)
	if err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	if cSelf.ClusterID == pSelf.ClusterID {
		return nil, fmt.Errorf("both clusters have cluster ID %q: --kubeconfig and --remote-kubeconfig must name two different clusters", cSelf.ClusterID)
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
		Expiration: o.Expiration, ClusterRole: o.ClusterRole,
	})
	if err != nil {
		return nil, err
	}
	return consumer.ImportIdentity(ctx, identity)
}

// Unauthenticate removes a pairing on both sides and returns both sides' errors.
func Unauthenticate(ctx context.Context, consumer, provider *Cluster, keepNamespaces bool) error {
	cSelf, err := consumer.Load(ctx)
	if errors.Is(err, ErrNotInitialized) {
		consumer.report().Info("This cluster was never initialized: there is no pairing to remove")
		return nil
	}
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	pSelf, err := provider.Load(ctx)
	if errors.Is(err, ErrNotInitialized) {
		provider.report().Info("This cluster was never initialized: there is no pairing to remove")
		return nil
	}
	if err != nil {
		return fmt.Errorf("provider: %w", err)
	}
	if cSelf.ClusterID == pSelf.ClusterID {
		return fmt.Errorf("both clusters have cluster ID %q: --kubeconfig and --remote-kubeconfig must name two different clusters", cSelf.ClusterID)
	}
	// Both sides at once: each waits for its namespace controller, and neither depends on the other.
	// The provider's RoleBinding is the first thing its side deletes.
	var providerErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := provider.RemoveTenant(ctx, cSelf.ClusterID, keepNamespaces); err != nil {
			providerErr = fmt.Errorf("provider: %w", err)
		}
	}()
	var consumerErr error
	if err := consumer.RemoveIdentity(ctx, pSelf.ClusterID, keepNamespaces); err != nil {
		consumerErr = fmt.Errorf("consumer: %w", err)
	}
	<-done
	return errors.Join(providerErr, consumerErr)
}

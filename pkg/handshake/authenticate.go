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
	// Credential and SignerTimeout: as in IssueOptions.
	Credential    string
	SignerTimeout time.Duration
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
	n, created, err := provider.CreateNonce(ctx, cSelf.ClusterID, ttl)
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
		Credential: o.Credential, SignerTimeout: o.SignerTimeout,
	})
	if errors.Is(err, ErrNoCertificate) && created {
		// Nothing was issued, and this run made the request on both sides (a new nonce, so a new client key
		// for it): take it back, so that the clusters are as they were. A nonce it found (a manual flow in
		// progress) stays, restored, with its waiting key.
		return nil, errors.Join(err, provider.nonces().Delete(ctx, cSelf.ClusterID), consumer.dropPendingKey(ctx, pSelf.ClusterID))
	}
	if err != nil {
		return nil, err
	}
	return consumer.ImportIdentity(ctx, identity)
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

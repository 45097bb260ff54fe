package handshake

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/federate-dev/kubectl-federate/pkg/nonce"
)

// NonceOptions are the provider's choices for a nonce.
type NonceOptions struct {
	// ClusterID is this (provider) cluster's ID: a never-initialized cluster is initialized with it, an
	// initialized one must have it. Empty: the cluster must be initialized already, since the nonce
	// carries its ID to the consumer and a derived one is not what the consumer's administrator expects.
	ClusterID  string
	ConsumerID string
	TTL        time.Duration
}

// CreateNonce (provider) returns an unexpired nonce for the consumer, creating one valid for the TTL if
// there is none, after removing every expired nonce. It touches nothing outside federate-system: the consumer's sandbox is created when its identity is
// issued.
func (c *Cluster) CreateNonce(ctx context.Context, o NonceOptions) (*nonce.Nonce, bool, error) {
	self, _, err := c.initializeAs(ctx, o.ClusterID, false) // the issuance checks the sandbox's objects
	if err != nil {
		return nil, false, err
	}
	if o.ConsumerID == self.ClusterID {
		return nil, false, fmt.Errorf("consumer cluster ID %q: %w", o.ConsumerID, ErrOwnID)
	}
	r := c.report()
	if _, err := c.pruneNonces(ctx); err != nil {
		return nil, false, err
	}
	var n *nonce.Nonce
	var created bool
	err = step(r, "Ensuring nonce", "Nonce ensured", func() error {
		n, created, err = c.nonces().Ensure(ctx, o.ConsumerID, o.TTL)
		c.rememberNonce(n)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	if !created {
		r.Info(fmt.Sprintf("An unused nonce for %q already exists; it expires at %s", o.ConsumerID, n.ExpiresAt.Format(time.RFC3339)))
	}
	return n, created, nil
}

// prepareNonce (provider, one shot) returns the consumer's unexpired unused nonce (created false: a manual
// flow is in progress), or a new one that its consumption will store (created true: see nonce.Prepare).
// Expired nonces of other consumers are removed meanwhile; wait for that with the returned function.
func (c *Cluster) prepareNonce(ctx context.Context, consumerID string, ttl time.Duration) (n *nonce.Nonce, created bool, pruned func() error, err error) {
	pruned = background(func() error { _, err := c.pruneNonces(ctx, consumerID); return err })
	n, created, err = c.nonces().Prepare(ctx, consumerID, ttl)
	if err != nil {
		return nil, false, pruned, err
	}
	c.rememberNonce(n)
	if !created {
		c.report().Info(fmt.Sprintf("An unused nonce for %q already exists (a manual handshake in progress); it expires at %s", consumerID, n.ExpiresAt.Format(time.RFC3339)))
	}
	return n, created, pruned, nil
}

// pruneNonces removes expired nonces, except those of the consumers in keep, and says which.
func (c *Cluster) pruneNonces(ctx context.Context, keep ...string) ([]string, error) {
	removed, err := c.nonces().PruneExpired(ctx, keep...)
	if err != nil {
		return nil, fmt.Errorf("removing expired nonces: %w", err)
	}
	if len(removed) > 0 {
		c.report().Info(c.said("Removed", "Would remove") + " expired nonces of " + strings.Join(removed, ", "))
	}
	return removed, nil
}

// GetNonce (provider) returns the consumer's unexpired, unused nonce, after removing every expired one,
// and the ticket that carries it with this cluster's ID and the consumer's, for the consumer's
// administrator.
func (c *Cluster) GetNonce(ctx context.Context, consumerID string) (*nonce.Nonce, nonce.Ticket, error) {
	var self *Self
	var removed []string
	err := parallel(func() error {
		var err error
		self, err = c.Load(ctx)
		return err
	}, func() error {
		var err error
		removed, err = c.pruneNonces(ctx)
		return err
	})
	if err != nil {
		return nil, nonce.Ticket{}, err
	}
	if slices.Contains(removed, consumerID) {
		return nil, nonce.Ticket{}, fmt.Errorf("%w for consumer %q (and removed): create a new one", nonce.ErrExpired, consumerID)
	}
	n, err := c.nonces().Get(ctx, consumerID)
	if err != nil {
		return nil, nonce.Ticket{}, err
	}
	return n, nonce.Ticket{ProviderID: self.ClusterID, ConsumerID: consumerID, Nonce: n.Value}, nil
}

func (c *Cluster) rememberNonce(n *nonce.Nonce) {
	if n == nil {
		return
	}
	if c.nonceCache == nil {
		c.nonceCache = map[string]*nonce.Nonce{}
	}
	c.nonceCache[n.ConsumerID] = n
}

// DeleteNonce (provider) removes the consumer's unused nonce: a pairing begun and abandoned. A nonce used
// already is Already (its record goes with unauthenticate); none at all is a *NotFoundError naming the
// consumers with an unused nonce.
func (c *Cluster) DeleteNonce(ctx context.Context, consumerID string) (Outcome, error) {
	unused, err := c.nonces().ListUnused(ctx)
	if err != nil {
		return Done, err
	}
	var known []string
	for _, u := range unused {
		if u.ConsumerID == consumerID {
			if err := c.nonces().Delete(ctx, consumerID); err != nil {
				return Done, err
			}
			c.report().Info("Nonce for consumer " + consumerID + c.said(" deleted", " would be deleted"))
			return Done, nil
		}
		known = append(known, u.ConsumerID)
	}
	if _, err := c.nonces().Record(ctx, consumerID); err == nil {
		return Already, nil
	}
	return Done, notFound("unused nonce for consumer", consumerID, "on this cluster", known)
}

package handshake

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
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
func CreateNonce(ctx context.Context, c *member.Cluster, o NonceOptions) (*nonce.Nonce, bool, error) {
	self, _, err := sandbox.InitializeAs(ctx, c, o.ClusterID, false) // the issuance checks the sandbox's objects
	if err != nil {
		return nil, false, err
	}
	if o.ConsumerID == self.ClusterID {
		return nil, false, fmt.Errorf("consumer cluster ID %q: %w", o.ConsumerID, member.ErrOwnID)
	}
	r := c.Reporter()
	if _, err := pruneNonces(ctx, c); err != nil {
		return nil, false, err
	}
	var n *nonce.Nonce
	var created bool
	err = member.Step(r, "Ensuring nonce", "Nonce ensured", func() error {
		n, created, err = c.Nonces().Ensure(ctx, o.ConsumerID, o.TTL)
		rememberNonce(c, n)
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

// PrepareNonce (provider, one shot) returns the consumer's unexpired unused nonce (created false: a manual
// flow is in progress), or a new one that its consumption will store (created true: see nonce.Prepare).
// Expired nonces of other consumers are removed meanwhile; wait for that with the returned function.
//
// value, if set, is the new nonce's value (AheadRequest.Nonce).
func PrepareNonce(ctx context.Context, c *member.Cluster, consumerID string, ttl time.Duration, value string) (n *nonce.Nonce, created bool, pruned func() error, err error) {
	pruned = parallel.Background(func() error { _, err := pruneNonces(ctx, c, consumerID); return err })
	n, created, err = c.Nonces().PrepareValue(ctx, consumerID, ttl, value)
	if err != nil {
		return nil, false, pruned, err
	}
	rememberNonce(c, n)
	if !created {
		c.Reporter().Info(fmt.Sprintf("An unused nonce for %q already exists (a manual handshake in progress); it expires at %s", consumerID, n.ExpiresAt.Format(time.RFC3339)))
	}
	return n, created, pruned, nil
}

// pruneNonces removes expired nonces, except those of the consumers in keep, and says which.
func pruneNonces(ctx context.Context, c *member.Cluster, keep ...string) ([]string, error) {
	removed, err := c.Nonces().PruneExpired(ctx, keep...)
	if err != nil {
		return nil, fmt.Errorf("removing expired nonces: %w", err)
	}
	if len(removed) > 0 {
		c.Reporter().Info(c.Said("Removed", "Would remove") + " expired nonces of " + strings.Join(removed, ", "))
	}
	return removed, nil
}

// GetNonce (provider) returns the consumer's unexpired, unused nonce, after removing every expired one,
// and the ticket that carries it with this cluster's ID and the consumer's, for the consumer's
// administrator.
func GetNonce(ctx context.Context, c *member.Cluster, consumerID string) (*nonce.Nonce, nonce.Ticket, error) {
	var self *member.Self
	var removed []string
	err := parallel.All(func() error {
		var err error
		self, err = c.Load(ctx)
		return err
	}, func() error {
		var err error
		removed, err = pruneNonces(ctx, c)
		return err
	})
	if err != nil {
		return nil, nonce.Ticket{}, err
	}
	if slices.Contains(removed, consumerID) {
		return nil, nonce.Ticket{}, fmt.Errorf("%w for consumer %q (and removed): create a new one", nonce.ErrExpired, consumerID)
	}
	n, err := c.Nonces().Get(ctx, consumerID)
	if err != nil {
		return nil, nonce.Ticket{}, err
	}
	return n, nonce.Ticket{ProviderID: self.ClusterID, ConsumerID: consumerID, Nonce: n.Value}, nil
}

func rememberNonce(c *member.Cluster, n *nonce.Nonce) {
	if n == nil {
		return
	}
	if c.NonceCache == nil {
		c.NonceCache = map[string]*nonce.Nonce{}
	}
	c.NonceCache[n.ConsumerID] = n
}

// DeleteNonce (provider) removes the consumer's unused nonce: a pairing begun and abandoned. A nonce used
// already is Already (its record goes with unauthenticate); none at all is a *NotFoundError naming the
// consumers with an unused nonce.
func DeleteNonce(ctx context.Context, c *member.Cluster, consumerID string) (Outcome, error) {
	unused, err := c.Nonces().ListUnused(ctx)
	if err != nil {
		return Done, err
	}
	var known []string
	for _, u := range unused {
		if u.ConsumerID == consumerID {
			if err := c.Nonces().Delete(ctx, consumerID); err != nil {
				return Done, err
			}
			c.Reporter().Info("Nonce for consumer " + consumerID + c.Said(" deleted", " would be deleted"))
			return Done, nil
		}
		known = append(known, u.ConsumerID)
	}
	if _, err := c.Nonces().Record(ctx, consumerID); err == nil {
		return Already, nil
	}
	return Done, NotFound("unused nonce for consumer", consumerID, "on this cluster", known)
}

package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// MeshMember is one cluster of a mesh. New returns a fresh view of it for one pair: a Cluster caches what
// it learns and is not shared between goroutines, while its clients are.
type MeshMember struct {
	Name      string // how the user named it: a kubeconfig file or a context
	New       func(member.Reporter) *member.Cluster
	APIServer string // what the other members' kubeconfigs for it point at
	CA        []byte
	ID        string // its cluster ID, once initialized
}

// Results of a directed pair.
const (
	PairPaired  = "paired"
	PairKept    = "already paired"
	PairRemoved = "removed"
	PairFailed  = "failed"
	// PairDryRunStopped is a dry run's pair that went as far as a dry run can (see DryRunStop).
	PairDryRunStopped = "dry run stopped before issuance"
	// PairAlreadyRemoved and PairNotFound are unmesh's for a pair with nothing left: removed before, or
	// never paired.
	PairAlreadyRemoved = "already removed"
	PairNotFound       = "not found"
)

// PairResult is what happened to one directed pair (consumer -> provider).
type PairResult struct {
	Consumer, Provider string // cluster IDs
	Result             string
	Wall               time.Duration
	Err                error
}

// MeshOptions configure Mesh and Unmesh.
type MeshOptions struct {
	Parallel int                             // directed pairs at once
	OnStart  func(consumer, provider string) // called as each pair starts, from its goroutine
	OnPair   func(r PairResult)              // called as each pair ends, from its goroutine
	Issue    AuthenticateOptions
	// RenewBefore: a pair whose identity expires later than this from now is kept as it is.
	RenewBefore time.Duration
}

// dryRun tells whether a member's writes change nothing (its Cluster's DryRun, the one way the domain
// learns it), so that a pair is said to be one that "would be" paired or removed.
func (m *MeshMember) dryRun() bool { return m.New(member.Discard).DryRun }

// initMembers initializes every member at once (each once, so that two pairs never race to give one
// cluster an ID) and refuses a cluster named twice.
func initMembers(ctx context.Context, members []*MeshMember) error {
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			self, err := sandbox.Init(ctx, m.New(member.Discard), "")
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", m.Name, err)
				return
			}
			m.ID = self.ClusterID
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	seen := map[string]string{}
	for _, m := range members {
		if other, ok := seen[m.ID]; ok {
			return fmt.Errorf("%s and %s are one cluster (ID %q)", other, m.Name, m.ID)
		}
		seen[m.ID] = m.Name
	}
	return nil
}

// loadMembers reads each member's cluster ID, all at once, without writing anything; a member never
// initialized is named by its Name and returned in the set. Two members of one ID are refused.
func loadMembers(ctx context.Context, members []*MeshMember) (map[*MeshMember]bool, error) {
	errs := make([]error, len(members))
	never := make([]bool, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			self, err := m.New(member.Discard).Load(ctx)
			switch {
			case errors.Is(err, member.ErrNotInitialized):
				m.ID, never[i] = m.Name, true
			case err != nil:
				errs[i] = fmt.Errorf("%s: %w", m.Name, err)
			default:
				m.ID = self.ClusterID
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	uninitialized := map[*MeshMember]bool{}
	seen := map[string]string{}
	for i, m := range members {
		if never[i] {
			uninitialized[m] = true
			continue
		}
		if other, ok := seen[m.ID]; ok {
			return nil, fmt.Errorf("%s and %s are one cluster (ID %q)", other, m.Name, m.ID)
		}
		seen[m.ID] = m.Name
	}
	return uninitialized, nil
}

// Mesh pairs every member with every other, in both directions: len(members)*(len(members)-1) directed
// pairs, o.Parallel at a time. A pair whose identity is in place and valid for longer than o.RenewBefore is
// kept, so a re-run finishes only what is missing. Each pair's result is reported through o.OnPair and
// returned; a failed pair does not stop the others.
func Mesh(ctx context.Context, members []*MeshMember, o MeshOptions) ([]PairResult, error) {
	if err := initMembers(ctx, members); err != nil {
		return nil, err
	}
	return eachPair(ctx, members, o, func(ctx context.Context, c, p *MeshMember) (string, error) {
		consumer, provider := c.New(member.Discard), p.New(member.Discard)
		if kept, err := holdsValid(ctx, consumer, p.ID, o.RenewBefore); err != nil || kept {
			return PairKept, err
		}
		opts := o.Issue
		opts.ConsumerID, opts.ProviderID, opts.APIServer, opts.CA = c.ID, p.ID, p.APIServer, p.CA
		_, err := Authenticate(ctx, consumer, provider, opts)
		return PairPaired, err
	})
}

// Unmesh removes every directed pairing between the members, o.Parallel at a time.
func Unmesh(ctx context.Context, members []*MeshMember, o MeshOptions) ([]PairResult, error) {
	// A removal installs nothing: a member never initialized is read, not initialized, and holds no pair.
	uninitialized, err := loadMembers(ctx, members)
	if err != nil {
		return nil, err
	}
	return eachPair(ctx, members, o, func(ctx context.Context, c, p *MeshMember) (string, error) {
		if uninitialized[c] || uninitialized[p] {
			return PairNotFound, nil
		}
		outcome, err := Unauthenticate(ctx, c.New(member.Discard), p.New(member.Discard), UnauthenticateOptions{})
		var swapped *SwappedError
		switch {
		// Only the other direction exists: that pair is another of the mesh's, and this one is not there.
		case errors.Is(err, handshake.ErrNotFound), errors.As(err, &swapped):
			return PairNotFound, nil
		case outcome == handshake.Already:
			return PairAlreadyRemoved, err
		}
		return PairRemoved, err
	})
}

func eachPair(ctx context.Context, members []*MeshMember, o MeshOptions, do func(context.Context, *MeshMember, *MeshMember) (string, error)) ([]PairResult, error) {
	type pair struct{ c, p *MeshMember }
	var pairs []pair
	for _, c := range members {
		for _, p := range members {
			if c != p {
				pairs = append(pairs, pair{c, p})
			}
		}
	}
	parallelism := max(o.Parallel, 1)
	sem := make(chan struct{}, parallelism)
	results := make([]PairResult, len(pairs))
	var wg sync.WaitGroup
	for i, pr := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if o.OnStart != nil {
				o.OnStart(pr.c.ID, pr.p.ID)
			}
			start := time.Now()
			res, err := do(ctx, pr.c, pr.p)
			r := PairResult{Consumer: pr.c.ID, Provider: pr.p.ID, Result: res, Wall: time.Since(start), Err: err}
			var stop *member.DryRunStop
			switch {
			case errors.As(err, &stop):
				r.Result = PairDryRunStopped
			case err != nil:
				r.Result = PairFailed
			case pr.c.dryRun() && (res == PairPaired || res == PairRemoved):
				r.Result = "would be " + res
			}
			results[i] = r
			if o.OnPair != nil {
				o.OnPair(r)
			}
		}()
	}
	wg.Wait()
	var errs []error
	for _, r := range results {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("%s -> %s: %w", r.Consumer, r.Provider, r.Err))
		}
	}
	return results, errors.Join(errs...)
}

// holdsValid tells whether this (consumer) cluster holds the pairing identity for providerID, its
// kubeconfig stored, valid for longer than within.
func holdsValid(ctx context.Context, c *member.Cluster, providerID string, within time.Duration) (bool, error) {
	u, err := c.Dynamic.Resource(v1alpha1.IdentityGVR).Namespace(member.SystemNamespace).Get(ctx, member.IdentityName(providerID), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var id v1alpha1.Identity
	if err := objects.FromUnstructured(u, &id); err != nil {
		return false, nil //nolint:nilerr // an unreadable record is renewed, not trusted
	}
	if id.Status.NotAfter == nil || id.Status.KubeconfigSecret == "" || !c.CurrentTime().Add(within).Before(id.Status.NotAfter.Time) {
		return false, nil
	}
	return true, nil
}

package member

import (
	"errors"
	"fmt"
	"time"
)

// IDConflictError means a cluster ID was asked for that the cluster does not have. Side, when known, says
// which cluster of a pair ("consumer" or "provider"), so a command can name its own flag.
type IDConflictError struct {
	Side       string
	Want, Have string
}

func (e *IDConflictError) Error() string {
	who := "this cluster"
	if e.Side != "" {
		who = "the " + e.Side
	}
	return fmt.Sprintf("cluster ID %q: %s is initialized with cluster ID %q", e.Want, who, e.Have)
}

// ErrSameCluster means both sides of a pairing are one cluster.
var ErrSameCluster = errors.New("the consumer and the provider are one cluster")

// ErrNotInitialized means the cluster has no federate-system record yet.
var ErrNotInitialized = errors.New("this cluster is not initialized for kubectl federate")

// ErrNoClusterID means a step that names this cluster to its peer found it never initialized, with no ID
// to initialize it with: a derived one would not be the ID the peer knows it by.
var ErrNoClusterID = fmt.Errorf("%w, and no cluster ID was given to initialize it with", ErrNotInitialized)

// ErrOwnID means a remote cluster ID names this very cluster.
var ErrOwnID = errors.New("is this cluster's own ID")

// ErrOtherConsumer means a Tenant was made by another consumer than the one being issued for.
var ErrOtherConsumer = errors.New("is not the consumer this identity is being issued for")

// ErrNotOurs means a namespace exists that kubectl federate did not create for this consumer.
var ErrNotOurs = errors.New("was not created by kubectl federate")

// ErrNeedUnreachableID means a forced removal cannot name the unreachable side's objects without its ID.
var ErrNeedUnreachableID = errors.New("with one cluster unreachable, its cluster ID must be given")

// ErrRevoked means the request answers an identity the provider revoked.
var ErrRevoked = errors.New("was revoked")

// ErrNameTaken means a namespace name is already used by something else; nothing is adopted.
var ErrNameTaken = errors.New("the name is taken")

// ErrNotActive means a consumer has no active identity to extend (never issued, or revoked).
var ErrNotActive = errors.New("has no active identity on this provider")

// ErrDenied means the provider denied a request.
var ErrDenied = errors.New("was denied")

// SliceNotAcceptedError says that a consumer's resource slice is still waiting for the provider's
// administrator.
type SliceNotAcceptedError struct{ Slice, ProviderID, ConsumerID string }

func (e *SliceNotAcceptedError) Error() string {
	return fmt.Sprintf("resource slice %q: provider %q has not accepted it yet", e.Slice, e.ProviderID)
}

// SliceNotRequestedError says that the provider holds no request for a slice: the consumer has not
// asked for it (or asked under another name).
type SliceNotRequestedError struct{ ConsumerID, Slice, Namespace string }

func (e *SliceNotRequestedError) Error() string {
	return fmt.Sprintf("consumer %q has left no ResourceSlice %q in %s", e.ConsumerID, e.Slice, e.Namespace)
}

// StillAllowedError says that a revoked user is still authorized after its bindings were deleted:
// something this tool did not make binds it.
type StillAllowedError struct {
	User, What string
	After      time.Duration
}

func (e *StillAllowedError) Error() string {
	return fmt.Sprintf("%s may still %s after its bindings were deleted (%s): something else binds it", e.User, e.What, e.After)
}

// DryRunStop ends a dry run where the next step needs what only a real write yields (an issued
// certificate or token): what the run would have written up to there has been shown, and nothing after
// it can be computed.
type DryRunStop struct {
	At  string // where the run stopped
	Why string
}

func (e *DryRunStop) Error() string { return "dry run stopped at " + e.At + ": " + e.Why }

// DryRunStop is how the command layer recognises the stop without knowing the domain's types.
func (e *DryRunStop) DryRunStop() string { return "stopped at " + e.At + ": " + e.Why }

// StepWarning ends the step as a warning: stopping is what a dry run is expected to do there.
func (e *DryRunStop) StepWarning() string { return "stopped here: " + e.Why }

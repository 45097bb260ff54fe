package handshake

import (
	"bytes"
	"context"
	"crypto"
	"maps"
	"sync/atomic"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// AheadRequest is a one-shot run's certificate request made one round trip early: a nonce value, a client
// key and its CSR, the CSR created on the provider while the run reads both clusters and takes the pair's
// lock. Whether the run can use it is known only after: the nonce must be the one the run makes (no
// unused nonce of a manual handshake there already), the lock the run's at once, the request the one the
// issuance verifies, with the lifetime it asks. The issuance adopts it then (IssueOptions.Ahead); if not,
// it is deleted (Discard). A CSR is inert until approved, and only the issuance that verified its request
// approves it.
//
// With the CSR go a first pairing's tenant namespace and quota ledger, each created only where there is
// none. The issuance adopts them with the CSR when it makes a new sandbox for the nonce the run made
// (beginNewSandbox's objects, one round trip sooner), and removes them, as its own, should it fail
// before it binds; otherwise Discard removes them (by UID), unless another run held the pair's lock
// meanwhile (Forget): that run may have found them there and be using them, and the next run uses them.
type AheadRequest struct {
	Nonce      string
	key        crypto.Signer
	csrPEM     []byte
	expiration time.Duration
	created    func() error
	obj        *certv1.CertificateSigningRequest
	adopted    atomic.Bool

	consumerID  string
	sandboxOpts sandbox.Options
	ns          *corev1.Namespace    // the tenant namespace, if this run created it
	ledger      *sandbox.GrantLedger // the ledger, if this run created it
	nsAdopted   bool
	forgotten   bool
}

// StartAheadRequest makes a nonce value, a client key of alg and a CSR for the user that nonce entitles
// consumerID to, and starts creating the CSR on the provider c with the lifetime expiration (0: the
// default) and, with sb (the sandbox given, validated), the tenant namespace and the ledger where there
// are none. Nothing in a dry run.
func StartAheadRequest(ctx context.Context, c *member.Cluster, consumerID, alg string, expiration time.Duration, sb *sandbox.Options) (*AheadRequest, error) {
	if c.DryRun {
		return nil, nil
	}
	if expiration == 0 {
		expiration = DefaultExpiration
	}
	value, err := nonce.New(nil)
	if err != nil {
		return nil, err
	}
	key, err := credential.NewClientKey(alg)
	if err != nil {
		return nil, err
	}
	csrPEM, err := credential.NewCSR(credential.ExpectedUser(consumerID, value), key)
	if err != nil {
		return nil, err
	}
	a := &AheadRequest{Nonce: value, key: key, csrPEM: csrPEM, expiration: expiration, consumerID: consumerID}
	a.created = parallel.Background(func() error {
		return parallel.All(func() error {
			var err error
			a.obj, err = credential.CreateCSR(ctx, c, consumerID, member.TenantLabels(consumerID), csrPEM, expiration)
			return err
		}, func() error {
			if sb == nil {
				return nil
			}
			a.sandboxOpts = *sb
			// Errors here only mean nothing to adopt: the issuance makes them as it always did.
			_ = parallel.All(func() error {
				a.ns, _ = sandbox.CreateNamespace(ctx, c, member.TenantNamespace(consumerID), sandbox.TenantOwner(consumerID), *sb)
				return nil
			}, func() error {
				a.ledger, _ = sandbox.CreateLedger(ctx, c, consumerID, sb.Quota)
				return nil
			})
			return nil
		})
	})
	return a, nil
}

// For says whether the request was made for the nonce value.
func (a *AheadRequest) For(value string) bool { return a != nil && a.Nonce == value }

// adopt returns the CSR created for exactly this request (csrPEM) and lifetime, and marks it the
// issuance's own: nil when it was made for another, or could not be created.
func (a *AheadRequest) adopt(csrPEM []byte, expiration time.Duration) *certv1.CertificateSigningRequest {
	if a == nil || !bytes.Equal(a.csrPEM, csrPEM) || a.expiration != expiration || a.created() != nil || a.obj == nil {
		return nil
	}
	a.adopted.Store(true)
	return a.obj
}

// adoptSandbox returns the tenant namespace and the ledger this run created, when it created both, for
// the sandbox o (the issuance's, which must be the one they were made for), and marks them the issuance's.
func (a *AheadRequest) adoptSandbox(o sandbox.Options) (*corev1.Namespace, *sandbox.GrantLedger) {
	if a == nil || a.forgotten || a.created() != nil || a.ns == nil || a.ledger == nil ||
		!maps.Equal(sandbox.Labels(sandbox.NsOwner{}, a.sandboxOpts), sandbox.Labels(sandbox.NsOwner{}, o)) ||
		!maps.Equal(a.sandboxOpts.Annotations(), o.Annotations()) || !sandbox.SameQuota(a.sandboxOpts.Quota, o.Quota) {
		return nil, nil
	}
	a.nsAdopted = true
	return a.ns, a.ledger
}

// release removes the namespace and ledger made ahead that the issuance does not adopt, before it makes
// its sandbox (which would otherwise find them there and use them), unless forgotten.
func (a *AheadRequest) release(ctx context.Context, c *member.Cluster) error {
	if a == nil || a.forgotten || a.nsAdopted {
		return nil
	}
	_ = a.created()
	ns, ledger := a.ns, a.ledger
	a.ns, a.ledger = nil, nil
	// The run's early reads may have been answered after these writes: they are read afresh.
	return parallel.All(func() error {
		if ns == nil {
			return nil
		}
		defer c.NamespaceRead(ns.Name).Forget(c)
		return sandbox.RemoveCreatedNamespace(ctx, c, ns)
	}, func() error {
		if ledger == nil {
			return nil
		}
		defer sandbox.LedgerRead(c, a.consumerID).Forget(c)
		return sandbox.RemoveCreatedLedger(ctx, c, ledger)
	})
}

// Forget leaves the namespace and ledger made ahead where they are, neither adopted nor removed: another
// run held the pair's lock meanwhile, and may be using them.
func (a *AheadRequest) Forget() {
	if a != nil {
		_ = a.created()
		a.forgotten = true
	}
}

// Discard deletes what the issuance did not adopt: the CSR (an issuance deletes its own when done), and
// the namespace and ledger this run created (unless forgotten).
func (a *AheadRequest) Discard(ctx context.Context, c *member.Cluster) {
	if a == nil {
		return
	}
	_ = a.created()
	if !a.adopted.Load() && a.obj != nil {
		credential.DeleteCSR(ctx, c, a.obj)
	}
	_ = a.release(ctx, c)
}

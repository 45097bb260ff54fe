package handshake

import (
	"bytes"
	"context"
	"crypto"
	"sync/atomic"
	"time"

	certv1 "k8s.io/api/certificates/v1"

	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
)

// AheadRequest is a one-shot run's certificate request made one round trip early: a nonce value, a client
// key and its CSR, the CSR created on the provider while the run reads both clusters and takes the pair's
// lock. Whether the run can use it is known only after: the nonce must be the one the run makes (no
// unused nonce of a manual handshake there already), the lock the run's at once, the request the one the
// issuance verifies, with the lifetime it asks. The issuance adopts it then (IssueOptions.Ahead); if not,
// it is deleted (Discard). A CSR is inert until approved, and only the issuance that verified its request
// approves it.
type AheadRequest struct {
	Nonce      string
	key        crypto.Signer
	csrPEM     []byte
	expiration time.Duration
	created    func() error
	obj        *certv1.CertificateSigningRequest
	adopted    atomic.Bool
}

// StartAheadRequest makes a nonce value, a client key of alg and a CSR for the user that nonce entitles
// consumerID to, and starts creating the CSR on the provider c with the lifetime expiration (0: the
// default). Nothing in a dry run.
func StartAheadRequest(ctx context.Context, c *member.Cluster, consumerID, alg string, expiration time.Duration) (*AheadRequest, error) {
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
	a := &AheadRequest{Nonce: value, key: key, csrPEM: csrPEM, expiration: expiration}
	a.created = parallel.Background(func() error {
		var err error
		a.obj, err = credential.CreateCSR(ctx, c, consumerID, member.TenantLabels(consumerID), csrPEM, expiration)
		return err
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

// Discard deletes the CSR unless an issuance adopted it (which deletes it when done).
func (a *AheadRequest) Discard(ctx context.Context, c *member.Cluster) {
	if a == nil || a.adopted.Load() {
		return
	}
	if a.created() == nil && a.obj != nil {
		credential.DeleteCSR(ctx, c, a.obj)
	}
}

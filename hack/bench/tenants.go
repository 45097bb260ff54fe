package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/kube"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// provider issues identities on one local cluster as generate identity does, from requests signed here
// (each consumer its own handshake key, nonce and CSR), each issuance by a fresh client as a separate
// process would have.
type provider struct {
	c  *kubeenv.Cluster
	id string
}

func (p *provider) client() (*member.Cluster, error) {
	// As the plugin's own clients are: its rate limits, and warnings not printed.
	cfg := rest.CopyConfig(p.c.Config)
	cfg.QPS, cfg.Burst, cfg.WarningHandler = 50, 100, rest.NoWarnings{}
	kc, err := kube.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &member.Cluster{Kube: kc, Dynamic: dyn}, nil
}

func newProvider(ctx context.Context, c *kubeenv.Cluster) (*provider, error) {
	p := &provider{c: c}
	cl, err := p.client()
	if err != nil {
		return nil, err
	}
	self, err := sandbox.Init(ctx, cl, c.Name)
	if err != nil {
		return nil, err
	}
	p.id = self.ClusterID
	return p, nil
}

// request is a consumer's signed request, ready to be issued.
type request struct {
	id     string
	tenant *v1alpha1.Tenant
	cl     *member.Cluster
}

// prepare creates the nonce of consumer id and signs its request, as the consumer would.
func (p *provider) prepare(ctx context.Context, id string) (*request, error) {
	cl, err := p.client()
	if err != nil {
		return nil, err
	}
	n, _, err := handshake.CreateNonce(ctx, cl, handshake.NonceOptions{ConsumerID: id, TTL: time.Hour})
	if err != nil {
		return nil, err
	}
	key, err := credential.NewClientKey("ecdsa-p256")
	if err != nil {
		return nil, err
	}
	csr, err := credential.NewCSR(credential.ExpectedUser(id, n.Value), key)
	if err != nil {
		return nil, err
	}
	der, err := member.DecodePEM("csr", csr, "CERTIFICATE REQUEST")
	if err != nil {
		return nil, err
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	tenant := &v1alpha1.Tenant{Spec: v1alpha1.TenantSpec{ClusterID: id, ProviderClusterID: p.id, PublicKey: pub, CSR: csr,
		Signature: credential.Sign(priv, credential.Message(p.id, id, n.Value, der, ""))}}
	fresh, err := p.client() // the issuing process is not the one that made the nonce
	if err != nil {
		return nil, err
	}
	return &request{id: id, tenant: tenant, cl: fresh}, nil
}

func (p *provider) issue(ctx context.Context, r *request) (time.Duration, error) {
	start := time.Now()
	if _, err := handshake.IssueIdentity(ctx, r.cl, handshake.IssueOptions{ConsumerID: r.id, Tenant: r.tenant, APIServer: p.c.Server}); err != nil {
		return 0, fmt.Errorf("tenant %s: %w", r.id, err)
	}
	return time.Since(start), nil
}

// issueSequential issues the consumers ids one after the other and returns each one's wall time.
func (p *provider) issueSequential(ctx context.Context, ids []string) ([]time.Duration, error) {
	var walls []time.Duration
	for _, id := range ids {
		r, err := p.prepare(ctx, id)
		if err != nil {
			return nil, err
		}
		w, err := p.issue(ctx, r)
		if err != nil {
			return nil, err
		}
		walls = append(walls, w)
	}
	return walls, nil
}

// issueConcurrent prepares every request first, then issues them all at once, workers at a time, and
// returns the wall time of the issuances alone.
func (p *provider) issueConcurrent(ctx context.Context, ids []string, workers int) (time.Duration, error) {
	reqs := make([]*request, len(ids))
	if err := forEach(len(ids), workers, func(i int) error {
		var err error
		reqs[i], err = p.prepare(ctx, ids[i])
		return err
	}); err != nil {
		return 0, err
	}
	start := time.Now()
	err := forEach(len(reqs), workers, func(i int) error {
		_, err := p.issue(ctx, reqs[i])
		return err
	})
	return time.Since(start), err
}

// forEach runs fn(0..n-1) on workers goroutines and returns the first error.
func forEach(n, workers int, fn func(int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

func ids(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("%s%04d", prefix, i))
	}
	return out
}

func medianDuration(ws []time.Duration) time.Duration {
	s := slices.Clone(ws)
	slices.Sort(s)
	return s[len(s)/2]
}

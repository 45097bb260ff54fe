package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// RenewOptions configure Renew.
type RenewOptions struct {
	APIServer     string // what the consumer's kubeconfig points at, if given
	CA            []byte
	ProxyURL      string          // if given
	Expiration    time.Duration   // if given
	MaxExpiration time.Duration   // if given
	ClusterRole   string          // if given
	Sandbox       sandbox.Options // what was given
	Credential    string          // if given
	KeyAlgorithm  string
	SignerTimeout time.Duration
	// Given names the settings given explicitly (API server, lifetime, maximum lifetime); every other
	// setting of the pairing is the recorded one.
	Given handshake.Given
	// Overlap keeps each renewed-away user bound beside its successor (same role), for the caller to
	// Retire once every client has read the new credential; 0 unbinds it at once.
	Overlap bool
}

// RenewResult is what Renew issued.
type RenewResult struct {
	ProviderID   string
	ControlPlane *handshake.Imported
	Slices       []*grants.SliceImport
	// Retiring are the users an overlap left bound: the credentials renewed away, still authorized until
	// Retire takes them out.
	Retiring []handshake.Retiring
	// Federated says the pairing's identity is federated: it holds no credential, so there was nothing to
	// rotate (ControlPlane is nil); its resource slices are renewed all the same.
	Federated bool
}

// Retire ends a renewal's overlap on the provider: every renewed-away user is taken out of its bindings,
// each tried even when another fails.
func (r *RenewResult) Retire(ctx context.Context, provider *member.Cluster) error {
	var errs []error
	for _, u := range r.Retiring {
		if err := handshake.Retire(ctx, provider, u); err != nil {
			errs = append(errs, fmt.Errorf("taking out the renewed-away user %s: %w", u.User, err))
		}
	}
	return errors.Join(errs...)
}

// Renew renews every credential of one pairing with fresh keys and users, so that the old ones are refused
// afterwards: the pairing's identity (a new nonce, Tenant and certificate or token, with the sandbox, role
// and credential kind the provider recorded, so that a renewal changes nothing else), then each resource
// slice this consumer imported from the provider (asked again with a new key, granted within what it had,
// imported). A slice that fails does not stop the others; their errors are returned together.
func Renew(ctx context.Context, consumer, provider *member.Cluster, o RenewOptions) (*RenewResult, error) {
	var cSelf, pSelf *member.Self
	if err := parallel.All(
		func() error { var err error; cSelf, err = consumer.Load(ctx); return wrapSide("consumer", err) },
		// The provider issues: its sandbox's objects are checked with its record (see loadCurrent).
		func() error {
			var err error
			pSelf, err = sandbox.LoadCurrent(ctx, provider)
			return wrapSide("provider", err)
		},
	); err != nil {
		return nil, err
	}
	tenant, err := grants.ActiveTenant(ctx, provider, cSelf.ClusterID)
	if err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	// The pairing's maximum lifetime bounds the slices' as well: the one given, else the recorded one.
	maxLifetime := o.MaxExpiration
	if !o.Given[handshake.SettingMaxLifetime] && tenant.Status.MaxLifetime != nil {
		maxLifetime = tenant.Status.MaxLifetime.Duration
	}
	// Everything not given is the pairing's recorded choice (keepRecorded, at issuance).
	res := &RenewResult{ProviderID: pSelf.ClusterID}
	kept := func(ns string) func(string) {
		return func(user string) {
			res.Retiring = append(res.Retiring, handshake.Retiring{ConsumerID: cSelf.ClusterID, User: user, Namespace: ns})
		}
	}
	// A federated identity has nothing to rotate: its tokens are minted when needed and expire by
	// themselves, and its user stays what the provider's authenticator entry maps to. Only another kind
	// asked for explicitly replaces it.
	res.Federated = tenant.Status.Credential == v1alpha1.CredentialFederated && !o.Given[handshake.SettingCredential]
	if !res.Federated {
		if res.ControlPlane, err = Authenticate(ctx, consumer, provider, AuthenticateOptions{
			ConsumerID: cSelf.ClusterID, ProviderID: pSelf.ClusterID, KeyAlgorithm: o.KeyAlgorithm, ProxyURL: o.ProxyURL,
			APIServer: o.APIServer, CA: o.CA, Expiration: o.Expiration, MaxExpiration: o.MaxExpiration,
			ClusterRole: o.ClusterRole, Sandbox: o.Sandbox, Credential: o.Credential,
			SignerTimeout: o.SignerTimeout, Given: o.Given, KeepCurrent: o.Overlap, Kept: kept(""),
		}); err != nil {
			// The provider may have bound the new user (and kept the old one) before the consumer failed.
			return res, err
		}
	}
	// The consumer's slices, and the lifetime each was granted with, which the provider recorded.
	var held, granted []grants.SliceInfo
	if err := parallel.All(
		func() error {
			var err error
			held, err = grants.ConsumerSlices(ctx, consumer, pSelf.ClusterID)
			return wrapSide("consumer", err)
		},
		func() error {
			var err error
			granted, err = grants.ProviderSlices(ctx, provider, cSelf.ClusterID)
			return wrapSide("provider", err)
		},
	); err != nil {
		return res, err
	}
	lifetimes := map[string]time.Duration{}
	for _, g := range granted {
		lifetimes[g.Name] = g.Lifetime
	}
	var errs []error
	for _, s := range held {
		if s.Phase != grants.SliceImported {
			continue // never granted, or not imported: nothing to renew
		}
		s.Lifetime = lifetimes[s.Name]
		imp, err := renewSlice(ctx, consumer, provider, cSelf.ClusterID, pSelf.ClusterID, s, o, maxLifetime, kept(member.SliceNamespace(cSelf.ClusterID, s.Name)))
		if err != nil {
			errs = append(errs, fmt.Errorf("resource slice %q: %w", s.Name, err))
			continue
		}
		res.Slices = append(res.Slices, imp)
	}
	return res, errors.Join(errs...)
}

// renewSlice asks for a slice again with a new key, has the provider grant it within what it had (under
// its class, with its credential kind) and imports it: the old key's user loses the slice's rights.
func renewSlice(ctx context.Context, consumer, provider *member.Cluster, consumerID, providerID string, s grants.SliceInfo, o RenewOptions, maxLifetime time.Duration, kept func(string)) (*grants.SliceImport, error) {
	req, err := grants.RequestSlice(ctx, consumer, grants.SliceRequestOptions{ProviderID: providerID, Name: s.Name, Class: s.Class, Resources: s.Requested, KeyAlgorithm: o.KeyAlgorithm})
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	if err := grants.SubmitSlice(ctx, consumer, provider, req); err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	// Within what it had: the earlier grant bounds what was asked again (what the class added on its own,
	// such as ephemeral storage, it adds again).
	had := map[string]string{}
	for k, v := range s.Granted {
		if _, asked := s.Requested[k]; asked {
			had[k] = v
		}
	}
	grant, err := grants.ParseSliceQuantities("granted", had)
	if err != nil {
		return nil, err
	}
	credKind := credential.CredentialCertificate
	if credential.IsCredentialUser(s.User, s.Namespace) {
		credKind = credential.CredentialToken
	}
	// The slice's recorded lifetime, unless another was given, capped by the pairing's maximum.
	expiration := s.Lifetime
	if o.Given[handshake.SettingLifetime] || expiration == 0 {
		expiration = o.Expiration
	}
	if maxLifetime > 0 && expiration > maxLifetime {
		expiration = maxLifetime
	}
	granted, err := grants.AcceptSlice(ctx, provider, grants.AcceptSliceOptions{ConsumerID: consumerID, Name: s.Name, Grant: grant, Expiration: expiration,
		Credential: credKind, SignerTimeout: o.SignerTimeout, KeepCurrent: o.Overlap, Kept: kept})
	if err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	imp, err := grants.ImportSlice(ctx, consumer, grants.ImportSliceOptions{ProviderID: providerID, Name: s.Name, Answer: granted, Provider: provider})
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	return imp, nil
}

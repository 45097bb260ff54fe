package handshake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
)

// RenewOptions configure Renew.
type RenewOptions struct {
	APIServer     string // what the consumer's kubeconfig points at
	CA            []byte
	Expiration    time.Duration // 0: DefaultExpiration
	KeyAlgorithm  string
	SignerTimeout time.Duration
}

// RenewResult is what Renew issued.
type RenewResult struct {
	ProviderID   string
	ControlPlane *Imported
	Slices       []*SliceImport
}

// Renew renews every credential of one pairing with fresh keys and users, so that the old ones are refused
// afterwards: the pairing's identity (a new nonce, Tenant and certificate or token, with the sandbox, role
// and credential kind the provider recorded, so that a renewal changes nothing else), then each resource
// slice this consumer imported from the provider (asked again with a new key, granted within what it had,
// imported). A slice that fails does not stop the others; their errors are returned together.
func Renew(ctx context.Context, consumer, provider *Cluster, o RenewOptions) (*RenewResult, error) {
	var cSelf, pSelf *Self
	if err := parallel(
		func() error { var err error; cSelf, err = consumer.Load(ctx); return wrapSide("consumer", err) },
		// The provider issues: its sandbox's objects are checked with its record (see loadCurrent).
		func() error { var err error; pSelf, err = provider.loadCurrent(ctx); return wrapSide("provider", err) },
	); err != nil {
		return nil, err
	}
	tenant, err := provider.activeTenant(ctx, cSelf.ClusterID)
	if err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	sb, err := sandboxFromStatus(tenant.Status.Sandbox)
	if err == nil {
		sb, err = sb.Validate()
	}
	if err != nil {
		return nil, fmt.Errorf("the sandbox recorded in Tenant %s/%s: %w", tenant.Namespace, tenant.Name, err)
	}
	credential := CredentialCertificate
	if tenant.Status.Credential == v1alpha1.CredentialToken {
		credential = CredentialToken
	}
	res := &RenewResult{ProviderID: pSelf.ClusterID}
	if res.ControlPlane, err = Authenticate(ctx, consumer, provider, AuthenticateOptions{
		ConsumerID: cSelf.ClusterID, ProviderID: pSelf.ClusterID, ProxyURL: tenant.Spec.ProxyURL, KeyAlgorithm: o.KeyAlgorithm,
		APIServer: o.APIServer, CA: o.CA, Expiration: o.Expiration, ClusterRole: tenant.Status.ClusterRole, Sandbox: sb,
		Credential: credential, SignerTimeout: o.SignerTimeout,
	}); err != nil {
		return nil, err
	}
	slices, err := consumer.ConsumerSlices(ctx, pSelf.ClusterID)
	if err != nil {
		return res, fmt.Errorf("consumer: %w", err)
	}
	var errs []error
	for _, s := range slices {
		if s.Phase != SliceImported {
			continue // never granted, or not imported: nothing to renew
		}
		imp, err := renewSlice(ctx, consumer, provider, cSelf.ClusterID, pSelf.ClusterID, s, o)
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
func renewSlice(ctx context.Context, consumer, provider *Cluster, consumerID, providerID string, s SliceInfo, o RenewOptions) (*SliceImport, error) {
	req, err := consumer.RequestSlice(ctx, SliceRequestOptions{ProviderID: providerID, Name: s.Name, Class: s.Class, Resources: s.Requested, KeyAlgorithm: o.KeyAlgorithm})
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	if err := consumer.SubmitSlice(ctx, provider, req); err != nil {
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
	grant, err := ParseSliceQuantities("granted", had)
	if err != nil {
		return nil, err
	}
	credential := CredentialCertificate
	if isCredentialUser(s.User, s.Namespace) {
		credential = CredentialToken
	}
	granted, err := provider.AcceptSlice(ctx, AcceptSliceOptions{ConsumerID: consumerID, Name: s.Name, Grant: grant, Expiration: o.Expiration,
		Credential: credential, SignerTimeout: o.SignerTimeout})
	if err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	imp, err := consumer.ImportSlice(ctx, ImportSliceOptions{ProviderID: providerID, Name: s.Name, Answer: granted, Provider: provider})
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	return imp, nil
}

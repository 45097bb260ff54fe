package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
	"github.com/federate-dev/kubectl-federate/pkg/status"
)

// A federated pairing is set up by authenticate like any other (sandbox, binding, records), but its
// provider's half is an entry of the provider's API server configuration that only its administrator can
// install. So a run ends by printing that entry and proving the pairing through a token minted on the
// consumer; until the provider takes that token for the pairing's user and authorizes it, the pairing is
// not ready, and the run says so and what is missing, with the entry to install.

// NotTrustedError says that a federated pairing is set up on both clusters but not ready: the provider does
// not take the consumer's token for the pairing's user, or does not authorize it. Everything else of the
// pairing is in place; installing the entry (and, if named, what the consumer's issuer lacks) and proving it
// again is what remains.
type NotTrustedError struct {
	ProviderID string
	Check      *status.CredentialCheck
	// Diagnosis is what the provider's metrics show of the issuer's authenticator; Findings what the
	// consumer's preflight found the provider's API server lacks.
	Diagnosis string
	Findings  []string
}

func (e *NotTrustedError) Error() string {
	parts := []string{fmt.Sprintf("the federated pairing with provider %q is set up but not ready: %s", e.ProviderID, e.Check.Error)}
	if e.Diagnosis != "" {
		parts = append(parts, e.Diagnosis)
	}
	return strings.Join(append(parts, e.Findings...), "; ")
}

// keepFederated is the federated request of a re-run: the one asked for, else the recorded pairing's
// (its ServiceAccount, discovery URL and issuer CA) when it was federated and no other kind was given.
func keepFederated(o AuthenticateOptions, recorded *v1alpha1.Tenant) *handshake.FederatedOptions {
	f := recorded.Spec.Federated
	if o.Federated != nil || recorded.Status.Credential != v1alpha1.CredentialFederated || f == nil ||
		o.Given[handshake.SettingCredential] && o.Credential != credential.CredentialFederated {
		return o.Federated
	}
	sa := f.ServiceAccount
	return &handshake.FederatedOptions{ServiceAccount: v1alpha1.ServiceAccountRef{Namespace: sa.Namespace, Name: sa.Name},
		DiscoveryURL: f.DiscoveryURL, IssuerCA: f.IssuerCA}
}

// finishFederated ends a run that issued a federated identity: it gives the result the provider's
// authenticator entry and proves the pairing (a NotTrustedError until the entry works). Other identities
// have nothing more to do.
func finishFederated(ctx context.Context, consumer, provider *member.Cluster, tenant *v1alpha1.Tenant, id *v1alpha1.Identity, res *handshake.Imported, findings []string) error {
	if res == nil || id == nil || id.Spec.Federated == nil || tenant.Spec.Federated == nil {
		return nil
	}
	f := id.Spec.Federated
	entry, err := handshake.AuthenticatorFor(tenant.Spec.ClusterID, tenant.Spec.Federated, f.User, f.Audience)
	if err != nil {
		return err
	}
	res.Authenticator = entry
	if consumer.DryRun {
		return nil // nothing was bound: there is nothing to prove
	}
	return ProveFederated(ctx, consumer, provider, id, tenant.Spec.Federated.Issuer, findings)
}

// ProveFederated proves a federated pairing through a token minted on the consumer (status.ProveFederated).
// A token the provider authenticates but does not authorize yet is tried again for a moment, since the
// authorizer sees a binding just made through an informer; anything else is the answer. When the provider
// does not take the token, its metrics say why of the issuer's authenticator (provider may be nil: nothing
// more is said).
func ProveFederated(ctx context.Context, consumer, provider *member.Cluster, id *v1alpha1.Identity, issuer string, findings []string) error {
	r := consumer.Reporter()
	var check *status.CredentialCheck
	err := member.Step(r, "Proving the pairing through a token minted here", "Provider "+id.Spec.ClusterID+" authenticates this cluster's token as "+id.Spec.Federated.User+" and authorizes it", func() error {
		deadline := time.Now().Add(sandbox.PolicyTimeout)
		for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
			check = status.ProveFederated(ctx, consumer, id)
			if check.OK || check.State != status.CheckRevoked || time.Now().After(deadline) {
				break
			}
			if err := handshake.WaitUntil(ctx, time.Now().Add(pause)); err != nil {
				return err
			}
		}
		if check.OK {
			return nil
		}
		e := &NotTrustedError{ProviderID: id.Spec.ClusterID, Check: check, Findings: findings}
		if provider != nil && check.State == status.CheckUntrusted {
			e.Diagnosis = handshake.DiagnoseAuthenticator(ctx, provider, issuer)
		}
		return e
	})
	return err
}

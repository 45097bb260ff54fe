package handshake

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// A federated issuance is the same issuance with nothing issued: the request verified, the nonce used,
// the sandbox built and the pairing's user bound, but no CSR, no certificate and no token. Its user is
// what the authenticator entry maps the consumer's ServiceAccount to, under a prefix of the issuance; a
// re-run of an active federated pairing keeps the prefix and the audience, so that the entry installed
// for it stays right (a new ServiceAccount changes only what the entry pins). After a revocation the
// next issuance has a new prefix and audience: the revoked user is never bound again.

// verifyFederated settles what a verified federated request is issued as: refused if the provider chose
// another kind, or if the consumer's issuer is this cluster's own (its API server would refuse the entry).
func (is *issuance) verifyFederated(ctx context.Context) error {
	o, f := is.o, is.tenant.Spec.Federated
	if o.Given[SettingCredential] && o.Credential != credential.CredentialFederated {
		return fmt.Errorf("spec.federated: the consumer asks for a federated identity (its ServiceAccount %s/%s), but the provider chose a %s; the provider must choose federated, or the consumer send a request without a ServiceAccount",
			f.ServiceAccount.Namespace, f.ServiceAccount.Name, orCert(o.Credential))
	}
	if own := ownIssuer(ctx, is.c); own != "" && own == f.Issuer {
		return fmt.Errorf("spec.federated.issuer %q: is this cluster's own ServiceAccount issuer, which its API server never takes an authenticator for; the consumer needs an issuer of its own", f.Issuer)
	}
	is.mode = credential.CredentialFederated
	naming := credential.NameFederated(is.self.ClusterID, o.ConsumerID, credential.ExpectedUser(o.ConsumerID, is.n.Value))
	if rec := is.recorded; rec != nil && rec.Status.Phase == PhaseActive && rec.Status.Credential == v1alpha1.CredentialFederated &&
		rec.Spec.Federated != nil && rec.Spec.Federated.Issuer == f.Issuer {
		if kept, err := credential.FederatedNamingOf(rec.Status.User, rec.Status.Audience, rec.Spec.Federated.ServiceAccount); err == nil {
			naming = kept
		}
	}
	is.federated = &naming
	is.user = naming.User(f.ServiceAccount)
	return nil
}

// ownIssuer is this cluster's own ServiceAccount issuer, from its discovery document; "" when it serves
// none or it cannot be read (then its API server's own validation is what refuses a clash).
func ownIssuer(ctx context.Context, c *member.Cluster) string {
	raw, err := c.Kube.CoreV1().RESTClient().Get().AbsPath("/.well-known/openid-configuration").DoRaw(ctx)
	if err != nil {
		return ""
	}
	var doc discoveryDocument
	if json.Unmarshal(raw, &doc) != nil {
		return ""
	}
	return doc.Issuer
}

// federatedAgain answers again a federated request already issued: the same identity, sealed with the key
// its used nonce recorded. It carries no secret, so a copy of the public request fetches nothing.
func (is *issuance) federatedAgain(ctx context.Context, recorded *v1alpha1.Tenant) (*v1alpha1.Identity, error) {
	c, o, st := is.c, is.o, recorded.Status
	rec, err := c.Nonces().Record(ctx, o.ConsumerID)
	if err != nil || string(rec[recordUser]) != st.User || len(rec[recordIntegrityKey]) == 0 {
		return nil, fmt.Errorf("an identity was already issued for this request, but its integrity key is gone (a new nonce replaced it): have the consumer generate a new Tenant from a new nonce")
	}
	is.r.Info("A federated identity was already issued for this request; returning it again")
	return federatedIdentityFor(c, is.self.ClusterID, o, is.tenant, st.User, st.Audience, rec[recordIntegrityKey]), nil
}

// federatedIdentityFor is the Identity of a federated issuance, its fields sealed.
func federatedIdentityFor(c *member.Cluster, providerID string, o IssueOptions, tenant *v1alpha1.Tenant, user, audience string, integrityKey []byte) *v1alpha1.Identity {
	id := identityFor(c, providerID, o, tenant, nil, "", nil)
	id.Spec.Credential = v1alpha1.CredentialFederated
	id.Spec.Federated = &v1alpha1.FederatedIdentity{ServiceAccount: tenant.Spec.Federated.ServiceAccount, Audience: audience, User: user}
	credential.SealIdentity(integrityKey, &id.Spec)
	return id
}

// FederatedTenant reads the consumer's Tenant and returns it if its identity is federated; nil if the
// consumer has no Tenant, or another kind of identity.
func FederatedTenant(ctx context.Context, c *member.Cluster, consumerID string) (*v1alpha1.Tenant, error) {
	ns := member.TenantNamespace(consumerID)
	u, err := c.Dynamic.Resource(v1alpha1.TenantGVR).Namespace(ns).Get(ctx, consumerID, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Tenant %s/%s: %w", ns, consumerID, err)
	}
	var t v1alpha1.Tenant
	if err := objects.FromUnstructured(u, &t); err != nil {
		return nil, fmt.Errorf("tenant %s/%s: %w", ns, consumerID, err)
	}
	if t.Status.Credential != v1alpha1.CredentialFederated {
		return nil, nil
	}
	return &t, nil
}

package handshake

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// TenantOptions are the consumer's choices for a request.
type TenantOptions struct {
	ProviderID string
	// ConsumerID is the ID the nonce was made for, when known (a ticket names it): a never-initialized
	// cluster is initialized with it, and one initialized under another ID is refused before anything is
	// written. Empty: the cluster must be initialized already.
	ConsumerID   string
	Nonce        string
	ProxyURL     string // how this cluster reaches the provider's API server, if through a proxy
	KeyAlgorithm string // of the new client key; "" means ECDSA P-256
	// Federated, if set, asks for a federated identity instead of a certificate: no client key, no CSR.
	Federated *FederatedOptions
	// Ahead, if set, is the client key and CSR a one-shot run made before it knew the nonce was its own
	// (its value is Ahead.Nonce): held in memory, the request uses them instead of new ones.
	Ahead *AheadRequest
}

// GenerateTenant (consumer) prepares a request for an identity on a provider: a fresh client key, kept
// in a Secret in federate-system (which no tenant of this cluster can read), a CSR for the user this nonce
// entitles the consumer to, and the handshake signature binding provider, consumer, nonce, CSR and proxy
// URL. The returned Tenant carries no secret. A never-initialized cluster is initialized first, with the
// consumer ID the nonce was made for. Re-running with the same nonce reuses the key.
func GenerateTenant(ctx context.Context, c *member.Cluster, o TenantOptions) (*v1alpha1.Tenant, error) {
	t, _, err := GenerateTenantHeld(ctx, c, o, false)
	return t, err
}

// GenerateTenantHeld is GenerateTenant; with hold, the client key is kept in memory and returned instead of
// stored (a one-shot run, which imports the answer itself).
func GenerateTenantHeld(ctx context.Context, c *member.Cluster, o TenantOptions, hold bool) (*v1alpha1.Tenant, *heldKey, error) {
	if _, err := nonce.Parse(o.Nonce); err != nil {
		return nil, nil, fmt.Errorf("nonce: %w", err)
	}
	if o.ConsumerID != "" && o.ConsumerID == o.ProviderID {
		return nil, nil, fmt.Errorf("provider cluster ID %q: %w", o.ProviderID, member.ErrOwnID)
	}
	// A federated request's ServiceAccount and issuer are read first: one this cluster lacks is refused
	// before anything is written (initializing the cluster among them).
	var fed *resolvedFederated
	if o.Federated != nil {
		var err error
		if fed, err = resolveFederatedStep(ctx, c, *o.Federated); err != nil {
			return nil, nil, err
		}
	}
	// The consumer's side issues nothing: its own sandbox objects are not this step's concern.
	self, created, err := sandbox.InitializeAs(ctx, c, o.ConsumerID, false)
	var conflict *member.IDConflictError
	if errors.As(err, &conflict) {
		conflict.Side = "consumer"
	}
	if err != nil {
		return nil, nil, err
	}
	if o.ProviderID == self.ClusterID {
		return nil, nil, fmt.Errorf("provider cluster ID %q: %w", o.ProviderID, member.ErrOwnID)
	}
	r := c.Reporter()
	if created {
		r.Info(fmt.Sprintf("This cluster %s %q, the consumer ID provider %q made the nonce for", c.Said("is now", "would be"), self.ClusterID, o.ProviderID))
	}
	user := credential.ExpectedUser(self.ClusterID, o.Nonce)
	if fed != nil {
		return generateFederated(ctx, c, o, fed, self, user, hold)
	}
	key, held, aheadKey, err := clientKey(ctx, c, o, user, hold)
	if err != nil {
		return nil, nil, err
	}
	var t *v1alpha1.Tenant
	err = member.Step(r, "Signing the request", "Tenant request signed", func() error {
		var csrPEM []byte
		if aheadKey {
			csrPEM = o.Ahead.csrPEM
		} else if csrPEM, err = credential.NewCSR(user, key); err != nil {
			return err
		}
		block, _ := pem.Decode(csrPEM)
		sig := credential.Sign(self.PrivateKey, credential.Message(o.ProviderID, self.ClusterID, o.Nonce, block.Bytes, o.ProxyURL))
		t = &v1alpha1.Tenant{
			TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.TenantKind},
			ObjectMeta: metav1.ObjectMeta{
				Name:      self.ClusterID,
				Namespace: member.TenantNamespace(self.ClusterID),
			},
			Spec: v1alpha1.TenantSpec{
				ClusterID:         self.ClusterID,
				ProviderClusterID: o.ProviderID,
				PublicKey:         self.PublicKey,
				CSR:               csrPEM,
				Signature:         sig,
				ProxyURL:          o.ProxyURL,
			},
		}
		return nil
	})
	return t, held, err
}

// clientKey is the request's client key: held in memory (hold; the one made ahead for this nonce, if
// any, which ahead then says), or waiting in the pending-key Secret.
func clientKey(ctx context.Context, c *member.Cluster, o TenantOptions, user string, hold bool) (key crypto.Signer, held *heldKey, ahead bool, err error) {
	r := c.Reporter()
	if !hold {
		err = member.Step(r, "Ensuring the client key", "Client key ensured (it stays in Secret "+member.SystemNamespace+"/"+member.PendingKeySecretName(o.ProviderID)+")", func() error {
			key, err = ensurePendingKey(ctx, c, o.ProviderID, user, o.KeyAlgorithm, credential.IntegrityKey(o.Nonce))
			return err
		})
		return key, nil, false, err
	}
	held = &heldKey{user: user, macKey: credential.IntegrityKey(o.Nonce)}
	err = member.Step(r, "Generating the client key", "Client key generated (held in memory until the kubeconfig is stored)", func() error {
		if ahead = o.Ahead.For(o.Nonce); ahead {
			key = o.Ahead.key
		} else if key, err = credential.NewClientKey(o.KeyAlgorithm); err != nil {
			return err
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		held.key, held.keyPEM = key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
		return err
	})
	return key, held, ahead, err
}

// ensurePendingKey returns the client key waiting for this user's certificate, creating it if needed,
// with the key that will verify the identity's integrity MACs.
func ensurePendingKey(ctx context.Context, c *member.Cluster, providerID, user, alg string, macKey []byte) (crypto.Signer, error) {
	secrets := c.Kube.CoreV1().Secrets(member.SystemNamespace)
	name := member.PendingKeySecretName(providerID)
	existing, err := c.SecretRead(member.SystemNamespace, name).Take(ctx, c)
	switch {
	case apierrors.IsNotFound(err):
		existing = nil
	case err != nil:
		return nil, err
	case existing.Annotations[UserAnnotation] == user:
		if key, err := ParseSigner(existing.Data[PrivateKeyKey]); err == nil {
			return key, nil
		}
	}
	key, err := credential.NewClientKey(alg)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: member.SystemNamespace, Labels: member.IdentityLabels(providerID),
			Annotations: map[string]string{UserAnnotation: user}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{PrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), integrityKey: macKey},
	}
	if existing == nil {
		_, err = secrets.Create(ctx, sec, metav1.CreateOptions{})
	} else {
		sec.ResourceVersion = existing.ResourceVersion
		_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		// A concurrent run stored a key first; use it if it waits for the same user.
		if won, gerr := secrets.Get(ctx, name, metav1.GetOptions{}); gerr == nil && won.Annotations[UserAnnotation] == user {
			return ParseSigner(won.Data[PrivateKeyKey])
		}
	}
	if err != nil {
		return nil, fmt.Errorf("storing the client key in Secret %s/%s: %w", sec.Namespace, name, err)
	}
	return key, nil
}

// ParseSigner parses a PKCS#8 PEM client key that can sign.
func ParseSigner(data []byte) (crypto.Signer, error) {
	der, err := member.DecodePEM(PrivateKeyKey, data, "PRIVATE KEY")
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: %T is not a signing key", PrivateKeyKey, k)
	}
	return s, nil
}

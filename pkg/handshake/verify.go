package handshake

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// ValidateTenant checks a Tenant's shape for this provider and consumer, before any cryptography.
func ValidateTenant(t *v1alpha1.Tenant, consumerID, providerID string) error {
	if err := member.ValidateClusterID("spec.clusterID", t.Spec.ClusterID); err != nil {
		return err
	}
	if t.Spec.ClusterID != consumerID {
		return fmt.Errorf("spec.clusterID %q: %w %q", t.Spec.ClusterID, member.ErrOtherConsumer, consumerID)
	}
	if t.Name != "" && t.Name != consumerID {
		return fmt.Errorf("metadata.name %q: must equal spec.clusterID %q", member.Truncate(t.Name), consumerID)
	}
	if ns := member.TenantNamespace(consumerID); t.Namespace != "" && t.Namespace != ns {
		return fmt.Errorf("metadata.namespace %q: must be %q", member.Truncate(t.Namespace), ns)
	}
	if t.Spec.ProviderClusterID != providerID {
		return fmt.Errorf("spec.providerClusterID %q: this request was made for another provider (this cluster is %q)", member.Truncate(t.Spec.ProviderClusterID), providerID)
	}
	if len(t.Spec.PublicKey) == 0 {
		return errors.New("spec.publicKey: is missing")
	}
	if len(t.Spec.Signature) == 0 {
		return errors.New("spec.signature: is missing")
	}
	switch {
	case t.Spec.Federated != nil && len(t.Spec.CSR) > 0:
		return errors.New("spec.csr: a federated request carries no CSR (it asks the provider to trust spec.federated's ServiceAccount, not a key)")
	case t.Spec.Federated != nil:
		if err := credential.ValidateFederatedRequest("spec.federated", t.Spec.Federated); err != nil {
			return err
		}
	case len(t.Spec.CSR) == 0:
		return errors.New("spec.csr: is missing")
	}
	if t.Spec.ProxyURL != "" {
		if err := kubeconfig.ValidateProxy(t.Spec.ProxyURL); err != nil {
			return fmt.Errorf("spec.proxyURL: %w", err)
		}
	}
	return nil
}

// ValidateIdentity checks an Identity's shape for this consumer and returns its parsed certificate.
func ValidateIdentity(id *v1alpha1.Identity, consumerID string, now time.Time) (*Credential, error) {
	if err := member.ValidateClusterID("spec.clusterID", id.Spec.ClusterID); err != nil {
		return nil, err
	}
	if id.Spec.ClusterID == consumerID {
		return nil, fmt.Errorf("spec.clusterID %q: is this cluster's own ID", consumerID)
	}
	if id.Spec.ConsumerClusterID != consumerID {
		return nil, fmt.Errorf("spec.consumerClusterID %q: this identity was issued to another consumer (this cluster is %q)", member.Truncate(id.Spec.ConsumerClusterID), consumerID)
	}
	if want := member.TenantNamespace(consumerID); id.Spec.Namespace != want {
		return nil, fmt.Errorf("spec.namespace %q: must be %q", member.Truncate(id.Spec.Namespace), want)
	}
	if id.Spec.Type != "" && id.Spec.Type != v1alpha1.IdentityControlPlane {
		return nil, fmt.Errorf("spec.type %q: an identity.yaml carries the pairing's own identity (%s); a slice's credential is imported as the resource slice's answer, not as an identity", member.Truncate(id.Spec.Type), v1alpha1.IdentityControlPlane)
	}
	if id.Spec.ResourceSlice != "" {
		return nil, errors.New("spec.resourceSlice: an identity.yaml carries the pairing's own identity, not a slice's")
	}
	if want := member.IdentityName(id.Spec.ClusterID); id.Name != "" && id.Name != want {
		return nil, fmt.Errorf("metadata.name %q: must be %q", member.Truncate(id.Name), want)
	}
	if want := member.SystemNamespace; id.Namespace != "" && id.Namespace != want {
		return nil, fmt.Errorf("metadata.namespace %q: must be %q", member.Truncate(id.Namespace), want)
	}
	if err := kubeconfig.ValidateServer(id.Spec.APIServer); err != nil {
		return nil, fmt.Errorf("spec.apiServer: %w", err)
	}
	if id.Spec.ProxyURL != "" {
		if err := kubeconfig.ValidateProxy(id.Spec.ProxyURL); err != nil {
			return nil, fmt.Errorf("spec.proxyURL: %w", err)
		}
	}
	if len(id.Spec.CA) > 0 {
		if len(id.Spec.CA) > 64<<10 {
			return nil, errors.New("spec.ca: is larger than 64 KiB")
		}
		if !x509.NewCertPool().AppendCertsFromPEM(id.Spec.CA) {
			return nil, errors.New("spec.ca: holds no PEM certificate")
		}
	}
	switch id.Spec.Credential {
	case "", v1alpha1.CredentialCertificate:
		if id.Spec.Token != "" {
			return nil, errors.New("spec.token: a certificate identity carries no token")
		}
		if id.Spec.Federated != nil {
			return nil, errors.New("spec.federated: only a federated identity has it")
		}
	case v1alpha1.CredentialToken:
		return validateTokenCredential(id, consumerID, now)
	case v1alpha1.CredentialFederated:
		return validateFederatedCredential(id, consumerID)
	default:
		return nil, fmt.Errorf("spec.credential %q: must be %s, %s or %s", member.Truncate(id.Spec.Credential), v1alpha1.CredentialCertificate, v1alpha1.CredentialToken, v1alpha1.CredentialFederated)
	}
	cert, err := credential.ParseCertificate("spec.certificate", id.Spec.Certificate)
	if err != nil {
		return nil, err
	}
	if !now.Before(cert.NotAfter) {
		return nil, fmt.Errorf("spec.certificate: expired at %s", cert.NotAfter.UTC().Format(time.RFC3339))
	}
	if prefix := member.UserPrefix + consumerID + ":"; !strings.HasPrefix(cert.Subject.CommonName, prefix) {
		return nil, fmt.Errorf("spec.certificate: subject CN %q is not a user of consumer %q", member.Truncate(cert.Subject.CommonName), consumerID)
	}
	clientAuth := false
	for _, u := range cert.ExtKeyUsage {
		clientAuth = clientAuth || u == x509.ExtKeyUsageClientAuth
	}
	if !clientAuth {
		return nil, errors.New("spec.certificate: is not valid for client authentication")
	}
	return &Credential{User: cert.Subject.CommonName, NotAfter: cert.NotAfter, Cert: cert}, nil
}

// Credential is what an Identity authenticates as: its user and expiry, and the certificate of a
// Certificate credential (nil for a token).
type Credential struct {
	User     string
	NotAfter time.Time
	Cert     *x509.Certificate
}

// validateTokenCredential checks a Token identity: it names the credential ServiceAccount of this
// consumer's tenant namespace and has not expired. Its authenticity is the integrity MAC's to prove.
func validateTokenCredential(id *v1alpha1.Identity, consumerID string, now time.Time) (*Credential, error) {
	if len(id.Spec.Certificate) > 0 {
		return nil, errors.New("spec.certificate: a token identity carries no certificate")
	}
	if id.Spec.Token == "" {
		return nil, errors.New("spec.token: is empty")
	}
	if len(id.Spec.Token) > 16<<10 {
		return nil, errors.New("spec.token: is larger than 16 KiB")
	}
	user, notAfter, err := credential.TokenClaims("spec.token", id.Spec.Token)
	if err != nil {
		return nil, err
	}
	if !credential.IsCredentialUser(user, id.Spec.Namespace) {
		return nil, fmt.Errorf("spec.token: is for %q, not a credential ServiceAccount (%s-*) of %s", member.Truncate(user), credential.CredentialServiceAccount, id.Spec.Namespace)
	}
	if !now.Before(notAfter) {
		return nil, fmt.Errorf("spec.token: expired at %s", notAfter.UTC().Format(time.RFC3339))
	}
	return &Credential{User: user, NotAfter: notAfter}, nil
}

// validateFederatedCredential checks a Federated identity: no certificate nor token, a ServiceAccount, an
// audience, and a user of this consumer that is that ServiceAccount's under a prefix (never a system: name).
// Its authenticity is the integrity MAC's to prove; whether the provider accepts it, the proof's.
func validateFederatedCredential(id *v1alpha1.Identity, consumerID string) (*Credential, error) {
	f := id.Spec.Federated
	switch {
	case len(id.Spec.Certificate) > 0:
		return nil, errors.New("spec.certificate: a federated identity carries no certificate")
	case id.Spec.Token != "":
		return nil, errors.New("spec.token: a federated identity carries no token")
	case f == nil:
		return nil, errors.New("spec.federated: is missing")
	case f.Audience == "" || len(f.Audience) > 512:
		return nil, errors.New("spec.federated.audience: must be set, at most 512 characters")
	}
	if err := credential.ValidateServiceAccountRef("spec.federated.serviceAccount", f.ServiceAccount); err != nil {
		return nil, err
	}
	if !IsFederatedUser(f.User, consumerID) {
		return nil, fmt.Errorf("spec.federated.user %q: is not a federated user of consumer %q", member.Truncate(f.User), consumerID)
	}
	if _, err := credential.FederatedNamingOf(f.User, f.Audience, f.ServiceAccount); err != nil {
		return nil, fmt.Errorf("spec.federated.user: %w", err)
	}
	return &Credential{User: f.User}, nil
}

// TimeOf is an API time as a UTC time; nil stays nil.
func TimeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC()
	return &v
}

package credential

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// A federated identity is no credential: the provider's API server trusts the consumer's own
// ServiceAccount token issuer (structured authentication: an entry of its AuthenticationConfiguration,
// which only its administrator can install), for exactly one ServiceAccount of the consumer and one
// audience, and maps those tokens to a user of this pairing that RBAC binds like any other. The consumer
// mints a short token by TokenRequest whenever it needs one; nothing is stored, exported or rotated.

// CredentialFederated is the --credential mode of a federated identity.
const CredentialFederated = "federated"

// FederatedTokenLifetime is how long a token minted for a federated identity lives: TokenRequest's minimum.
// A client asks for the next one shortly before it expires.
const FederatedTokenLifetime = 10 * time.Minute

// MaxFederatedTokenLifetime is the longest-lived token an authenticator entry accepts: a token minted for
// a year (as kubectl create token --duration can) is refused, so that a copy of one is worth a day at most.
const MaxFederatedTokenLifetime = 24 * time.Hour

// federatedContext separates the signature of a federated request from every other use of the handshake key.
const federatedContext = "kubectl-federate handshake federated v1"

// FederatedMessage is what the consumer signs for a federated identity, in place of Message: it binds the
// provider, the consumer, the nonce, the issuer the provider's API server is to trust (with where it reads
// its keys and the CA it verifies them with), the one ServiceAccount, and the proxy URL. A request altered
// in any of them, or moved to another pairing, verifies for nothing.
func FederatedMessage(providerID, consumerID, nonce string, f *v1alpha1.FederatedRequest, proxyURL string) []byte {
	h := func(s []byte) string { sum := sha256.Sum256(s); return hex.EncodeToString(sum[:]) }
	return []byte(strings.Join([]string{
		federatedContext,
		"provider=" + providerID,
		"consumer=" + consumerID,
		"nonce=" + nonce,
		"issuer-sha256=" + h([]byte(f.Issuer)),
		"discovery-url-sha256=" + h([]byte(f.DiscoveryURL)),
		"issuer-ca-sha256=" + h(f.IssuerCA),
		"service-account-sha256=" + h([]byte(f.ServiceAccount.Namespace+"\n"+f.ServiceAccount.Name+"\n"+f.ServiceAccount.UID)),
		"proxy-url-sha256=" + h([]byte(proxyURL)),
	}, "\n"))
}

// FederatedNaming is what an issuance names a federated identity with: the prefix the provider's
// authenticator entry puts before the token's subject, and the audience of its tokens. Both come from the
// issuance's own user (ExpectedUser of its nonce), so that every issuance after a revocation is a new user
// with a new audience, and nothing revoked regains rights.
type FederatedNaming struct {
	Prefix   string // kubectl-federate:<consumer>:<issuance>:
	Audience string // kubectl-federate:<provider>:<consumer>:<issuance>
}

// NameFederated names the federated identity of an issuance whose user is issuanceUser (ExpectedUser).
func NameFederated(providerID, consumerID, issuanceUser string) FederatedNaming {
	id := strings.TrimPrefix(issuanceUser, member.UserPrefix+consumerID+":")
	return FederatedNaming{Prefix: issuanceUser + ":", Audience: member.UserPrefix + providerID + ":" + consumerID + ":" + id}
}

// User is the user the provider's authenticator entry maps the ServiceAccount's tokens to.
func (n FederatedNaming) User(sa v1alpha1.ServiceAccountRef) string {
	return n.Prefix + ServiceAccountUser(sa.Namespace, sa.Name)
}

// FederatedNamingOf reads the naming back from a recorded user and its ServiceAccount.
func FederatedNamingOf(user, audience string, sa v1alpha1.ServiceAccountRef) (FederatedNaming, error) {
	prefix, ok := strings.CutSuffix(user, ServiceAccountUser(sa.Namespace, sa.Name))
	if !ok || !strings.HasPrefix(prefix, member.UserPrefix) || !strings.HasSuffix(prefix, ":") {
		return FederatedNaming{}, fmt.Errorf("user %q is not a federated user of ServiceAccount %s/%s", member.Truncate(user), sa.Namespace, sa.Name)
	}
	return FederatedNaming{Prefix: prefix, Audience: audience}, nil
}

// ValidateFederatedRequest checks the shape of a federated request: an https issuer (structured
// authentication accepts no other), a discovery URL likewise, a PEM CA, and a ServiceAccount whose names
// are valid (they go into CEL string literals, so nothing else may).
func ValidateFederatedRequest(field string, f *v1alpha1.FederatedRequest) error {
	if err := validateHTTPS(field+".issuer", f.Issuer); err != nil {
		return err
	}
	if f.DiscoveryURL != "" {
		if err := validateHTTPS(field+".discoveryURL", f.DiscoveryURL); err != nil {
			return err
		}
		if strings.TrimRight(f.DiscoveryURL, "/") == strings.TrimRight(f.Issuer, "/") {
			return fmt.Errorf("%s.discoveryURL: must differ from the issuer (leave it empty to read the issuer's own)", field)
		}
	}
	if len(f.IssuerCA) > 64<<10 {
		return fmt.Errorf("%s.issuerCA: is larger than 64 KiB", field)
	}
	if len(f.IssuerCA) > 0 && !x509.NewCertPool().AppendCertsFromPEM(f.IssuerCA) {
		return fmt.Errorf("%s.issuerCA: holds no PEM certificate", field)
	}
	return ValidateServiceAccountRef(field+".serviceAccount", f.ServiceAccount)
}

// ValidateServiceAccountRef checks a ServiceAccount's namespace, name and UID.
func ValidateServiceAccountRef(field string, sa v1alpha1.ServiceAccountRef) error {
	if errs := validation.IsDNS1123Label(sa.Namespace); len(errs) > 0 {
		return fmt.Errorf("%s.namespace %q: %s", field, member.Truncate(sa.Namespace), strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(sa.Name); len(errs) > 0 {
		return fmt.Errorf("%s.name %q: %s", field, member.Truncate(sa.Name), strings.Join(errs, "; "))
	}
	if len(sa.UID) > 64 || strings.Trim(sa.UID, "0123456789abcdef-") != "" {
		return fmt.Errorf("%s.uid %q: is not a UID", field, member.Truncate(sa.UID))
	}
	return nil
}

func validateHTTPS(field, raw string) error {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return fmt.Errorf("%s: is missing", field)
	case err != nil:
		return fmt.Errorf("%s %q: %w", field, member.Truncate(raw), err)
	case u.Scheme != "https" || u.Host == "":
		return fmt.Errorf("%s %q: must be an https URL (a provider's API server trusts no other issuer)", field, member.Truncate(raw))
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%s %q: must have no user, query or fragment", field, member.Truncate(raw))
	}
	return nil
}

// MintedToken is a token minted on the consumer for a federated identity.
type MintedToken struct {
	Token    string
	NotAfter time.Time
}

// ErrServiceAccountReplaced says that the consumer's ServiceAccount was deleted and made again since the
// pairing pinned it: the provider refuses the new one's tokens.
var ErrServiceAccountReplaced = errors.New("was deleted and created again since the pairing pinned it")

// MintToken (consumer) asks the consumer's API server for a token of the ServiceAccount, for the audience,
// living lifetime: TokenRequest, bound to the ServiceAccount only. It is stored nowhere; the caller hands it
// out or uses it, and it expires by itself.
func MintToken(ctx context.Context, c *member.Cluster, sa v1alpha1.ServiceAccountRef, audience string, lifetime time.Duration) (*MintedToken, error) {
	seconds := int64(lifetime / time.Second)
	tr := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: &seconds}}
	out, err := c.Kube.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name, tr, metav1.CreateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("ServiceAccount %s/%s not found on this cluster (the consumer): the federated pairing acts through it", sa.Namespace, sa.Name)
	case err != nil:
		return nil, fmt.Errorf("minting a token of ServiceAccount %s/%s: %w", sa.Namespace, sa.Name, err)
	case out.Status.Token == "":
		return nil, fmt.Errorf("minting a token of ServiceAccount %s/%s: the API server returned no token", sa.Namespace, sa.Name)
	}
	if sa.UID != "" {
		if uid, err := tokenServiceAccountUID(out.Status.Token); err == nil && uid != sa.UID {
			return nil, fmt.Errorf("ServiceAccount %s/%s %w (UID %s, pinned %s)", sa.Namespace, sa.Name, ErrServiceAccountReplaced, uid, sa.UID)
		}
	}
	return &MintedToken{Token: out.Status.Token, NotAfter: out.Status.ExpirationTimestamp.Time}, nil
}

// tokenServiceAccountUID reads the UID of the ServiceAccount a bound token names.
func tokenServiceAccountUID(token string) (string, error) {
	var claims struct {
		K8s struct {
			ServiceAccount struct {
				UID string `json:"uid"`
			} `json:"serviceaccount"`
		} `json:"kubernetes.io"`
	}
	if err := decodeClaims(token, &claims); err != nil {
		return "", err
	}
	return claims.K8s.ServiceAccount.UID, nil
}

package credential

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Credential modes: what a provider issues for an identity.
const (
	// CredentialCertificate is a client certificate through the CSR API (the default): the private key
	// never leaves the consumer.
	CredentialCertificate = "certificate"
	// CredentialToken is a TokenRequest token of a ServiceAccount in the identity's namespace, for providers
	// whose controller-manager does not sign kube-apiserver-client certificates (EKS, for one).
	CredentialToken = "token"
	// CredentialAuto tries a certificate and falls back to a token when the signer issues none in time.
	CredentialAuto = "auto"
)

// CredentialModes are the values of --credential.
var CredentialModes = []string{CredentialCertificate, CredentialToken, CredentialAuto}

// DefaultSignerTimeout bounds the wait for the kube-apiserver-client signer once a CSR is approved. A
// running signer answers in well under a second; one that is not running never answers.
const DefaultSignerTimeout = 20 * time.Second

// ErrNoCertificate means the CSR was approved but the signer issued no certificate within the bounded
// wait: most likely no controller signs kubernetes.io/kube-apiserver-client on this cluster.
var ErrNoCertificate = errors.New("the signer issued no certificate")

// CredentialServiceAccount starts the name of the ServiceAccount a Token credential belongs to, in the
// identity's own namespace (the tenant namespace, or a slice's): each issuance makes a new one
// (CredentialServiceAccount-<random>), so that renewal moves the RoleBinding to another user at once, as
// it does for a certificate, and then deletes the old one, whose tokens stop authenticating. The sandbox
// refuses pods that would run as one.
const CredentialServiceAccount = "federate-credential" //nolint:gosec // a name, not a credential

// LabelCredential marks the credential ServiceAccounts, which revocation and renewal delete by it.
const LabelCredential = "federate.dev/credential" //nolint:gosec // a label key, not a credential

// issuedToken is a Token credential as the provider issued it.
type issuedToken struct {
	Token    string
	User     string
	NotAfter time.Time
}

// issueToken (provider) makes a new credential ServiceAccount in ns and requests a token of it valid for
// expiration, or less if the API server caps it. The caller binds the new user and then calls
// deleteCredentialAccounts to end the earlier ones.
func issueToken(ctx context.Context, c *member.Cluster, ns string, labels map[string]string, expiration time.Duration) (*issuedToken, error) {
	if c.DryRun {
		return nil, &member.DryRunStop{At: "the token request in " + ns, Why: "a dry run creates no ServiceAccount, so the API server issues no token the next steps need"}
	}
	no := false
	sas := c.Kube.CoreV1().ServiceAccounts(ns)
	l := map[string]string{LabelCredential: "token"}
	maps.Copy(l, labels)
	sa, err := sas.Create(ctx, &corev1.ServiceAccount{
		ObjectMeta:                   metav1.ObjectMeta{GenerateName: CredentialServiceAccount + "-", Namespace: ns, Labels: l},
		AutomountServiceAccountToken: &no,
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating a ServiceAccount in %s: %w", ns, err)
	}
	seconds := int64(expiration / time.Second)
	// Bound to no object but the ServiceAccount itself (its UID is in the token): deleting it, as renewal
	// and revocation do, ends the token.
	tr, err := sas.CreateToken(ctx, sa.Name, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err == nil && tr.Status.Token == "" {
		err = errors.New("the API server returned no token")
	}
	if err != nil {
		// A ServiceAccount without a token is of no use to anyone: take it back.
		uid := sa.UID
		_ = sas.Delete(context.WithoutCancel(ctx), sa.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		return nil, fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", ns, sa.Name, err)
	}
	return &issuedToken{Token: tr.Status.Token, User: ServiceAccountUser(ns, sa.Name), NotAfter: tr.Status.ExpirationTimestamp.Time}, nil
}

// DeleteCredentialAccounts deletes the credential ServiceAccounts of ns but keepUser's ("" for all), which
// ends every token issued for them: the API server refuses them once its cache of successful token
// authentications (10 s) has forgotten them, and they are bound to nothing from the moment the
// RoleBinding moved on.
func DeleteCredentialAccounts(ctx context.Context, c *member.Cluster, ns, keepUser string, alsoKeep ...string) error {
	sas := c.Kube.CoreV1().ServiceAccounts(ns)
	// By name, not by label: a tenant whose role lets it edit ServiceAccounts could drop a label, never
	// the name. Only kubectl federate names one so in a sandbox (and the tenant could only make one of its
	// own, which goes too).
	list, err := c.ServiceAccountsRead(ns).Take(ctx, c)
	if err != nil {
		return objects.IgnoreNotFound(err)
	}
	var errs []error
	for i := range list.Items {
		sa := &list.Items[i]
		if u := ServiceAccountUser(ns, sa.Name); !strings.HasPrefix(sa.Name, CredentialServiceAccount+"-") || u == keepUser || slices.Contains(alsoKeep, u) {
			continue
		}
		errs = append(errs, objects.IgnoreNotFound(sas.Delete(ctx, sa.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &sa.UID}})))
	}
	return errors.Join(errs...)
}

// ShortenedWarning says when a credential expires earlier than asked, or "" when it does not.
func ShortenedWarning(what, by string, lifetime, asked time.Duration, notAfter time.Time) string {
	if lifetime >= asked-time.Minute {
		return ""
	}
	return fmt.Sprintf("%s shortened the %s to %s (requested %s): it expires at %s",
		by, what, lifetime.Round(time.Second), asked, notAfter.UTC().Format(time.RFC3339))
}

// SubjectFor is the RBAC subject of an issued identity's user: a ServiceAccount for a token, else a user.
func SubjectFor(user string) rbacv1.Subject {
	if ns, name, err := SplitServiceAccountUser(user); err == nil {
		return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
	}
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}
}

// SubjectUser is the inverse of subjectFor.
func SubjectUser(s rbacv1.Subject) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		return ServiceAccountUser(s.Namespace, s.Name)
	}
	return s.Name
}

// TokenClaims reads the subject and expiry of a ServiceAccount token without verifying its signature:
// the consumer checks the token's authenticity with the integrity MAC of the Identity that carries it
// (or by the provider accepting it), and needs only to know whom it names and until when.
func TokenClaims(field, token string) (user string, notAfter time.Time, err error) {
	var claims struct {
		Sub string `json:"sub"`
		Exp int64  `json:"exp"`
	}
	if err := decodeClaims(token, &claims); err != nil {
		return "", time.Time{}, fmt.Errorf("%s: %w", field, err)
	}
	if _, _, err := SplitServiceAccountUser(claims.Sub); err != nil {
		return "", time.Time{}, fmt.Errorf("%s: subject %q is not a ServiceAccount", field, member.Truncate(claims.Sub))
	}
	if claims.Exp == 0 {
		return "", time.Time{}, fmt.Errorf("%s: has no expiry", field)
	}
	return claims.Sub, time.Unix(claims.Exp, 0), nil
}

// decodeClaims reads a JSON Web Token's claims into v, without verifying its signature.
func decodeClaims(token string, v any) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errors.New("is not a JSON Web Token")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return fmt.Errorf("claims are not base64url: %w", err)
	}
	if err := json.Unmarshal(payload, v); err != nil {
		return fmt.Errorf("claims: %w", err)
	}
	return nil
}

// ServiceAccountPrefix starts the user name of every ServiceAccount token.
const ServiceAccountPrefix = "system:serviceaccount:"

// ServiceAccountUser is the user name the API server gives the tokens of ServiceAccount ns/name.
func ServiceAccountUser(ns, name string) string { return ServiceAccountPrefix + ns + ":" + name }

// SplitServiceAccountUser returns the namespace and name of a ServiceAccount's user name.
func SplitServiceAccountUser(user string) (ns, name string, err error) {
	rest, ok := strings.CutPrefix(user, ServiceAccountPrefix)
	if !ok {
		return "", "", errors.New("not a ServiceAccount user")
	}
	ns, name, ok = strings.Cut(rest, ":")
	if !ok || ns == "" || name == "" || strings.Contains(name, ":") {
		return "", "", errors.New("not a ServiceAccount user")
	}
	return ns, name, nil
}

// IsCredentialUser tells whether user is a credential ServiceAccount of namespace ns.
func IsCredentialUser(user, ns string) bool {
	gotNS, name, err := SplitServiceAccountUser(user)
	return err == nil && gotNS == ns && strings.HasPrefix(name, CredentialServiceAccount+"-")
}

package handshake

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// The consumer's side of a federated pairing: it names one ServiceAccount of its own, reads its own
// issuer from its discovery document, and checks from where it runs what the provider's API server will
// need of that issuer (an https URL, a discovery document and keys anonymous requests may read). Once
// issued, the pairing's identity is an Identity in federate-system and nothing else: a kubeconfig with a
// token minted on the spot stands in for the stored one, in memory only.

// FederatedOptions are the consumer's choices for a federated request.
type FederatedOptions struct {
	ServiceAccount v1alpha1.ServiceAccountRef // its namespace and name; the UID is read
	// DiscoveryURL, if set, is where the provider's API server reads the issuer's discovery document.
	DiscoveryURL string
	// IssuerCA, if set, verifies the issuer; else the CA of this cluster's own connection when the issuer
	// is this cluster's API server, and the provider's system roots otherwise.
	IssuerCA []byte
}

// discoveryDocument is the part of an OpenID discovery document the provider's API server reads.
type discoveryDocument struct {
	Issuer  string `json:"issuer"`
	JWKSURI string `json:"jwks_uri"`
}

// resolveFederated (consumer) makes the federated request: the ServiceAccount (its UID pinned), this
// cluster's issuer as its discovery document names it, and the CA that verifies the issuer. Findings are
// what the provider's API server will lack, seen from here: said as warnings, they are not refused, since
// the provider may reach the issuer otherwise.
func resolveFederated(ctx context.Context, c *member.Cluster, o FederatedOptions) (*v1alpha1.FederatedRequest, []string, error) {
	sa := o.ServiceAccount
	if err := credential.ValidateServiceAccountRef("service account", sa); err != nil {
		return nil, nil, err
	}
	got, err := c.Kube.CoreV1().ServiceAccounts(sa.Namespace).Get(ctx, sa.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("ServiceAccount %s/%s not found on this cluster (the consumer): it acts on the provider, create it first", sa.Namespace, sa.Name)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading ServiceAccount %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	sa.UID = string(got.UID)
	raw, err := c.Kube.CoreV1().RESTClient().Get().AbsPath("/.well-known/openid-configuration").DoRaw(ctx)
	if apierrors.IsNotFound(err) {
		return nil, nil, errors.New("this cluster (the consumer) serves no ServiceAccount issuer discovery document (/.well-known/openid-configuration): its API server needs a service-account-issuer, and a jwks URI the provider reaches")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading this cluster's ServiceAccount issuer discovery document: %w", err)
	}
	var doc discoveryDocument
	if err := json.Unmarshal(raw, &doc); err != nil || doc.Issuer == "" {
		return nil, nil, fmt.Errorf("this cluster's ServiceAccount issuer discovery document names no issuer: %s", member.Truncate(string(raw)))
	}
	req := &v1alpha1.FederatedRequest{Issuer: doc.Issuer, DiscoveryURL: o.DiscoveryURL, IssuerCA: o.IssuerCA, ServiceAccount: sa}
	if len(req.IssuerCA) == 0 && c.Config != nil {
		if server, ca, err := kubeconfig.ServerOf(c.Config); err == nil && sameHost(server, req.Issuer, req.DiscoveryURL) {
			req.IssuerCA = ca
		}
	}
	if err := credential.ValidateFederatedRequest("this cluster's issuer", req); err != nil {
		return nil, nil, err
	}
	return req, preflight(ctx, req, doc), nil
}

// sameHost tells whether the provider's API server reads the issuer's documents from server: the
// discovery URL when one is given, else the issuer.
func sameHost(server, issuer, discovery string) bool {
	from := issuer
	if discovery != "" {
		from = discovery
	}
	a, errA := url.Parse(server)
	b, errB := url.Parse(from)
	return errA == nil && errB == nil && a.Host == b.Host
}

// preflightTimeout bounds each anonymous request of the preflight: an issuer that does not answer in that
// time will not answer the provider's API server either.
const preflightTimeout = 5 * time.Second

// preflight reads, as the provider's API server will (anonymously, verifying with the request's CA), the
// discovery document and the keys it names, and says what is missing. Only from this machine: a finding
// is a warning, and the proof once the entry is installed is what counts.
func preflight(ctx context.Context, req *v1alpha1.FederatedRequest, doc discoveryDocument) []string {
	var findings []string
	if req.DiscoveryURL == "" && clusterInternal(hostOf(req.Issuer)) {
		findings = append(findings, fmt.Sprintf("issuer %s is a name only this cluster's own network resolves: the provider's API server cannot reach it; give a discovery URL it can reach (this cluster's API server's), or an issuer of its own", req.Issuer))
	}
	client := anonymousClient(req.IssuerCA)
	discovery := req.DiscoveryURL
	if discovery == "" {
		discovery = strings.TrimRight(req.Issuer, "/") + "/.well-known/openid-configuration"
	}
	if f := anonymousGet(ctx, client, "discovery document", discovery); f != "" {
		return append(findings, f)
	}
	if doc.JWKSURI == "" {
		return append(findings, "its discovery document names no jwks_uri: the provider's API server finds no keys")
	}
	if f := anonymousGet(ctx, client, "keys", doc.JWKSURI); f != "" {
		findings = append(findings, f)
	}
	return findings
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// clusterInternal tells whether a host name resolves only inside a cluster: a Service's name
// (kubernetes.default.svc, ....svc.cluster.local) or a bare name such as kubernetes.
func clusterInternal(host string) bool {
	switch {
	case host == "" || host == "localhost" || net.ParseIP(host) != nil:
		return false
	case strings.HasSuffix(host, ".svc") || strings.Contains(host, ".svc.") || strings.HasSuffix(host, ".cluster.local"):
		return true
	}
	return !strings.Contains(host, ".")
}

func anonymousClient(ca []byte) *http.Client {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(ca) > 0 {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		tc.RootCAs = pool
	}
	return &http.Client{Timeout: preflightTimeout, Transport: &http.Transport{TLSClientConfig: tc, Proxy: http.ProxyFromEnvironment}}
}

// anonymousGet reads what without credentials and says why the provider's API server could not, or "".
func anonymousGet(ctx context.Context, client *http.Client, what, target string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Sprintf("the issuer's %s (%s): %v", what, target, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		var unknown x509.UnknownAuthorityError
		if errors.As(err, &unknown) {
			return fmt.Sprintf("the issuer's %s (%s): its certificate does not verify with the issuer CA the request carries", what, target)
		}
		return fmt.Sprintf("the issuer's %s (%s) is not reachable from here (%v): the provider's API server must reach it", what, target, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	switch resp.StatusCode {
	case http.StatusOK:
		return ""
	case http.StatusUnauthorized:
		return fmt.Sprintf("the issuer's %s (%s) refuses anonymous requests (401): the provider's API server reads it with no credential, so this cluster's API server must allow anonymous authentication", what, target)
	case http.StatusForbidden:
		return fmt.Sprintf("the issuer's %s (%s) is forbidden to anonymous requests (403): bind ClusterRole system:service-account-issuer-discovery to Group system:unauthenticated on this cluster", what, target)
	}
	return fmt.Sprintf("the issuer's %s (%s) answers %s", what, target, resp.Status)
}

// resolvedFederated is a federated request as read from this cluster, and what the preflight found.
type resolvedFederated struct {
	req      *v1alpha1.FederatedRequest
	findings []string
}

// resolveFederatedStep is resolveFederated as a step of the run, its findings said as warnings.
func resolveFederatedStep(ctx context.Context, c *member.Cluster, o FederatedOptions) (*resolvedFederated, error) {
	r := c.Reporter()
	var out resolvedFederated
	if err := member.Step(r, "Reading the ServiceAccount and this cluster's issuer", "ServiceAccount "+o.ServiceAccount.Namespace+"/"+o.ServiceAccount.Name+" and issuer read", func() error {
		var err error
		out.req, out.findings, err = resolveFederated(ctx, c, o)
		return err
	}); err != nil {
		return nil, err
	}
	for _, f := range out.findings {
		r.Warn(f)
	}
	return &out, nil
}

// generateFederated (consumer) signs a federated request: the issuer and ServiceAccount resolved here, no
// client key and no CSR. The nonce-derived key that will verify the identity's MACs is held in memory (a
// one-shot run), or kept until the import in the pending Secret, which holds nothing else.
func generateFederated(ctx context.Context, c *member.Cluster, o TenantOptions, fed *resolvedFederated, self *member.Self, user string, hold bool) (*v1alpha1.Tenant, *heldKey, error) {
	r := c.Reporter()
	req, findings := fed.req, fed.findings
	macKey := credential.IntegrityKey(o.Nonce)
	var held *heldKey
	if hold {
		held = &heldKey{user: user, macKey: macKey, findings: findings}
	} else if err := member.Step(r, "Keeping the request's integrity key", "Integrity key kept until the import (Secret "+member.SystemNamespace+"/"+member.PendingKeySecretName(o.ProviderID)+"; no credential)", func() error {
		return ensurePendingMAC(ctx, c, o.ProviderID, user, macKey)
	}); err != nil {
		return nil, nil, err
	}
	sig := credential.Sign(self.PrivateKey, credential.FederatedMessage(o.ProviderID, self.ClusterID, o.Nonce, req, o.ProxyURL))
	return &v1alpha1.Tenant{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{Name: self.ClusterID, Namespace: member.TenantNamespace(self.ClusterID)},
		Spec: v1alpha1.TenantSpec{ClusterID: self.ClusterID, ProviderClusterID: o.ProviderID, PublicKey: self.PublicKey,
			Signature: sig, ProxyURL: o.ProxyURL, Federated: req},
	}, held, nil
}

// ensurePendingMAC keeps, for the manual flow's import, the key that verifies the identity's MACs: in the
// pending Secret, under this request's user, with no client key (a federated identity has none).
func ensurePendingMAC(ctx context.Context, c *member.Cluster, providerID, user string, macKey []byte) error {
	secrets := c.Kube.CoreV1().Secrets(member.SystemNamespace)
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: member.PendingKeySecretName(providerID), Namespace: member.SystemNamespace,
			Labels: member.IdentityLabels(providerID), Annotations: map[string]string{UserAnnotation: user}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{integrityKey: macKey},
	}
	existing, err := c.SecretRead(member.SystemNamespace, sec.Name).Take(ctx, c)
	switch {
	case apierrors.IsNotFound(err):
		_, err = secrets.Create(ctx, sec, metav1.CreateOptions{})
	case err == nil:
		sec.ResourceVersion = existing.ResourceVersion
		_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("keeping the integrity key in Secret %s/%s: %w", member.SystemNamespace, sec.Name, err)
	}
	return nil
}

// storedIdentity reads the pairing's Identity this cluster holds for the provider (the early read, left
// for the import's own); nil if none.
func storedIdentity(ctx context.Context, c *member.Cluster, providerID string) (*v1alpha1.Identity, error) {
	u, err := c.ObjectRead(v1alpha1.IdentityGVR, member.SystemNamespace, member.IdentityName(providerID)).Peek(ctx, c)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var id v1alpha1.Identity
	if err := objects.FromUnstructured(u, &id); err != nil {
		return nil, fmt.Errorf("identity %s/%s: %w", member.SystemNamespace, member.IdentityName(providerID), err)
	}
	return &id, nil
}

// sameFederatedIdentity tells whether this very identity (every field as sealed) is the one imported.
func sameFederatedIdentity(ctx context.Context, c *member.Cluster, id *v1alpha1.Identity) (bool, error) {
	stored, err := storedIdentity(ctx, c, id.Spec.ClusterID)
	if err != nil || stored == nil {
		return false, err
	}
	return sameIdentitySpec(&stored.Spec, &id.Spec), nil
}

// sameIdentitySpec tells whether two specs are the same identity, every field as sealed: the stored one
// carries the type the API server defaulted (ControlPlane), the identity.yaml none.
func sameIdentitySpec(stored, id *v1alpha1.IdentitySpec) bool {
	a, b := *stored, *id
	a.Type, b.Type = v1alpha1.IdentityType(&a), v1alpha1.IdentityType(&b)
	return reflect.DeepEqual(a, b)
}

// sameFederatedNaming tells whether the identity keeps the naming (prefix and audience) of the federated
// identity imported before: a re-run of an active federated pairing is issued under it.
func sameFederatedNaming(ctx context.Context, c *member.Cluster, id *v1alpha1.Identity) bool {
	stored, err := storedIdentity(ctx, c, id.Spec.ClusterID)
	if err != nil || stored == nil || stored.Spec.Federated == nil {
		return false
	}
	old, errOld := credential.FederatedNamingOf(stored.Spec.Federated.User, stored.Spec.Federated.Audience, stored.Spec.Federated.ServiceAccount)
	now, errNow := credential.FederatedNamingOf(id.Spec.Federated.User, id.Spec.Federated.Audience, id.Spec.Federated.ServiceAccount)
	return errOld == nil && errNow == nil && old == now
}

// FederatedIdentity (consumer) reads the pairing's Identity for the provider if it is federated; nil if
// there is none, or it is another kind.
func FederatedIdentity(ctx context.Context, c *member.Cluster, providerID string) (*v1alpha1.Identity, error) {
	u, err := c.Dynamic.Resource(v1alpha1.IdentityGVR).Namespace(member.SystemNamespace).Get(ctx, member.IdentityName(providerID), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var id v1alpha1.Identity
	if err := objects.FromUnstructured(u, &id); err != nil {
		return nil, fmt.Errorf("identity %s/%s: %w", member.SystemNamespace, member.IdentityName(providerID), err)
	}
	if id.Spec.Credential != v1alpha1.CredentialFederated || id.Spec.Federated == nil {
		return nil, nil
	}
	return &id, nil
}

// MintedKubeconfig (consumer) is a kubeconfig for the provider of a federated identity that authenticates
// with a token minted now, for the identity's audience: it exists in memory only, and its token expires by
// itself within FederatedTokenLifetime.
func MintedKubeconfig(ctx context.Context, c *member.Cluster, id *v1alpha1.Identity) ([]byte, *credential.MintedToken, error) {
	f := id.Spec.Federated
	tok, err := credential.MintToken(ctx, c, f.ServiceAccount, f.Audience, credential.FederatedTokenLifetime)
	if err != nil {
		return nil, nil, err
	}
	data, err := kubeconfig.Build(kubeconfig.Params{Name: id.Spec.ClusterID, Server: id.Spec.APIServer, CA: id.Spec.CA,
		ProxyURL: id.Spec.ProxyURL, Namespace: id.Spec.Namespace, Token: tok.Token})
	return data, tok, err
}

package handshake

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// The provider's half of a federated pairing is an entry of its API server's structured authentication
// configuration (kube-apiserver --authentication-config, apiserver.config.k8s.io/v1): a file on the
// control plane's hosts that no API request can write, reloaded by the API server when it changes. The
// tool writes the entry, never the file: it prints it for the administrator to merge, and proves it once
// installed. These types are the part of that API the entry uses, with its field names.

// AuthenticationConfigAPIVersion and AuthenticationConfigKind name the configuration file's type.
const (
	AuthenticationConfigAPIVersion = "apiserver.config.k8s.io/v1"
	AuthenticationConfigKind       = "AuthenticationConfiguration"
)

// AuthenticationConfiguration is the file, holding only this tool's entries.
type AuthenticationConfiguration struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	JWT        []JWTAuthenticator `json:"jwt"`
}

// JWTAuthenticator is one entry: the consumer's issuer, what its tokens must claim, and whom they are.
type JWTAuthenticator struct {
	Issuer               Issuer           `json:"issuer"`
	ClaimValidationRules []ValidationRule `json:"claimValidationRules"`
	ClaimMappings        ClaimMappings    `json:"claimMappings"`
	UserValidationRules  []ValidationRule `json:"userValidationRules"`
}

// Issuer is where the API server reads the issuer's keys, and the audience a token must carry.
type Issuer struct {
	URL                  string   `json:"url"`
	DiscoveryURL         string   `json:"discoveryURL,omitempty"`
	CertificateAuthority string   `json:"certificateAuthority,omitempty"`
	Audiences            []string `json:"audiences"`
}

// ValidationRule is a CEL expression that must hold, and what the API server logs when it does not.
type ValidationRule struct {
	Expression string `json:"expression"`
	Message    string `json:"message"`
}

// ClaimMappings maps a token to a user: here only its name, from the subject under a prefix; no group,
// no extra, so a token can claim nothing more.
type ClaimMappings struct {
	Username PrefixedClaim `json:"username"`
}

// PrefixedClaim is a claim and the prefix put before it.
type PrefixedClaim struct {
	Claim  string `json:"claim"`
	Prefix string `json:"prefix"`
}

// Authenticator is the entry a provider's API server needs for the federated pairing a Tenant records:
// it trusts the consumer's issuer only for tokens of the pairing's audience, whose subject is the one
// ServiceAccount (by name and UID) and which live no longer than a day, and maps them to the pairing's
// user under a prefix unique to the consumer and the issuance, which no system: name can have.
func Authenticator(t *v1alpha1.Tenant) (*JWTAuthenticator, error) {
	f := t.Spec.Federated
	if f == nil || t.Status.Credential != v1alpha1.CredentialFederated || t.Status.Audience == "" {
		return nil, fmt.Errorf("tenant %s/%s: no federated identity was issued", t.Namespace, t.Name)
	}
	if err := credential.ValidateFederatedRequest("spec.federated", f); err != nil {
		return nil, err
	}
	n, err := credential.FederatedNamingOf(t.Status.User, t.Status.Audience, f.ServiceAccount)
	if err != nil {
		return nil, fmt.Errorf("status.user: %w", err)
	}
	return authenticatorFor(t.Spec.ClusterID, f, n), nil
}

// AuthenticatorFor is the entry of a federated identity issued for the request, to user and audience.
func AuthenticatorFor(consumerID string, f *v1alpha1.FederatedRequest, user, audience string) (*JWTAuthenticator, error) {
	n, err := credential.FederatedNamingOf(user, audience, f.ServiceAccount)
	if err != nil {
		return nil, err
	}
	return authenticatorFor(consumerID, f, n), nil
}

func authenticatorFor(consumerID string, f *v1alpha1.FederatedRequest, n credential.FederatedNaming) *JWTAuthenticator {
	sa := f.ServiceAccount
	sub := credential.ServiceAccountUser(sa.Namespace, sa.Name)
	rules := []ValidationRule{{
		Expression: "claims.sub == " + celString(sub),
		Message:    "kubectl federate: only ServiceAccount " + sa.Namespace + "/" + sa.Name + " of consumer " + consumerID + " acts on this cluster",
	}}
	if sa.UID != "" {
		rules = append(rules, ValidationRule{
			// A token without the claim makes the expression fail, which refuses it as well.
			Expression: "claims['kubernetes.io'].serviceaccount.uid == " + celString(sa.UID),
			Message:    "kubectl federate: only ServiceAccount " + sa.Namespace + "/" + sa.Name + " of consumer " + consumerID + " with UID " + sa.UID + " (not one made again under its name)",
		})
	}
	rules = append(rules, ValidationRule{
		Expression: "has(claims.iat) && int(claims.exp) - int(claims.iat) <= " + strconv.Itoa(int(credential.MaxFederatedTokenLifetime.Seconds())),
		Message:    "kubectl federate: tokens of consumer " + consumerID + " live at most " + DurationText(credential.MaxFederatedTokenLifetime),
	})
	return &JWTAuthenticator{
		Issuer:               Issuer{URL: f.Issuer, DiscoveryURL: f.DiscoveryURL, CertificateAuthority: string(f.IssuerCA), Audiences: []string{n.Audience}},
		ClaimValidationRules: rules,
		ClaimMappings:        ClaimMappings{Username: PrefixedClaim{Claim: "sub", Prefix: n.Prefix}},
		UserValidationRules: []ValidationRule{
			{Expression: "!user.username.startsWith('system:')", Message: "kubectl federate: a consumer's token is never a system: user"},
			{Expression: "user.groups.all(g, !g.startsWith('system:'))", Message: "kubectl federate: a consumer's token is in no system: group"},
		},
	}
}

// Authenticators (provider) are the entries this cluster's API server needs for its active federated
// pairings: every consumer's, or consumerID's alone (NotFound when it has no federated pairing here).
func Authenticators(ctx context.Context, c *member.Cluster, consumerID string) ([]*JWTAuthenticator, error) {
	list, err := c.Dynamic.Resource(v1alpha1.TenantGVR).List(ctx, metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("listing Tenants: %w", err)
	}
	var out []*JWTAuthenticator
	var federated []string
	if list != nil {
		for i := range list.Items {
			var t v1alpha1.Tenant
			if err := objects.FromUnstructured(&list.Items[i], &t); err != nil {
				return nil, err
			}
			if t.Status.Credential != v1alpha1.CredentialFederated || t.Status.Phase != PhaseActive {
				continue
			}
			federated = append(federated, t.Spec.ClusterID)
			if consumerID != "" && t.Spec.ClusterID != consumerID {
				continue
			}
			e, err := Authenticator(&t)
			if err != nil {
				return nil, fmt.Errorf("tenant %s/%s: %w", t.Namespace, t.Name, err)
			}
			out = append(out, e)
		}
	}
	if consumerID != "" && len(out) == 0 {
		return nil, NotFound("federated consumer", consumerID, "on this cluster (an active federated pairing)", federated)
	}
	return out, nil
}

// celString is s as a CEL string literal. Every value quoted here was validated to hold no quote or
// backslash (DNS names, UIDs, user names made of them); escaping them anyway costs nothing.
func celString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// AuthenticationConfigYAML is the configuration file holding the entries, as YAML ready to merge into the
// jwt list of the provider's own.
func AuthenticationConfigYAML(entries ...*JWTAuthenticator) ([]byte, error) {
	cfg := AuthenticationConfiguration{APIVersion: AuthenticationConfigAPIVersion, Kind: AuthenticationConfigKind, JWT: []JWTAuthenticator{}}
	for _, e := range entries {
		cfg.JWT = append(cfg.JWT, *e)
	}
	return yaml.Marshal(cfg)
}

// IsFederatedUser tells whether user is a federated user of the consumer (kubectl-federate:<consumer>:...
// followed by a ServiceAccount's user name).
func IsFederatedUser(user, consumerID string) bool {
	rest, ok := strings.CutPrefix(user, member.UserPrefix+consumerID+":")
	if !ok {
		return false
	}
	_, sa, ok := strings.Cut(rest, ":")
	return ok && strings.HasPrefix(sa, credential.ServiceAccountPrefix)
}

// What the provider's API server tells of its JWT authenticators, in its metrics (by the SHA-256 of the
// issuer URL): whether it fetched an issuer's keys, whether it tried tokens of that issuer, and when it last
// reloaded its configuration, successfully or not.
const (
	metricJWKSFetch = "apiserver_authentication_jwt_authenticator_jwks_fetch_last_timestamp_seconds"
	metricLatency   = "apiserver_authentication_jwt_authenticator_latency_seconds_count"
	metricReload    = "apiserver_authentication_config_controller_automatic_reload_last_timestamp_seconds"
)

// DiagnoseAuthenticator (provider) says why the provider's API server refused a token of the issuer, from
// what its metrics show of the issuer's authenticator; "" when they cannot be read (its administrator's
// credential may not read /metrics) or show nothing wrong.
func DiagnoseAuthenticator(ctx context.Context, c *member.Cluster, issuer string) string {
	raw, err := c.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return ""
	}
	return diagnose(parseMetrics(raw), issuer)
}

func diagnose(m metrics, issuer string) string {
	h := map[string]string{"jwt_issuer_hash": fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(issuer)))}
	fetched, fetchFailed := m.max(metricJWKSFetch, h, "result", "success"), m.max(metricJWKSFetch, h, "result", "failure")
	tried := m.max(metricLatency, h, "", "") > 0
	reloadOK, reloadFailed := m.max(metricReload, nil, "status", "success"), m.max(metricReload, nil, "status", "failure")
	switch {
	case fetched > 0:
		return "the provider's API server has an authenticator for issuer " + issuer + " and its keys, yet refused the token: the entry installed is not the one printed (its audience, claim rules or username prefix differ); install the one printed"
	case fetchFailed > 0:
		return "the provider's API server has an authenticator for issuer " + issuer + " but cannot fetch its keys (the jwks_uri of its discovery document): not reachable from the provider's API server, not verified by the entry's certificateAuthority, or forbidden to anonymous requests"
	case tried:
		return "the provider's API server has an authenticator for issuer " + issuer + " that is not initialized: it cannot read the issuer's discovery document (not reachable from the provider's API server, not verified by the entry's certificateAuthority, or forbidden to anonymous requests)"
	case reloadFailed > reloadOK:
		return "the provider's API server has no authenticator for issuer " + issuer + ", and its last reload of its authentication configuration failed (at " + time.Unix(int64(reloadFailed), 0).UTC().Format(time.RFC3339) +
			"): the file is invalid, or an issuer in it cannot be reached within a minute (then it keeps the previous configuration); its log says which"
	}
	return "the provider's API server has no authenticator for issuer " + issuer + ": the entry is not installed in the file its authentication-config names, or not loaded yet (it reloads within seconds of a change, once every issuer in the file answers)"
}

// metrics are an API server's samples, by metric name.
type metrics map[string][]sample

type sample struct {
	labels map[string]string
	value  float64
}

// max is the largest value of the metric's samples that carry the labels of match and, if key is set, the
// label key with the value; 0 if none.
func (m metrics) max(name string, match map[string]string, key, value string) float64 {
	var out float64
	for _, s := range m[name] {
		ok := key == "" || s.labels[key] == value
		for k, v := range match {
			ok = ok && s.labels[k] == v
		}
		if ok && s.value > out {
			out = s.value
		}
	}
	return out
}

// parseMetrics reads the samples of the Prometheus text format this diagnosis needs: name{labels} value.
func parseMetrics(raw []byte) metrics {
	m := metrics{}
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, rest := line, map[string]string{}, ""
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				continue
			}
			name, rest = line[:i], line[j+1:]
			for _, kv := range strings.Split(line[i+1:j], ",") {
				if k, v, ok := strings.Cut(kv, "="); ok {
					labels[k] = strings.Trim(v, `"`)
				}
			}
		} else if i := strings.IndexByte(line, ' '); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
			m[name] = append(m[name], sample{labels: labels, value: v})
		}
	}
	return m
}

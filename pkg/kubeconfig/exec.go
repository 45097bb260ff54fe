package kubeconfig

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientauthv1 "k8s.io/client-go/pkg/apis/clientauthentication/v1"
	clientauthv1beta1 "k8s.io/client-go/pkg/apis/clientauthentication/v1beta1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The exec credential protocol of client-go (client.authentication.k8s.io): a client runs a plugin, hands
// it an ExecCredential in KUBERNETES_EXEC_INFO and reads one back on its stdout. It runs the plugin again
// only once the expirationTimestamp it was given has passed, or after a 401; a credential without one is
// kept for the life of the process (k8s.io/client-go/plugin/pkg/client/auth/exec).
const (
	ExecAPIVersion        = "client.authentication.k8s.io/v1"
	ExecAPIVersionV1beta1 = "client.authentication.k8s.io/v1beta1"
	// ExecExtension names the per-cluster configuration of an exec plugin in a kubeconfig cluster's (and a
	// ClusterProfile access provider's) extensions: client-go hands it to the plugin as
	// spec.cluster.config when the user's exec sets provideClusterInfo.
	ExecExtension = "client.authentication.k8s.io/exec"
	// ExecInfoEnv is the environment variable the request arrives in.
	ExecInfoEnv = "KUBERNETES_EXEC_INFO"
)

// ExecRequest is what a client asked a plugin for: the protocol version it speaks, and the cluster's
// plugin configuration when it provides cluster information.
type ExecRequest struct {
	APIVersion string
	Server     string
	Config     []byte // spec.cluster.config as JSON; empty when none
}

// ParseExecRequest reads the ExecCredential a client put in KUBERNETES_EXEC_INFO (its value). An empty
// value (a person running the plugin) asks for v1 with no cluster information.
func ParseExecRequest(value string) (*ExecRequest, error) {
	if strings.TrimSpace(value) == "" {
		return &ExecRequest{APIVersion: ExecAPIVersion}, nil
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Cluster *struct {
				Server string          `json:"server"`
				Config json.RawMessage `json:"config"`
			} `json:"cluster"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(value), &head); err != nil {
		return nil, fmt.Errorf("%s: not an ExecCredential: %w", ExecInfoEnv, err)
	}
	if head.Kind != "ExecCredential" {
		return nil, fmt.Errorf("%s: kind %q, want ExecCredential", ExecInfoEnv, head.Kind)
	}
	if head.APIVersion != ExecAPIVersion && head.APIVersion != ExecAPIVersionV1beta1 {
		return nil, fmt.Errorf("%s: apiVersion %q: this plugin speaks %s and %s", ExecInfoEnv, head.APIVersion, ExecAPIVersion, ExecAPIVersionV1beta1)
	}
	r := &ExecRequest{APIVersion: head.APIVersion}
	if c := head.Spec.Cluster; c != nil {
		r.Server = c.Server
		if s := strings.TrimSpace(string(c.Config)); s != "" && s != "null" {
			r.Config = c.Config
		}
	}
	return r, nil
}

// SecretRef is the configuration of a plugin that reads a kubeconfig from a Secret: the schema of the
// reference kubeconfig-secretreader plugin of sigs.k8s.io/cluster-inventory-api, which this tool's plugin
// reads too, so that one ClusterProfile extension serves both.
type SecretRef struct {
	Name      string `json:"name"`
	Key       string `json:"key"`
	Namespace string `json:"namespace,omitempty"`
	Context   string `json:"context,omitempty"`
}

// ParseSecretRef reads a plugin configuration; name and key are required, unknown fields refused.
func ParseSecretRef(config []byte) (SecretRef, error) {
	var ref SecretRef
	dec := json.NewDecoder(strings.NewReader(string(config)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ref); err != nil {
		return SecretRef{}, fmt.Errorf("spec.cluster.config: %w (want {name, key, namespace, context})", err)
	}
	switch {
	case ref.Name == "":
		return SecretRef{}, errors.New("spec.cluster.config.name: the Secret's name must be given")
	case ref.Key == "":
		return SecretRef{}, errors.New("spec.cluster.config.key: the Secret's data key must be given")
	}
	return ref, nil
}

// ParseInline reads the credential of a kubeconfig's context (its current one when context is ""): an
// inline client certificate and key, or a token. Anything a plugin could be made to run or read by it
// (an exec or auth-provider user, a file path) is refused.
func ParseInline(data []byte, context string) (Params, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return Params{}, err
	}
	if context == "" {
		context = cfg.CurrentContext
	}
	ctx, ok := cfg.Contexts[context]
	if !ok {
		return Params{}, fmt.Errorf("kubeconfig has no context %q", context)
	}
	user, ok := cfg.AuthInfos[ctx.AuthInfo]
	if !ok {
		return Params{}, fmt.Errorf("kubeconfig has no user %q", ctx.AuthInfo)
	}
	if err := inlineOnly(user); err != nil {
		return Params{}, fmt.Errorf("user %q: %w", ctx.AuthInfo, err)
	}
	p := Params{Name: context, CertPEM: user.ClientCertificateData, KeyPEM: user.ClientKeyData, Token: user.Token, Namespace: ctx.Namespace}
	if c, ok := cfg.Clusters[ctx.Cluster]; ok {
		p.Server, p.CA, p.ProxyURL = c.Server, c.CertificateAuthorityData, c.ProxyURL
	}
	if p.Token == "" && (len(p.CertPEM) == 0 || len(p.KeyPEM) == 0) {
		return Params{}, fmt.Errorf("user %q holds neither a client certificate and key nor a token", ctx.AuthInfo)
	}
	return p, nil
}

func inlineOnly(u *clientcmdapi.AuthInfo) error {
	switch {
	case u.Exec != nil:
		return errors.New("runs an exec plugin; only an inline certificate and key or token is read")
	case u.AuthProvider != nil:
		return errors.New("uses an auth provider; only an inline certificate and key or token is read")
	case u.ClientCertificate != "" || u.ClientKey != "" || u.TokenFile != "":
		return errors.New("names a file; only inline data is read")
	case u.Username != "" || u.Password != "":
		return errors.New("uses basic authentication, which is not read")
	}
	return nil
}

// Expiry is when a credential stops authenticating, as far as it says: a certificate's NotAfter, a JSON
// Web Token's exp (read, not verified: it only decides when to read the credential again). Zero when it
// does not say.
func Expiry(p Params) time.Time {
	if len(p.CertPEM) > 0 {
		if b, _ := pem.Decode(p.CertPEM); b != nil {
			if c, err := x509.ParseCertificate(b.Bytes); err == nil {
				return c.NotAfter
			}
		}
		return time.Time{}
	}
	parts := strings.Split(p.Token, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == 0 {
		return time.Time{}
	}
	return time.Unix(claims.Exp, 0)
}

// ErrExpired says that the credential a plugin would return has expired: a client would only be refused.
var ErrExpired = errors.New("the credential has expired")

// RefreshAt is the expirationTimestamp of a credential handed out at now: now+refresh, so that a client
// reads it again that soon and follows a renewal, or its own expiry if sooner. now must be read before the
// credential, so that a credential replaced meanwhile is never used past now+refresh.
func RefreshAt(p Params, now time.Time, refresh time.Duration) (time.Time, error) {
	at := now.Add(refresh)
	exp := Expiry(p)
	switch {
	case exp.IsZero():
		return at, nil
	case !exp.After(now):
		return time.Time{}, fmt.Errorf("%w (at %s)", ErrExpired, exp.UTC().Format(time.RFC3339))
	case exp.Before(at):
		return exp, nil
	}
	return at, nil
}

// ExecCredential renders the answer to a plugin request of apiVersion: the credential of p, valid until at
// as far as the client is concerned (expirationTimestamp has second precision: it is rounded down, so a
// client never keeps it longer).
func ExecCredential(apiVersion string, p Params, at time.Time) ([]byte, error) {
	exp := metav1.NewTime(at.Truncate(time.Second))
	cert, key := string(p.CertPEM), string(p.KeyPEM)
	if p.Token != "" {
		cert, key = "", ""
	}
	var out any
	switch apiVersion {
	case ExecAPIVersion:
		out = &clientauthv1.ExecCredential{TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: "ExecCredential"},
			Status: &clientauthv1.ExecCredentialStatus{ExpirationTimestamp: &exp, Token: p.Token, ClientCertificateData: cert, ClientKeyData: key}}
	case ExecAPIVersionV1beta1:
		out = &clientauthv1beta1.ExecCredential{TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: "ExecCredential"},
			Status: &clientauthv1beta1.ExecCredentialStatus{ExpirationTimestamp: &exp, Token: p.Token, ClientCertificateData: cert, ClientKeyData: key}}
	default:
		return nil, fmt.Errorf("apiVersion %q: this plugin speaks %s and %s", apiVersion, ExecAPIVersion, ExecAPIVersionV1beta1)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ExecUser is how a kubeconfig's user runs a credential plugin.
type ExecUser struct {
	Command string
	Args    []string
}

// BuildExec renders a kubeconfig like Build's whose user runs a credential plugin instead of holding the
// credential: the plugin gets the cluster's information and config (the extension ExecExtension), never
// asks anything interactively, and is run again whenever the credential it gave expires.
func BuildExec(p Params, u ExecUser, config []byte) ([]byte, error) {
	if err := ValidateServer(p.Server); err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	cluster := &clientcmdapi.Cluster{Server: p.Server, CertificateAuthorityData: p.CA, ProxyURL: p.ProxyURL, Extensions: map[string]runtime.Object{}}
	if len(config) > 0 {
		cluster.Extensions[ExecExtension] = &runtime.Unknown{Raw: config, ContentType: runtime.ContentTypeJSON}
	}
	cfg.Clusters[p.Name] = cluster
	cfg.AuthInfos[p.Name] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: ExecAPIVersion, Command: u.Command, Args: u.Args, ProvideClusterInfo: len(config) > 0,
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		InstallHint:     "the plugin " + u.Command + " (kubectl federate) must be on the PATH of whatever runs this kubeconfig",
	}}
	cfg.Contexts[p.Name] = &clientcmdapi.Context{Cluster: p.Name, AuthInfo: p.Name, Namespace: p.Namespace}
	cfg.CurrentContext = p.Name
	return clientcmd.Write(*cfg)
}

// Package kubeconfig builds the consumer's kubeconfig for a provider and reads the provider's API server
// URL and CA from the administrator's own connection.
package kubeconfig

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Params describe a kubeconfig with one context, authenticating with a client certificate or a token.
type Params struct {
	Name      string // cluster, user and context name
	Server    string
	CA        []byte // PEM; empty means the system roots
	ProxyURL  string
	CertPEM   []byte
	KeyPEM    []byte
	Token     string // instead of CertPEM and KeyPEM
	Namespace string // the context's default namespace
}

// Build renders p as kubeconfig YAML.
func Build(p Params) ([]byte, error) {
	if err := ValidateServer(p.Server); err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[p.Name] = &clientcmdapi.Cluster{Server: p.Server, CertificateAuthorityData: p.CA, ProxyURL: p.ProxyURL}
	cfg.AuthInfos[p.Name] = &clientcmdapi.AuthInfo{ClientCertificateData: p.CertPEM, ClientKeyData: p.KeyPEM, Token: p.Token}
	cfg.Contexts[p.Name] = &clientcmdapi.Context{Cluster: p.Name, AuthInfo: p.Name, Namespace: p.Namespace}
	cfg.CurrentContext = p.Name
	return clientcmd.Write(*cfg)
}

// ValidateServer checks an API server URL: absolute https with a host.
func ValidateServer(server string) error {
	u, err := url.Parse(server)
	if err != nil {
		return fmt.Errorf("API server URL %q: %w", server, err)
	}
	if u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("API server URL %q must be an absolute https:// URL", server)
	}
	return nil
}

// ValidateProxy checks a proxy URL as kubectl accepts it: http, https or socks5 with a host.
func ValidateProxy(proxy string) error {
	u, err := url.Parse(proxy)
	if err != nil {
		return fmt.Errorf("proxy URL %q: %w", proxy, err)
	}
	switch u.Scheme {
	case "http", "https", "socks5":
	default:
		return fmt.Errorf("proxy URL %q must use http, https or socks5", proxy)
	}
	if u.Host == "" {
		return fmt.Errorf("proxy URL %q has no host", proxy)
	}
	return nil
}

// ServerOf returns the API server URL and CA bundle (PEM) of a REST config, as the administrator's
// kubeconfig has them.
func ServerOf(cfg *rest.Config) (server string, ca []byte, err error) {
	if cfg.Host == "" {
		return "", nil, errors.New("the kubeconfig names no API server")
	}
	server = cfg.Host
	if !strings.Contains(server, "://") {
		server = "https://" + server
	}
	ca = cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return "", nil, fmt.Errorf("reading the kubeconfig's CA file: %w", err)
		}
	}
	return server, ca, nil
}

// ClientCertificate returns the client certificate (PEM) of a kubeconfig's current context.
func ClientCertificate(data []byte) ([]byte, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, err
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return nil, errors.New("kubeconfig has no current context")
	}
	user, ok := cfg.AuthInfos[ctx.AuthInfo]
	if !ok || len(user.ClientCertificateData) == 0 {
		return nil, errors.New("kubeconfig's current user has no client certificate")
	}
	return user.ClientCertificateData, nil
}

// CurrentToken returns the bearer token of a kubeconfig's current user ("" when it has none).
func CurrentToken(data []byte) string {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return ""
	}
	if ctx, ok := cfg.Contexts[cfg.CurrentContext]; ok {
		if user, ok := cfg.AuthInfos[ctx.AuthInfo]; ok {
			return user.Token
		}
	}
	return ""
}

// Impersonated returns the user a kubeconfig's current user impersonates ("" when none).
func Impersonated(data []byte) string {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return ""
	}
	if ctx, ok := cfg.Contexts[cfg.CurrentContext]; ok {
		if user, ok := cfg.AuthInfos[ctx.AuthInfo]; ok {
			return user.Impersonate
		}
	}
	return ""
}

// HoldsCredential tells whether a kubeconfig's current user authenticates with exactly this certificate
// (PEM) or, when token is set, this token.
func HoldsCredential(data, certPEM []byte, token string) bool {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return false
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return false
	}
	user, ok := cfg.AuthInfos[ctx.AuthInfo]
	if !ok {
		return false
	}
	if token != "" {
		return user.Token == token
	}
	return len(user.ClientCertificateData) > 0 && bytes.Equal(bytes.TrimSpace(user.ClientCertificateData), bytes.TrimSpace(certPEM))
}

// Endpoint returns the API server URL, CA bundle (PEM) and proxy URL of a kubeconfig's current context, so
// that a second credential for the same cluster reaches it the same way.
func Endpoint(data []byte) (server string, ca []byte, proxyURL string, err error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return "", nil, "", err
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return "", nil, "", errors.New("kubeconfig has no current context")
	}
	cluster, ok := cfg.Clusters[ctx.Cluster]
	if !ok {
		return "", nil, "", fmt.Errorf("kubeconfig has no cluster %q", ctx.Cluster)
	}
	return cluster.Server, cluster.CertificateAuthorityData, cluster.ProxyURL, nil
}

// Parse returns the Params of a kubeconfig's current context: what Build was given (with the context's
// name as Name), so that the same credential can be written in another tool's format.
func Parse(data []byte) (Params, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return Params{}, err
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return Params{}, errors.New("kubeconfig has no current context")
	}
	cluster, ok := cfg.Clusters[ctx.Cluster]
	if !ok {
		return Params{}, fmt.Errorf("kubeconfig has no cluster %q", ctx.Cluster)
	}
	user, ok := cfg.AuthInfos[ctx.AuthInfo]
	if !ok {
		return Params{}, fmt.Errorf("kubeconfig has no user %q", ctx.AuthInfo)
	}
	return Params{
		Name: cfg.CurrentContext, Server: cluster.Server, CA: cluster.CertificateAuthorityData, ProxyURL: cluster.ProxyURL,
		CertPEM: user.ClientCertificateData, KeyPEM: user.ClientKeyData, Token: user.Token, Namespace: ctx.Namespace,
	}, nil
}

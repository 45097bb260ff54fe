package cmdutil

import (
	"strings"
	"sync"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// KubeconfigFlags are kubectl's connection flags (--kubeconfig, --context, --as, --request-timeout, ...),
// with kubectl's names, shorthands, defaults and help, read into a client configuration the way kubectl
// reads them. They stand on clientcmd alone: cli-runtime's ConfigFlags, which this replaces, also builds
// a cached discovery client and a REST mapper this plugin never asks for, and linking those links
// client-go's scheme, whose initializer every run, even --help, paid for.
//
// A nil field is a flag not offered: it is neither registered nor applied.
type KubeconfigFlags struct {
	KubeConfig *string

	ClusterName  *string
	AuthInfoName *string
	Context      *string
	Namespace    *string

	APIServer          *string
	TLSServerName      *string
	Insecure           *bool
	CAFile             *string
	DisableCompression *bool

	CertFile             *string
	KeyFile              *string
	BearerToken          *string
	Impersonate          *string
	ImpersonateUID       *string
	ImpersonateGroup     *[]string
	ImpersonateUserExtra *[]string

	Timeout *string

	// WrapConfigFn, if set, finishes every REST config ToRESTConfig returns.
	WrapConfigFn func(*rest.Config) *rest.Config

	mu     sync.Mutex
	loader clientcmd.ClientConfig
}

// NewKubeconfigFlags returns every flag with kubectl's defaults: nothing overridden, no request timeout.
func NewKubeconfigFlags() *KubeconfigFlags {
	empty := func() *string { s := ""; return &s }
	no := func() *bool { b := false; return &b }
	none := func() *[]string { l := []string{}; return &l }
	timeout := "0"
	return &KubeconfigFlags{
		KubeConfig:           empty(),
		ClusterName:          empty(),
		AuthInfoName:         empty(),
		Context:              empty(),
		Namespace:            empty(),
		APIServer:            empty(),
		TLSServerName:        empty(),
		Insecure:             no(),
		CAFile:               empty(),
		DisableCompression:   no(),
		CertFile:             empty(),
		KeyFile:              empty(),
		BearerToken:          empty(),
		Impersonate:          empty(),
		ImpersonateUID:       empty(),
		ImpersonateGroup:     none(),
		ImpersonateUserExtra: none(),
		Timeout:              &timeout,
	}
}

// AddFlags registers the offered flags on fs, in kubectl's order and with kubectl's words, so that a
// kubectl user finds them where they expect, and our reference reads as kubectl's.
func (f *KubeconfigFlags) AddFlags(fs *pflag.FlagSet) {
	str := func(p *string, name, short, usage string) {
		if p != nil {
			fs.StringVarP(p, name, short, *p, usage)
		}
	}
	boolean := func(p *bool, name, usage string) {
		if p != nil {
			fs.BoolVar(p, name, *p, usage)
		}
	}
	array := func(p *[]string, name, usage string) {
		if p != nil {
			fs.StringArrayVar(p, name, *p, usage)
		}
	}
	str(f.KubeConfig, "kubeconfig", "", "Path to the kubeconfig file to use for CLI requests.")
	str(f.CertFile, "client-certificate", "", "Path to a client certificate file for TLS")
	str(f.KeyFile, "client-key", "", "Path to a client key file for TLS")
	str(f.BearerToken, "token", "", "Bearer token for authentication to the API server")
	str(f.Impersonate, "as", "", "Username to impersonate for the operation. User could be a regular user or a service account in a namespace.")
	str(f.ImpersonateUID, "as-uid", "", "UID to impersonate for the operation.")
	array(f.ImpersonateGroup, "as-group", "Group to impersonate for the operation, this flag can be repeated to specify multiple groups.")
	array(f.ImpersonateUserExtra, "as-user-extra", "User extras to impersonate for the operation, this flag can be repeated to specify multiple values for the same key.")
	str(f.ClusterName, "cluster", "", "The name of the kubeconfig cluster to use")
	str(f.AuthInfoName, "user", "", "The name of the kubeconfig user to use")
	str(f.Namespace, "namespace", "n", "If present, the namespace scope for this CLI request")
	str(f.Context, "context", "", "The name of the kubeconfig context to use")
	str(f.APIServer, "server", "s", "The address and port of the Kubernetes API server")
	str(f.TLSServerName, "tls-server-name", "", "Server name to use for server certificate validation. If it is not provided, the hostname used to contact the server is used")
	boolean(f.Insecure, "insecure-skip-tls-verify", "If true, the server's certificate will not be checked for validity. This will make your HTTPS connections insecure")
	str(f.CAFile, "certificate-authority", "", "Path to a cert file for the certificate authority")
	str(f.Timeout, "request-timeout", "", "The length of time to wait before giving up on a single server request. Non-zero values should contain a corresponding time unit (e.g. 1s, 2m, 3h). A value of zero means don't timeout requests.")
	boolean(f.DisableCompression, "disable-compression", "If true, opt-out of response compression for all requests to the server")
}

// ToRawKubeConfigLoader is the kubeconfig as the flags select and override it. It is built once, on
// first use (after the flags are parsed), and then shared, so the files are read once per command.
func (f *KubeconfigFlags) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.loader == nil {
		f.loader = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(f.loadingRules(), f.overrides())
	}
	return f.loader
}

// ToRESTConfig is the REST config of the selected cluster and user, finished by WrapConfigFn.
func (f *KubeconfigFlags) ToRESTConfig() (*rest.Config, error) {
	c, err := f.ToRawKubeConfigLoader().ClientConfig()
	if err != nil {
		return nil, err
	}
	if f.WrapConfigFn != nil {
		c = f.WrapConfigFn(c)
	}
	return c, nil
}

// loadingRules are kubectl's: $KUBECONFIG's list, else ~/.kube/config, unless --kubeconfig names a file,
// which must then exist. With no kubeconfig at all, kubectl connects to the legacy default
// (http://localhost:8080, or $KUBERNETES_MASTER), and so do we: together with the overrides' cluster
// defaults this is why clientcmd never reports an empty configuration here, so cli-runtime's longer
// wording of that error has no counterpart.
func (f *KubeconfigFlags) loadingRules() *clientcmd.ClientConfigLoadingRules {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.DefaultClientConfig = &clientcmd.DefaultClientConfig
	if f.KubeConfig != nil {
		rules.ExplicitPath = *f.KubeConfig
	}
	return rules
}

// overrides carries each offered flag into the kubeconfig: an empty value leaves the kubeconfig's own.
// A flag naming a client certificate or key file replaces the kubeconfig's inline data for it.
func (f *KubeconfigFlags) overrides() *clientcmd.ConfigOverrides {
	o := &clientcmd.ConfigOverrides{ClusterDefaults: clientcmd.ClusterDefaults}
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	if f.CertFile != nil {
		o.AuthInfo.ClientCertificate, o.AuthInfo.ClientCertificateData = *f.CertFile, nil
	}
	if f.KeyFile != nil {
		o.AuthInfo.ClientKey, o.AuthInfo.ClientKeyData = *f.KeyFile, nil
	}
	// As in kubectl, a kubeconfig user's tokenFile outlives --token: clientcmd's merge ignores the empty
	// override, and client-go then prefers the file.
	set(&o.AuthInfo.Token, f.BearerToken)
	set(&o.AuthInfo.Impersonate, f.Impersonate)
	set(&o.AuthInfo.ImpersonateUID, f.ImpersonateUID)
	if f.ImpersonateGroup != nil {
		o.AuthInfo.ImpersonateGroups = *f.ImpersonateGroup
	}
	o.AuthInfo.ImpersonateUserExtra = userExtra(f.ImpersonateUserExtra)

	set(&o.ClusterInfo.Server, f.APIServer)
	set(&o.ClusterInfo.TLSServerName, f.TLSServerName)
	set(&o.ClusterInfo.CertificateAuthority, f.CAFile)
	if f.Insecure != nil {
		o.ClusterInfo.InsecureSkipTLSVerify = *f.Insecure
	}
	if f.DisableCompression != nil {
		o.ClusterInfo.DisableCompression = *f.DisableCompression
	}

	set(&o.CurrentContext, f.Context)
	set(&o.Context.Cluster, f.ClusterName)
	set(&o.Context.AuthInfo, f.AuthInfoName)
	set(&o.Context.Namespace, f.Namespace)
	// clientcmd parses it (a bare number is seconds) and says what is wrong with it.
	set(&o.Timeout, f.Timeout)
	return o
}

// userExtra reads --as-user-extra's key=value entries, a key repeated for several values. An entry without
// "=" is skipped, as kubectl skips it.
func userExtra(entries *[]string) map[string][]string {
	if entries == nil || len(*entries) == 0 {
		return nil
	}
	extra := map[string][]string{}
	for _, e := range *entries {
		if k, v, ok := strings.Cut(e, "="); ok {
			extra[k] = append(extra[k], v)
		}
	}
	return extra
}

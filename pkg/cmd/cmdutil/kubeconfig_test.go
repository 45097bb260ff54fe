package cmdutil

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
)

// The flags are kubectl's, in kubectl's order: a kubectl user types the same words, and reads the same
// help. cli-runtime's --cache-dir (its discovery cache, which no command reads), --proxy-url (the name
// is generate tenant's), --username and --password (not offered by kubectl either) are absent.
func TestKubeconfigFlagsAreKubectls(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.SortFlags = false
	NewKubeconfigFlags().AddFlags(fs)
	var got []string
	fs.VisitAll(func(f *pflag.Flag) {
		got = append(got, fmt.Sprintf("--%s -%s %s %q %s", f.Name, f.Shorthand, f.Value.Type(), f.DefValue, f.Usage))
	})
	want := []string{
		`--kubeconfig - string "" Path to the kubeconfig file to use for CLI requests.`,
		`--client-certificate - string "" Path to a client certificate file for TLS`,
		`--client-key - string "" Path to a client key file for TLS`,
		`--token - string "" Bearer token for authentication to the API server`,
		`--as - string "" Username to impersonate for the operation. User could be a regular user or a service account in a namespace.`,
		`--as-uid - string "" UID to impersonate for the operation.`,
		`--as-group - stringArray "[]" Group to impersonate for the operation, this flag can be repeated to specify multiple groups.`,
		`--as-user-extra - stringArray "[]" User extras to impersonate for the operation, this flag can be repeated to specify multiple values for the same key.`,
		`--cluster - string "" The name of the kubeconfig cluster to use`,
		`--user - string "" The name of the kubeconfig user to use`,
		`--namespace -n string "" If present, the namespace scope for this CLI request`,
		`--context - string "" The name of the kubeconfig context to use`,
		`--server -s string "" The address and port of the Kubernetes API server`,
		`--tls-server-name - string "" Server name to use for server certificate validation. If it is not provided, the hostname used to contact the server is used`,
		`--insecure-skip-tls-verify - bool "false" If true, the server's certificate will not be checked for validity. This will make your HTTPS connections insecure`,
		`--certificate-authority - string "" Path to a cert file for the certificate authority`,
		`--request-timeout - string "0" The length of time to wait before giving up on a single server request. Non-zero values should contain a corresponding time unit (e.g. 1s, 2m, 3h). A value of zero means don't timeout requests.`,
		`--disable-compression - bool "false" If true, opt-out of response compression for all requests to the server`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("flags:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A flag not offered (a nil field) is neither registered nor applied.
func TestKubeconfigFlagNotOffered(t *testing.T) {
	f := NewKubeconfigFlags()
	f.Namespace, f.APIServer = nil, nil
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f.AddFlags(fs)
	if fs.Lookup("namespace") != nil || fs.ShorthandLookup("n") != nil || fs.Lookup("server") != nil {
		t.Error("a nil field's flag was registered")
	}
	if fs.Lookup("context") == nil {
		t.Error("--context is missing")
	}
}

// writeKubeconfig writes a kubeconfig with two contexts: "a" (namespace ctx-ns, user with a token file and
// client certificate data) and "b" (no namespace), "a" current; beside it, the files c.crt, c.key and ca.crt.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	kc := filepath.Join(dir, "kc")
	for _, name := range []string{"tokenfile", "c.crt", "c.key", "ca.crt"} { // read only to check they can be
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	data := `apiVersion: v1
kind: Config
clusters:
- name: ca
  cluster: {server: "https://a.example:6443"}
- name: cb
  cluster: {server: "https://b.example:6443"}
users:
- name: ua
  user: {tokenFile: ` + filepath.Join(dir, "tokenfile") + `, client-certificate-data: Y2VydA==, client-key-data: a2V5}
- name: ub
  user: {token: ub-token}
contexts:
- name: a
  context: {cluster: ca, user: ua, namespace: ctx-ns}
- name: b
  context: {cluster: cb, user: ub}
current-context: a
`
	if err := os.WriteFile(kc, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc
}

// parsed returns kubeconfig flags parsed from args on their own flag set.
func parsed(t *testing.T, args ...string) *KubeconfigFlags {
	t.Helper()
	f := NewKubeconfigFlags()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

// Without flags, the kubeconfig's current context is the connection, as it says.
func TestKubeconfigFlagsDefaultsKeepTheKubeconfig(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a pod: no in-cluster fallback
	cfg, err := parsed(t, "--kubeconfig", writeKubeconfig(t)).ToRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://a.example:6443" || cfg.BearerTokenFile == "" || string(cfg.CertData) != "cert" || string(cfg.KeyData) != "key" ||
		cfg.Timeout != 0 || cfg.Impersonate.UserName != "" || cfg.Insecure || cfg.DisableCompression {
		t.Errorf("the kubeconfig as it is: %+v", cfg)
	}
}

// Every override reaches the REST config: the connection, the credentials, the impersonation, TLS, timeout.
func TestKubeconfigFlagsOverridesReachTheRESTConfig(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	kc := writeKubeconfig(t)
	crt, key := filepath.Join(filepath.Dir(kc), "c.crt"), filepath.Join(filepath.Dir(kc), "c.key")
	f := parsed(t, "--kubeconfig", kc,
		"-s", "https://override.example:6443", "--token", "T", "--tls-server-name", "api.internal",
		"--insecure-skip-tls-verify", "--disable-compression", "--request-timeout", "2m",
		"--client-certificate", crt, "--client-key", key,
		"--as", "alice", "--as-uid", "u-1", "--as-group", "g1", "--as-group", "g2",
		"--as-user-extra", "scopes=a", "--as-user-extra", "scopes=b=c", "--as-user-extra", "malformed")
	wrapped := false
	f.WrapConfigFn = func(c *rest.Config) *rest.Config { wrapped = true; return c }
	cfg, err := f.ToRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if !wrapped {
		t.Error("WrapConfigFn was not applied")
	}
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"server", cfg.Host, "https://override.example:6443"},
		{"token", cfg.BearerToken, "T"},
		{"TLS server name", cfg.ServerName, "api.internal"},
		{"insecure", cfg.Insecure, true},
		{"compression off", cfg.DisableCompression, true},
		{"timeout", cfg.Timeout, 2 * time.Minute},
		{"client certificate", cfg.CertFile, crt},
		{"client certificate data (replaced)", len(cfg.CertData), 0},
		{"client key", cfg.KeyFile, key},
		{"client key data (replaced)", len(cfg.KeyData), 0},
		{"impersonated user", cfg.Impersonate.UserName, "alice"},
		{"impersonated UID", cfg.Impersonate.UID, "u-1"},
		{"impersonated groups", cfg.Impersonate.Groups, []string{"g1", "g2"}},
		{"impersonated extra", cfg.Impersonate.Extra, map[string][]string{"scopes": {"a", "b=c"}}},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.what, c.got, c.want)
		}
	}
}

// --context, --cluster and --user choose among the kubeconfig's entries; --certificate-authority is a
// file; a bare --request-timeout number is seconds.
func TestKubeconfigFlagsSelectEntries(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	kc := writeKubeconfig(t)
	ca := filepath.Join(filepath.Dir(kc), "ca.crt")
	cfg, err := parsed(t, "--kubeconfig", kc, "--context", "b", "--request-timeout", "7", "--certificate-authority", ca).ToRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://b.example:6443" || cfg.BearerToken != "ub-token" || cfg.Timeout != 7*time.Second || cfg.CAFile != ca {
		t.Errorf("--context b: host %s, token %q, timeout %s, CA %q", cfg.Host, cfg.BearerToken, cfg.Timeout, cfg.CAFile)
	}
	cfg, err = parsed(t, "--kubeconfig", kc, "--cluster", "cb", "--user", "ub").ToRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://b.example:6443" || cfg.BearerToken != "ub-token" {
		t.Errorf("--cluster cb --user ub: host %s, token %q", cfg.Host, cfg.BearerToken)
	}
}

// A request timeout that is not a duration, and a context the kubeconfig lacks, are errors naming the
// value.
func TestKubeconfigFlagsBadValues(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	kc := writeKubeconfig(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--request-timeout", "soon"}, "Invalid timeout value"},
		{[]string{"--context", "nope"}, `context "nope" does not exist`},
	} {
		_, err := parsed(t, append([]string{"--kubeconfig", kc}, c.args...)...).ToRESTConfig()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
}

// The namespace is --namespace, else the context's, else default.
func TestFactoryNamespaceResolution(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	kc := writeKubeconfig(t)
	for _, c := range []struct {
		ns, context, want string
	}{
		{"flag-ns", "", "flag-ns"},
		{"flag-ns", "b", "flag-ns"},
		{"", "", "ctx-ns"},
		{"", "a", "ctx-ns"},
		{"", "b", "default"},
	} {
		f := NewFactory(genericiooptions.NewTestIOStreamsDiscard())
		f.Flags.KubeConfig, f.Flags.Namespace, f.Flags.Context = &kc, &c.ns, &c.context
		got, err := f.Namespace()
		if err != nil || got != c.want {
			t.Errorf("--namespace %q --context %q: got %q, %v; want %q", c.ns, c.context, got, err, c.want)
		}
		// The loader, which other code may ask, agrees, and says whether the flag chose.
		got, overridden, err := parsed(t, "--kubeconfig", kc, "-n", c.ns, "--context", c.context).ToRawKubeConfigLoader().Namespace()
		if err != nil || got != c.want || overridden != (c.ns != "") {
			t.Errorf("the loader, --namespace %q --context %q: got %q (overridden %v), %v; want %q", c.ns, c.context, got, overridden, err, c.want)
		}
	}
}

// An explicit --kubeconfig (or --remote-kubeconfig) that does not exist is an error naming the flag and
// the path, even where $KUBECONFIG names a good file: kubectl never falls back from a path it was given.
func TestExplicitKubeconfigMustExist(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBECONFIG", writeKubeconfig(t))
	missing := filepath.Join(t.TempDir(), "missing")
	local := NewFactory(genericiooptions.NewTestIOStreamsDiscard())
	remote := local.AddRemoteFlags(pflag.NewFlagSet("t", pflag.ContinueOnError), genericiooptions.NewTestIOStreamsDiscard())
	for flag, f := range map[string]*Factory{"--kubeconfig/--context: ": local, "--remote-kubeconfig/--remote-context: ": remote} {
		f.Flags.KubeConfig = &missing
		_, err := f.Clients()
		if err == nil || !strings.HasPrefix(err.Error(), flag) || !strings.Contains(err.Error(), missing) {
			t.Errorf("a missing kubeconfig: %v, want it to start %q and name %s", err, flag, missing)
		}
		if _, err := f.Namespace(); err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("the namespace from a missing kubeconfig: %v", err)
		}
	}
}

// The remote cluster's flags are --remote-kubeconfig, --remote-context, --remote-cluster and --remote-user,
// without shorthands; they set the remote factory's flags and leave the local one's alone.
func TestRemoteFlags(t *testing.T) {
	local := NewFactory(genericiooptions.NewTestIOStreamsDiscard())
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	local.Flags.AddFlags(fs)
	remote := local.AddRemoteFlags(fs, genericiooptions.NewTestIOStreamsDiscard())
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if strings.HasPrefix(f.Name, "remote-") {
			names = append(names, f.Name+" -"+f.Shorthand+" "+f.Usage)
		}
	})
	want := []string{
		"remote-cluster - The name of the kubeconfig cluster to use (in the remote cluster)",
		"remote-context - The name of the kubeconfig context to use (in the remote cluster)",
		"remote-kubeconfig - Path to the kubeconfig file to use for CLI requests (in the remote cluster)",
		"remote-user - The name of the kubeconfig user to use (in the remote cluster)",
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("remote flags:\n%s\nwant:\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
	if err := fs.Parse([]string{"--remote-kubeconfig", "/r", "--remote-context", "rc", "--remote-cluster", "rk", "--remote-user", "ru", "--context", "lc"}); err != nil {
		t.Fatal(err)
	}
	r, l := remote.Flags, local.Flags
	if *r.KubeConfig != "/r" || *r.Context != "rc" || *r.ClusterName != "rk" || *r.AuthInfoName != "ru" || *l.KubeConfig != "" || *l.Context != "lc" || *l.ClusterName != "" {
		t.Errorf("remote %q %q %q %q, local %q %q %q", *r.KubeConfig, *r.Context, *r.ClusterName, *r.AuthInfoName, *l.KubeConfig, *l.Context, *l.ClusterName)
	}
}

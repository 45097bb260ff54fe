package cmdutil

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
)

// The kubeconfig flags make the same rest.Config, namespace and errors as cli-runtime's ConfigFlags (the
// factory's until it linked no discovery), over the flags a user gives: defaults, context, token, client
// certificate, server and TLS, timeouts, impersonation, cluster/user/namespace, and bad values.
// cli-runtime is linked here, in the test, only.
func TestKubeconfigFlagsMatchConfigFlags(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	kc := writeKubeconfig(t)
	crt := filepath.Join(filepath.Dir(kc), "c.crt")
	for _, args := range [][]string{
		{},
		{"--context", "b"},
		{"--token", "T"},
		{"--context", "b", "--token", "T"},
		{"--client-certificate", crt},
		{"-s", "https://x:1", "--insecure-skip-tls-verify", "--request-timeout", "3"},
		{"--as", "alice", "--as-group", "g", "--as-user-extra", "k=v", "--as-uid", "u"},
		{"--cluster", "cb", "--user", "ub", "-n", "zz"},
		{"--user", "ub"},
		{"--context", "nope"},
		{"--request-timeout", "bad"},
	} {
		full := append([]string{"--kubeconfig", kc}, args...)
		a := NewKubeconfigFlags()
		fa := pflag.NewFlagSet("a", pflag.ContinueOnError)
		a.AddFlags(fa)
		if err := fa.Parse(full); err != nil {
			t.Fatal(err)
		}
		b := genericclioptions.NewConfigFlags(true)
		b.ProxyURL = nil
		fb := pflag.NewFlagSet("b", pflag.ContinueOnError)
		b.AddFlags(fb)
		if err := fb.Parse(full); err != nil {
			t.Fatal(err)
		}
		ca, ea := a.ToRESTConfig()
		cb, eb := b.ToRESTConfig()
		na, oa, nea := a.ToRawKubeConfigLoader().Namespace()
		nb, ob, neb := b.ToRawKubeConfigLoader().Namespace()
		s := func(c *rest.Config, err error) string {
			if err != nil {
				return "err " + err.Error()
			}
			return fmt.Sprintf("%+v", *c)
		}
		if s(ca, ea) != s(cb, eb) {
			t.Errorf("%v:\n ours %s\n cli  %s", args, s(ca, ea), s(cb, eb))
		}
		if na != nb || oa != ob || fmt.Sprint(nea) != fmt.Sprint(neb) {
			t.Errorf("%v: namespace %q %v %v vs %q %v %v", args, na, oa, nea, nb, ob, neb)
		}
	}
}

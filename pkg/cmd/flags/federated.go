package flags

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/lifecycle"
	"github.com/federate-dev/kubectl-federate/pkg/output"
)

// FederatedFlags are the consumer's choices of a federated identity: the ServiceAccount of its own that
// acts on the provider, and how the provider's API server reaches and verifies its token issuer.
type FederatedFlags struct {
	ServiceAccount string
	IssuerCAFile   string
	DiscoveryURL   string

	ca      []byte                      // read by Complete
	options *handshake.FederatedOptions // parsed by Validate
	cmd     *cobra.Command
}

// AddFlags registers --service-account, --issuer-ca-file and --issuer-discovery-url on cmd.
func (f *FederatedFlags) AddFlags(cmd *cobra.Command) {
	f.cmd = cmd
	fs := cmd.Flags()
	fs.StringVar(&f.ServiceAccount, "service-account", "", "A federated identity's ServiceAccount on this (consumer) cluster, as NAMESPACE:NAME: its tokens, minted on demand, act on the provider")
	fs.StringVar(&f.IssuerCAFile, "issuer-ca-file", "", "PEM file of the CA the provider's API server verifies this cluster's token issuer with (default: this cluster's CA when the issuer is its API server, else the provider's system roots)")
	fs.StringVar(&f.DiscoveryURL, "issuer-discovery-url", "", "Where the provider's API server reads this cluster's issuer discovery document, if not at the issuer itself (e.g. this cluster's API server URL + /.well-known/openid-configuration)")
	_ = cmd.MarkFlagFilename("issuer-ca-file", "crt", "pem")
}

// Given tells whether a federated identity was asked for (--service-account).
func (f *FederatedFlags) Given() bool { return f.ServiceAccount != "" }

// Complete reads --issuer-ca-file.
func (f *FederatedFlags) Complete() error {
	if f.IssuerCAFile == "" {
		return nil
	}
	var err error
	if f.ca, err = os.ReadFile(f.IssuerCAFile); err != nil {
		return fmt.Errorf("--issuer-ca-file: %w", err)
	}
	return nil
}

// Validate checks the flags without I/O.
func (f *FederatedFlags) Validate() error {
	if f.ServiceAccount == "" {
		for _, name := range []string{"issuer-ca-file", "issuer-discovery-url"} {
			if fl := f.cmd.Flags().Lookup(name); fl != nil && fl.Changed {
				return fmt.Errorf("--%s: only with --service-account (a federated identity)", name)
			}
		}
		return nil
	}
	ns, name, ok := strings.Cut(f.ServiceAccount, ":")
	sa := v1alpha1.ServiceAccountRef{Namespace: ns, Name: name}
	if !ok || ns == "" || name == "" {
		return fmt.Errorf("--service-account %q: must be NAMESPACE:NAME", f.ServiceAccount)
	}
	if err := credential.ValidateServiceAccountRef("--service-account", sa); err != nil {
		return err
	}
	if f.DiscoveryURL != "" {
		if err := credential.ValidateFederatedRequest("--issuer-discovery-url", &v1alpha1.FederatedRequest{Issuer: "https://issuer.invalid", DiscoveryURL: f.DiscoveryURL, ServiceAccount: sa}); err != nil {
			return errors.New(strings.Replace(err.Error(), "--issuer-discovery-url.discoveryURL", "--issuer-discovery-url", 1))
		}
	}
	if len(f.ca) > 0 && !x509.NewCertPool().AppendCertsFromPEM(f.ca) {
		return fmt.Errorf("--issuer-ca-file %s: holds no PEM certificate", f.IssuerCAFile)
	}
	f.options = &handshake.FederatedOptions{ServiceAccount: sa, DiscoveryURL: f.DiscoveryURL, IssuerCA: f.ca}
	return nil
}

// Options are the federated request's options (after Validate), nil when none was asked for.
func (f *FederatedFlags) Options() *handshake.FederatedOptions { return f.options }

// ValidateFederatedCredential checks --credential against --service-account: a federated identity needs
// its ServiceAccount, and a ServiceAccount asks for a federated identity (implied when --credential is
// not given).
func ValidateFederatedCredential(mode string, given bool, f *FederatedFlags) error {
	switch {
	case mode == credential.CredentialFederated && !f.Given():
		return errors.New("--credential federated: needs --service-account NAMESPACE:NAME, the consumer's ServiceAccount whose tokens act on the provider")
	case f.Given() && given && mode != credential.CredentialFederated:
		return fmt.Errorf("--service-account: names a federated identity's ServiceAccount, but --credential is %s", mode)
	}
	return nil
}

// PrintAuthenticator writes the provider's authenticator entry to out, as an AuthenticationConfiguration
// ready to merge, and says on stderr where it goes.
func PrintAuthenticator(out io.Writer, p *output.Printer, entries ...*handshake.JWTAuthenticator) error {
	data, err := handshake.AuthenticationConfigYAML(entries...)
	if err != nil {
		return err
	}
	if _, err := out.Write(data); err != nil {
		return err
	}
	p.Info("The provider's API server trusts the consumer only once the jwt entry printed on stdout is in the AuthenticationConfiguration file it reads (kube-apiserver --authentication-config, on every control-plane host; it reloads it by itself): merge it into that file's jwt list, replacing any entry of the same issuer url")
	return nil
}

// PrintRemovedAuthenticator writes the authenticator entry of a federated pairing just removed to out, and
// says on stderr that it is the one to take out of the provider's configuration.
func PrintRemovedAuthenticator(out io.Writer, p *output.Printer, e *handshake.JWTAuthenticator) error {
	data, err := handshake.AuthenticationConfigYAML(e)
	if err != nil {
		return err
	}
	if _, err := out.Write(data); err != nil {
		return err
	}
	p.Info("The pairing was federated: remove the jwt entry printed on stdout (issuer " + e.Issuer.URL + ") from the AuthenticationConfiguration file the provider's API server reads (kube-apiserver --authentication-config, on every control-plane host). Until then it authenticates the consumer's tokens as a user bound to nothing")
	return nil
}

// NotTrustedExit gives a federated pairing that is set up but not proven its exit code (4, as status
// --check) and the next step.
func NotTrustedExit(err error) error {
	var nt *lifecycle.NotTrustedError
	if !errors.As(err, &nt) {
		return err
	}
	return &cmdutil.CodedError{Code: cmdutil.ExitCheckFailed, Err: fmt.Errorf("%w; install the entry printed on stdout in the provider's authentication configuration, then prove it with: kubectl federate status --check", err)}
}

package util

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
)

// IssuanceFlags are the provider's choices, shared by generate identity and authenticate.
type IssuanceFlags struct {
	APIServer   string
	CAFile      string
	Expiration  time.Duration
	ClusterRole string
}

// AddFlags registers the issuance flags on cmd.
func (i *IssuanceFlags) AddFlags(cmd *cobra.Command) {
	i.Expiration = handshake.DefaultExpiration
	fs := cmd.Flags()
	fs.StringVar(&i.APIServer, "api-server", "", "The provider API server URL written into the consumer's kubeconfig (default: the server of the provider's kubeconfig)")
	fs.StringVar(&i.CAFile, "ca-file", "", "PEM file of the CA that verifies --api-server (default: the CA of the provider's kubeconfig)")
	fs.DurationVar(&i.Expiration, "expiration", i.Expiration, "Requested lifetime of the issued certificate; the signer may shorten it")
	fs.StringVar(&i.ClusterRole, "cluster-role", handshake.DefaultClusterRole, "The ClusterRole bound to the identity in its tenant namespace on the provider")
	_ = cmd.MarkFlagFilename("ca-file", "crt", "pem")
}

// Validate checks the issuance flags without I/O.
func (i *IssuanceFlags) Validate() error {
	if i.APIServer != "" {
		if err := kubeconfig.ValidateServer(i.APIServer); err != nil {
			return fmt.Errorf("--api-server: %w", err)
		}
	}
	if i.Expiration < handshake.MinExpiration {
		return fmt.Errorf("--expiration %s: must be at least %s (the Kubernetes CSR API minimum)", i.Expiration, handshake.MinExpiration)
	}
	if i.Expiration > 5*365*24*time.Hour {
		return fmt.Errorf("--expiration %s: must be at most 43800h (5 years)", i.Expiration)
	}
	if i.ClusterRole == "" {
		return fmt.Errorf("--cluster-role: must not be empty")
	}
	return nil
}

// Resolve returns the API server URL and CA the consumer will use, from the flags or else from the
// provider connection.
func (i *IssuanceFlags) Resolve(provider *rest.Config) (server string, ca []byte, err error) {
	server, ca, err = kubeconfig.ServerOf(provider)
	if err != nil {
		return "", nil, err
	}
	if i.APIServer != "" {
		server = i.APIServer
	}
	if i.CAFile != "" {
		if ca, err = os.ReadFile(i.CAFile); err != nil {
			return "", nil, fmt.Errorf("--ca-file: %w", err)
		}
	}
	return server, ca, nil
}

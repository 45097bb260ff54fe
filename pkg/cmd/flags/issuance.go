package flags

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// IssuanceFlags are the provider's choices, shared by generate identity and authenticate.
type IssuanceFlags struct {
	APIServer       string
	CAFile          string
	Expiration      time.Duration
	ClusterRole     string
	PodSecurity     *cmdutil.Enum
	Quota           string
	DefaultRequests string
	DefaultLimits   string
	PriorityClasses []string
	StorageClasses  []string
	Tolerations     []string
	RuntimeClasses  []string
	Schedulers      []string
	CSIDrivers      []string
	ImageVolumes    []string
	MaxExpiration   time.Duration
	CredentialFlags
	// Federated, set before AddFlags, offers --credential federated (a pairing's identity only).
	Federated bool

	Sandbox    sandbox.Options // parsed and defaulted by Validate
	RawSandbox sandbox.Options // parsed, only what was given: a renewal lays it over the record
	cmd        *cobra.Command
}

// issuanceSettings map each issuance flag to the setting of a pairing it chooses.
var issuanceSettings = map[string]string{
	"api-server": handshake.SettingAPIServer, "ca-file": handshake.SettingAPIServer,
	"expiration": handshake.SettingLifetime, "max-expiration": handshake.SettingMaxLifetime,
	"cluster-role": handshake.SettingRole, "credential": handshake.SettingCredential,
	"pod-security": handshake.SettingPodSecurity, "quota": handshake.SettingQuota,
	"default-requests": handshake.SettingDefaultRequests, "default-limits": handshake.SettingDefaultLimits,
	"priority-classes": handshake.SettingPriorityClasses, "storage-classes": handshake.SettingStorageClasses,
	"tolerations": handshake.SettingTolerations, "runtime-classes": handshake.SettingRuntimeClasses,
	"schedulers": handshake.SettingSchedulers, "proxy-url": handshake.SettingProxyURL,
	"csi-drivers": handshake.SettingCSIDrivers, "image-volumes": handshake.SettingImageVolumes,
}

// Given names the settings whose flags the command line set: on a renewal, every other setting keeps the
// pairing's recorded value.
func Given(cmd *cobra.Command) handshake.Given {
	g := handshake.Given{}
	for flag, setting := range issuanceSettings {
		if f := cmd.Flags().Lookup(flag); f != nil && f.Changed {
			g[setting] = true
		}
	}
	return g
}

// Given names the settings given on this command line.
func (i *IssuanceFlags) Given() handshake.Given { return Given(i.cmd) }

// AddFlags registers the issuance flags on cmd.
func (i *IssuanceFlags) AddFlags(cmd *cobra.Command) {
	i.Expiration = handshake.DefaultExpiration
	i.cmd = cmd
	fs := cmd.Flags()
	fs.StringVar(&i.APIServer, "api-server", "", "The provider API server URL written into the consumer's kubeconfig (default: the server of the provider's kubeconfig)")
	fs.StringVar(&i.CAFile, "ca-file", "", "PEM file of the CA that verifies --api-server (default: the CA of the provider's kubeconfig)")
	cmdutil.DurationFlag(fs, &i.Expiration, "expiration", i.Expiration, handshake.MinExpiration, handshake.MaxExpiration, "Requested lifetime of the issued certificate or token; the signer or the API server may shorten it (a renewal keeps the recorded one)")
	cmdutil.DurationFlag(fs, &i.MaxExpiration, "max-expiration", 0, 0, handshake.MaxExpiration, "The longest lifetime this pairing's credentials may ever ask for, kept by its renewals (0: no maximum)")
	i.federated = i.Federated
	i.CredentialFlags.AddFlags(cmd)
	fs.StringVar(&i.ClusterRole, "cluster-role", member.DefaultClusterRole, "The ClusterRole bound to the identity in its tenant namespace on the provider")
	_ = cmd.MarkFlagFilename("ca-file", "crt", "pem")
	i.PodSecurity = cmdutil.NewEnum(sandbox.PodSecurityRestricted, sandbox.PodSecurityLevels...)
	cmdutil.AddEnumFlag(cmd, i.PodSecurity, "pod-security", "", "Pod Security level enforced in the tenant namespace (privileged lets the tenant take over nodes)")
	fs.StringVar(&i.Quota, "quota", "", "Hard limits of the tenant namespace's ResourceQuota, over the defaults, as NAME=QUANTITY pairs (e.g. pods=50,requests.cpu=16)")
	fs.StringVar(&i.DefaultRequests, "default-requests", "", "Container resource requests the LimitRange fills in, over the defaults (cpu=100m,memory=128Mi)")
	fs.StringVar(&i.DefaultLimits, "default-limits", "", "Container resource limits the LimitRange fills in, over the defaults (cpu=500m,memory=512Mi)")
	fs.StringSliceVar(&i.PriorityClasses, "priority-classes", nil, "Priority classes the tenant's pods may use (never system-*); default none")
	fs.StringSliceVar(&i.StorageClasses, "storage-classes", nil, "Storage classes the tenant's PersistentVolumeClaims may name; default any named class (claims without a class are always refused)")
	fs.StringSliceVar(&i.Tolerations, "tolerations", nil, "Taint keys the tenant's pods may tolerate besides node.kubernetes.io/not-ready and node.kubernetes.io/unreachable (never the control plane's); default none")
	fs.StringSliceVar(&i.RuntimeClasses, "runtime-classes", nil, "Runtime classes the tenant's pods may name; default none")
	fs.StringSliceVar(&i.Schedulers, "schedulers", nil, "Schedulers the tenant's pods may name besides default-scheduler; default none")
	fs.StringSliceVar(&i.CSIDrivers, "csi-drivers", nil, "CSI drivers whose inline (ephemeral) volumes the tenant's pods may use; default none (such a driver mounts whatever the node reaches)")
	fs.StringSliceVar(&i.ImageVolumes, "image-volumes", nil, "Image sources the tenant's pods may mount as image volumes: registry or repository paths ending in /, or * for any; default none (the node pulls them with its credentials)")
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
	if err := i.CredentialFlags.Validate(); err != nil {
		return err
	}
	for _, l := range []struct {
		flag  string
		names []string
		check func(string) error
	}{
		{"--priority-classes", i.PriorityClasses, sandbox.ValidatePriorityClass},
		{"--storage-classes", i.StorageClasses, sandbox.ValidateStorageClass},
		{"--tolerations", i.Tolerations, sandbox.ValidateToleration},
		{"--runtime-classes", i.RuntimeClasses, sandbox.ValidateRuntimeClass},
		{"--schedulers", i.Schedulers, sandbox.ValidateScheduler},
		{"--csi-drivers", i.CSIDrivers, sandbox.ValidateCSIDriver},
		{"--image-volumes", i.ImageVolumes, sandbox.ValidateImageVolume},
	} {
		for _, name := range l.names {
			if err := l.check(name); err != nil {
				return fmt.Errorf("%s: %w", l.flag, err)
			}
		}
	}
	sb := sandbox.Options{PodSecurity: i.PodSecurity.String(), PriorityClasses: i.PriorityClasses, StorageClasses: i.StorageClasses,
		Tolerations: i.Tolerations, RuntimeClasses: i.RuntimeClasses, Schedulers: i.Schedulers, CSIDrivers: i.CSIDrivers, ImageVolumes: i.ImageVolumes}
	var err error
	if sb.Quota, err = sandbox.ParseResourceList("--quota", i.Quota); err != nil {
		return err
	}
	if sb.DefaultRequests, err = sandbox.ParseResourceList("--default-requests", i.DefaultRequests); err != nil {
		return err
	}
	if sb.DefaultLimits, err = sandbox.ParseResourceList("--default-limits", i.DefaultLimits); err != nil {
		return err
	}
	i.RawSandbox = sb
	if i.cmd != nil && !i.cmd.Flags().Changed("pod-security") {
		i.RawSandbox.PodSecurity = "" // not given: a renewal keeps the recorded level
	}
	if i.MaxExpiration > 0 && i.Expiration > i.MaxExpiration {
		return fmt.Errorf("--expiration %s: is longer than --max-expiration %s", cmdutil.FormatDuration(i.Expiration), cmdutil.FormatDuration(i.MaxExpiration))
	}
	if i.Sandbox, err = sb.Validate(); err != nil {
		return fmt.Errorf("--default-requests: %w", err)
	}
	return nil
}

// Warn reports the choices an administrator should think twice about.
func (i *IssuanceFlags) Warn(r member.Reporter) {
	if i.Sandbox.PodSecurity == sandbox.PodSecurityPrivileged {
		r.Warn("--pod-security privileged: the tenant may run privileged pods, mount host paths and use the host's network and PIDs, which means root on the provider's nodes")
	}
}

// CredentialFlags choose what an issuance gives the consumer: --credential and --signer-timeout.
type CredentialFlags struct {
	Credential    *cmdutil.Enum
	SignerTimeout time.Duration
	federated     bool
}

// AddFlags registers --credential and --signer-timeout on cmd.
func (i *CredentialFlags) AddFlags(cmd *cobra.Command) {
	modes, usage := credential.CredentialModes, "What the consumer authenticates with: a client certificate through the CSR API, a ServiceAccount token (TokenRequest), or auto: a certificate, else a token when the signer issues none within --signer-timeout"
	if i.federated {
		modes = append(modes[:len(modes):len(modes)], credential.CredentialFederated)
		usage += "; or federated: no credential at all, the provider's API server trusts the consumer's own ServiceAccount tokens (an authenticator entry its administrator installs)"
	}
	i.Credential = cmdutil.NewEnum(credential.CredentialCertificate, modes...)
	cmdutil.AddEnumFlag(cmd, i.Credential, "credential", "", usage)
	i.SignerTimeout = credential.DefaultSignerTimeout
	cmdutil.DurationFlag(cmd.Flags(), &i.SignerTimeout, "signer-timeout", i.SignerTimeout, time.Second, 10*time.Minute, "How long to wait for the cluster's signer to issue an approved certificate before giving up (or, with --credential auto, falling back to a token)")
}

// Validate checks the flags without I/O.
func (i *CredentialFlags) Validate() error {
	if i.SignerTimeout <= 0 {
		return fmt.Errorf("--signer-timeout %s: must be positive", i.SignerTimeout)
	}
	return nil
}

// CredentialError adds the way out to an issuance that failed because the signer issued no certificate.
func (i *CredentialFlags) CredentialError(err error) error {
	if errors.Is(err, credential.ErrNoCertificate) {
		return fmt.Errorf("%w. Nothing was issued; to issue a ServiceAccount token instead, run again with --credential token (or --credential auto)", err)
	}
	return err
}

// WarnToken says, once a token was issued into a file, that the file is now the credential itself.
func WarnToken(r member.Reporter, credential, what string) {
	if credential == v1alpha1.CredentialToken {
		r.Warn(what + " carries a ServiceAccount token, which is the credential itself: keep and send it like a password, and delete it once imported")
	}
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

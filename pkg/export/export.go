// Package export writes a credential this cluster holds on a provider (a kubeconfig) in the format a
// multi-cluster tool reads: a plain kubeconfig Secret (Flux, Cluster API), an Argo CD cluster Secret, a
// KubeVela cluster-gateway cluster Secret, an Admiralty Target with its kubeconfig Secret, or a SIG
// Multicluster ClusterProfile with the Secret its access providers read. It only
// builds objects; pkg/handshake reads the credential, checks what exists and writes them. Where each
// format's names come from is in docs/integrations.md.
package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
)

// Formats an export can be written in.
const (
	FormatKubeconfig     = "kubeconfig"
	FormatArgoCD         = "argocd"
	FormatClusterGateway = "cluster-gateway"
	FormatAdmiralty      = "admiralty"
	FormatClusterProfile = "clusterprofile"
)

// Formats lists every format, in the order the help shows them.
var Formats = []string{FormatKubeconfig, FormatArgoCD, FormatClusterGateway, FormatAdmiralty, FormatClusterProfile}

// Our labels and annotations on an exported object, beside the pairing's own (managed-by, remote cluster
// ID, role, and the slice for a slice's export): they find an export again (renew rewrites it,
// unauthenticate deletes it, status lists it) and tell an export from anything else of the pairing.
const (
	LabelFormat = "federate.dev/export-format"
	// LabelOf says what is exported: OfPairing (the pairing's identity) or OfResourceSlice.
	LabelOf         = "federate.dev/export-of"
	OfPairing       = "pairing"
	OfResourceSlice = "resource-slice"
	// AnnotationName is the name the export was given (the cluster's name in the tool), and AnnotationKey
	// a kubeconfig export's extra data key: what a rewrite needs to build the same objects again.
	AnnotationName = "federate.dev/export-name"
	AnnotationKey  = "federate.dev/export-key"
	// AnnotationExec is an exec export's plugin (Exec, as JSON): what a rewrite runs again.
	AnnotationExec = "federate.dev/export-exec"
)

// Names the tools define (docs/integrations.md cites where).
const (
	// KubeconfigKey is the data key of a kubeconfig export.
	KubeconfigKey = "kubeconfig"
	// CredentialKey is where an exec export keeps the credential its plugin reads: a kubeconfig holding
	// it inline, the format of the reference kubeconfig-secretreader plugin.
	CredentialKey = "credential"
	// Argo CD: util/db/cluster.go (SecretToCluster) reads name, server, config and namespaces from a Secret
	// carrying this label.
	ArgoCDSecretTypeLabel   = "argocd.argoproj.io/secret-type" //nolint:gosec // a label key, not a credential
	ArgoCDSecretTypeCluster = "cluster"
	// cluster-gateway: pkg/apis/cluster/v1alpha1/clustergateway_types_secret.go reads endpoint, ca.crt,
	// proxy-url and tls.crt/tls.key or token, by the credential type in this label.
	ClusterGatewayCredentialTypeLabel = "cluster.core.oam.dev/cluster-credential-type" //nolint:gosec // a label key, not a credential
	ClusterGatewayX509                = "X509Certificate"
	ClusterGatewayServiceAccountToken = "ServiceAccountToken"
	// Admiralty: pkg/config/agent/agent.go reads a Target's kubeconfig from its Secret's key, "config" by
	// default; we name the key anyway.
	AdmiraltyKubeconfigKey = "config"
)

// TargetGVR is Admiralty's namespaced Target (pkg/apis/multicluster/v1alpha1/target_types.go).
var TargetGVR = schema.GroupVersionResource{Group: "multicluster.admiralty.io", Version: "v1alpha1", Resource: "targets"}

// TargetKind is the kind of TargetGVR.
const TargetKind = "Target"

// Spec is one export to build.
type Spec struct {
	Format string
	// Name is the cluster's name in the tool: Argo CD's cluster name, cluster-gateway's cluster (its
	// Secret's name), the Admiralty Target's or the ClusterProfile's name; a kubeconfig Secret is named
	// SecretName(Format, Name).
	Name      string
	Namespace string
	// Key, for FormatKubeconfig, is a second data key holding the kubeconfig (Flux's and Cluster API's
	// "value").
	Key string
	// Labels identify the pairing or slice exported; the builder adds LabelFormat.
	Labels map[string]string
	// MemberID, for FormatClusterProfile, is the member cluster's ID (the provider's): the profile's
	// label LabelInventoryMemberID.
	MemberID string
	// Kubeconfig is the credential, as this cluster stores it.
	Kubeconfig []byte
	// Exec, for FormatKubeconfig and FormatArgoCD, writes a client that runs a credential plugin instead
	// of holding the credential: the plugin reads the credential from the export's own Secret (under
	// CredentialKey) every time it runs, so the client follows every rewrite without being rebuilt.
	Exec *Exec
	// Minted says the credential is minted by the plugin each time it runs (a federated pairing's: a
	// ServiceAccount token of this cluster) and exists nowhere else: Exec is required, Kubeconfig holds
	// only where the provider is, and the Secret holds no credential at all.
	Minted bool
}

// ErrMintedNeedsExec says a credential minted on demand can only be exported as a client that runs the
// plugin: any other format would store a token it minted.
var ErrMintedNeedsExec = errors.New("the pairing is federated: its credential is a token minted on demand, never stored, and this format would store one; only a client that runs the credential plugin exports it (formats " +
	FormatKubeconfig + " and " + FormatArgoCD + ")")

// Exec is the credential plugin an exec export's client runs.
type Exec struct {
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	// ClusterInfo hands the plugin the Secret to read as the cluster's configuration
	// (provideClusterInfo); without it, Args must name it. A kubeconfig provides it (but for a minted
	// credential: there the plugin reads no Secret, and Args name the provider); Argo CD only
	// from 3.5 on, so there it is asked for.
	ClusterInfo bool `json:"clusterInfo,omitempty"`
}

// Objects are what an export writes: a Secret, and for FormatAdmiralty and FormatClusterProfile the
// object that points the tool at it.
type Objects struct {
	Secret *corev1.Secret
	// Target is that second object: Admiralty's Target, or a ClusterProfile (status included, which is
	// written through its status subresource).
	Target *unstructured.Unstructured
}

// List is every object, in the order they are written (the Secret before the object that names it).
func (o *Objects) List() []any {
	out := []any{o.Secret}
	if o.Target != nil {
		out = append(out, o.Target)
	}
	return out
}

// SecretName is the Secret an export named name writes: the cluster's name itself where the tool reads
// the name from the Secret (cluster-gateway) or from its data (Argo CD), and name-kubeconfig, Cluster
// API's convention, for a kubeconfig, for Admiralty's and for a ClusterProfile's.
func SecretName(format, name string) string {
	switch format {
	case FormatKubeconfig, FormatAdmiralty, FormatClusterProfile:
		return name + "-kubeconfig"
	}
	return name
}

// ValidateFormat checks a format name.
func ValidateFormat(format string) error {
	if !slices.Contains(Formats, format) {
		return fmt.Errorf("format %q: must be one of %s", format, strings.Join(Formats, ", "))
	}
	return nil
}

// ValidateName checks an export's name: every object it names must be a valid name.
func ValidateName(name string) error {
	if name == "" {
		return errors.New("must not be empty")
	}
	// A DNS label, so that name-kubeconfig and a Target's name are valid, and the Argo CD and
	// cluster-gateway cluster names are the same everywhere.
	if len(name) > 63-len("-kubeconfig") {
		return fmt.Errorf("%q: must be at most %d characters", name, 63-len("-kubeconfig"))
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("%q: must be a DNS label (lowercase letters, digits and '-', starting and ending with a letter or digit)", name)
	}
	return nil
}

// ValidateKey checks a kubeconfig export's extra data key.
func ValidateKey(key string) error {
	if key == KubeconfigKey {
		return fmt.Errorf("%q: is the key the kubeconfig is always written under; name another", key)
	}
	if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
		return fmt.Errorf("%q: not a valid Secret data key (%s)", key, strings.Join(errs, "; "))
	}
	return nil
}

// Build builds the objects of an export from the kubeconfig it carries.
func Build(s Spec) (*Objects, error) {
	if err := ValidateFormat(s.Format); err != nil {
		return nil, err
	}
	if s.Key != "" && s.Format != FormatKubeconfig {
		return nil, fmt.Errorf("an extra key is only written by format %s", FormatKubeconfig)
	}
	if s.Exec != nil && s.Format != FormatKubeconfig && s.Format != FormatArgoCD {
		return nil, fmt.Errorf("a client running a credential plugin is only written by formats %s and %s", FormatKubeconfig, FormatArgoCD)
	}
	p, err := kubeconfig.Parse(s.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("the stored kubeconfig: %w", err)
	}
	if s.Minted && s.Exec == nil {
		return nil, ErrMintedNeedsExec
	}
	if !s.Minted && p.Token == "" && (len(p.CertPEM) == 0 || len(p.KeyPEM) == 0) {
		return nil, errors.New("the stored kubeconfig holds neither a client certificate and key nor a token")
	}
	labels := map[string]string{LabelFormat: s.Format}
	for k, v := range s.Labels {
		labels[k] = v
	}
	annotations := map[string]string{AnnotationName: s.Name}
	if s.Key != "" {
		annotations[AnnotationKey] = s.Key
	}
	if s.Exec != nil {
		b, err := json.Marshal(s.Exec)
		if err != nil {
			return nil, err
		}
		annotations[AnnotationExec] = string(b)
	}
	sec := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: SecretName(s.Format, s.Name), Namespace: s.Namespace, Labels: labels, Annotations: annotations},
		Type:       corev1.SecretTypeOpaque,
	}
	out := &Objects{Secret: sec}
	switch s.Format {
	case FormatKubeconfig:
		kc := s.Kubeconfig
		if s.Exec != nil {
			var config []byte // the Secret, handed to the plugin as its cluster's configuration
			if s.Exec.ClusterInfo {
				config = pluginConfig(sec)
			}
			if kc, err = kubeconfig.BuildExec(p, kubeconfig.ExecUser{Command: s.Exec.Command, Args: s.Exec.Args}, config); err != nil {
				return nil, err
			}
		}
		sec.Data = map[string][]byte{KubeconfigKey: kc}
		if s.Key != "" {
			sec.Data[s.Key] = kc
		}
	case FormatArgoCD:
		sec.Labels[ArgoCDSecretTypeLabel] = ArgoCDSecretTypeCluster
		sec.Data, err = argoCDData(s.Name, p, s.Exec, sec)
	case FormatClusterGateway:
		sec.Data = clusterGatewayData(p)
		sec.Labels[ClusterGatewayCredentialTypeLabel] = ClusterGatewayX509
		if p.Token != "" {
			sec.Labels[ClusterGatewayCredentialTypeLabel] = ClusterGatewayServiceAccountToken
		}
	case FormatAdmiralty:
		sec.Data = map[string][]byte{AdmiraltyKubeconfigKey: s.Kubeconfig}
		out.Target = admiraltyTarget(s, sec.Name, labels)
	case FormatClusterProfile:
		// The credential, as kubeconfig-secretreader reads it (a kubeconfig holding it inline), under the
		// key both access providers are configured with.
		sec.Data = map[string][]byte{CredentialKey: s.Kubeconfig}
		out.Target, err = clusterProfile(s, p, sec.Name, labels)
	}
	if err != nil {
		return nil, err
	}
	if s.Exec != nil && !s.Minted {
		sec.Data[CredentialKey] = s.Kubeconfig
	}
	return out, nil
}

// pluginConfig is the cluster configuration an exec export hands its plugin: the Secret the export
// writes and the key holding the credential, in the schema of kubeconfig-secretreader.
func pluginConfig(sec *corev1.Secret) []byte {
	b, _ := json.Marshal(kubeconfig.SecretRef{Name: sec.Name, Key: CredentialKey, Namespace: sec.Namespace})
	return b
}

// argoConfig is the part of Argo CD's ClusterConfig (pkg/apis/application/v1alpha1/types.go) an export
// fills: a bearer token or a client certificate, the CA, and the proxy. []byte fields are base64 in JSON,
// as Argo CD's own []byte fields are.
type argoConfig struct {
	BearerToken        string        `json:"bearerToken,omitempty"`
	TLSClientConfig    argoTLSConfig `json:"tlsClientConfig"`
	ExecProviderConfig *argoExec     `json:"execProviderConfig,omitempty"`
	ProxyURL           string        `json:"proxyUrl,omitempty"`
}

// argoExec is Argo CD's ExecProviderConfig (pkg/apis/application/v1alpha1/types.go): env is a map there,
// and provideClusterInfo and config exist from Argo CD 3.5 on.
type argoExec struct {
	Command            string          `json:"command"`
	Args               []string        `json:"args,omitempty"`
	APIVersion         string          `json:"apiVersion"`
	InstallHint        string          `json:"installHint,omitempty"`
	ProvideClusterInfo bool            `json:"provideClusterInfo,omitempty"`
	Config             json.RawMessage `json:"config,omitempty"`
}

type argoTLSConfig struct {
	Insecure bool   `json:"insecure"`
	CertData []byte `json:"certData,omitempty"`
	KeyData  []byte `json:"keyData,omitempty"`
	CAData   []byte `json:"caData,omitempty"`
}

func argoCDData(name string, p kubeconfig.Params, exec *Exec, sec *corev1.Secret) (map[string][]byte, error) {
	cfg := argoConfig{TLSClientConfig: argoTLSConfig{CAData: p.CA}, ProxyURL: p.ProxyURL}
	switch {
	case exec != nil:
		cfg.ExecProviderConfig = &argoExec{Command: exec.Command, Args: exec.Args, APIVersion: kubeconfig.ExecAPIVersion,
			InstallHint: "the plugin " + exec.Command + " (kubectl federate) must be in the images of argocd-server and argocd-application-controller"}
		if exec.ClusterInfo {
			cfg.ExecProviderConfig.ProvideClusterInfo, cfg.ExecProviderConfig.Config = true, pluginConfig(sec)
		}
	case p.Token != "":
		cfg.BearerToken = p.Token
	default:
		cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData = p.CertPEM, p.KeyPEM
	}
	config, err := json.Marshal(cfg) //nolint:gosec // the credential is what an export writes, into a Secret
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{"name": []byte(name), "server": []byte(p.Server), "config": config}
	// The identity is namespaced: without namespaces, Argo CD would try to watch the whole cluster.
	if p.Namespace != "" {
		data["namespaces"] = []byte(p.Namespace)
	}
	return data, nil
}

func clusterGatewayData(p kubeconfig.Params) map[string][]byte {
	data := map[string][]byte{"endpoint": []byte(p.Server)}
	// Without a CA, cluster-gateway connects without verifying the server: an export always carries one
	// when the kubeconfig does.
	if len(p.CA) > 0 {
		data["ca.crt"] = p.CA
	}
	if p.ProxyURL != "" {
		data["proxy-url"] = []byte(p.ProxyURL)
	}
	if p.Token != "" {
		data[corev1.ServiceAccountTokenKey] = []byte(p.Token)
	} else {
		data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey] = p.CertPEM, p.KeyPEM
	}
	return data
}

func admiraltyTarget(s Spec, secret string, labels map[string]string) *unstructured.Unstructured {
	t := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": TargetGVR.GroupVersion().String(),
		"kind":       TargetKind,
		"metadata": map[string]any{
			"name": s.Name, "namespace": s.Namespace,
		},
		"spec": map[string]any{
			"kubeconfigSecret": map[string]any{"name": secret, "key": AdmiraltyKubeconfigKey},
		},
	}}
	t.SetLabels(labels)
	t.SetAnnotations(map[string]string{AnnotationName: s.Name})
	return t
}

// Rebuild builds an export again from one of its Secrets as written, with a new kubeconfig: what renew
// and a re-run of authenticate do to every export of the credential they replace. memberID is the
// provider's ID (see Spec.MemberID).
func Rebuild(sec *corev1.Secret, kc []byte, memberID string) (*Objects, error) {
	name := sec.Annotations[AnnotationName]
	if name == "" {
		return nil, fmt.Errorf("secret %s/%s: no annotation %s", sec.Namespace, sec.Name, AnnotationName)
	}
	labels := map[string]string{}
	for k, v := range sec.Labels {
		if k != LabelFormat && k != ArgoCDSecretTypeLabel && k != ClusterGatewayCredentialTypeLabel {
			labels[k] = v
		}
	}
	var exec *Exec
	if a := sec.Annotations[AnnotationExec]; a != "" {
		exec = &Exec{}
		if err := json.Unmarshal([]byte(a), exec); err != nil || exec.Command == "" {
			return nil, fmt.Errorf("secret %s/%s: annotation %s is not a plugin", sec.Namespace, sec.Name, AnnotationExec)
		}
	}
	return Build(Spec{Format: sec.Labels[LabelFormat], Name: name, Namespace: sec.Namespace, Key: sec.Annotations[AnnotationKey], Labels: labels,
		Kubeconfig: kc, Exec: exec, MemberID: memberID})
}

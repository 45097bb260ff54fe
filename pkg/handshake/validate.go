package handshake

import (
	"bufio"
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
)

// MaxDocumentSize bounds a tenant.yaml or identity.yaml.
const MaxDocumentSize = 1 << 20

// decodeDocument strictly decodes one YAML or JSON object of the expected kind: unknown fields, a second
// document and a wrong apiVersion or kind are refused. source names the input in errors.
func decodeDocument(source string, data []byte, kind string, into any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("%s: is empty", source)
	}
	if len(data) > MaxDocumentSize {
		return fmt.Errorf("%s: is %d bytes, more than the %d allowed", source, len(data), MaxDocumentSize)
	}
	if n, err := countDocuments(data); err != nil {
		return fmt.Errorf("%s: is not valid YAML or JSON: %w", source, cleanYAMLError(err))
	} else if n != 1 {
		return fmt.Errorf("%s: must hold exactly one %s document, found %d", source, kind, n)
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return fmt.Errorf("%s: is not valid YAML or JSON: %w", source, err)
	}
	if meta.Kind != kind {
		return fmt.Errorf("%s: kind is %q, want %q", source, meta.Kind, kind)
	}
	if meta.APIVersion != v1alpha1.APIVersion {
		return fmt.Errorf("%s: apiVersion is %q, want %q", source, meta.APIVersion, v1alpha1.APIVersion)
	}
	if err := checkBase64(source, data, byteFields[kind]); err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		return fmt.Errorf("%s: %w", source, cleanYAMLError(err))
	}
	return nil
}

// byteFields are the base64 fields of each kind, checked one by one so an error can name the field.
var byteFields = map[string][][]string{
	v1alpha1.TenantKind: {{"spec", "publicKey"}, {"spec", "csr"}, {"spec", "signature"},
		{"status", "pinnedPublicKey"}, {"status", "certificate"}},
	v1alpha1.IdentityKind: {{"spec", "ca"}, {"spec", "certificate"}},
}

func checkBase64(source string, data []byte, paths [][]string) error {
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: is not valid YAML or JSON: %w", source, cleanYAMLError(err))
	}
	for _, path := range paths {
		v, found, err := unstructured.NestedFieldNoCopy(doc, path...)
		if !found || err != nil || v == nil {
			continue
		}
		field := strings.Join(path, ".")
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: %s must be a base64 string, got %T", source, field, v)
		}
		if _, err := base64.StdEncoding.DecodeString(str); err != nil {
			return fmt.Errorf("%s: %s is not valid base64: %w", source, field, err)
		}
	}
	return nil
}

// countDocuments counts the non-empty documents of a YAML stream (JSON is one document).
func countDocuments(data []byte) (int, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	n := 0
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		var v any
		if err := yaml.Unmarshal(doc, &v); err != nil {
			return n, err
		}
		if v != nil {
			n++
		}
	}
}

func cleanYAMLError(err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error unmarshaling JSON: while decoding JSON: ")
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	return errors.New(msg)
}

// DecodeTenant parses a tenant.yaml (or JSON) document.
func DecodeTenant(source string, data []byte) (*v1alpha1.Tenant, error) {
	t := &v1alpha1.Tenant{}
	if err := decodeDocument(source, data, v1alpha1.TenantKind, t); err != nil {
		return nil, err
	}
	return t, nil
}

// DecodeIdentity parses an identity.yaml (or JSON) document.
func DecodeIdentity(source string, data []byte) (*v1alpha1.Identity, error) {
	id := &v1alpha1.Identity{}
	if err := decodeDocument(source, data, v1alpha1.IdentityKind, id); err != nil {
		return nil, err
	}
	return id, nil
}

// ErrOtherConsumer means a Tenant was made by another consumer than the one being issued for.
var ErrOtherConsumer = errors.New("is not the consumer this identity is being issued for")

// ValidateTenant checks a Tenant's shape for this provider and consumer, before any cryptography.
func ValidateTenant(t *v1alpha1.Tenant, consumerID, providerID string) error {
	if err := ValidateClusterID("spec.clusterID", t.Spec.ClusterID); err != nil {
		return err
	}
	if t.Spec.ClusterID != consumerID {
		return fmt.Errorf("spec.clusterID %q: %w %q", t.Spec.ClusterID, ErrOtherConsumer, consumerID)
	}
	if t.Name != "" && t.Name != consumerID {
		return fmt.Errorf("metadata.name %q: must equal spec.clusterID %q", truncate(t.Name), consumerID)
	}
	if ns := TenantNamespace(consumerID); t.Namespace != "" && t.Namespace != ns {
		return fmt.Errorf("metadata.namespace %q: must be %q", truncate(t.Namespace), ns)
	}
	if t.Spec.ProviderClusterID != providerID {
		return fmt.Errorf("spec.providerClusterID %q: this request was made for another provider (this cluster is %q)", truncate(t.Spec.ProviderClusterID), providerID)
	}
	if len(t.Spec.PublicKey) == 0 {
		return errors.New("spec.publicKey: is missing")
	}
	if len(t.Spec.Signature) == 0 {
		return errors.New("spec.signature: is missing")
	}
	if len(t.Spec.CSR) == 0 {
		return errors.New("spec.csr: is missing")
	}
	if t.Spec.ProxyURL != "" {
		if err := kubeconfig.ValidateProxy(t.Spec.ProxyURL); err != nil {
			return fmt.Errorf("spec.proxyURL: %w", err)
		}
	}
	return nil
}

// ValidateIdentity checks an Identity's shape for this consumer and returns its parsed certificate.
func ValidateIdentity(id *v1alpha1.Identity, consumerID string, now time.Time) (*x509.Certificate, error) {
	if err := ValidateClusterID("spec.clusterID", id.Spec.ClusterID); err != nil {
		return nil, err
	}
	if id.Spec.ClusterID == consumerID {
		return nil, fmt.Errorf("spec.clusterID %q: is this cluster's own ID", consumerID)
	}
	if id.Spec.ConsumerClusterID != consumerID {
		return nil, fmt.Errorf("spec.consumerClusterID %q: this identity was issued to another consumer (this cluster is %q)", truncate(id.Spec.ConsumerClusterID), consumerID)
	}
	if want := TenantNamespace(consumerID); id.Spec.Namespace != want {
		return nil, fmt.Errorf("spec.namespace %q: must be %q", truncate(id.Spec.Namespace), want)
	}
	if want := IdentityName(id.Spec.ClusterID); id.Name != "" && id.Name != want {
		return nil, fmt.Errorf("metadata.name %q: must be %q", truncate(id.Name), want)
	}
	if want := SystemNamespace; id.Namespace != "" && id.Namespace != want {
		return nil, fmt.Errorf("metadata.namespace %q: must be %q", truncate(id.Namespace), want)
	}
	if err := kubeconfig.ValidateServer(id.Spec.APIServer); err != nil {
		return nil, fmt.Errorf("spec.apiServer: %w", err)
	}
	if id.Spec.ProxyURL != "" {
		if err := kubeconfig.ValidateProxy(id.Spec.ProxyURL); err != nil {
			return nil, fmt.Errorf("spec.proxyURL: %w", err)
		}
	}
	if len(id.Spec.CA) > 0 {
		if len(id.Spec.CA) > 64<<10 {
			return nil, errors.New("spec.ca: is larger than 64 KiB")
		}
		if !x509.NewCertPool().AppendCertsFromPEM(id.Spec.CA) {
			return nil, errors.New("spec.ca: holds no PEM certificate")
		}
	}
	cert, err := parseCertificate("spec.certificate", id.Spec.Certificate)
	if err != nil {
		return nil, err
	}
	if !now.Before(cert.NotAfter) {
		return nil, fmt.Errorf("spec.certificate: expired at %s", cert.NotAfter.UTC().Format(time.RFC3339))
	}
	if prefix := UserPrefix + consumerID + ":"; !strings.HasPrefix(cert.Subject.CommonName, prefix) {
		return nil, fmt.Errorf("spec.certificate: subject CN %q is not a user of consumer %q", truncate(cert.Subject.CommonName), consumerID)
	}
	clientAuth := false
	for _, u := range cert.ExtKeyUsage {
		clientAuth = clientAuth || u == x509.ExtKeyUsageClientAuth
	}
	if !clientAuth {
		return nil, errors.New("spec.certificate: is not valid for client authentication")
	}
	return cert, nil
}

func parseCertificate(field string, data []byte) (*x509.Certificate, error) {
	der, err := DecodePEM(field, data, "CERTIFICATE")
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot be parsed: %w", field, err)
	}
	return cert, nil
}

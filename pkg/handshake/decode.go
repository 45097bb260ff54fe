package handshake

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
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
	v1alpha1.IdentityKind:      {{"spec", "ca"}, {"spec", "certificate"}},
	v1alpha1.ResourceSliceKind: {{"spec", "csr"}, {"spec", "signature"}, {"status", "certificate"}},
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

// DecodeResourceSlice parses a ResourceSlice document (a request, or a grant with its status).
func DecodeResourceSlice(source string, data []byte) (*v1alpha1.ResourceSlice, error) {
	s := &v1alpha1.ResourceSlice{}
	if err := decodeDocument(source, data, v1alpha1.ResourceSliceKind, s); err != nil {
		return nil, err
	}
	return s, nil
}

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
	var generic any
	if err := yaml.Unmarshal(data, &generic); err != nil {
		return fmt.Errorf("%s: is not valid YAML or JSON: %w", source, cleanYAMLError(err))
	}
	object, ok := generic.(map[string]any)
	if !ok {
		return &WrongKindError{Source: source, Have: shapeOf(generic), Want: kind}
	}
	meta := struct{ APIVersion, Kind string }{}
	meta.APIVersion, _ = object["apiVersion"].(string)
	meta.Kind, _ = object["kind"].(string)
	if meta.Kind != kind {
		return &WrongKindError{Source: source, Have: meta.Kind, Want: kind}
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

// WrongKindError says that a file holds something else than the kind a command reads: Have is its kind
// ("" for none), or what it is when it is not an object ("a list", "a string").
type WrongKindError struct {
	Source, Have, Want string
}

func (e *WrongKindError) Error() string {
	if e.Have == "" {
		return fmt.Sprintf("%s: holds no kind, it is not %s", e.Source, article(e.Want))
	}
	if strings.HasPrefix(e.Have, "a ") {
		return fmt.Sprintf("%s: holds %s, not %s object", e.Source, e.Have, article(e.Want))
	}
	return fmt.Sprintf("%s: is %s, not %s", e.Source, article(e.Have), article(e.Want))
}

// article puts "a" or "an" before a kind.
func article(kind string) string {
	if kind != "" && strings.ContainsRune("AEIOU", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// shapeOf names what a decoded YAML or JSON value is, for an error.
func shapeOf(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case string:
		return "a string"
	case nil:
		return "a null"
	}
	return "a value"
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

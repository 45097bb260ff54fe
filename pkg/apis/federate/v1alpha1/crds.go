package v1alpha1

import (
	"embed"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

//go:embed crds/*.yaml
var crdFiles embed.FS

// CRDs returns the CustomResourceDefinitions of the API, parsed from the embedded manifests.
func CRDs() ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, name := range []string{"crds/tenants.yaml", "crds/identities.yaml", "crds/resourceslices.yaml", "crds/resourcesliceclasses.yaml", "crds/namespacerequests.yaml", "crds/exchangerequests.yaml"} {
		data, err := crdFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, u)
	}
	return out, nil
}

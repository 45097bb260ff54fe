package v1alpha1

import (
	"sort"
	"testing"
)

// kubectl explain reads the descriptions the API server publishes from these schemas: every field an
// administrator can meet says what it is, the kind's own schema too. metadata is the exception: the API
// server refuses anything but its type there, and publishes ObjectMeta's own descriptions.
func TestEverySchemaFieldIsDescribed(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) == 0 {
		t.Fatal("no CRDs")
	}
	for _, crd := range crds {
		spec, _ := crd.Object["spec"].(map[string]any)
		versions, _ := spec["versions"].([]any)
		if len(versions) == 0 {
			t.Errorf("%s: no versions", crd.GetName())
		}
		for _, v := range versions {
			version, _ := v.(map[string]any)
			schema, _ := version["schema"].(map[string]any)
			root, ok := schema["openAPIV3Schema"].(map[string]any)
			if !ok {
				t.Errorf("%s %v: no openAPIV3Schema", crd.GetName(), version["name"])
				continue
			}
			var missing []string
			walked := undescribed(crd.GetName(), root, true, &missing)
			sort.Strings(missing)
			for _, path := range missing {
				t.Errorf("%s: no description", path)
			}
			if walked < 5 {
				t.Errorf("%s: walked %d fields: the walk does not reach the schema's properties", crd.GetName(), walked)
			}
		}
	}
}

// undescribed adds to missing the path of every schema under s (s included) that has no description, and
// returns how many schemas it walked: properties, and the properties of array items and map values; the
// root's metadata is the API server's to describe.
func undescribed(path string, s map[string]any, root bool, missing *[]string) int {
	if d, _ := s["description"].(string); d == "" {
		*missing = append(*missing, path)
	}
	n := 1
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		if name == "metadata" && root {
			continue
		}
		if ps, ok := p.(map[string]any); ok {
			n += undescribed(path+"."+name, ps, false, missing)
		}
	}
	for _, key := range []string{"items", "additionalProperties"} {
		if sub, ok := s[key].(map[string]any); ok {
			if subProps, _ := sub["properties"].(map[string]any); len(subProps) > 0 {
				n += undescribed(path+"["+key+"]", sub, false, missing)
			}
		}
	}
	return n
}

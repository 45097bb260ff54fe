// Package objects converts between typed Kubernetes objects and what the dynamic client sends and returns,
// and reads "already gone" as success. Only the domain's rooms use it.
package objects

import (
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// ToUnstructured converts a typed object for the dynamic client, without the fields apply refuses.
func ToUnstructured(obj any) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &u.Object); err != nil {
		return nil, err
	}
	// Server-side apply refuses creationTimestamp: null and an empty status is noise.
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// FromUnstructured converts what the dynamic client returned into a typed object.
func FromUnstructured(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

// IgnoreNotFound treats "already gone" as success, and a missing CRD (never initialized) likewise.
func IgnoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

package status

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// listTenants reads every Tenant the selector matches, nil when there is no Tenant CRD (never a provider).
//
// On an API server it reads the list's JSON and decodes just what status shows into the typed objects:
// the dynamic client would decode each Tenant into maps (after checking the whole list, and reading it
// again for its kind) and the maps into the types, four passes over a list that with a thousand tenants
// is most of status's time, where kubectl get tenants pays one. The fake clusters of the unit tier have no
// such connection (no REST client) and go through the dynamic client.
func listTenants(ctx context.Context, c *member.Cluster, sel metav1.ListOptions) ([]v1alpha1.Tenant, error) {
	rc := c.Kube.Discovery().RESTClient()
	if rc == nil {
		return dynamicTenants(ctx, c, sel)
	}
	gvr := v1alpha1.TenantGVR
	raw, err := rc.Get().AbsPath("/apis", gvr.Group, gvr.Version, gvr.Resource).Param("labelSelector", sel.LabelSelector).Do(ctx).Raw()
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing Tenants: %w", err)
	}
	// Only the fields status reads: the rest of each object (its managed fields above all) is skipped.
	var list struct {
		Items []struct {
			Metadata struct {
				Namespace string            `json:"namespace"`
				Labels    map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec   v1alpha1.TenantSpec   `json:"spec"`
			Status v1alpha1.TenantStatus `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("listing Tenants: %w", err)
	}
	out := make([]v1alpha1.Tenant, len(list.Items))
	for i, it := range list.Items {
		out[i] = v1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: it.Metadata.Namespace, Labels: it.Metadata.Labels}, Spec: it.Spec, Status: it.Status}
	}
	return out, nil
}

func dynamicTenants(ctx context.Context, c *member.Cluster, sel metav1.ListOptions) ([]v1alpha1.Tenant, error) {
	list, err := c.Dynamic.Resource(v1alpha1.TenantGVR).List(ctx, sel)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing Tenants: %w", err)
	}
	out := make([]v1alpha1.Tenant, len(list.Items))
	for i := range list.Items {
		if err := objects.FromUnstructured(&list.Items[i], &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

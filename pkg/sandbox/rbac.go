package sandbox

import (
	"context"
	"encoding/json"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// defaultClusterRole is what a tenant may do in its sandbox on the provider: run ordinary namespaced
// workloads, see its quota and limits, and read its own Tenant. It grants nothing on RBAC, CSRs,
// ServiceAccounts (so no token minting), NetworkPolicies, other namespaces or the federation's own objects
// beyond that read and leaving its own requests (ResourceSlices, NamespaceRequests), and it is only ever bound with a RoleBinding. DaemonSets are left out on purpose: a
// DaemonSet asks for one pod on every node, the provider's most sensitive ones included, which is never
// what a tenant's share of a cluster means. docs/security.md gives the reasoning for each rule.
func defaultClusterRole() *rbacv1.ClusterRole {
	rw := []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	ro := []string{"get", "list", "watch"}
	return &rbacv1.ClusterRole{
		TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   member.DefaultClusterRole,
			Labels: map[string]string{member.LabelManagedBy: member.ManagedBy},
		},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods", "services", "configmaps", "secrets",
				"persistentvolumeclaims", "pods/log", "pods/exec", "pods/portforward"}, Verbs: rw},
			{APIGroups: []string{""}, Resources: []string{"events", "pods/status", "endpoints", "resourcequotas", "limitranges"}, Verbs: ro},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets",
				"replicasets", "deployments/scale", "statefulsets/scale"}, Verbs: rw},
			{APIGroups: []string{"batch"}, Resources: []string{"jobs", "cronjobs"}, Verbs: rw},
			{APIGroups: []string{v1alpha1.Group}, Resources: []string{"tenants"}, Verbs: ro},
			// The consumer's requests to its provider travel through its own identity: it may leave and
			// withdraw them, never answer them (no status subresource), and the quota bounds their number.
			{APIGroups: []string{v1alpha1.Group}, Resources: []string{"resourceslices", "namespacerequests", "exchangerequests"},
				Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
		},
	}
}

func roleBinding(namespace, user, clusterRole, consumerID string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: member.RoleBindingName, Namespace: namespace, Labels: member.TenantLabels(consumerID)},
		Subjects:   []rbacv1.Subject{credential.SubjectFor(user)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
	}
}

// BindRole makes the one RoleBinding of the tenant namespace name exactly the given users (the new one,
// so an earlier certificate of the same consumer loses its rights at once; or, while a renewal's
// certificate is issued, the recorded one and the new one). It is one server-side apply, with no read
// first (subjects is an atomic list: the apply replaces it whole); only a binding to another role, whose
// roleRef cannot change, is deleted and made again.
func BindRole(ctx context.Context, c *member.Cluster, ns, user, clusterRole, consumerID string, also ...string) error {
	_, err := BindRoleObject(ctx, c, ns, user, clusterRole, consumerID, also...)
	return err
}

// BindRoleObject is BindRole returning the binding as written (its UID, for RebindSubjects).
func BindRoleObject(ctx context.Context, c *member.Cluster, ns, user, clusterRole, consumerID string, also ...string) (*rbacv1.RoleBinding, error) {
	want := roleBinding(ns, user, clusterRole, consumerID)
	for _, u := range also {
		want.Subjects = append(want.Subjects, credential.SubjectFor(u))
	}
	rbs := c.Kube.RbacV1().RoleBindings(ns)
	// The apply names only the fields this run owns (no status, no creationTimestamp).
	body, err := json.Marshal(map[string]any{
		"apiVersion": rbacv1.SchemeGroupVersion.String(), "kind": "RoleBinding",
		"metadata": map[string]any{"name": member.RoleBindingName, "namespace": ns, "labels": want.Labels},
		"roleRef":  want.RoleRef, "subjects": want.Subjects,
	})
	if err != nil {
		return nil, err
	}
	force := true
	rb, err := rbs.Patch(ctx, member.RoleBindingName, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: member.FieldManager, Force: &force})
	if !apierrors.IsInvalid(err) {
		return rb, err
	}
	existing, gerr := rbs.Get(ctx, member.RoleBindingName, metav1.GetOptions{})
	if gerr != nil || existing.RoleRef == want.RoleRef {
		return nil, err // invalid for another reason
	}
	if err := rbs.Delete(ctx, member.RoleBindingName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &existing.UID}}); err != nil {
		return nil, err
	}
	return rbs.Create(ctx, want, metav1.CreateOptions{})
}

// RebindSubjects makes the tenant namespace's RoleBinding, exactly the object of uid, bind the given
// users alone. Unlike BindRole it never creates a binding: a binding deleted meanwhile (a revocation) is
// NotFound, another object of the name is Invalid (the UID test fails), and nothing is written.
func RebindSubjects(ctx context.Context, c *member.Cluster, ns string, uid types.UID, users ...string) error {
	subjects := make([]rbacv1.Subject, len(users))
	for i, u := range users {
		subjects[i] = credential.SubjectFor(u)
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": uid},
		{"op": "replace", "path": "/subjects", "value": subjects},
	})
	if err != nil {
		return err
	}
	_, err = c.Kube.RbacV1().RoleBindings(ns).Patch(ctx, member.RoleBindingName, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: member.FieldManager})
	return err
}

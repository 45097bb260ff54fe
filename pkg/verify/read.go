package verify

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
	"github.com/federate-dev/kubectl-federate/pkg/status"
)

// world is everything verify compares, read once, all at once: each kind is one list of the whole cluster
// (the sandbox's objects by their one name, federate-sandbox, in every namespace), so a provider of a
// hundred tenants costs as many round trips as a provider of one.
type world struct {
	tenants    []v1alpha1.Tenant
	slices     []v1alpha1.ResourceSlice // granted, of the tenant namespaces
	namespaces map[string]*corev1.Namespace
	quotas     map[string]*corev1.ResourceQuota // by namespace: the sandbox's
	limits     map[string]*corev1.LimitRange
	policies   map[string]*networkingv1.NetworkPolicy
	accounts   map[string]*corev1.ServiceAccount // by namespace: default
	pending    map[string]string                 // by namespace: a claim that waits for a volume
	rbs        []rbacv1.RoleBinding
	crbs       []rbacv1.ClusterRoleBinding
	roles      map[string][]rbacv1.PolicyRule // "ClusterRole/name", "Role/ns/name"
	ledgers    map[string]*sandbox.GrantLedger
	decisions  []*exchange.Decision

	priorityClasses, runtimeClasses []string
	defaultClass                    bool // a default StorageClass fills in a claim's class

	installed    []sandbox.Drift
	installedErr error
	engine       string
	engineErr    error
	pods         sandbox.PodRanges
	podsErr      error
}

// read reads the world. What verify cannot do without (the records, the bindings) fails it; the checks of
// the cluster as a whole (admission objects, engine, pod ranges) keep their errors for their rows.
func read(ctx context.Context, c *member.Cluster) (*world, error) {
	w := &world{}
	core := c.Kube.CoreV1()
	err := parallel.All(
		func() (err error) { w.tenants, err = listTenants(ctx, c); return err },
		func() (err error) { w.slices, err = listSlices(ctx, c); return err },
		func() error {
			l, err := core.Namespaces().List(ctx, metav1.ListOptions{})
			w.namespaces = byName(l, err, func(l *corev1.NamespaceList) []corev1.Namespace { return l.Items }, func(n *corev1.Namespace) string { return n.Name })
			return wrap("namespaces", err)
		},
		func() (err error) {
			w.quotas, err = listSandbox[corev1.ResourceQuota](ctx, c, sandbox.ResourceQuotaGVR, sandbox.SandboxName)
			return err
		},
		func() (err error) {
			w.limits, err = listSandbox[corev1.LimitRange](ctx, c, sandbox.LimitRangeGVR, sandbox.SandboxName)
			return err
		},
		func() (err error) {
			w.policies, err = listSandbox[networkingv1.NetworkPolicy](ctx, c, sandbox.NetworkPolicyGVR, sandbox.SandboxName)
			return err
		},
		func() (err error) {
			w.accounts, err = listSandbox[corev1.ServiceAccount](ctx, c, sandbox.ServiceAccountGVR, "default")
			return err
		},
		func() (err error) { w.pending, err = pendingClaims(ctx, c); return err },
		func() (err error) { return readRBAC(ctx, c, w) },
		func() (err error) { w.ledgers, err = readLedgers(ctx, c); return err },
		func() (err error) { w.decisions, err = exchange.Decisions(ctx, c, ""); return err },
		func() error { return readClasses(ctx, c, w) },
		func() error { w.installed, w.installedErr = sandbox.InstalledDrift(ctx, c); return nil },
		func() error { w.engine, w.engineErr = status.NetworkPolicyEngine(ctx, c); return nil },
		func() error { w.pods, w.podsErr = sandbox.DetectPodRanges(ctx, c); return nil },
	)
	return w, err
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("listing %s: %w", what, err)
}

// listSandbox lists, in every namespace, the objects of one name that the sandbox applies (read as they
// are written, through the dynamic client), by namespace. An object of another name is left out: a
// server may ignore the field selector.
func listSandbox[T any](ctx context.Context, c *member.Cluster, gvr schema.GroupVersionResource, name string) (map[string]*T, error) {
	l, err := c.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		return nil, wrap(gvr.Resource, err)
	}
	out := map[string]*T{}
	for i := range l.Items {
		if l.Items[i].GetName() != name {
			continue
		}
		o := new(T)
		if err := objects.FromUnstructured(&l.Items[i], o); err != nil {
			return nil, err
		}
		out[l.Items[i].GetNamespace()] = o
	}
	return out, nil
}

// byName indexes a list's items by key (an item keyed "" is left out); empty when the list failed.
func byName[L any, T any, P interface{ *T }](l L, err error, items func(L) []T, key func(P) string) map[string]P {
	out := map[string]P{}
	if err != nil {
		return out
	}
	all := items(l)
	for i := range all {
		p := P(&all[i])
		if k := key(p); k != "" {
			out[k] = p
		}
	}
	return out
}

func listTenants(ctx context.Context, c *member.Cluster) ([]v1alpha1.Tenant, error) {
	l, err := c.Dynamic.Resource(v1alpha1.TenantGVR).List(ctx, metav1.ListOptions{LabelSelector: member.LabelManagedBy + "=" + member.ManagedBy})
	if apierrors.IsNotFound(err) {
		return nil, nil // no CRD: this cluster never provided
	}
	if err != nil {
		return nil, wrap("Tenants", err)
	}
	out := make([]v1alpha1.Tenant, 0, len(l.Items))
	for i := range l.Items {
		var t v1alpha1.Tenant
		if err := objects.FromUnstructured(&l.Items[i], &t); err != nil {
			return nil, err
		}
		// The provider's Tenants only: in its consumers' sandboxes, one per consumer, named by it.
		if t.Namespace == member.TenantNamespace(t.Spec.ClusterID) && t.Name == t.Spec.ClusterID {
			out = append(out, t)
		}
	}
	return out, nil
}

func listSlices(ctx context.Context, c *member.Cluster) ([]v1alpha1.ResourceSlice, error) {
	l, err := c.Dynamic.Resource(v1alpha1.ResourceSliceGVR).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("ResourceSlices", err)
	}
	var out []v1alpha1.ResourceSlice
	for i := range l.Items {
		var s v1alpha1.ResourceSlice
		if !strings.HasPrefix(l.Items[i].GetNamespace(), member.TenantNamespacePrefix) || objects.FromUnstructured(&l.Items[i], &s) != nil {
			continue // this cluster's own requests, as a consumer
		}
		if s.Status.Phase == grants.SliceAccepted && s.Status.Namespace != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// pendingClaims finds, per namespace, a claim waiting for a volume (for the rebinding attack).
func pendingClaims(ctx context.Context, c *member.Cluster) (map[string]string, error) {
	l, err := c.Kube.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, wrap("persistentvolumeclaims", err)
	}
	out := map[string]string{}
	for _, pvc := range l.Items {
		if pvc.Spec.VolumeName == "" && pvc.DeletionTimestamp == nil {
			if _, ok := out[pvc.Namespace]; !ok {
				out[pvc.Namespace] = pvc.Name
			}
		}
	}
	return out, nil
}

func readRBAC(ctx context.Context, c *member.Cluster, w *world) error {
	rbac := c.Kube.RbacV1()
	var croles *rbacv1.ClusterRoleList
	var roles *rbacv1.RoleList
	err := parallel.All(
		func() error {
			l, err := rbac.RoleBindings("").List(ctx, metav1.ListOptions{})
			if err == nil {
				w.rbs = l.Items
			}
			return wrap("rolebindings", err)
		},
		func() error {
			l, err := rbac.ClusterRoleBindings().List(ctx, metav1.ListOptions{})
			if err == nil {
				w.crbs = l.Items
			}
			return wrap("clusterrolebindings", err)
		},
		func() (err error) {
			croles, err = rbac.ClusterRoles().List(ctx, metav1.ListOptions{})
			return wrap("clusterroles", err)
		},
		func() (err error) {
			roles, err = rbac.Roles("").List(ctx, metav1.ListOptions{})
			return wrap("roles", err)
		},
	)
	if err != nil {
		return err
	}
	w.roles = map[string][]rbacv1.PolicyRule{}
	for _, r := range croles.Items {
		w.roles["ClusterRole/"+r.Name] = r.Rules
	}
	for _, r := range roles.Items {
		w.roles["Role/"+r.Namespace+"/"+r.Name] = r.Rules
	}
	return nil
}

// readLedgers reads every consumer's grants ledger (the total and what each grant holds of it).
func readLedgers(ctx context.Context, c *member.Cluster) (map[string]*sandbox.GrantLedger, error) {
	l, err := c.Kube.CoreV1().ConfigMaps(member.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: member.LabelManagedBy + "=" + member.ManagedBy})
	if err != nil {
		return nil, wrap("the grants ledgers", err)
	}
	out := map[string]*sandbox.GrantLedger{}
	for i := range l.Items {
		cm := &l.Items[i]
		consumer := cm.Labels[member.LabelRemoteClusterID]
		if consumer == "" || cm.Name != sandbox.GrantsLedgerName(consumer) {
			continue
		}
		ledger, err := sandbox.ParseLedger(cm)
		if err != nil {
			return nil, err
		}
		out[consumer] = ledger
	}
	return out, nil
}

// readClasses reads what the attacks that name a class need: the priority and runtime classes there
// are, and whether a default StorageClass fills in a claim that names none. A cluster that serves none
// of one kind has an empty list.
func readClasses(ctx context.Context, c *member.Cluster, w *world) error {
	return parallel.All(
		func() error {
			l, err := c.Kube.SchedulingV1().PriorityClasses().List(ctx, metav1.ListOptions{})
			if err != nil {
				return objects.IgnoreNotFound(wrap("priorityclasses", err))
			}
			for _, pc := range l.Items {
				w.priorityClasses = append(w.priorityClasses, pc.Name)
			}
			slices.Sort(w.priorityClasses)
			return nil
		},
		func() error {
			l, err := c.Kube.NodeV1().RuntimeClasses().List(ctx, metav1.ListOptions{})
			if err != nil {
				return objects.IgnoreNotFound(wrap("runtimeclasses", err))
			}
			for _, rc := range l.Items {
				w.runtimeClasses = append(w.runtimeClasses, rc.Name)
			}
			slices.Sort(w.runtimeClasses)
			return nil
		},
		func() error {
			l, err := c.Kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
			if err != nil {
				return objects.IgnoreNotFound(wrap("storageclasses", err))
			}
			for _, sc := range l.Items {
				if sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" || sc.Annotations["storageclass.beta.kubernetes.io/is-default-class"] == "true" {
					w.defaultClass = true
				}
			}
			return nil
		},
	)
}

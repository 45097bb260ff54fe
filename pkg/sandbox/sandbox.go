package sandbox

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Every namespace a tenant is granted is a sandbox that the API server enforces by itself, with no
// controller: Pod Security Admission labels, a ResourceQuota and a LimitRange, the ValidatingAdmissionPolicy
// that init installs (matched through LabelSandbox), a NetworkPolicy, and a default ServiceAccount that
// mounts no token. One function builds it, and every kind of grant calls it.

// Names and labels of the sandbox.
const (
	SandboxName = "federate-sandbox" // the ResourceQuota, LimitRange, NetworkPolicy and admission policy
	// LabelSandbox marks a namespace as a tenant sandbox; the admission policy binding selects on it.
	LabelSandbox = "federate.dev/sandbox"
	// AnnotationPriorityClasses lists the priority classes pods in the sandbox may use, comma-separated; the
	// admission policy reads it from the namespace.
	AnnotationPriorityClasses = "federate.dev/allowed-priority-classes"
	// AnnotationStorageClasses lists the storage classes PersistentVolumeClaims in the sandbox may name,
	// comma-separated; empty means any named class.
	AnnotationStorageClasses = "federate.dev/allowed-storage-classes"
	// AnnotationTolerations lists the taint keys pods in the sandbox may tolerate besides
	// DefaultTolerations, comma-separated.
	AnnotationTolerations = "federate.dev/allowed-tolerations"
	// AnnotationRuntimeClasses lists the runtime classes pods in the sandbox may name, comma-separated.
	AnnotationRuntimeClasses = "federate.dev/allowed-runtime-classes"
	// AnnotationSchedulers lists the schedulers pods in the sandbox may name besides default-scheduler,
	// comma-separated.
	AnnotationSchedulers = "federate.dev/allowed-schedulers"
	// AnnotationCSIDrivers lists the CSI drivers whose inline (ephemeral) volumes pods in the sandbox may
	// use, comma-separated; empty means none.
	AnnotationCSIDrivers = "federate.dev/allowed-csi-drivers"
	// AnnotationImageVolumes lists the image references (prefixes ending in /, or * for any) pods in the
	// sandbox may mount as image volumes, comma-separated; empty means none.
	AnnotationImageVolumes = "federate.dev/allowed-image-volumes"

	PsaPrefix = "pod-security.kubernetes.io/"
)

// Pod Security levels.
const (
	PodSecurityRestricted = "restricted"
	PodSecurityBaseline   = "baseline"
	PodSecurityPrivileged = "privileged"
)

// PodSecurityLevels lists the accepted levels, safest first.
var PodSecurityLevels = []string{PodSecurityRestricted, PodSecurityBaseline, PodSecurityPrivileged}

// Options are the provider's choices for a sandbox; the zero value means the safe defaults.
type Options struct {
	PodSecurity     string              // "" means restricted
	Quota           corev1.ResourceList // merged over DefaultQuota
	DefaultRequests corev1.ResourceList // merged over DefaultContainerRequests
	DefaultLimits   corev1.ResourceList // merged over DefaultContainerLimits
	PriorityClasses []string            // allowed priorityClassName values besides none
	StorageClasses  []string            // allowed storageClassName values; none listed means any named class
	Tolerations     []string            // taint keys pods may tolerate besides DefaultTolerations
	RuntimeClasses  []string            // allowed runtimeClassName values besides none
	Schedulers      []string            // allowed schedulerName values besides DefaultScheduler
	CSIDrivers      []string            // CSI drivers whose inline volumes pods may use; none by default
	ImageVolumes    []string            // image reference prefixes pods may mount as image volumes; none by default

	// Cordoned makes a new namespace start cordoned (LabelCordoned): a grant made while its consumer is
	// cordoned. It never uncordons a namespace that is.
	Cordoned bool

	// share, set for a tenant namespace, makes its quota Quota (the tenant's total) less what the ledger
	// it returns has granted elsewhere, written only over an older ledger generation (quota.go).
	Share func() (*GrantLedger, error)
}

// DefaultTolerations are the taint keys every sandbox's pods may tolerate: the two that the
// DefaultTolerationSeconds admission plugin adds to every pod (with effect NoExecute, for 300 s), so that
// an ordinary pod is admitted at all. Tolerating them lets a pod stay on, or be placed on, a node that is
// not ready or unreachable, which is the pod's loss and nobody else's. The other node.kubernetes.io
// condition taints (memory-pressure, disk-pressure, pid-pressure, network-unavailable, unschedulable,
// out-of-service) are not here: tolerating them puts a tenant's pods on nodes the provider is draining
// or that are short of memory, disk or PIDs, which hurts the provider's own workloads there; a provider
// that wants them lists them.
var DefaultTolerations = []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}

// ControlPlaneTaints are the taint keys of control-plane nodes (kubeadm's, and RKE's etcd and
// controlplane roles): never tolerated in a sandbox, whatever the provider allows.
var ControlPlaneTaints = []string{"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master",
	"node-role.kubernetes.io/etcd", "node-role.kubernetes.io/controlplane"}

// DefaultScheduler is the scheduler pods get when they name none; always allowed.
const DefaultScheduler = "default-scheduler"

// DefaultQuota is one tenant's total on a provider, shared by all its namespaces (quota.go): compute,
// storage, object counts (etcd), and no NodePort or LoadBalancer Services, which would open the provider's
// nodes or cloud account to the world. Its limits fit 20 pods of the default container size
// (DefaultContainerLimits), so no one limit hides another. Every kind the tenant role can create is
// counted (a unit test holds defaultClusterRole to that), and so is every kind a controller makes from
// them (ControllerRevisions from StatefulSets, ReplicaSets from Deployments, Jobs from CronJobs, pods,
// EndpointSlices from Services; a unit test holds the list), so nothing fills etcd: the core kinds by
// their plain names, which count every stored object, except pods, whose plain count leaves out finished
// ones (count/pods counts them too); the others by count/<resource>.<group>. Together they admit
// DefaultStoredObjects objects, each at most one etcd request (1.5 MiB by default): 300 MiB at most.
// The history limits that make controllers keep old objects are capped by the admission policies
// (MaxRevisionHistory, MaxJobsHistory).
func DefaultQuota() corev1.ResourceList {
	return MustResources(map[string]string{
		"pods": "20", "requests.cpu": "4", "limits.cpu": "10", "requests.memory": "8Gi", "limits.memory": "16Gi",
		"requests.storage": "20Gi", "persistentvolumeclaims": "10", "requests.ephemeral-storage": "20Gi",
		"services": "10", "services.nodeports": "0", "services.loadbalancers": "0", "secrets": "20", "configmaps": "20",
		"count/pods": "25", "count/deployments.apps": "10", "count/statefulsets.apps": "5", "count/replicasets.apps": "20",
		"count/controllerrevisions.apps": "15", "count/jobs.batch": "10", "count/cronjobs.batch": "5",
		"count/endpointslices.discovery.k8s.io": "10", "count/resourceslices.federate.dev": "10", "count/namespacerequests.federate.dev": "10",
		"count/exchangerequests.federate.dev": "10",
	})
}

// DefaultStoredObjects is how many objects DefaultQuota lets a tenant keep in the provider's etcd, its
// Services' Endpoints included (one each, made by the endpoints controller).
const DefaultStoredObjects = 200

// DefaultContainerRequests and DefaultContainerLimits fill containers that name none, so that pods which
// say nothing about resources are still admitted under a quota on requests and limits.
func DefaultContainerRequests() corev1.ResourceList {
	return MustResources(map[string]string{"cpu": "100m", "memory": "128Mi"})
}

// DefaultContainerLimits are the limits the LimitRange fills in (see DefaultContainerRequests).
func DefaultContainerLimits() corev1.ResourceList {
	return MustResources(map[string]string{"cpu": "500m", "memory": "512Mi"})
}

// MustResources parses resource amounts written in this code; a typo in one is a bug, so it panics.
func MustResources(m map[string]string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range m {
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

// ParseResourceList parses "name=quantity[,name=quantity...]" as kubectl create quota --hard does.
// field names the input in errors.
func ParseResourceList(field, s string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || name == "" || value == "" {
			return nil, fmt.Errorf("%s %q: each entry must be NAME=QUANTITY", field, member.Truncate(kv))
		}
		if errs := validation.IsQualifiedName(name); len(errs) > 0 {
			return nil, fmt.Errorf("%s: %q is not a resource name", field, member.Truncate(name))
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("%s: %s=%q is not a quantity", field, name, member.Truncate(value))
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("%s: %s=%s must not be negative", field, name, value)
		}
		if _, dup := out[corev1.ResourceName(name)]; dup {
			return nil, fmt.Errorf("%s: %s is given twice", field, name)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// Validate checks the options without I/O; it returns them with defaults filled in.
func (o Options) Validate() (Options, error) {
	if o.PodSecurity == "" {
		o.PodSecurity = PodSecurityRestricted
	}
	if !slices.Contains(PodSecurityLevels, o.PodSecurity) {
		return o, fmt.Errorf("pod security level %q: must be one of %s", member.Truncate(o.PodSecurity), strings.Join(PodSecurityLevels, ", "))
	}
	for _, l := range []struct {
		names []string
		check func(string) error
	}{{o.PriorityClasses, ValidatePriorityClass}, {o.StorageClasses, ValidateStorageClass}, {o.Tolerations, ValidateToleration},
		{o.RuntimeClasses, ValidateRuntimeClass}, {o.Schedulers, ValidateScheduler}, {o.CSIDrivers, ValidateCSIDriver}, {o.ImageVolumes, ValidateImageVolume}} {
		for _, name := range l.names {
			if err := l.check(name); err != nil {
				return o, err
			}
		}
	}
	o.Quota = Merged(DefaultQuota(), o.Quota)
	o.DefaultRequests = Merged(DefaultContainerRequests(), o.DefaultRequests)
	o.DefaultLimits = Merged(DefaultContainerLimits(), o.DefaultLimits)
	for name, req := range o.DefaultRequests {
		if lim, ok := o.DefaultLimits[name]; ok && req.Cmp(lim) > 0 {
			return o, fmt.Errorf("default request %s=%s: is more than the default limit %s", name, req.String(), lim.String())
		}
	}
	o.PriorityClasses = SortedSet(o.PriorityClasses)
	o.StorageClasses = SortedSet(o.StorageClasses)
	o.Tolerations = SortedSet(o.Tolerations)
	o.RuntimeClasses = SortedSet(o.RuntimeClasses)
	o.Schedulers = SortedSet(o.Schedulers)
	o.CSIDrivers = SortedSet(o.CSIDrivers)
	o.ImageVolumes = SortedSet(o.ImageVolumes)
	return o, nil
}

// SortedSet sorts a list and drops repeats, so that the same choices always give the same annotation and
// record; an empty list stays nil.
func SortedSet(l []string) []string {
	if len(l) == 0 {
		return nil
	}
	return slices.Compact(slices.Sorted(slices.Values(l)))
}

// ValidatePriorityClass checks a priority class a tenant may be allowed.
func ValidatePriorityClass(pc string) error {
	if errs := validation.IsDNS1123Subdomain(pc); len(errs) > 0 {
		return fmt.Errorf("priority class %q: is not a valid name", member.Truncate(pc))
	}
	if strings.HasPrefix(pc, "system-") {
		return fmt.Errorf("priority class %q: system-* classes preempt the cluster's own pods and are never allowed for a tenant", pc)
	}
	return nil
}

// ValidateStorageClass checks a storage class a tenant's volume claims may be allowed to name.
func ValidateStorageClass(name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("storage class %q: is not a valid name", member.Truncate(name))
	}
	return nil
}

// ValidateToleration checks a taint key a tenant's pods may be allowed to tolerate.
func ValidateToleration(key string) error {
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return fmt.Errorf("toleration %q: is not a valid taint key", member.Truncate(key))
	}
	if slices.Contains(ControlPlaneTaints, key) {
		return fmt.Errorf("toleration %q: the control plane's taints keep workloads off the nodes that run the cluster and are never tolerated in a sandbox", key)
	}
	return nil
}

// ValidateRuntimeClass checks a runtime class a tenant's pods may be allowed to name.
func ValidateRuntimeClass(name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("runtime class %q: is not a valid name", member.Truncate(name))
	}
	return nil
}

// ValidateScheduler checks a scheduler a tenant's pods may be allowed to name.
func ValidateScheduler(name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("scheduler %q: is not a valid name", member.Truncate(name))
	}
	return nil
}

// ValidateCSIDriver checks a CSI driver whose inline volumes a tenant's pods may be allowed to use.
func ValidateCSIDriver(name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 || len(name) > 63 {
		return fmt.Errorf("CSI driver %q: is not a valid driver name", member.Truncate(name))
	}
	return nil
}

// ValidateImageVolume checks an image reference prefix a tenant's pods may be allowed to mount as image
// volumes: * (any image), or a registry or repository path ending in /, so that registry.example.com/
// never also allows registry.example.com.evil.example.
func ValidateImageVolume(prefix string) error {
	if prefix == "*" {
		return nil
	}
	if prefix == "" || strings.ContainsAny(prefix, " ,\t\n'\\") || !strings.HasSuffix(prefix, "/") || strings.HasPrefix(prefix, "/") {
		return fmt.Errorf("image volume source %q: must be a registry or repository path ending in / (such as registry.example.com/models/), or * for any image", member.Truncate(prefix))
	}
	return nil
}

// Merged is base with each resource that over names replaced by over's amount.
func Merged(base, over corev1.ResourceList) corev1.ResourceList {
	out := base.DeepCopy()
	maps.Copy(out, over)
	return out
}

// Status is what the Tenant status records of a sandbox.
func (o Options) Status() *v1alpha1.SandboxStatus {
	return &v1alpha1.SandboxStatus{
		PodSecurity:     o.PodSecurity,
		Quota:           FormatResources(o.Quota),
		DefaultRequests: FormatResources(o.DefaultRequests),
		DefaultLimits:   FormatResources(o.DefaultLimits),
		PriorityClasses: o.PriorityClasses,
		StorageClasses:  o.StorageClasses,
		Tolerations:     o.Tolerations,
		RuntimeClasses:  o.RuntimeClasses,
		Schedulers:      o.Schedulers,
		CSIDrivers:      o.CSIDrivers,
		ImageVolumes:    o.ImageVolumes,
	}
}

// Annotations are the sandbox namespace's allowed lists, which the admission policies read: each is
// always set, empty when nothing is allowed, so that a re-issuance with fewer choices takes them away.
func (o Options) Annotations() map[string]string {
	return map[string]string{
		AnnotationPriorityClasses: strings.Join(o.PriorityClasses, ","),
		AnnotationStorageClasses:  strings.Join(o.StorageClasses, ","),
		AnnotationTolerations:     strings.Join(o.Tolerations, ","),
		AnnotationRuntimeClasses:  strings.Join(o.RuntimeClasses, ","),
		AnnotationSchedulers:      strings.Join(o.Schedulers, ","),
		AnnotationCSIDrivers:      strings.Join(o.CSIDrivers, ","),
		AnnotationImageVolumes:    strings.Join(o.ImageVolumes, ","),
	}
}

// FormatResources writes a resource list as the strings a Tenant records and a person reads.
func FormatResources(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

// FormatResourceList renders a resource list as sorted name=quantity pairs.
func FormatResourceList(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

// NsOwner is what a provider namespace was created for: a consumer, and which of its grants (the tenant
// namespace, a slice's, or an extra one).
type NsOwner struct{ ConsumerID, Kind, Slice string }

// TenantOwner owns a consumer's tenant namespace.
func TenantOwner(consumerID string) NsOwner {
	return NsOwner{ConsumerID: consumerID, Kind: member.KindTenant}
}

// labels are the ownership labels the namespace carries.
func (o NsOwner) labels() map[string]string {
	l := member.TenantLabels(o.ConsumerID)
	l[member.LabelNamespaceKind] = o.Kind
	if o.Slice != "" {
		l[member.LabelSlice] = o.Slice
	}
	return l
}

// Owns tells whether a namespace with these labels was created by kubectl federate for exactly this
// owner. Tenant namespaces created before the kind label existed carry none; they count as tenant ones.
func (o NsOwner) Owns(l map[string]string) bool {
	kind, hasKind := l[member.LabelNamespaceKind]
	if !hasKind && o.Kind == member.KindTenant {
		kind = member.KindTenant
	}
	return l[member.LabelManagedBy] == member.ManagedBy && l[member.LabelRemoteClusterID] == o.ConsumerID && l[member.LabelRole] == member.RoleProvider &&
		kind == o.Kind && l[member.LabelSlice] == o.Slice
}

func (o NsOwner) String() string {
	switch o.Kind {
	case member.KindSlice:
		return fmt.Sprintf("resource slice %q of consumer %q", o.Slice, o.ConsumerID)
	case member.KindExtra:
		return fmt.Sprintf("an extra namespace of consumer %q", o.ConsumerID)
	}
	return fmt.Sprintf("consumer %q", o.ConsumerID)
}

// EnsureSandbox creates or converges a sandbox namespace of a consumer and everything in it. An existing
// namespace of that name that kubectl federate did not create for this very owner is refused, never
// adopted. The objects inside are server-side applied, all at once, so a re-run with other options
// converges.
// also run alongside the objects, once the namespace is there.
func EnsureSandbox(ctx context.Context, c *member.Cluster, ns string, owner NsOwner, o Options, also ...func() error) error {
	if _, err := ensureOwnNamespace(ctx, c, ns, owner, Labels(owner, o), o.Annotations()); err != nil {
		return err
	}
	return EnsureSandboxIn(ctx, c, ns, owner, o, also...)
}

// CreateSandboxNamespace makes a sandbox's namespace ahead of its objects, as EnsureSandbox would (an
// existing one not made for this owner is refused, never adopted). created is the namespace if this call
// created it, so that a run that fails before using it can remove what it made (RemoveCreatedNamespace),
// and nil where it was there already.
func CreateSandboxNamespace(ctx context.Context, c *member.Cluster, ns string, owner NsOwner, o Options) (created *corev1.Namespace, err error) {
	return ensureOwnNamespace(ctx, c, ns, owner, Labels(owner, o), o.Annotations())
}

// CreateNamespace creates the sandbox namespace where there is none: nil, and nothing written, when one
// of that name is there already (whoever made it).
func CreateNamespace(ctx context.Context, c *member.Cluster, ns string, owner NsOwner, o Options) (*corev1.Namespace, error) {
	want := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: Labels(owner, o), Annotations: o.Annotations()}}
	created, err := c.Kube.CoreV1().Namespaces().Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil, nil
	}
	return created, err
}

// RemoveCreatedNamespace deletes a namespace a run created (that very one: by its UID) and waits until
// the namespace controller has finished with it (seconds: it deletes every object the namespace holds),
// on a context of its own, since the run's may be ending.
func RemoveCreatedNamespace(ctx context.Context, c *member.Cluster, created *corev1.Namespace) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeNamespaceTimeout)
	defer cancel()
	nss := c.Kube.CoreV1().Namespaces()
	err := nss.Delete(ctx, created.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &created.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or another namespace of that name now: not this run's
	}
	if err != nil {
		return fmt.Errorf("removing namespace %s: %w", created.Name, err)
	}
	if err := c.WaitDeleted(ctx, member.Deletable[*corev1.Namespace](nss), created.Name, created.ResourceVersion); err != nil {
		return fmt.Errorf("waiting for namespace %s to be removed: %w", created.Name, err)
	}
	return nil
}

// removeNamespaceTimeout bounds RemoveCreatedNamespace's wait for the namespace controller.
const removeNamespaceTimeout = 30 * time.Second

// EnsureSandboxIn is EnsureSandbox in a namespace that is there already (CreateSandboxNamespace).
func EnsureSandboxIn(ctx context.Context, c *member.Cluster, ns string, owner NsOwner, o Options, also ...func() error) error {
	consumerID := owner.ConsumerID
	// The probes test what the namespace's labels and the cluster's admission policies enforce, not the
	// objects applied here, so they go at the same time.
	return parallel.All(append(also,
		func() error { return applySandboxQuota(ctx, c, ns, owner, o) },
		func() error {
			return WrapApply("LimitRange", ns, c.ApplyTyped(ctx, LimitRangeGVR, ns, LimitRange(ns, consumerID, o)))
		},
		func() error {
			pods, err := DetectPodRanges(ctx, c)
			if err != nil {
				return err
			}
			return WrapApply("NetworkPolicy", ns, c.ApplyTyped(ctx, NetworkPolicyGVR, ns, NetworkPolicy(ns, consumerID, pods)))
		},
		func() error {
			return WrapApply("ServiceAccount", ns, c.ApplyTyped(ctx, ServiceAccountGVR, ns, ServiceAccount(ns)))
		},
		func() error { return waitEnforced(ctx, c, ns, o.PodSecurity) },
	)...)
}

// Labels are a sandbox namespace's labels: its owner's, the sandbox's, the cordon's when o says so, and
// the Pod Security level enforced, warned and audited, at the latest version.
func Labels(owner NsOwner, o Options) map[string]string {
	labels := owner.labels()
	labels[LabelSandbox] = "true"
	if o.Cordoned {
		labels[LabelCordoned] = "true"
	}
	for _, mode := range []string{"enforce", "warn", "audit"} {
		labels[PsaPrefix+mode] = o.PodSecurity
		labels[PsaPrefix+mode+"-version"] = "latest"
	}
	return labels
}

// applyQuota server-side applies the quota and returns it as stored, with its status.
func applyQuota(ctx context.Context, c *member.Cluster, ns string, q *corev1.ResourceQuota) (*corev1.ResourceQuota, error) {
	u, err := objects.ToUnstructured(q)
	if err != nil {
		return nil, err
	}
	out, err := c.Dynamic.Resource(ResourceQuotaGVR).Namespace(ns).Apply(ctx, q.Name, u, metav1.ApplyOptions{FieldManager: member.FieldManager, Force: true})
	if err != nil {
		return nil, err
	}
	applied := &corev1.ResourceQuota{}
	return applied, objects.FromUnstructured(out, applied)
}

// WrapApply names the kind and namespace of an apply that failed; nil stays nil.
func WrapApply(kind, ns string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("applying %s in %s: %w", kind, ns, err)
}

// CheckOwnNamespace refuses, before anything is issued, a namespace of this name that is not owner's.
func CheckOwnNamespace(ctx context.Context, c *member.Cluster, name string, owner NsOwner) error {
	existing, err := c.NamespaceRead(name).Peek(ctx, c)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !owner.Owns(existing.Labels) {
		return fmt.Errorf("namespace %s exists and %w for %s: refusing to adopt it (%w: delete or rename that namespace, or use another name or cluster ID)", name, member.ErrNotOurs, owner, member.ErrNameTaken)
	}
	return nil
}

// ensureOwnNamespace creates the namespace with labels and annotations, or converges one this tool created
// for owner; one that is terminating (a previous unauthenticate) is waited out and created again.
func ensureOwnNamespace(ctx context.Context, c *member.Cluster, name string, owner NsOwner, labels, annotations map[string]string) (*corev1.Namespace, error) {
	nss := c.Kube.CoreV1().Namespaces()
	want := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}
	for {
		existing, err := c.NamespaceRead(name).Take(ctx, c)
		if apierrors.IsNotFound(err) {
			created, err := nss.Create(ctx, want, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				continue // a concurrent run created it: check it as an existing one
			}
			if err != nil {
				return nil, err
			}
			return created, nil
		}
		if err != nil {
			return nil, err
		}
		if !owner.Owns(existing.Labels) {
			return nil, fmt.Errorf("namespace %s exists and %w for %s: refusing to adopt it (%w: delete or rename that namespace, or use another name or cluster ID)", name, member.ErrNotOurs, owner, member.ErrNameTaken)
		}
		if existing.DeletionTimestamp != nil {
			if err := c.WaitDeleted(ctx, member.Deletable[*corev1.Namespace](nss), name, existing.ResourceVersion); err != nil {
				return nil, fmt.Errorf("waiting for namespace %s to finish terminating: %w", name, err)
			}
			continue
		}
		if subset(labels, existing.Labels) && subset(annotations, existing.Annotations) {
			return nil, nil
		}
		if existing.Labels == nil {
			existing.Labels = map[string]string{}
		}
		if existing.Annotations == nil {
			existing.Annotations = map[string]string{}
		}
		maps.Copy(existing.Labels, labels)
		maps.Copy(existing.Annotations, annotations)
		_, err = nss.Update(ctx, existing, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		return nil, err
	}
}

func subset(want, have map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

func sandboxQuota(ns, consumerID string, o Options) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: metav1.ObjectMeta{Name: SandboxName, Namespace: ns, Labels: member.TenantLabels(consumerID)},
		Spec:       corev1.ResourceQuotaSpec{Hard: o.Quota},
	}
}

// LimitRange is the sandbox's LimitRange: the container defaults o chose.
func LimitRange(ns, consumerID string, o Options) *corev1.LimitRange {
	return &corev1.LimitRange{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"},
		ObjectMeta: metav1.ObjectMeta{Name: SandboxName, Namespace: ns, Labels: member.TenantLabels(consumerID)},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer, Default: o.DefaultLimits, DefaultRequest: o.DefaultRequests,
		}}},
	}
}

// MetadataExceptIPv4 and MetadataExceptIPv6 are the addresses the sandbox's pods may not reach: where clouds
// serve instance metadata and credentials, or talk to their hosts. An ipBlock's except must lie inside its
// cidr, and 0.0.0.0/0 and ::/0 hold every one of them.
var (
	MetadataExceptIPv4 = []string{
		// link-local: the metadata service of AWS, GCP, Azure (IMDS), Oracle, OpenStack, DigitalOcean and
		// others (169.254.169.254), and the credentials of EKS Pod Identity (169.254.170.23) and ECS tasks
		// (169.254.170.2)
		"169.254.0.0/16",
		"100.100.100.200/32", // Alibaba Cloud's metadata service
		"168.63.129.16/32",   // Azure's WireServer (VM agent, health probes, DNS for the host): pods resolve through the cluster's DNS
	}
	MetadataExceptIPv6 = []string{
		"fe80::/10",              // link-local
		"fd00:ec2::254/128",      // AWS's instance metadata service over IPv6 (Nitro)
		"fd00:ec2::23/128",       // AWS's EKS Pod Identity Agent over IPv6 (credentials)
		"fd20:ce::254/128",       // GCP's metadata server over IPv6
		"fd00:c1::a9fe:a9fe/128", // Oracle Cloud's instance metadata service over IPv6
		"fd00:a9fe:a9fe::1/128",  // Akamai's (Linode's) metadata service over IPv6
	}
)

// NetworkPolicy admits ingress only from the sandbox's own pods, and lets egress go to them, to the
// cluster's DNS (kube-system's pods labelled k8s-app=kube-dns, on port 53) and anywhere beyond the cluster's
// pods (DetectPodRanges) but the clouds' metadata and host addresses (MetadataExceptIPv4,
// MetadataExceptIPv6): never to another namespace's pods.
func NetworkPolicy(ns, consumerID string, pods PodRanges) *networkingv1.NetworkPolicy {
	tcp, udp, dns := corev1.ProtocolTCP, corev1.ProtocolUDP, intstr.FromInt32(53)
	world := func(cidr string, except ...[]string) networkingv1.NetworkPolicyPeer {
		var all []string
		for _, e := range except {
			all = append(all, e...)
		}
		return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr, Except: all}}
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: SandboxName, Namespace: ns, Labels: member.TenantLabels(consumerID)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}},
			Egress: []networkingv1.NetworkPolicyEgressRule{
				{To: []networkingv1.NetworkPolicyPeer{
					{PodSelector: &metav1.LabelSelector{}},
					world("0.0.0.0/0", MetadataExceptIPv4, pods.IPv4),
					world("::/0", MetadataExceptIPv6, pods.IPv6),
				}},
				{To: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
					PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
				}}, Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dns}, {Protocol: &tcp, Port: &dns}}},
			},
		},
	}
}

// ServiceAccount keeps the namespace's default ServiceAccount from mounting a token into pods
// that do not ask for one.
func ServiceAccount(ns string) *corev1.ServiceAccount {
	no := false
	return &corev1.ServiceAccount{
		TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta:                   metav1.ObjectMeta{Name: "default", Namespace: ns},
		AutomountServiceAccountToken: &no,
	}
}

// OwnerOf reads a provider namespace's owner from its labels.
func OwnerOf(l map[string]string) NsOwner {
	kind := l[member.LabelNamespaceKind]
	if kind == "" {
		kind = member.KindTenant
	}
	return NsOwner{ConsumerID: l[member.LabelRemoteClusterID], Kind: kind, Slice: l[member.LabelSlice]}
}

// FromStatus turns a recorded sandbox back into options.
func FromStatus(st *v1alpha1.SandboxStatus) (Options, error) {
	if st == nil {
		return Options{}, nil
	}
	o := Options{PodSecurity: st.PodSecurity, PriorityClasses: st.PriorityClasses, StorageClasses: st.StorageClasses,
		Tolerations: st.Tolerations, RuntimeClasses: st.RuntimeClasses, Schedulers: st.Schedulers, CSIDrivers: st.CSIDrivers, ImageVolumes: st.ImageVolumes}
	var err error
	if o.Quota, err = ParseResourceList("quota", FormatResourceList(st.Quota)); err != nil {
		return o, err
	}
	if o.DefaultRequests, err = ParseResourceList("defaultRequests", FormatResourceList(st.DefaultRequests)); err != nil {
		return o, err
	}
	o.DefaultLimits, err = ParseResourceList("defaultLimits", FormatResourceList(st.DefaultLimits))
	return o, err
}

package grants

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// A ResourceSlice is an amount of a provider's resources with an identity of its own (Liqo's resource
// acquisition), done without a controller: the consumer signs the request with its pinned handshake key and
// leaves it in its tenant namespace through the pairing's identity; the provider's administrator accepts it
// under a ResourceSliceClass, which builds a sandbox namespace whose quota is the grant and issues the
// slice's own certificate there; the consumer imports that certificate for the key it kept.

// Slice resources a consumer may ask for.
const (
	SliceCPU              = "cpu"
	SliceMemory           = "memory"
	SlicePods             = "pods"
	SliceEphemeralStorage = "ephemeral-storage"
)

// SliceResources lists them in the order they are shown.
var SliceResources = []string{SliceCPU, SliceMemory, SlicePods, SliceEphemeralStorage}

// Slice phases. Pending is the empty phase of a request nobody has answered.
const (
	SlicePending  = "Pending"
	SliceAccepted = "Accepted"
	SliceDenied   = "Denied"
	SliceImported = "Imported"
)

// Over-maximum policies of a class.
const (
	OverMaxClamp = "Clamp"
	OverMaxDeny  = "Deny"
)

// DefaultSliceClass is the class a request without one gets. Unless the provider's administrator defines
// a class of that name, it grants what is asked (as Liqo does by default), binds DefaultClusterRole and
// enforces the restricted Pod Security level.
const DefaultSliceClass = "default"

// ParseSliceResources validates a slice's resources: known names, quantities, positive; cpu and memory
// are required. field prefixes the resource name in errors (a flag prefix, or "spec.resources.").
func ParseSliceResources(field string, m map[string]string) (corev1.ResourceList, error) {
	out, err := ParseSliceQuantities(field, m)
	if err != nil {
		return nil, err
	}
	for _, req := range []string{SliceCPU, SliceMemory} {
		if _, ok := out[corev1.ResourceName(req)]; !ok {
			return nil, fmt.Errorf("%s%s: is required", field, req)
		}
	}
	return out, nil
}

// ParseSliceQuantities is ParseSliceResources with nothing required: a class's maximum, or a grant lower
// than asked.
func ParseSliceQuantities(field string, m map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(SliceResources, name) {
			return nil, fmt.Errorf("%s%s: is not a slice resource (%s)", field, member.Truncate(name), strings.Join(SliceResources, ", "))
		}
		q, err := resource.ParseQuantity(m[name])
		if err != nil {
			return nil, fmt.Errorf("%s%s %q: is not a quantity", field, name, member.Truncate(m[name]))
		}
		if q.Sign() <= 0 {
			return nil, fmt.Errorf("%s%s %s: must be positive", field, name, m[name])
		}
		if name == SlicePods && !q.IsZero() && q.MilliValue()%1000 != 0 {
			return nil, fmt.Errorf("%s%s %s: must be a whole number", field, name, m[name])
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// ClassQuotaResources are the quota resources of a slice's namespace that a class bounds besides the
// slice resources: everything a slice gets without asking (DefaultGrantQuota), but for the quota names of
// the slice resources themselves (cpu is bounded as cpu, which sets requests.cpu and limits.cpu).
func ClassQuotaResources() []string {
	var out []string
	for name := range sandbox.DefaultGrantQuota() {
		if !slices.Contains(sliceQuotaKeys(), name) {
			out = append(out, string(name))
		}
	}
	slices.Sort(out)
	return out
}

// sliceQuotaKeys are the quota entries a slice's resources set.
func sliceQuotaKeys() []corev1.ResourceName {
	return []corev1.ResourceName{"requests.cpu", "limits.cpu", "requests.memory", "limits.memory", "pods", "requests.ephemeral-storage"}
}

// ParseClassMax validates a class's maximum: the slice resources as ParseSliceQuantities does, and any of
// ClassQuotaResources, which may be zero (a class whose slices get none of it). field prefixes the
// resource name in errors.
func ParseClassMax(field string, m map[string]string) (corev1.ResourceList, error) {
	sliceMax := map[string]string{}
	out := corev1.ResourceList{}
	quotaNames := ClassQuotaResources()
	for _, name := range slices.Sorted(maps.Keys(m)) {
		switch {
		case slices.Contains(SliceResources, name):
			sliceMax[name] = m[name]
		case slices.Contains(sliceQuotaKeys(), corev1.ResourceName(name)):
			return nil, fmt.Errorf("%s%s: is set by a slice resource (%s): bound that instead", field, name, strings.Join(SliceResources, ", "))
		case slices.Contains(quotaNames, name):
			q, err := resource.ParseQuantity(m[name])
			if err != nil {
				return nil, fmt.Errorf("%s%s %q: is not a quantity", field, name, member.Truncate(m[name]))
			}
			if q.Sign() < 0 {
				return nil, fmt.Errorf("%s%s %s: must not be negative", field, name, m[name])
			}
			if !strings.HasPrefix(name, "requests.") && q.MilliValue()%1000 != 0 {
				return nil, fmt.Errorf("%s%s %s: must be a whole number", field, name, m[name])
			}
			out[corev1.ResourceName(name)] = q
		default:
			return nil, fmt.Errorf("%s%s: is not a slice resource (%s) nor a quota a slice's namespace has (%s)", field, member.Truncate(name),
				strings.Join(SliceResources, ", "), strings.Join(quotaNames, ", "))
		}
	}
	parsed, err := ParseSliceQuantities(field, sliceMax)
	if err != nil {
		return nil, err
	}
	maps.Copy(out, parsed)
	return out, nil
}

// sliceClass is a class's policy, parsed.
type sliceClass struct {
	name        string
	max         corev1.ResourceList
	overMax     string
	clusterRole string
	podSecurity string
	autoAccept  bool
}

// ValidateSliceClass checks a class's spec and returns it parsed, its defaults filled in.
func ValidateSliceClass(name string, s v1alpha1.ResourceSliceClassSpec) (*sliceClass, error) {
	if err := member.ValidateSliceName("class name", name); err != nil {
		return nil, err
	}
	cls := &sliceClass{name: name, max: corev1.ResourceList{}, overMax: s.OverMax, clusterRole: s.ClusterRole,
		podSecurity: s.PodSecurity, autoAccept: s.AutoAccept}
	mx, err := ParseClassMax("max ", s.Max)
	if err != nil {
		return nil, err
	}
	cls.max = mx
	if cls.overMax == "" {
		cls.overMax = OverMaxClamp
	}
	if cls.overMax != OverMaxClamp && cls.overMax != OverMaxDeny {
		return nil, fmt.Errorf("overMax %q: must be %s or %s", member.Truncate(cls.overMax), OverMaxClamp, OverMaxDeny)
	}
	if cls.clusterRole == "" {
		cls.clusterRole = member.DefaultClusterRole
	}
	if cls.podSecurity == "" {
		cls.podSecurity = sandbox.PodSecurityRestricted
	}
	if !slices.Contains(sandbox.PodSecurityLevels, cls.podSecurity) {
		return nil, fmt.Errorf("podSecurity %q: must be one of %s", member.Truncate(cls.podSecurity), strings.Join(sandbox.PodSecurityLevels, ", "))
	}
	return cls, nil
}

// getSliceClass reads a class; the default class exists implicitly.
func getSliceClass(ctx context.Context, c *member.Cluster, name string) (*sliceClass, error) {
	if name == "" {
		name = DefaultSliceClass
	}
	u, err := c.Dynamic.Resource(v1alpha1.ResourceSliceClassGVR).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && name == DefaultSliceClass {
		return ValidateSliceClass(name, v1alpha1.ResourceSliceClassSpec{})
	}
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("spec.class %q: %w: no ResourceSliceClass of that name on this provider", member.Truncate(name), ErrNoClass)
	}
	if err != nil {
		return nil, fmt.Errorf("reading ResourceSliceClass %s: %w", name, err)
	}
	var cls v1alpha1.ResourceSliceClass
	if err := objects.FromUnstructured(u, &cls); err != nil {
		return nil, err
	}
	parsed, err := ValidateSliceClass(name, cls.Spec)
	if err != nil {
		return nil, fmt.Errorf("ResourceSliceClass %s: %w", name, err)
	}
	return parsed, nil
}

// ErrNoClass means a slice asks for a class the provider does not define.
var ErrNoClass = errors.New("unknown class")

// grant decides what a slice gets: what it asks, bounded by the class's maximum (clamped, or the whole
// request denied when the class says so), and by the administrator's own choice, which may only lower it.
// It returns the grant and a note on what was lowered; a denial is an error wrapping ErrDenied.
func (cls *sliceClass) grant(asked, override corev1.ResourceList) (corev1.ResourceList, string, error) {
	granted := asked.DeepCopy()
	var notes []string
	for _, name := range slices.Sorted(maps.Keys(asked)) {
		q := asked[name]
		if mx, ok := cls.max[name]; ok && q.Cmp(mx) > 0 {
			if cls.overMax == OverMaxDeny {
				return nil, "", fmt.Errorf("%w: %s %s is over class %q's maximum of %s", member.ErrDenied, name, q.String(), cls.name, mx.String())
			}
			granted[name] = mx
			notes = append(notes, fmt.Sprintf("%s lowered from %s to class %q's maximum %s", name, q.String(), cls.name, mx.String()))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(override)) {
		q := override[name]
		have, asked := granted[name]
		if !asked {
			return nil, "", &GrantError{Resource: string(name), Problem: "the slice did not ask for it, so it cannot be granted"}
		}
		if q.Cmp(have) > 0 {
			return nil, "", &GrantError{Resource: string(name), Problem: fmt.Sprintf("%s is more than the %s this slice can get (a grant is never more than asked, nor over the class's maximum)", q.String(), have.String())}
		}
		if q.Cmp(have) < 0 {
			notes = append(notes, fmt.Sprintf("%s lowered from %s to %s by the provider", name, have.String(), q.String()))
			granted[name] = q
		}
	}
	return granted, strings.Join(notes, "; "), nil
}

// sliceQuotaKey is the quota entry that bounds a slice resource (its requests; pods by count).
func sliceQuotaKey(name string) corev1.ResourceName {
	if name == SlicePods {
		return corev1.ResourceName(name)
	}
	return corev1.ResourceName("requests." + name)
}

// SliceQuota is a slice's quota: its grant (cpu and memory as requests and limits, pods, and ephemeral
// storage as requests), and of everything else the slice allowance (DefaultGrantQuota), never over its
// class's maximum; a slice resource not asked for gets the allowance too. Stored pods may be twice its pods
// (a finished Job's pods stay until the Job goes), unless the class bounds count/pods lower.
func SliceQuota(granted corev1.ResourceList, cls *sliceClass) corev1.ResourceList {
	quota := sandbox.DefaultGrantQuota()
	capped := func(q resource.Quantity, maxName corev1.ResourceName) resource.Quantity {
		if mx, ok := cls.max[maxName]; ok && q.Cmp(mx) > 0 {
			return mx.DeepCopy()
		}
		return q
	}
	for name, q := range quota {
		quota[name] = capped(q, name)
	}
	for _, name := range SliceResources {
		key := sliceQuotaKey(name)
		q, asked := granted[corev1.ResourceName(name)]
		if !asked {
			q = capped(sandbox.DefaultGrantQuota()[key], corev1.ResourceName(name))
		}
		quota[key] = q
		if name == SliceCPU || name == SliceMemory {
			quota[corev1.ResourceName("limits."+name)] = q
		}
	}
	stored := quota[corev1.ResourcePods].DeepCopy()
	stored.Add(stored)
	if have := quota["count/pods"]; stored.Cmp(have) > 0 {
		quota["count/pods"] = capped(stored, "count/pods")
	}
	return quota
}

// sliceSandbox is the sandbox of a slice's namespace: sliceQuota as its quota, which reserveGrant then
// completes with the rest of the tenant's total; container defaults are no larger than the grant.
func sliceSandbox(granted corev1.ResourceList, cls *sliceClass) (sandbox.Options, error) {
	quota := SliceQuota(granted, cls)
	reqs, lims := sandbox.DefaultContainerRequests(), sandbox.DefaultContainerLimits()
	for _, name := range []corev1.ResourceName{SliceCPU, SliceMemory} {
		q := quota[sliceQuotaKey(string(name))]
		if q.Cmp(lims[name]) < 0 {
			lims[name] = q
		}
		if q.Cmp(reqs[name]) < 0 {
			reqs[name] = q
		}
	}
	sb, err := sandbox.Options{PodSecurity: cls.podSecurity, Quota: quota, DefaultRequests: reqs, DefaultLimits: lims}.Validate()
	sb.Quota = quota // Validate puts the tenant's defaults under what is missing; a slice has only its own
	return sb, err
}

// sliceGrant is what a slice's quota enforces, by slice resource: what the status records and the
// consumer's import reads back through the slice's own credential.
func sliceGrant(quota corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for _, name := range SliceResources {
		if q, ok := quota[sliceQuotaKey(name)]; ok {
			out[name] = q.String()
		}
	}
	return out
}

func formatList(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

// SliceClassOptions define a ResourceSliceClass.
type SliceClassOptions struct {
	Name string
	Spec v1alpha1.ResourceSliceClassSpec
}

// Outcomes of an apply, as kubectl says them.
const (
	Created    = "created"
	Configured = "configured"
	Unchanged  = "unchanged"
)

// ApplySliceClass (provider) creates or updates a ResourceSliceClass after validating it, and says which
// (Created, Configured, Unchanged).
func ApplySliceClass(ctx context.Context, c *member.Cluster, o SliceClassOptions) (*v1alpha1.ResourceSliceClass, string, error) {
	cls, err := ValidateSliceClass(o.Name, o.Spec)
	if err != nil {
		return nil, "", err
	}
	if _, err := sandbox.Initialize(ctx, c, "", false); err != nil { // accepting a slice checks the sandbox's objects
		return nil, "", err
	}
	obj := &v1alpha1.ResourceSliceClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.ResourceSliceClassKind},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Labels: map[string]string{member.LabelManagedBy: member.ManagedBy}},
		Spec: v1alpha1.ResourceSliceClassSpec{Max: formatList(cls.max), OverMax: cls.overMax, ClusterRole: cls.clusterRole,
			PodSecurity: cls.podSecurity, AutoAccept: cls.autoAccept},
	}
	if len(obj.Spec.Max) == 0 {
		obj.Spec.Max = nil
	}
	outcome := Configured
	switch have, err := getSliceClassObject(ctx, c, o.Name); {
	case apierrors.IsNotFound(err):
		outcome = Created
	case err != nil:
		return nil, "", err
	case reflect.DeepEqual(have.Spec, obj.Spec):
		outcome = Unchanged
	}
	if outcome == Unchanged {
		return obj, outcome, nil
	}
	return obj, outcome, c.ApplyTyped(ctx, v1alpha1.ResourceSliceClassGVR, "", obj)
}

// getSliceClassObject reads a ResourceSliceClass as stored.
func getSliceClassObject(ctx context.Context, c *member.Cluster, name string) (*v1alpha1.ResourceSliceClass, error) {
	u, err := c.Dynamic.Resource(v1alpha1.ResourceSliceClassGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var cls v1alpha1.ResourceSliceClass
	return &cls, objects.FromUnstructured(u, &cls)
}

// DeleteSliceClass (provider) deletes a class; slices already granted under it keep their grant. A class
// this cluster does not have is a *handshake.NotFoundError naming those it has, closest first.
func DeleteSliceClass(ctx context.Context, c *member.Cluster, name string) error {
	err := c.Dynamic.Resource(v1alpha1.ResourceSliceClassGVR).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		known, lerr := SliceClassNames(ctx, c)
		if lerr != nil {
			return lerr
		}
		return handshake.NotFound("resource slice class", name, "on this cluster", known)
	}
	return err
}

// GrantError is a provider's grant that a slice cannot get; Resource names the slice resource.
type GrantError struct{ Resource, Problem string }

func (e *GrantError) Error() string { return "grant of " + e.Resource + ": " + e.Problem }

// SliceNames lists the resource slices this cluster shares with remoteID, on either side, for completion.
func SliceNames(ctx context.Context, c *member.Cluster, remoteID string) ([]string, error) {
	_, err := SliceGone(ctx, c, remoteID, "\x00")
	var nf *handshake.NotFoundError
	if errors.As(err, &nf) {
		return nf.Known, nil
	}
	return nil, err
}

// SliceClassNames lists the provider's resource slice classes, for completion.
func SliceClassNames(ctx context.Context, c *member.Cluster) ([]string, error) {
	l, err := c.Dynamic.Resource(v1alpha1.ResourceSliceClassGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, objects.IgnoreNotFound(err)
	}
	out := make([]string, 0, len(l.Items))
	for _, it := range l.Items {
		out = append(out, it.GetName())
	}
	return out, nil
}

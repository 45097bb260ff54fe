package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/federate-dev/kubectl-federate/pkg/kube"

	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// The escape corpus is every way out of a sandbox that the sandbox must refuse, written once: the end-to-end
// attack tests perform each attack with a tenant's own credential and check that nothing was left, and
// verify sends each one as a server-side dry run while impersonating a tenant's identity, so that a
// provider proves, on its own cluster and now, that each is still refused, and by the guard meant to
// refuse it. A new attack added here is tried by both.

// Guards: a distinctive part of the refusal each guard answers with.
const (
	ByPodSecurity = "violates PodSecurity"
	ByPolicy      = "ValidatingAdmissionPolicy 'federate-sandbox" // any of the sandbox's admission policies
	ByRBAC        = "cannot "                                     // User "..." cannot create resource ...
	ByQuota       = "exceeded quota"
	// byPrivilegedDisallowed is the API server's own refusal where it runs with --allow-privileged=false.
	byPrivilegedDisallowed = "securityContext.privileged: Forbidden: disallowed by cluster policy"
	byDropped              = "dropped by the API server"
)

// What the sandbox's policies say when they refuse, for the attacks one rule must refuse.
const (
	byVolumeName     = "must not set spec.volumeName"
	byClassless      = "must name a storage class"
	byDataSource     = "must not take its data from another namespace"
	byClaimTemplate  = "a volume claim template must not"
	byClaimRebind    = "may not set or change a PersistentVolumeClaim's spec.volumeName"
	byControlPlane   = "the control plane's taints"
	byTolerations    = "pods may tolerate only"
	byNodeRole       = "must not select nodes by their node-role.kubernetes.io/* labels"
	byNodeName       = "must not select nodes by name"
	byRuntimeClass   = "this runtimeClassName is not allowed"
	byScheduler      = "this schedulerName is not allowed"
	byToken          = "must not mount a ServiceAccount token"
	bySetNodeName    = "must not set spec.nodeName"
	byPriority       = "this priorityClassName is not allowed"
	byTokenSecret    = "service-account-token are not allowed"
	byExternalIPs    = "spec.externalIPs is not allowed"
	byServiceType    = "only ClusterIP Services are allowed"
	byEmptyDirLimit  = "an emptyDir volume must set sizeLimit"
	byCSIDriver      = "CSI inline volumes are allowed only"
	byImageVolume    = "image volumes are allowed only"
	byPodCertificate = "must not mount a pod certificate"
)

// Classes of attack, as issue 37 lists what a sandbox keeps a tenant from.
const (
	ClassHost        = "privileged and host namespaces"
	ClassHostPath    = "hostPath"
	ClassHostPorts   = "host ports"
	ClassCaps        = "capabilities"
	ClassStorage     = "PVCs naming a PV or another namespace's data"
	ClassPlacement   = "placement on control-plane nodes"
	ClassTokens      = "projected tokens"
	ClassCluster     = "cluster-scoped writes"
	ClassNamespaces  = "other namespaces"
	ClassSecrets     = "Secrets outside its own"
	ClassRBAC        = "RBAC escalation"
	ClassCSR         = "CSR approval"
	ClassNodeProxy   = "nodes/proxy"
	ClassQuota       = "counts and totals beyond the quota"
	ClassSandbox     = "the sandbox's own objects"
	ClassServices    = "Services that reach beyond the cluster"
	ClassPriority    = "priority"
	ClassWorkloads   = "workloads beyond the tenant role"
	ClassPodSecurity = "Pod Security"
)

// Absent is the name the attacks that read ask for: no such object exists, so an API server that
// authorizes the read answers NotFound, and no data is ever read.
const Absent = "federate-verify-absent"

// Params are what a corpus needs to know of the sandbox it attacks.
type Params struct {
	Namespace string // the sandbox
	// Prefix starts the name of every object an attack would create.
	Prefix string
	// PriorityClass and RuntimeClass are classes that exist and the sandbox does not allow ("": not tried:
	// a class that does not exist is refused by its own admission plugin first, which proves nothing).
	PriorityClass, RuntimeClass string
	// Scheduler and Toleration are a scheduler and a taint key the sandbox does not allow.
	Scheduler, Toleration string
	// Volume is a PersistentVolume to claim by name (one that need not exist: the rule refuses the name).
	Volume string
	// PendingClaim is a claim of the sandbox that waits for a volume ("": the rebinding attack is not tried).
	PendingClaim string
	// ClasslessRefused says that a claim naming no class is refused: no default StorageClass fills one in.
	ClasslessRefused bool
	// AnyImage says the sandbox allows image volumes from any source: the image-volume attack is not tried.
	AnyImage bool
	// QuotaCPU is the sandbox's quota on requests.cpu: a pod asking one core more is refused by the quota.
	QuotaCPU *resource.Quantity
}

// Object is what an attack would create or change, for a check that it is as it was.
type Object struct {
	Resource        schema.GroupVersionResource
	Namespace, Name string
}

// Attack is one thing a tenant tries in its sandbox.
type Attack struct {
	Name  string
	Class string
	// Guards are the refusals one of which proves the attack refused by the guard meant to refuse it.
	Guards []string
	// Levels are the Pod Security levels under which the sandbox refuses it; nil means every level.
	Levels []string
	// Access is the right it needs, for naming what grants it when it is admitted.
	Access authzv1.ResourceAttributes
	// Object is what it would create or change (zero for an access review).
	Object Object
	// Always says it is sent as a dry run even when the caller sends real requests (see storageAttacks).
	Always bool
	try    func(ctx context.Context, cs kube.Interface, opts []string) error
}

// Try performs the attack through cs; dryRun sends it as a server-side dry run (stores nothing). It
// returns nil when the attack got through, and the API server's refusal otherwise.
func (a Attack) Try(ctx context.Context, cs kube.Interface, dryRun bool) error {
	var opts []string
	if dryRun || a.Always {
		opts = []string{metav1.DryRunAll}
	}
	return a.try(ctx, cs, opts)
}

// Applies tells whether the sandbox refuses the attack at a Pod Security level.
func (a Attack) Applies(level string) bool {
	return a.Levels == nil || slices.Contains(a.Levels, level)
}

// Outcome is what became of an attack.
type Outcome string

// Outcomes.
const (
	Refused    Outcome = "refused"     // by a guard it names
	Admitted   Outcome = "admitted"    // it got through
	OtherGuard Outcome = "other-guard" // refused, but by none of its guards
	NotTried   Outcome = "error"       // the request failed otherwise (unreachable, not found, ...)
)

// Judge reads an attack's answer: refused by one of its guards (or, in a cordoned sandbox, by the cordon
// that keeps every new pod out), admitted, refused by another guard, or an error that is no refusal.
func (a Attack) Judge(err error, cordoned bool) Outcome {
	switch {
	case err == nil:
		return Admitted
	case !refusal(err):
		return NotTried
	case containsAny(err.Error(), a.Guards):
		return Refused
	case cordoned && strings.Contains(err.Error(), sandbox.SandboxName+"-cordon"):
		return Refused
	}
	return OtherGuard
}

// refusal tells whether err is the API server refusing a request (403, 422).
func refusal(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || errors.Is(err, errDropped)
}

func containsAny(s string, subs []string) bool {
	return slices.ContainsFunc(subs, func(sub string) bool { return strings.Contains(s, sub) })
}

// errDropped says the API server dropped what made a request an attack (a field of a feature it does not
// enable): refused, in effect.
var errDropped = errors.New(byDropped)

// Corpus is every attack on the sandbox p describes: the ones its choices allow to be tried.
func Corpus(p Params) []Attack {
	all := slices.Concat(podSecurityAttacks(p), placementAttacks(p), tokenAndPriorityAttacks(p), storageAttacks(p),
		serviceAttacks(p), sandboxObjectAttacks(p), accessAttacks(p), quotaAttacks(p))
	return slices.DeleteFunc(all, func(a Attack) bool { return a.try == nil })
}

// name is an attack object's name.
func (p Params) name(attack string) string { return p.Prefix + attack }

// Attacks on a sandbox run as a tenant: they are named in the errors they cause.
func (a Attack) String() string { return fmt.Sprintf("%s (%s)", a.Name, a.Class) }

// restrictedPod is a pod that Pod Security restricted admits and the sandbox's policies admit: an
// attack changes one thing in it.
func restrictedPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: new(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "c", Image: PauseImage, SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: new(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
		},
	}
}

// PauseImage is the image of the attacks' pods (never pulled: none is ever scheduled).
const PauseImage = "registry.k8s.io/pause:3.10"

var (
	podsGVR   = corev1.SchemeGroupVersion.WithResource("pods")
	claimsGVR = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
)

// podAttack creates a restricted pod changed by mutate.
func podAttack(p Params, name, class string, levels []string, mutate func(*corev1.Pod), guards ...string) Attack {
	obj := p.name(name)
	return Attack{Name: name, Class: class, Guards: guards, Levels: levels,
		Access: authzv1.ResourceAttributes{Namespace: p.Namespace, Verb: "create", Resource: "pods"},
		Object: Object{Resource: podsGVR, Namespace: p.Namespace, Name: obj},
		try: func(ctx context.Context, cs kube.Interface, dry []string) error {
			pod := restrictedPod(obj)
			mutate(pod)
			_, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: dry})
			return err
		}}
}

// Pod Security levels under which an attack is refused.
var (
	restrictedOnly = []string{sandbox.PodSecurityRestricted}
	baseline       = []string{sandbox.PodSecurityRestricted, sandbox.PodSecurityBaseline}
)

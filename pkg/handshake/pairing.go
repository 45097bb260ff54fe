package handshake

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// A consumer reaches its provider, with no help from the provider's administrator, only through the
// pairing's own identity: the kubeconfig it stored for that provider. Requests (ResourceSlices,
// NamespaceRequests) travel that way, so the provider's RBAC and quota bound them like anything else the
// tenant does.

// Dial builds clients from a stored kubeconfig through c.Dial: the command layer's one road to a cluster
// (flags.NewCluster), which gives every connection the same user agent, trace and dry-run layer.
func Dial(c *member.Cluster, data []byte) (*member.Cluster, error) {
	if c.Dial == nil {
		return nil, errors.New("no way to reach the cluster of a stored kubeconfig was given (member.Cluster.Dial)")
	}
	return c.Dial(data)
}

// ViaPairing (consumer) returns the provider as this cluster's pairing identity sees it: a Cluster whose
// clients authenticate with the stored kubeconfig, reporting where this cluster reports.
func ViaPairing(ctx context.Context, c *member.Cluster, providerID string) (*member.Cluster, error) {
	data, err := GetKubeconfig(ctx, c, providerID)
	if err != nil {
		return nil, err
	}
	p, err := Dial(c, data)
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig stored for provider %q: %w", providerID, err)
	}
	p.Report, p.Now = c.Report, c.Now
	return p, nil
}

// CreateCounted creates a request object in a sandbox whose quota counts such objects. A quota created
// before the provider's quota controller discovered the federate.dev kinds (its discovery runs every 30
// seconds; a tenant namespace made right after the provider's first init is one) does not count them
// until it is recalculated, which the controller does by itself only every 5 minutes, and meanwhile the
// API server refuses the creation as "status unknown". The deletion of an object the quota tracks makes the
// controller recalculate it: so this creates and deletes a ConfigMap there (what the tenant may do anyway),
// watches the quota a few seconds for the count, repeats until the controller has discovered the kinds,
// and creates once more.
func CreateCounted(ctx context.Context, c *member.Cluster, provider *member.Cluster, gvr schema.GroupVersionResource, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ns := u.GetNamespace()
	client := provider.Dynamic.Resource(gvr).Namespace(ns)
	out, err := client.Create(ctx, u, metav1.CreateOptions{})
	if err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "status unknown for quota") {
		return out, err
	}
	if provider.DryRun {
		// Waiting cannot help: the quota controller counts what is stored, and a dry run stores nothing.
		c.Reporter().Warn(fmt.Sprintf("%s %s/%s not checked by the server: the provider's quota controller has not counted %s yet", u.GetKind(), ns, u.GetName(), gvr.Resource))
		return u, nil
	}
	key := corev1.ResourceName("count/" + gvr.Resource + "." + gvr.Group)
	c.Reporter().Info("Waiting for the provider's quota controller to count " + gvr.Resource + " (on a provider initialized moments ago, up to 30 seconds)")
	quotas := provider.Kube.CoreV1().ResourceQuotas(ns)
	counted := func(ev watch.Event) (bool, error) {
		q, ok := ev.Object.(*corev1.ResourceQuota)
		if !ok {
			return false, nil
		}
		_, has := q.Status.Used[key]
		return has, nil
	}
	for {
		if nerr := nudgeQuota(ctx, provider, ns); nerr != nil {
			return nil, errors.Join(err, nerr)
		}
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		werr := c.WaitFor(wctx, quotas, sandbox.SandboxName, "", counted)
		cancel()
		if werr != nil && (ctx.Err() != nil || !errors.Is(werr, context.DeadlineExceeded)) {
			return nil, errors.Join(err, werr)
		}
		if werr != nil {
			continue
		}
		// Counted in the status; the API server's quota admission reads it from its own cache, which may
		// be a moment behind: then it is still "status unknown", and the round starts again.
		out, err = client.Create(ctx, u, metav1.CreateOptions{})
		if err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "status unknown for quota") {
			return out, err
		}
	}
}

// nudgeQuota makes the quota controller recalculate a namespace's quotas: it deletes a ConfigMap created
// for the purpose, and a deletion of a tracked kind makes the controller recount.
func nudgeQuota(ctx context.Context, provider *member.Cluster, ns string) error {
	cms := provider.Kube.CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "federate-recount-",
		Labels: map[string]string{member.LabelManagedBy: member.ManagedBy}}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("asking the quota controller to recount %s: %w", ns, err)
	}
	return objects.IgnoreNotFound(cms.Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}}))
}

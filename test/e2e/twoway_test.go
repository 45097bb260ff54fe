//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// direction is one way of a two-way pairing: the consumer cluster holds an identity on the provider
// cluster, whose sandbox federate-tenant-<consumerID> it may use.
type direction struct {
	name                   string
	consumer, provider     *kubeenv.Cluster
	consumerID, providerID string
}

// bothDirections returns consumer->provider (what authenticate() does) and provider->consumer.
func bothDirections() (fwd, rev direction) {
	return direction{"consumer->provider", consumer, provider, "consumer", "provider"},
		direction{"provider->consumer", provider, consumer, "provider", "consumer"}
}

func (d direction) sandbox() string { return member.TenantNamespacePrefix + d.consumerID }

func (d direction) authenticate(t *testing.T) {
	t.Helper()
	mustRun(t, "", "authenticate", "--kubeconfig", d.consumer.Kubeconfig, "--remote-kubeconfig", d.provider.Kubeconfig,
		"--cluster-id", d.consumerID, "--remote-cluster-id", d.providerID)
}

func (d direction) unauthenticate(t *testing.T) {
	t.Helper()
	mustRun(t, "", "unauthenticate", "--kubeconfig", d.consumer.Kubeconfig, "--remote-kubeconfig", d.provider.Kubeconfig, "--ignore-not-found")
}

// tenant returns the direction's issued kubeconfig, as `get kubeconfig` on its consumer gives it.
func (d direction) tenant(t *testing.T) *rest.Config {
	t.Helper()
	cfg := unlimited(issuedConfigOn(t, d.consumer, d.providerID))
	if cfg.Host != d.provider.Server {
		t.Fatalf("%s: the issued kubeconfig points at %s, want the provider %s", d.name, cfg.Host, d.provider.Server)
	}
	return cfg
}

var (
	identitiesGVR = schema.GroupVersionResource{Group: "federate.dev", Version: "v1alpha1", Resource: "identities"}
	secretsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// objRef names one object on one cluster.
type objRef struct {
	cluster   *kubeenv.Cluster
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

func (o objRef) String() string {
	return fmt.Sprintf("%s %s %s/%s", o.cluster.Name, o.gvr.Resource, o.namespace, o.name)
}

// material is every object a direction's pairing consists of, where spec8 says it lives: on its consumer,
// the Identity and the kubeconfig Secret in federate-system; on its provider, the sandbox namespace and
// what is in it.
func (d direction) material() []objRef {
	gvr := func(g, v, r string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: g, Version: v, Resource: r}
	}
	sys, sb := member.SystemNamespace, d.sandbox()
	return []objRef{
		{d.consumer, identitiesGVR, sys, "controlplane-" + d.providerID},
		{d.consumer, secretsGVR, sys, "kubeconfig-controlplane-" + d.providerID},
		{d.provider, gvr("", "v1", "namespaces"), "", sb},
		{d.provider, tenantsGVR, sb, d.consumerID},
		{d.provider, gvr("rbac.authorization.k8s.io", "v1", "rolebindings"), sb, member.RoleBindingName},
		{d.provider, gvr("", "v1", "resourcequotas"), sb, sandboxObject},
		{d.provider, gvr("", "v1", "limitranges"), sb, sandboxObject},
		{d.provider, gvr("networking.k8s.io", "v1", "networkpolicies"), sb, sandboxObject},
		{d.provider, gvr("", "v1", "serviceaccounts"), sb, "default"},
	}
}

// versions returns the resourceVersion of each object of material (failing when one is missing or
// being deleted).
func versions(t *testing.T, refs []objRef) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range refs {
		var ri dynamic.ResourceInterface = dyn(t, o.cluster).Resource(o.gvr)
		if o.namespace != "" {
			ri = dyn(t, o.cluster).Resource(o.gvr).Namespace(o.namespace)
		}
		u, err := ri.Get(t.Context(), o.name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: %v", o, err)
			continue
		}
		if u.GetDeletionTimestamp() != nil {
			t.Errorf("%s is being deleted", o)
		}
		out[o.String()] = u.GetResourceVersion()
	}
	return out
}

// gone checks that none of refs exists any more.
func gone(t *testing.T, refs []objRef) {
	t.Helper()
	for _, o := range refs {
		var ri dynamic.ResourceInterface = dyn(t, o.cluster).Resource(o.gvr)
		if o.namespace != "" {
			ri = dyn(t, o.cluster).Resource(o.gvr).Namespace(o.namespace)
		}
		if _, err := ri.Get(t.Context(), o.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s still exists after its direction was unauthenticated (err = %v)", o, err)
		}
	}
}

// works proves the direction's identity is alive: who it is, and one write in its sandbox.
func (d direction) works(t *testing.T, cfg *rest.Config, configMap string) authnv1.UserInfo {
	t.Helper()
	as := kubernetes.NewForConfigOrDie(cfg)
	review, err := as.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("%s: SelfSubjectReview: %v", d.name, err)
	}
	u := review.Status.UserInfo
	if !strings.HasPrefix(u.Username, member.UserPrefix+d.consumerID+":") || slices.Contains(u.Groups, "system:masters") {
		t.Errorf("%s: identity %q groups %v", d.name, u.Username, u.Groups)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: configMap}, Data: map[string]string{"from": d.consumerID}}
	if _, err := as.CoreV1().ConfigMaps(d.sandbox()).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Errorf("%s: creating ConfigMap %s in its sandbox %s: %v", d.name, configMap, d.sandbox(), err)
	}
	return u
}

// credentialKeys are the Secret data keys that carry a cluster's own credentials or keys.
var credentialKeys = []string{"kubeconfig", "tls.key", "identity-mac.key", "ed25519.key"}

// isolated proves that d's tenant identity, on d's provider cluster, can neither read nor write what that
// cluster keeps for its own identity on d's consumer (the other direction's kubeconfig and keys), nor
// any other Secret in federate-system; and that nothing of the kind sits in its sandbox.
func (d direction) isolated(t *testing.T, cfg *rest.Config, user authnv1.UserInfo) {
	t.Helper()
	ctx := t.Context()
	as := kubernetes.NewForConfigOrDie(cfg)
	admin := kubernetes.NewForConfigOrDie(d.provider.Config)
	sys := member.SystemNamespace
	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s tenant: %s: err = %v, want Forbidden", d.name, what, err)
		}
	}
	// The other direction's credentials on this cluster, found by what they are rather than where spec8
	// says they live: every Secret labelled for the peer that holds a kubeconfig or a key.
	labelled, err := admin.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: member.LabelRemoteClusterID + "=" + d.consumerID})
	if err != nil {
		t.Fatal(err)
	}
	var peer []corev1.Secret
	for _, s := range labelled.Items {
		if slices.ContainsFunc(credentialKeys, func(k string) bool { _, ok := s.Data[k]; return ok }) {
			peer = append(peer, s)
		}
	}
	if !slices.ContainsFunc(peer, func(s corev1.Secret) bool { _, ok := s.Data["kubeconfig"]; return ok }) {
		t.Fatalf("%s: no Secret on %s holds its own kubeconfig for %s (the other direction)", d.name, d.provider.Name, d.consumerID)
	}
	// The attack of finding 2: read the kubeconfig (client key included), or replace it with one that runs
	// a program on the administrator's machine at the next `get kubeconfig`.
	evilKubeconfig := []byte("apiVersion: v1\nkind: Config\nusers:\n- name: x\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n      args: [-c, 'touch /tmp/owned']\n")
	for _, s := range peer {
		ref := s.Namespace + "/" + s.Name
		secrets := as.CoreV1().Secrets(s.Namespace)
		_, err := secrets.Get(ctx, s.Name, metav1.GetOptions{})
		forbidden("get Secret "+ref, err)
		_, err = secrets.List(ctx, metav1.ListOptions{})
		forbidden("list Secrets in "+s.Namespace, err)
		_, err = secrets.Watch(ctx, metav1.ListOptions{})
		forbidden("watch Secrets in "+s.Namespace, err)
		evil := s.DeepCopy()
		evil.Data = map[string][]byte{"kubeconfig": evilKubeconfig}
		_, err = secrets.Update(ctx, evil, metav1.UpdateOptions{})
		forbidden("update Secret "+ref, err)
		_, err = secrets.Patch(ctx, s.Name, types.MergePatchType, []byte(`{"data":{"kubeconfig":"eA=="}}`), metav1.PatchOptions{})
		forbidden("patch Secret "+ref, err)
		forbidden("delete Secret "+ref, secrets.Delete(ctx, s.Name, metav1.DeleteOptions{}))
		after, err := admin.CoreV1().Secrets(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil || after.ResourceVersion != s.ResourceVersion {
			t.Errorf("%s: the other direction's Secret %s changed or went (err %v)", d.name, ref, err)
		}
	}
	secrets := as.CoreV1().Secrets(sys)
	_, err = secrets.List(ctx, metav1.ListOptions{})
	forbidden("list Secrets in "+sys, err)
	_, err = as.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	forbidden("list Secrets in all namespaces", err)
	_, err = secrets.Get(ctx, member.HandshakeKeySecret, metav1.GetOptions{})
	forbidden("get Secret "+sys+"/"+member.HandshakeKeySecret, err)
	_, err = secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "planted-by-tenant"}}, metav1.CreateOptions{})
	forbidden("create Secret in "+sys, err)
	if _, err := admin.CoreV1().Secrets(sys).Get(ctx, "planted-by-tenant", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s: the tenant created a Secret in %s (err = %v)", d.name, sys, err)
	}
	// The other direction's Identity, wherever it is.
	tenantDyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	peerIDs, err := dyn(t, d.provider).Resource(identitiesGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range peerIDs.Items {
		_, err = tenantDyn.Resource(identitiesGVR).Namespace(id.GetNamespace()).Get(ctx, id.GetName(), metav1.GetOptions{})
		forbidden("get Identity "+id.GetNamespace()+"/"+id.GetName(), err)
	}
	_, err = tenantDyn.Resource(identitiesGVR).List(ctx, metav1.ListOptions{})
	forbidden("list Identities in all namespaces", err)

	// Nothing of a cluster's own credentials in the sandbox the tenant can read.
	own, err := as.CoreV1().Secrets(d.sandbox()).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("%s: listing Secrets in its own sandbox: %v", d.name, err)
	}
	for _, s := range own.Items {
		for _, k := range credentialKeys {
			if _, ok := s.Data[k]; ok {
				t.Errorf("%s: the tenant reads Secret %s/%s holding %q", d.name, s.Namespace, s.Name, k)
			}
		}
		if s.Labels[member.LabelManagedBy] == member.ManagedBy {
			t.Errorf("%s: the tenant reads kubectl federate's Secret %s/%s", d.name, s.Namespace, s.Name)
		}
	}

	// The same, for every credential this cluster holds, asked of the authorizer for the tenant's user and
	// groups: no verb on any Secret of federate-system, nor on any kubectl-federate Secret or Identity
	// elsewhere.
	all, err := admin.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type target struct{ resource, group, ns, name string }
	targets := []target{{"secrets", "", sys, ""}, {"identities", "federate.dev", sys, ""}}
	for _, s := range all.Items {
		if s.Namespace == sys || s.Labels[member.LabelManagedBy] == member.ManagedBy {
			targets = append(targets, target{"secrets", "", s.Namespace, s.Name})
		}
	}
	ids, err := dyn(t, d.provider).Resource(identitiesGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids.Items {
		if id.GetNamespace() != sys {
			t.Errorf("%s: Identity %s/%s on %s lives outside %s", d.name, id.GetNamespace(), id.GetName(), d.provider.Name, sys)
		}
		targets = append(targets, target{"identities", "federate.dev", id.GetNamespace(), id.GetName()})
	}
	for _, tg := range targets {
		verbs := []string{"get", "update", "patch", "delete"}
		if tg.name == "" {
			verbs = []string{"list", "watch", "create", "deletecollection"}
		}
		for _, verb := range verbs {
			sar, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
				User: user.Username, Groups: user.Groups, UID: user.UID,
				ResourceAttributes: &authzv1.ResourceAttributes{Verb: verb, Group: tg.group, Resource: tg.resource, Namespace: tg.ns, Name: tg.name},
			}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if sar.Status.Allowed {
				t.Errorf("%s: the tenant may %s %s %s/%s on %s", d.name, verb, tg.resource, tg.ns, tg.name, d.provider.Name)
			}
		}
	}
}

// survives proves that d is untouched by what happened to the other direction: its objects have the same
// resourceVersions, its kubeconfig still works, and what its tenant wrote is still there.
func (d direction) survives(t *testing.T, cfg *rest.Config, was map[string]string, earlierConfigMap, newConfigMap string) {
	t.Helper()
	now := versions(t, d.material())
	for k, v := range was {
		if now[k] != v {
			t.Errorf("%s: %s changed (resourceVersion %s -> %s)", d.name, k, v, now[k])
		}
	}
	d.works(t, cfg, newConfigMap)
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps(d.sandbox()).Get(t.Context(), earlierConfigMap, metav1.GetOptions{}); err != nil {
		t.Errorf("%s: the ConfigMap its tenant wrote earlier: %v", d.name, err)
	}
}

// refusedNow checks that a removed direction's old kubeconfig grants nothing.
func refusedNow(t *testing.T, d direction, cfg *rest.Config) {
	t.Helper()
	_, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps(d.sandbox()).List(t.Context(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
		t.Errorf("%s: the old kubeconfig after unauthenticate: err = %v, want 401 or 403", d.name, err)
	}
}

// Finding 2 of issue 8: with A paired to B and B paired to A, the two directions stay apart. Each identity
// works; neither reads or writes what the cluster it is a tenant on keeps for its own identity; undoing
// (or renewing) one direction leaves the other working and untouched.
func TestTwoWayPairing(t *testing.T) {
	fwd, rev := bothDirections()
	unauthenticate(t)
	rev.unauthenticate(t)
	defer func() {
		teardown(t, "unauthenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
		teardown(t, "unauthenticate", "--kubeconfig", provider.Kubeconfig, "--remote-kubeconfig", consumer.Kubeconfig)
		if left := append(pairingObjects(t, consumer, "provider"), pairingObjects(t, provider, "consumer")...); len(left) > 0 {
			t.Errorf("left after unauthenticating both directions: %v", left)
		}
	}()
	fwd.authenticate(t)
	rev.authenticate(t)
	fwdCfg, revCfg := fwd.tenant(t), rev.tenant(t)

	// Both directions' objects are where spec8 puts them, and distinct.
	versions(t, fwd.material())
	versions(t, rev.material())

	fwdUser := fwd.works(t, fwdCfg, "fwd-1")
	revUser := rev.works(t, revCfg, "rev-1")
	if fwdUser.Username == revUser.Username {
		t.Fatalf("both directions share the user %q", fwdUser.Username)
	}
	t.Run("forward tenant cannot reach the reverse credentials", func(t *testing.T) { fwd.isolated(t, fwdCfg, fwdUser) })
	t.Run("reverse tenant cannot reach the forward credentials", func(t *testing.T) { rev.isolated(t, revCfg, revUser) })

	t.Run("renewing one direction leaves the other", func(t *testing.T) {
		was := versions(t, rev.material())
		fwd.authenticate(t)
		fwdCfg = fwd.tenant(t)
		fwd.works(t, fwdCfg, "fwd-2")
		rev.survives(t, revCfg, was, "rev-1", "rev-2")
	})

	t.Run("unauthenticating forward leaves reverse", func(t *testing.T) {
		was := versions(t, rev.material())
		fwd.unauthenticate(t)
		gone(t, fwd.material())
		refusedNow(t, fwd, fwdCfg)
		rev.survives(t, revCfg, was, "rev-1", "rev-3")
	})

	t.Run("unauthenticating reverse leaves forward", func(t *testing.T) {
		fwd.authenticate(t)
		fwdCfg = fwd.tenant(t)
		fwdUser = fwd.works(t, fwdCfg, "fwd-3")
		fwd.isolated(t, fwdCfg, fwdUser)
		was := versions(t, fwd.material())
		rev.unauthenticate(t)
		gone(t, rev.material())
		refusedNow(t, rev, revCfg)
		fwd.survives(t, fwdCfg, was, "fwd-3", "fwd-4")
	})
}

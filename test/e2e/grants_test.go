//go:build e2e

package e2e

// Grants: ResourceSlices (resources with an identity of their own, under the provider's classes) and extra
// namespaces. Each slice is a sandbox whose quota is the grant and where only the slice's own user works;
// a request altered or forged on the way is refused with nothing created; a denial reaches the consumer;
// an extra namespace follows the pairing's identity through renewal and goes with revoke and
// unauthenticate; a name already in use is never adopted; re-runs converge.

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// Names of the grants tests, all prefixed e2e- so that a leftover is recognisable.
const (
	classSmall  = "e2e-small"  // max cpu 1, memory 1Gi, pods 2, clamped, auto-accept
	classCapped = "e2e-capped" // max cpu 1, auto-accept
	classStrict = "e2e-strict" // max cpu 1, over-max deny
	sliceSmall  = "e2e-small"  // manual flow under classSmall
	sliceOne    = "e2e-oneshot"
	sliceForged = "e2e-forged"
	extraNS     = "e2e-extra"
	takenNS     = "e2e-taken"
	intruderID  = "e2e-intruder" // a second consumer of the provider, set up by hand
)

var (
	resourceSlicesGVR    = v1alpha1.ResourceSliceGVR
	namespaceRequestsGVR = v1alpha1.NamespaceRequestGVR
	// grantsWatched are snapshotted on top of watched: a refused request must not even be stored.
	grantsWatched = []schema.GroupVersionResource{resourceSlicesGVR, namespaceRequestsGVR, v1alpha1.ResourceSliceClassGVR}
)

// on runs kubectl-federate with the kubeconfig of cluster c.
func on(t *testing.T, c *kubeenv.Cluster, args ...string) result {
	t.Helper()
	return cli(t, "", append(args, "--kubeconfig", c.Kubeconfig)...)
}

// mustOn is on, failing the test unless the command exits 0.
func mustOn(t *testing.T, c *kubeenv.Cluster, args ...string) result {
	t.Helper()
	return mustRun(t, "", append(args, "--kubeconfig", c.Kubeconfig)...)
}

// atCleanup runs kubectl-federate args when the test ends (t.Context is cancelled by then, so not
// through cli), reporting a failure.
func atCleanup(t *testing.T, args ...string) {
	t.Helper()
	home := t.TempDir()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := newCommand(ctx, home, nil, federateBin, args...)
		if err := c.begin(); err != nil {
			t.Errorf("clean-up kubectl-federate %s: %v", strings.Join(args, " "), err)
			return
		}
		if r := c.end(); r.code != 0 {
			t.Errorf("clean-up kubectl-federate %s: %s", strings.Join(args, " "), r)
		}
	})
}

// freshPairing starts the test from a new consumer->provider pairing (authenticate with extra flags) and
// removes it (with every slice and extra namespace) when the test ends.
func freshPairing(t *testing.T, extra ...string) {
	t.Helper()
	unauthenticate(t)
	authenticate(t, extra...)
	atCleanup(t, "unauthenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
	settle(t, provider, tenantNS)
	requestsCounted(t, provider, tenantNS, sandboxObject)
}

// countedRequests are the federate.dev objects a consumer leaves in its tenant namespace, which the
// sandbox quota counts: until the quota's status has their usage, the API server refuses to create them.
var countedRequests = []corev1.ResourceName{"count/resourceslices.federate.dev", "count/namespacerequests.federate.dev"}

// requestsCounted waits until the quota controller counts the federate.dev requests in the ResourceQuota
// ns/name. A quota created before the controller discovered the federate.dev resources (the first
// authenticate on a fresh provider installs them) is only counted at the controller's next full resync,
// 5 minutes later by default: TestSliceRequestOnFreshProvider shows what that does to the consumer. Here
// the administrator nudges the controller (a spec change makes it recalculate the quota) until it counts
// them, so that the tests that use it do not depend on which test ran first; where they are counted
// already, as in the full suite, this returns at once.
func requestsCounted(t *testing.T, c *kubeenv.Cluster, ns, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	quotas := kubernetes.NewForConfigOrDie(c.Config).CoreV1().ResourceQuotas(ns)
	const nudge = "count/e2e-nudges.federate.dev"
	for {
		q, err := quotas.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("ResourceQuota %s/%s: %v", ns, name, err)
		}
		if !slices.ContainsFunc(countedRequests, func(r corev1.ResourceName) bool { _, ok := q.Status.Used[r]; return !ok }) {
			return
		}
		// Add a hard limit and take it away again: two spec changes, each of which the controller
		// recalculates with the evaluators it has by then.
		for _, v := range []string{`"1"`, `null`} {
			patch := []byte(`{"spec":{"hard":{"` + string(nudge) + `":` + v + `}}}`)
			if q, err = quotas.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatalf("nudging ResourceQuota %s/%s: %v", ns, name, err)
			}
		}
		w, err := quotas.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: q.ResourceVersion, TimeoutSeconds: new(int64(2))})
		if err != nil {
			t.Fatalf("the quota controller never counted %v in %s/%s: %v", countedRequests, ns, name, err)
		}
		for range w.ResultChan() { // the controller's next status update, or 2 seconds
			break
		}
		w.Stop()
	}
}

// newSliceClass creates a ResourceSliceClass on the provider for the test's duration.
func newSliceClass(t *testing.T, name string, flags ...string) {
	t.Helper()
	mustOn(t, provider, append([]string{"create", "resourceslice-class", name}, flags...)...)
	atCleanup(t, "delete", "resourceslice-class", name, "--kubeconfig", provider.Kubeconfig)
}

// grantSnapshot is takeSnapshot with the federate.dev request kinds too.
func grantSnapshot(t *testing.T) snapshot {
	t.Helper()
	s := takeSnapshot(t)
	for _, c := range []*kubeenv.Cluster{consumer, provider} {
		for _, gvr := range grantsWatched {
			list, err := dyn(t, c).Resource(gvr).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range list.Items {
				s[fmt.Sprintf("%s %s %s/%s", c.Name, gvr.Resource, o.GetNamespace(), o.GetName())] = o.GetResourceVersion()
			}
		}
	}
	return s
}

// decodeInto converts an object read through the dynamic client into a typed one.
func decodeInto(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	data, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatal(err)
	}
}

// parseSlice decodes a ResourceSlice document printed by a command.
func parseSlice(t *testing.T, text string) *v1alpha1.ResourceSlice {
	t.Helper()
	s := &v1alpha1.ResourceSlice{}
	if err := yaml.Unmarshal([]byte(text), s); err != nil {
		t.Fatalf("decoding a ResourceSlice: %v\n%s", err, text)
	}
	return s
}

func sliceYAML(t *testing.T, s *v1alpha1.ResourceSlice) string {
	t.Helper()
	out, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// providerSlice reads a consumer's ResourceSlice on the provider (nil when there is none).
func providerSlice(t *testing.T, consumerID, name string) *v1alpha1.ResourceSlice {
	t.Helper()
	u, err := dyn(t, provider).Resource(resourceSlicesGVR).Namespace(member.TenantNamespace(consumerID)).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	s := &v1alpha1.ResourceSlice{}
	decodeInto(t, u, s)
	return s
}

// sliceConfig is the slice's kubeconfig as `get kubeconfig --resource-slice` prints it on the consumer.
func sliceConfig(t *testing.T, name string) *rest.Config {
	t.Helper()
	r := mustOn(t, consumer, "get", "kubeconfig", "--remote-cluster-id", "provider", "--resource-slice", name)
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(r.stdout))
	if err != nil {
		t.Fatalf("the kubeconfig of slice %s: %v", name, err)
	}
	if cfg.Host != provider.Server {
		t.Errorf("the kubeconfig of slice %s points at %s, want the provider %s", name, cfg.Host, provider.Server)
	}
	return unlimited(cfg)
}

// whoami is `kubectl auth whoami` with a credential.
func whoami(t *testing.T, cfg *rest.Config) authnv1.UserInfo {
	t.Helper()
	r, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview: %v", err)
	}
	return r.Status.UserInfo
}

// rbacDenied is in the API server's message when RBAC (rather than a quota or admission) refuses a request.
const rbacDenied = "cannot create resource"

// podRefused creates a small pod as who in ns and checks that RBAC refuses it and nothing is created.
func podRefused(t *testing.T, as kubernetes.Interface, who, ns, name string) {
	t.Helper()
	_, err := as.CoreV1().Pods(ns).Create(t.Context(), smallPod(name), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), rbacDenied) {
		t.Errorf("%s creating pod %s/%s: err = %v, want 403 Forbidden by RBAC", who, ns, name, err)
	}
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	if _, err := admin.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s: pod %s/%s exists after the refusal (err = %v)", who, ns, name, err)
	}
}

// sliceQuota is the ResourceQuota a grant must give a slice's namespace: cpu and memory as requests and
// limits, pods, and ephemeral storage as requests.
func sliceQuota(cpu, memory, pods, ephemeral string) map[string]string {
	return map[string]string{"requests.cpu": cpu, "limits.cpu": cpu, "requests.memory": memory, "limits.memory": memory,
		"pods": pods, "requests.ephemeral-storage": ephemeral}
}

// checkGranted checks the provider's record of an accepted slice.
func checkGranted(t *testing.T, s *v1alpha1.ResourceSlice, name, class string, granted map[string]string) {
	t.Helper()
	if s == nil {
		t.Fatalf("no ResourceSlice %s on the provider", name)
	}
	st := s.Status
	ns := member.SliceNamespace("consumer", name)
	if st.Phase != grants.SliceAccepted || st.Namespace != ns || st.Class != class {
		t.Errorf("slice %s: phase %q namespace %q class %q, want %s %s %s", name, st.Phase, st.Namespace, st.Class, grants.SliceAccepted, ns, class)
	}
	if !maps.Equal(st.Granted, granted) {
		t.Errorf("slice %s: granted %v, want %v", name, st.Granted, granted)
	}
	if !strings.HasPrefix(st.User, member.UserPrefix+"consumer:slice-"+name+":") || len(st.Certificate) == 0 || st.NotAfter == nil {
		t.Errorf("slice %s: user %q, certificate %d bytes, notAfter %v", name, st.User, len(st.Certificate), st.NotAfter)
	}
	if st.ClusterRole != member.DefaultClusterRole || st.PodSecurity != sandbox.PodSecurityRestricted {
		t.Errorf("slice %s: cluster role %q, pod security %q", name, st.ClusterRole, st.PodSecurity)
	}
}

// checkSliceIdentity checks the consumer's records of an imported slice: an Identity of type Resource, the
// kubeconfig Secret, and no waiting key.
func checkSliceIdentity(t *testing.T, name string) {
	t.Helper()
	ctx := t.Context()
	u, err := dyn(t, consumer).Resource(identitiesGVR).Namespace(member.SystemNamespace).Get(ctx, member.SliceIdentityName("provider", name), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Identity of slice %s: %v", name, err)
	}
	id := &v1alpha1.Identity{}
	decodeInto(t, u, id)
	if id.Spec.Type != v1alpha1.IdentityResource || id.Spec.ResourceSlice != name || id.Spec.ClusterID != "provider" ||
		id.Spec.Namespace != member.SliceNamespace("consumer", name) || id.Spec.APIServer != provider.Server {
		t.Errorf("Identity %s: type %q slice %q provider %q namespace %q server %q", u.GetName(), id.Spec.Type, id.Spec.ResourceSlice,
			id.Spec.ClusterID, id.Spec.Namespace, id.Spec.APIServer)
	}
	secrets := kubernetes.NewForConfigOrDie(consumer.Config).CoreV1().Secrets(member.SystemNamespace)
	if _, err := secrets.Get(ctx, "kubeconfig-resource-provider."+name, metav1.GetOptions{}); err != nil {
		t.Errorf("the kubeconfig Secret of slice %s: %v", name, err)
	}
	if _, err := secrets.Get(ctx, member.SlicePendingKeySecretName("provider", name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the waiting key of slice %s is still there after the import (err = %v)", name, err)
	}
}

// sliceLeftovers lists what remains of a slice on either cluster: its namespace, request, CSRs, and the
// consumer's Identity, Secrets and record.
func sliceLeftovers(t *testing.T, name string) []string {
	t.Helper()
	ctx := t.Context()
	var left []string
	pk, ck := kubernetes.NewForConfigOrDie(provider.Config), kubernetes.NewForConfigOrDie(consumer.Config)
	if _, err := pk.CoreV1().Namespaces().Get(ctx, member.SliceNamespace("consumer", name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		left = append(left, "provider namespace "+member.SliceNamespace("consumer", name))
	}
	if s := providerSlice(t, "consumer", name); s != nil {
		left = append(left, "provider ResourceSlice "+tenantNS+"/"+name)
	}
	csrs, err := pk.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: member.LabelSlice + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range csrs.Items {
		left = append(left, "provider CSR "+c.Name)
	}
	sel := metav1.ListOptions{LabelSelector: member.LabelSlice + "=" + name}
	secrets, err := ck.CoreV1().Secrets(member.SystemNamespace).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		left = append(left, "consumer Secret "+s.Name)
	}
	for _, gvr := range []schema.GroupVersionResource{identitiesGVR, resourceSlicesGVR} {
		l, err := dyn(t, consumer).Resource(gvr).Namespace(member.SystemNamespace).List(ctx, sel)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range l.Items {
			left = append(left, "consumer "+gvr.Resource+" "+o.GetName())
		}
	}
	return left
}

// The done-means of slices: two slices under different classes (one manual, one in one shot) are granted
// what their class allows, as their namespace's quota; each slice identity is its own user, works up to its
// quota in its own namespace and nowhere else, and the pairing's identity does not work there; accepting
// and importing again change nothing; a renewal is answered like a new request and takes the old
// certificate's rights; delete and unauthenticate remove everything of a slice.
func TestSliceGrantsConfineEachIdentity(t *testing.T) {
	freshPairing(t)
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(unlimited(rest.CopyConfig(provider.Config)))
	newSliceClass(t, classSmall, "--max-cpu", "1", "--max-memory", "1Gi", "--max-pods", "2", "--over-max", "clamp", "--auto-accept")
	smallNS, oneNS := member.SliceNamespace("consumer", sliceSmall), member.SliceNamespace("consumer", sliceOne)

	// The manual flow: the consumer asks for more than the class allows and leaves the request on the
	// provider through the pairing; the provider sees it pending.
	mustOn(t, consumer, "create", "resourceslice", sliceSmall, "--remote-cluster-id", "provider", "--class", classSmall,
		"--cpu", "2", "--memory", "2Gi", "--pods", "5")
	pending := itemsOf[grants.SliceInfo](t, mustOn(t, provider, "accept", "resourceslice", "--remote-cluster-id", "consumer", "-o", "json").stdout)
	if len(pending) != 1 || pending[0].Name != sliceSmall || pending[0].Phase != grants.SlicePending || pending[0].Class != classSmall ||
		!maps.Equal(pending[0].Requested, map[string]string{"cpu": "2", "memory": "2Gi", "pods": "5"}) {
		t.Errorf("the provider's list of pending slices: %+v", pending)
	}
	// The class accepts without a decision per slice: the auto-accept run grants it, lowered to the
	// class's maximum.
	smallGrant := map[string]string{"cpu": "1", "memory": "1Gi", "pods": "2", "ephemeral-storage": "2Gi"}
	auto := mustOn(t, provider, "accept", "resourceslice", "--pending")
	if !strings.Contains(auto.stdout, "resourceslice/"+sliceSmall+" accepted") || !strings.Contains(auto.stderr, "lowered") {
		t.Errorf("accept --pending did not accept %s, saying it was lowered to the class's maximum: %s", sliceSmall, auto)
	}

	// Accepting it again, by name, returns the same grant and changes nothing.
	settle(t, provider, smallNS)
	before := grantSnapshot(t)
	granted := parseSlice(t, mustOn(t, provider, "accept", "resourceslice", sliceSmall, "--remote-cluster-id", "consumer", "-o", "yaml").stdout)
	checkGranted(t, granted, sliceSmall, classSmall, smallGrant)
	again := parseSlice(t, mustOn(t, provider, "accept", "resourceslice", sliceSmall, "--remote-cluster-id", "consumer", "-o", "yaml").stdout)
	if string(again.Status.Certificate) != string(granted.Status.Certificate) || again.Status.User != granted.Status.User {
		t.Errorf("accept again issued another certificate (user %s -> %s)", granted.Status.User, again.Status.User)
	}
	if d := before.diff(grantSnapshot(t)); len(d) > 0 {
		t.Errorf("accepting again changed the clusters:\n%s", strings.Join(d, "\n"))
	}

	// The consumer imports it; importing again says unchanged and changes nothing.
	if r := mustOn(t, consumer, "import", "resourceslice", sliceSmall, "--remote-cluster-id", "provider"); !strings.Contains(r.stdout, " imported ") {
		t.Errorf("import: %s", r)
	}
	before = grantSnapshot(t)
	if r := mustOn(t, consumer, "import", "resourceslice", sliceSmall, "--remote-cluster-id", "provider"); !strings.Contains(r.stdout, " unchanged ") {
		t.Errorf("import again does not say unchanged: %s", r)
	}
	if d := before.diff(grantSnapshot(t)); len(d) > 0 {
		t.Errorf("import again changed the clusters:\n%s", strings.Join(d, "\n"))
	}

	// One shot, default class: everything asked is granted.
	mustOn(t, consumer, "create", "resourceslice", sliceOne, "--cpu", "2", "--memory", "2Gi", "--pods", "3", "--remote-kubeconfig", provider.Kubeconfig)
	oneGrant := map[string]string{"cpu": "2", "memory": "2Gi", "pods": "3", "ephemeral-storage": "2Gi"}
	checkGranted(t, providerSlice(t, "consumer", sliceOne), sliceOne, grants.DefaultSliceClass, oneGrant)
	checkGranted(t, providerSlice(t, "consumer", sliceSmall), sliceSmall, classSmall, smallGrant)
	checkQuota(t, waitQuotaSynced(t, admin, smallNS), sliceQuota("1", "1Gi", "2", "2Gi"))
	checkQuota(t, waitQuotaSynced(t, admin, oneNS), sliceQuota("2", "2Gi", "3", "2Gi"))
	for _, ns := range []string{smallNS, oneNS} {
		n, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkPSA(t, n, sandbox.PodSecurityRestricted)
		if n.Labels[member.LabelNamespaceKind] != member.KindSlice || n.Labels[member.LabelRemoteClusterID] != "consumer" {
			t.Errorf("namespace %s labels %v: want kind slice of consumer", ns, n.Labels)
		}
	}
	checkSliceIdentity(t, sliceSmall)
	checkSliceIdentity(t, sliceOne)
	held := itemsOf[grants.SliceInfo](t, mustOn(t, consumer, "get", "resourceslices", "-o", "json").stdout)
	phases := map[string]string{}
	for _, s := range held {
		phases[s.Name] = s.Phase
	}
	if !maps.Equal(phases, map[string]string{sliceSmall: grants.SliceImported, sliceOne: grants.SliceImported}) {
		t.Errorf("get resourceslices on the consumer: %v, want both slices Imported", phases)
	}

	provided := itemsOf[grants.SliceInfo](t, mustOn(t, provider, "get", "resourceslices", "--remote-cluster-id", "consumer", "-o", "json").stdout)
	phases = map[string]string{}
	for _, s := range provided {
		phases[s.ConsumerID+"/"+s.Name+" "+s.Namespace] = s.Phase
	}
	if !maps.Equal(phases, map[string]string{"consumer/" + sliceSmall + " " + smallNS: grants.SliceAccepted, "consumer/" + sliceOne + " " + oneNS: grants.SliceAccepted}) {
		t.Errorf("get resourceslices on the provider: %v, want both slices Accepted in their namespaces", phases)
	}

	// Each slice is its own user, neither the pairing's nor the other slice's.
	smallCfg, oneCfg := sliceConfig(t, sliceSmall), sliceConfig(t, sliceOne)
	_, pairCfg := issuedConfig(t)
	smallUser, oneUser, pairUser := whoami(t, smallCfg), whoami(t, oneCfg), whoami(t, pairCfg)
	if smallUser.Username != granted.Status.User {
		t.Errorf("the slice's kubeconfig authenticates as %q, the provider granted %q", smallUser.Username, granted.Status.User)
	}
	if smallUser.Username == pairUser.Username || oneUser.Username == pairUser.Username || smallUser.Username == oneUser.Username {
		t.Errorf("users not distinct: slice %s %q, slice %s %q, pairing %q", sliceSmall, smallUser.Username, sliceOne, oneUser.Username, pairUser.Username)
	}
	if slices.Contains(smallUser.Groups, "system:masters") {
		t.Errorf("the slice user is in system:masters: %v", smallUser.Groups)
	}

	// The slice identity works up to its pods quota, and no further.
	smallAs, oneAs, pairAs := kubernetes.NewForConfigOrDie(smallCfg), kubernetes.NewForConfigOrDie(oneCfg), kubernetes.NewForConfigOrDie(unlimited(pairCfg))
	for i := range 2 {
		if _, err := smallAs.CoreV1().Pods(smallNS).Create(ctx, smallPod(fmt.Sprintf("fill-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatalf("pod %d of the 2 the slice's quota allows: %v", i+1, err)
		}
	}
	_, err := smallAs.CoreV1().Pods(smallNS).Create(ctx, smallPod("third"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), quotaExceeded) {
		t.Errorf("third pod in a slice granted 2: err = %v, want Forbidden: %s", err, quotaExceeded)
	}
	if _, err := admin.CoreV1().Pods(smallNS).Get(ctx, "third", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the third pod exists after the refusal (err = %v)", err)
	}
	if _, err := oneAs.CoreV1().Pods(oneNS).Create(ctx, smallPod("works"), metav1.CreateOptions{}); err != nil {
		t.Errorf("slice %s creating a pod in its namespace: %v", sliceOne, err)
	}

	// It is confined to its namespace; the pairing's identity cannot act in a slice's namespace.
	for _, ns := range []string{oneNS, tenantNS, "default"} {
		podRefused(t, smallAs, "slice "+sliceSmall, ns, "escape")
	}
	podRefused(t, oneAs, "slice "+sliceOne, smallNS, "escape")
	podRefused(t, pairAs, "the pairing's identity", smallNS, "escape")
	podRefused(t, pairAs, "the pairing's identity", oneNS, "escape")
	if _, err := pairAs.CoreV1().Pods(smallNS).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the pairing's identity listing pods in %s: err = %v, want Forbidden", smallNS, err)
	}
	if _, err := smallAs.CoreV1().Secrets(tenantNS).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("slice %s listing Secrets in %s: err = %v, want Forbidden", sliceSmall, tenantNS, err)
	}
	if _, err := smallAs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("slice %s listing namespaces: err = %v, want Forbidden", sliceSmall, err)
	}

	// Asking again for an imported slice is a renewal: a new key and user, which the class's auto-accept
	// run grants like any request not yet answered; the old certificate then loses its rights.
	t.Run("renewal", func(t *testing.T) { renewSlice(t, smallCfg, smallUser.Username) })

	// Deleting a slice on both sides at once takes its identity, namespace and records away.
	mustOn(t, consumer, "delete", "resourceslice", sliceOne, "--remote-kubeconfig", provider.Kubeconfig)
	if left := sliceLeftovers(t, sliceOne); len(left) > 0 {
		t.Errorf("delete resourceslice %s left:\n%s", sliceOne, strings.Join(left, "\n"))
	}
	if _, err := oneAs.CoreV1().Pods(oneNS).Create(ctx, smallPod("after-delete"), metav1.CreateOptions{}); err == nil {
		t.Errorf("the deleted slice's identity still creates pods")
	}
	if r := on(t, consumer, "get", "kubeconfig", "--remote-cluster-id", "provider", "--resource-slice", sliceOne); r.code == 0 {
		t.Errorf("get kubeconfig of a deleted slice: %s", r)
	}

	// Unauthenticate removes the remaining slice: its namespace, and the consumer's Secrets and Identity.
	current := kubernetes.NewForConfigOrDie(sliceConfig(t, sliceSmall))
	unauthenticate(t)
	if left := sliceLeftovers(t, sliceSmall); len(left) > 0 {
		t.Errorf("unauthenticate left of slice %s:\n%s", sliceSmall, strings.Join(left, "\n"))
	}
	if _, err := current.CoreV1().Pods(smallNS).List(ctx, metav1.ListOptions{}); err == nil {
		t.Errorf("the slice's identity still lists pods after unauthenticate")
	}
}

// renewSlice renews sliceSmall (imported, its class auto-accepts) and checks that the new request waits
// for an answer, that the auto-accept run grants it, and that only the new certificate works afterwards.
func renewSlice(t *testing.T, oldCfg *rest.Config, oldUser string) {
	ctx := t.Context()
	ns := member.SliceNamespace("consumer", sliceSmall)
	mustOn(t, consumer, "create", "resourceslice", sliceSmall, "--remote-cluster-id", "provider", "--class", classSmall,
		"--cpu", "2", "--memory", "2Gi", "--pods", "5")
	listed := itemsOf[grants.SliceInfo](t, mustOn(t, provider, "accept", "resourceslice", "--remote-cluster-id", "consumer", "-o", "json").stdout)
	for _, s := range listed {
		if s.Name == sliceSmall && s.Phase != grants.SlicePending {
			t.Errorf("the renewed request of %s is listed %s (user %s, the previous grant's), want %s: nothing has answered it yet",
				sliceSmall, s.Phase, s.User, grants.SlicePending)
		}
	}
	// Until the provider answers, the consumer's import refuses and keeps the credential it has.
	before := grantSnapshot(t)
	if r := on(t, consumer, "import", "resourceslice", sliceSmall, "--remote-cluster-id", "provider"); r.code != 1 {
		t.Errorf("import of a renewal nobody answered: %s", r)
	} else {
		t.Logf("import before the provider answered the renewal: %s", lastLine(r.stderr))
	}
	if d := before.diff(grantSnapshot(t)); len(d) > 0 {
		t.Errorf("a refused import changed the clusters:\n%s", strings.Join(d, "\n"))
	}
	if _, err := kubernetes.NewForConfigOrDie(oldCfg).CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the slice's certificate stopped working before its renewal was granted: %v", err)
	}
	auto := mustOn(t, provider, "accept", "resourceslice", "--pending")
	if !strings.Contains(auto.stdout, "resourceslice/"+sliceSmall+" accepted") {
		t.Errorf("accept --pending did not grant the renewed request of %s, whose class auto-accepts: %s", sliceSmall, auto)
		mustOn(t, provider, "accept", "resourceslice", sliceSmall, "--remote-cluster-id", "consumer") // to go on
	}
	if r := mustOn(t, consumer, "import", "resourceslice", sliceSmall, "--remote-cluster-id", "provider"); !strings.Contains(r.stdout, " imported ") {
		t.Errorf("import of the renewal: %s", r)
	}
	newCfg := sliceConfig(t, sliceSmall)
	newUser := whoami(t, newCfg).Username
	if newUser == oldUser || !strings.HasPrefix(newUser, member.UserPrefix+"consumer:slice-"+sliceSmall+":") {
		t.Errorf("the renewed slice's user %q (was %q)", newUser, oldUser)
	}
	if _, err := kubernetes.NewForConfigOrDie(newCfg).CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the renewed slice's certificate: %v", err)
	}
	podRefused(t, kubernetes.NewForConfigOrDie(oldCfg), "the slice's certificate before its renewal", ns, "old-cert")
	checkSliceIdentity(t, sliceSmall)
	checkQuota(t, waitQuotaSynced(t, kubernetes.NewForConfigOrDie(provider.Config), ns), sliceQuota("1", "1Gi", "2", "2Gi"))
}

// fakeConsumer makes the provider hold a second paired consumer, id, whose pinned handshake key the
// returned key is: its tenant namespace and an active Tenant, as authenticate would leave them. It is
// removed, and waited for, when the test ends (call beginNamespaceDeletion from a later clean-up to start
// that earlier).
func fakeConsumer(t *testing.T, id string) ed25519.PrivateKey {
	t.Helper()
	ctx := t.Context()
	mustOn(t, provider, "init", "--cluster-id", "provider") // the Tenant CRD
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	ns := member.TenantNamespace(id)
	labels := member.TenantLabels(id)
	labels[member.LabelNamespaceKind] = member.KindTenant
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespaceAndWait(t, provider, ns) })
	tenant := &v1alpha1.Tenant{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: ns, Labels: member.TenantLabels(id)},
		Spec: v1alpha1.TenantSpec{ClusterID: id, ProviderClusterID: "provider", PublicKey: pub, CSR: []byte("unused"),
			Signature: make([]byte, ed25519.SignatureSize)},
	}
	obj, err := toUnstructuredT(tenant)
	if err != nil {
		t.Fatal(err)
	}
	tenants := dyn(t, provider).Resource(tenantsGVR).Namespace(ns)
	created, err := tenants.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := json.Marshal(v1alpha1.TenantStatus{Phase: handshake.PhaseActive, PinnedPublicKey: pub, User: member.UserPrefix + id + ":e2e"})
	if err != nil {
		t.Fatal(err)
	}
	var status map[string]any
	if err := json.Unmarshal(st, &status); err != nil {
		t.Fatal(err)
	}
	created.Object["status"] = status
	if _, err := tenants.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	settle(t, provider, ns)
	return key
}

// toUnstructuredT converts a typed object through JSON.
func toUnstructuredT(obj any) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	return u, u.UnmarshalJSON(data)
}

// deleteNamespaceAndWait deletes a namespace of cluster c from a clean-up and waits, by watch, until it
// is gone, so that no other test sees it terminating.
func deleteNamespaceAndWait(t *testing.T, c *kubeenv.Cluster, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), watchTimeout)
	defer cancel()
	nss := kubernetes.NewForConfigOrDie(c.Config).CoreV1().Namespaces()
	if err := nss.Delete(ctx, name, metav1.DeleteOptions{}); apierrors.IsNotFound(err) {
		return
	} else if err != nil && !apierrors.IsConflict(err) { // Conflict: terminating already
		t.Errorf("deleting namespace %s: %v", name, err)
		return
	}
	list, err := nss.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil || len(list.Items) == 0 {
		return
	}
	w, err := nss.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Error(err)
		return
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Deleted {
			return
		}
	}
	t.Errorf("namespace %s still exists %s after its deletion", name, watchTimeout)
}

// beginNamespaceDeletion deletes a namespace from a clean-up without waiting, so that its termination
// overlaps with the clean-ups that run after it; deleteNamespaceAndWait, registered earlier, waits for it.
func beginNamespaceDeletion(t *testing.T, c *kubeenv.Cluster, name string) {
	t.Helper()
	err := kubernetes.NewForConfigOrDie(c.Config).CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		t.Errorf("deleting namespace %s: %v", name, err)
	}
}

// sliceCSR returns a CSR (DER) for a fresh client key, with the subject a slice's key entitles: what an
// attacker who wants a certificate for a key of its own would send.
func sliceCSR(t *testing.T, consumerID, slice string) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	spki, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{
		CommonName: credential.SliceUser(consumerID, slice, spki), Organization: []string{member.TenantGroup}}}, k)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// signSlice signs a slice's request as its spec says, with key.
func signSlice(t *testing.T, s *v1alpha1.ResourceSlice, key ed25519.PrivateKey) {
	t.Helper()
	block, _ := pem.Decode(s.Spec.CSR)
	if block == nil {
		t.Fatal("spec.csr is not PEM")
	}
	s.Spec.Signature = credential.Sign(key, credential.SliceMessage(s.Spec.ProviderClusterID, s.Spec.ClusterID, s.Spec.Slice, s.Spec.Class, s.Spec.Resources, block.Bytes))
}

func csrPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// checkNothingGranted checks, after a refused accept, that the slice has no namespace, CSR or grant.
func checkNothingGranted(t *testing.T, consumerID, name string) {
	t.Helper()
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	nss, err := admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss.Items {
		if strings.HasPrefix(ns.Name, "fs-") {
			t.Errorf("namespace %s exists after a refused request", ns.Name)
		}
	}
	csrs, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: member.LabelSlice})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range csrs.Items {
		t.Errorf("CSR %s (slice %s) exists after a refused request", c.Name, c.Labels[member.LabelSlice])
	}
	for _, id := range []string{consumerID, "consumer", intruderID} {
		if s := providerSlice(t, id, name); s != nil && s.Status.Phase == grants.SliceAccepted {
			t.Errorf("ResourceSlice %s/%s is %s after a refused request", member.TenantNamespace(id), name, s.Status.Phase)
		}
	}
}

// Forged or altered slice requests are refused, naming what is wrong, and nothing is created, stored or
// changed on either cluster; a denied slice's import fails with the provider's reason and stores no
// credential; afterwards the genuine request is still granted.
func TestSliceForgedOrDeniedRequests(t *testing.T) {
	intruderKey := fakeConsumer(t, intruderID)
	intruderNS := member.TenantNamespace(intruderID)
	freshPairing(t)
	t.Cleanup(func() { beginNamespaceDeletion(t, provider, intruderNS) }) // while the pairing is removed
	ctx := t.Context()
	newSliceClass(t, classCapped, "--max-cpu", "1", "--auto-accept")
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// The genuine request: 4 CPUs under a class that gives at most 1, signed, not submitted.
	genuineText := mustOn(t, consumer, "create", "resourceslice", sliceForged, "--remote-cluster-id", "provider", "--class", classCapped,
		"--cpu", "4", "--memory", "1Gi", "--submit=false", "-o", "yaml").stdout
	genuine := parseSlice(t, genuineText)
	if len(genuine.Spec.Signature) != ed25519.SignatureSize || genuine.Spec.Class != classCapped || genuine.Namespace != tenantNS {
		t.Fatalf("create resourceslice --submit=false -o yaml printed:\n%s", genuineText)
	}
	fresh := func() *v1alpha1.ResourceSlice { return parseSlice(t, genuineText) }
	forged := func(mut func(s *v1alpha1.ResourceSlice)) string {
		s := fresh()
		mut(s)
		return sliceYAML(t, s)
	}

	cases := []struct {
		name     string
		doc      string
		remoteID string // the consumer named to accept
		want     string // the field the refusal must name
	}{
		{"resources changed after signing", editYAML(t, genuineText, func(s map[string]any) {
			s["resources"].(map[string]any)["cpu"] = "64"
		}), "consumer", "spec.signature"},
		{"a resource added after signing", editYAML(t, genuineText, func(s map[string]any) {
			s["resources"].(map[string]any)["pods"] = "500"
		}), "consumer", "spec.signature"},
		{"class changed after signing", editYAML(t, genuineText, func(s map[string]any) {
			delete(s, "class") // the default class has no maximum
		}), "consumer", "spec.signature"},
		{"class changed to another after signing", forged(func(s *v1alpha1.ResourceSlice) { s.Spec.Class = "gold" }), "consumer", "spec.signature"},
		{"signed by a wrong key", forged(func(s *v1alpha1.ResourceSlice) {
			_, other, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			signSlice(t, s, other)
		}), "consumer", "spec.signature"},
		{"corrupted signature", forged(func(s *v1alpha1.ResourceSlice) { s.Spec.Signature[7] ^= 0x01 }), "consumer", "spec.signature"},
		{"CSR swapped, signature kept", forged(func(s *v1alpha1.ResourceSlice) {
			s.Spec.CSR = csrPEM(sliceCSR(t, "consumer", sliceForged))
		}), "consumer", "spec.signature"},
		{"CSR swapped and signed by a wrong key", forged(func(s *v1alpha1.ResourceSlice) {
			s.Spec.CSR = csrPEM(sliceCSR(t, "consumer", sliceForged))
			_, other, _ := ed25519.GenerateKey(rand.Reader)
			signSlice(t, s, other)
		}), "consumer", "spec.signature"},
		{"the consumer's name signed by another consumer's pinned key", forged(func(s *v1alpha1.ResourceSlice) {
			s.Spec.CSR = csrPEM(sliceCSR(t, "consumer", sliceForged))
			signSlice(t, s, intruderKey)
		}), "consumer", "spec.signature"},
		{"another consumer's name", forged(func(s *v1alpha1.ResourceSlice) { s.Spec.ClusterID = intruderID }), "consumer", "spec.clusterID"},
		{"another consumer's own signed request", forged(func(s *v1alpha1.ResourceSlice) {
			s.Spec.ClusterID, s.Namespace = intruderID, intruderNS
			s.Spec.CSR = csrPEM(sliceCSR(t, intruderID, sliceForged))
			signSlice(t, s, intruderKey)
		}), "consumer", "spec.clusterID"},
		{"accepted for another consumer", genuineText, intruderID, "spec.clusterID"},
		{"placed in another consumer's tenant namespace", forged(func(s *v1alpha1.ResourceSlice) { s.Namespace = intruderNS }), intruderID, "spec.clusterID"},
		{"namespace changed", forged(func(s *v1alpha1.ResourceSlice) { s.Namespace = intruderNS }), "consumer", "metadata.namespace"},
		{"another consumer's CSR subject", forged(func(s *v1alpha1.ResourceSlice) {
			// Signed by the intruder's own pinned key, for itself, but asking for the consumer's slice user.
			s.Spec.ClusterID, s.Namespace = intruderID, intruderNS
			s.Spec.CSR = csrPEM(sliceCSR(t, "consumer", sliceForged))
			signSlice(t, s, intruderKey)
		}), intruderID, "spec.csr"},
		{"made for another provider", forged(func(s *v1alpha1.ResourceSlice) {
			s.Spec.ProviderClusterID = "elsewhere"
		}), "consumer", "spec.providerClusterID"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.doc == genuineText && tc.remoteID == "consumer" {
				t.Fatal("the forgery changed nothing")
			}
			path := write(fmt.Sprintf("forged-%d", i), tc.doc)
			before := grantSnapshot(t)
			r := on(t, provider, "accept", "resourceslice", sliceForged, "--remote-cluster-id", tc.remoteID, "-f", path)
			after := grantSnapshot(t)
			t.Logf("%s", lastLine(r.stderr))
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("accept of a request with %s: want exit 1 naming %s: %s", tc.name, tc.want, r)
			}
			if r.stdout != "" {
				t.Errorf("stdout not empty on refusal: %q", r.stdout)
			}
			if d := before.diff(after); len(d) > 0 {
				t.Errorf("a refused request changed the clusters:\n%s", strings.Join(d, "\n"))
			}
			checkNothingGranted(t, tc.remoteID, sliceForged)
		})
	}

	// Left where another consumer's requests are, the genuine request is neither accepted for that
	// consumer by name nor by the auto-accept run, though its class auto-accepts.
	t.Run("stored in another consumer's tenant namespace", func(t *testing.T) {
		copyObj, err := toUnstructuredT(func() *v1alpha1.ResourceSlice {
			s := fresh()
			s.Namespace, s.Status = intruderNS, v1alpha1.ResourceSliceStatus{}
			return s
		}())
		if err != nil {
			t.Fatal(err)
		}
		unstructured.RemoveNestedField(copyObj.Object, "status")
		if _, err := dyn(t, provider).Resource(resourceSlicesGVR).Namespace(intruderNS).Create(ctx, copyObj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		before := grantSnapshot(t)
		r := on(t, provider, "accept", "resourceslice", sliceForged, "--remote-cluster-id", intruderID)
		if r.code != 1 || !strings.Contains(r.stderr, "spec.clusterID") {
			t.Errorf("accept of the consumer's request left in %s: want exit 1 naming spec.clusterID: %s", intruderNS, r)
		}
		r = on(t, provider, "accept", "resourceslice", "--pending")
		if r.code != 0 || strings.Contains(r.stdout, "accepted") {
			t.Errorf("accept --pending took a request left in another consumer's namespace: %s", r)
		}
		if d := before.diff(grantSnapshot(t)); len(d) > 0 {
			t.Errorf("refused requests changed the clusters:\n%s", strings.Join(d, "\n"))
		}
		checkNothingGranted(t, intruderID, sliceForged)
		if err := dyn(t, provider).Resource(resourceSlicesGVR).Namespace(intruderNS).Delete(ctx, sliceForged, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	// A request submitted through the pairing and then altered where it waits, by whoever holds the
	// pairing's kubeconfig (not the handshake key), is refused by name and by the auto-accept run.
	t.Run("altered in place on the provider", func(t *testing.T) {
		const altered = "e2e-altered"
		mustOn(t, consumer, "create", "resourceslice", altered, "--remote-cluster-id", "provider", "--class", classCapped, "--cpu", "1", "--memory", "1Gi")
		_, pairCfg := issuedConfig(t)
		rs := dyn(t, provider).Resource(resourceSlicesGVR).Namespace(tenantNS)
		stored, err := rs.Get(ctx, altered, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(stored.Object, "16", "spec", "resources", "cpu"); err != nil {
			t.Fatal(err)
		}
		pairDyn, err := dynamic.NewForConfig(pairCfg)
		if err != nil {
			t.Fatal(err)
		}
		updated, err := pairDyn.Resource(resourceSlicesGVR).Namespace(tenantNS).Update(ctx, stored, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("the pairing's identity updating its request: %v", err)
		}
		// It may leave and change its requests, never answer them nor define the classes.
		if err := unstructured.SetNestedMap(updated.Object, map[string]any{"phase": grants.SliceAccepted, "namespace": tenantNS,
			"granted": map[string]any{"cpu": "16"}}, "status"); err != nil {
			t.Fatal(err)
		}
		if _, err := pairDyn.Resource(resourceSlicesGVR).Namespace(tenantNS).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("the pairing's identity writing its request's status: err = %v, want Forbidden", err)
		}
		class := &unstructured.Unstructured{Object: map[string]any{"apiVersion": v1alpha1.APIVersion, "kind": v1alpha1.ResourceSliceClassKind,
			"metadata": map[string]any{"name": "e2e-tenant-made"}, "spec": map[string]any{"autoAccept": true}}}
		if _, err := pairDyn.Resource(v1alpha1.ResourceSliceClassGVR).Create(ctx, class, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("the pairing's identity creating a ResourceSliceClass: err = %v, want Forbidden", err)
		}
		before := grantSnapshot(t)
		for _, args := range [][]string{
			{"accept", "resourceslice", altered, "--remote-cluster-id", "consumer"},
			{"accept", "resourceslice", "--pending"},
		} {
			r := on(t, provider, args...)
			if r.code != 1 || !strings.Contains(r.stderr, "spec.signature") {
				t.Errorf("%s of a request altered in place: want exit 1 naming spec.signature: %s", strings.Join(args, " "), r)
			}
		}
		if d := before.diff(grantSnapshot(t)); len(d) > 0 {
			t.Errorf("refused requests changed the clusters:\n%s", strings.Join(d, "\n"))
		}
		checkNothingGranted(t, "consumer", altered)
		if s := providerSlice(t, "consumer", altered); s == nil || s.Status.Phase != "Pending" {
			t.Errorf("the altered request's status: %+v, want still pending (the CRD's default phase)", s)
		}
		// Never granted: the consumer's removal names what it held, no Identity or kubeconfig.
		r := mustOn(t, consumer, "delete", "resourceslice", altered, "--remote-cluster-id", "provider")
		if !strings.Contains(r.stderr, "its record") || !strings.Contains(r.stderr, "the request on the provider") || strings.Contains(r.stderr, "Identity") || strings.Contains(r.stderr, "its kubeconfig") {
			t.Errorf("the consumer's removal of a slice never granted: %s", r.stderr)
		}
	})

	// A denial reaches the consumer: its import fails with the reason and stores nothing.
	newSliceClass(t, classStrict, "--max-cpu", "1", "--over-max", "deny")
	const reason = "no capacity for e2e this quarter"
	denials := []struct {
		name, want string
		deny       func(t *testing.T, name string)
		class      []string
	}{
		{"e2e-denied", reason, func(t *testing.T, name string) {
			mustOn(t, provider, "deny", "resourceslice", name, "--remote-cluster-id", "consumer", "--reason", reason)
		}, nil},
		{"e2e-over-max", "over class", func(t *testing.T, name string) {
			r := on(t, provider, "accept", "resourceslice", name, "--remote-cluster-id", "consumer")
			if r.code != 1 || !strings.Contains(r.stderr, "over class") {
				t.Errorf("accept of a slice over a deny class's maximum: %s", r)
			}
		}, []string{"--class", classStrict}},
	}
	for _, tc := range denials {
		t.Run("denied "+tc.name, func(t *testing.T) {
			mustOn(t, consumer, append([]string{"create", "resourceslice", tc.name, "--remote-cluster-id", "provider", "--cpu", "2", "--memory", "1Gi"}, tc.class...)...)
			tc.deny(t, tc.name)
			s := providerSlice(t, "consumer", tc.name)
			if s == nil || s.Status.Phase != grants.SliceDenied || !strings.Contains(s.Status.Reason, tc.want) {
				t.Fatalf("the provider's record: %+v, want Denied with reason %q", s, tc.want)
			}
			checkNothingGranted(t, "consumer", tc.name)
			// The consumer sees the denial, and its reason, before any import (issue 42 item 10).
			if r := mustOn(t, consumer, "get", "resourceslices", "--remote-cluster-id", "provider", "-o", "yaml"); !strings.Contains(r.stdout, "phase: Denied") || !strings.Contains(r.stdout, tc.want) {
				t.Errorf("the consumer's listing of a denied slice: want phase Denied with %q:\n%s", tc.want, r.stdout)
			}
			before := takeSnapshot(t)
			r := on(t, consumer, "import", "resourceslice", tc.name, "--remote-cluster-id", "provider")
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, "denied") {
				t.Errorf("import of a denied slice: want exit 1 with the reason %q: %s", tc.want, r)
			}
			if d := before.diff(takeSnapshot(t)); len(d) > 0 {
				t.Errorf("the import of a denied slice changed the clusters:\n%s", strings.Join(d, "\n"))
			}
			ck := kubernetes.NewForConfigOrDie(consumer.Config)
			if _, err := ck.CoreV1().Secrets(member.SystemNamespace).Get(t.Context(), member.SliceKubeconfigSecretName("provider", tc.name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("a kubeconfig Secret exists for the denied slice (err = %v)", err)
			}
			if _, err := dyn(t, consumer).Resource(identitiesGVR).Namespace(member.SystemNamespace).Get(t.Context(), member.SliceIdentityName("provider", tc.name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("an Identity exists for the denied slice (err = %v)", err)
			}
			if r := on(t, consumer, "get", "kubeconfig", "--remote-cluster-id", "provider", "--resource-slice", tc.name); r.code == 0 {
				t.Errorf("get kubeconfig of a denied slice printed one: %s", r)
			}
			// The provider removes what was never granted, and says only that (issue 42 item 5); the
			// consumer's listing then reads Removed.
			r = mustOn(t, provider, "delete", "resourceslice", tc.name, "--remote-cluster-id", "consumer")
			if !strings.Contains(r.stderr, "removed: the consumer's request") || strings.Contains(r.stderr, "binding") || strings.Contains(r.stderr, "namespace") {
				t.Errorf("the provider's removal of a denied slice: want only its request named:\n%s", r.stderr)
			}
			if r := mustOn(t, consumer, "get", "resourceslices", "--remote-cluster-id", "provider", "-o", "yaml"); !strings.Contains(r.stdout, "phase: Removed") {
				t.Errorf("the consumer's listing of a slice its provider deleted: want Removed:\n%s", r.stdout)
			}
			r = mustOn(t, consumer, "delete", "resourceslice", tc.name, "--remote-cluster-id", "provider")
			if !strings.Contains(r.stderr, "its record") || strings.Contains(r.stderr, "Identity") || strings.Contains(r.stderr, "its kubeconfig") || strings.Contains(r.stderr, "request on the provider") {
				t.Errorf("the consumer's removal of a denied slice: want only its record named:\n%s", r.stderr)
			}
		})
	}

	// None of that used anything up: the genuine request is granted, clamped to its class, and the grant
	// file imports on the consumer.
	r := mustOn(t, provider, "accept", "resourceslice", sliceForged, "--remote-cluster-id", "consumer", "-f", write("genuine", genuineText), "-o", "yaml")
	grant := parseSlice(t, r.stdout)
	if grant.Status.Phase != grants.SliceAccepted || grant.Status.Granted["cpu"] != "1" {
		t.Errorf("the genuine request after the refusals: phase %q granted %v, want Accepted with cpu 1", grant.Status.Phase, grant.Status.Granted)
	}
	if r := mustOn(t, consumer, "import", "resourceslice", sliceForged, "--remote-cluster-id", "provider", "-f", write("granted", r.stdout)); !strings.Contains(r.stdout, "cpu=1") {
		t.Errorf("import -f granted.yaml: %s", r)
	}
	checkSliceIdentity(t, sliceForged)

	// An accepted slice is not denied afterwards: delete takes its identity away.
	if r := on(t, provider, "deny", "resourceslice", sliceForged, "--remote-cluster-id", "consumer", "--reason", "late"); r.code != 1 || !strings.Contains(r.stderr, "already granted") {
		t.Errorf("deny of an accepted slice: %s", r)
	}
	if s := providerSlice(t, "consumer", sliceForged); s == nil || s.Status.Phase != grants.SliceAccepted {
		t.Errorf("the accepted slice after a refused deny: %+v", s)
	}
}

// nsList decodes a namespace listing (-o json).
func nsList(t *testing.T, r result) map[string]grants.NamespaceInfo {
	t.Helper()
	out := map[string]grants.NamespaceInfo{}
	for _, n := range itemsOf[grants.NamespaceInfo](t, r.stdout) {
		out[n.Namespace] = n
	}
	return out
}

// The done-means of extra namespaces: requested by the consumer, listed and granted by the provider, where
// the pairing's identity then works; a renewal moves it to the new certificate and takes it from the old;
// revoke removes it; a name already in use is refused naming it and never adopted; unauthenticate deletes
// what is left.
func TestExtraNamespaceFollowsThePairing(t *testing.T) {
	freshPairing(t)
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(provider.Config)

	mustOn(t, consumer, "request", "namespace", extraNS, "--remote-cluster-id", "provider", "--reason", "e2e runners")
	// The consumer cannot answer its own request.
	_, oldCfg := issuedConfig(t)
	pairDyn, err := dynamic.NewForConfig(oldCfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pairDyn.Resource(namespaceRequestsGVR).Namespace(tenantNS).Patch(ctx, extraNS, types.MergePatchType,
		[]byte(`{"status":{"phase":"Granted"}}`), metav1.PatchOptions{}, "status"); !apierrors.IsForbidden(err) {
		t.Errorf("the pairing's identity granting its own namespace request: err = %v, want Forbidden", err)
	}
	if _, err := admin.CoreV1().Namespaces().Get(ctx, extraNS, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s exists before the provider granted it (err = %v)", extraNS, err)
	}
	asked := nsList(t, mustOn(t, consumer, "request", "namespace", "--remote-cluster-id", "provider", "-o", "json"))
	if n := asked[extraNS]; n.Phase != grants.NamespacePending || !n.Requested {
		t.Errorf("the consumer's list: %+v, want %s Pending", asked, extraNS)
	}
	seen := nsList(t, mustOn(t, provider, "grant", "namespace", "--remote-cluster-id", "consumer", "-o", "json"))
	if n := seen[extraNS]; n.Phase != grants.NamespacePending || !n.Requested || n.ConsumerID != "consumer" {
		t.Errorf("the provider's list: %+v, want %s Pending", seen, extraNS)
	}
	mustOn(t, provider, "grant", "namespace", extraNS, "--remote-cluster-id", "consumer")
	if n := nsList(t, mustOn(t, provider, "grant", "namespace", "--remote-cluster-id", "consumer", "-o", "json"))[extraNS]; n.Phase != grants.NamespaceGranted {
		t.Errorf("the provider's list after the grant: %+v", n)
	}
	if n := nsList(t, mustOn(t, consumer, "request", "namespace", "--remote-cluster-id", "provider", "-o", "json"))[extraNS]; n.Phase != grants.NamespaceGranted {
		t.Errorf("the consumer's list after the grant: %+v", n)
	}
	ns, err := admin.CoreV1().Namespaces().Get(ctx, extraNS, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkPSA(t, ns, sandbox.PodSecurityRestricted)
	if ns.Labels[member.LabelNamespaceKind] != member.KindExtra || ns.Labels[member.LabelRemoteClusterID] != "consumer" {
		t.Errorf("namespace %s labels %v: want kind extra of consumer", extraNS, ns.Labels)
	}
	// Granting again converges.
	settle(t, provider, extraNS)
	before := grantSnapshot(t)
	mustOn(t, provider, "grant", "namespace", extraNS, "--remote-cluster-id", "consumer")
	if d := before.diff(grantSnapshot(t)); len(d) > 0 {
		t.Errorf("grant namespace again changed the clusters:\n%s", strings.Join(d, "\n"))
	}

	// The pairing's identity works there.
	oldAs := kubernetes.NewForConfigOrDie(unlimited(oldCfg))
	if _, err := oldAs.CoreV1().Pods(extraNS).Create(ctx, restrictedPod("before-renewal"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the pairing's identity creating a pod in the extra namespace: %v", err)
	}

	// A renewal binds the new certificate there and takes the old one's rights.
	authenticate(t)
	_, newCfg := issuedConfig(t)
	newAs := kubernetes.NewForConfigOrDie(unlimited(newCfg))
	if o, n := whoami(t, oldCfg).Username, whoami(t, newCfg).Username; o == n {
		t.Fatalf("the renewal kept the user %q", o)
	}
	if _, err := newAs.CoreV1().Pods(extraNS).Create(ctx, restrictedPod("after-renewal"), metav1.CreateOptions{}); err != nil {
		t.Errorf("the renewed identity creating a pod in the extra namespace: %v", err)
	}
	podRefused(t, oldAs, "the certificate before the renewal", extraNS, "old-cert")
	podRefused(t, oldAs, "the certificate before the renewal", tenantNS, "old-cert")

	// A name already in use is refused, named, and never adopted; so are reserved names.
	taken, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: takenNS, Labels: map[string]string{"owner": intruderOwner}, Annotations: map[string]string{"note": "not kubectl federate's"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespaceAndWait(t, provider, takenNS) })
	mustOn(t, consumer, "request", "namespace", takenNS, "--remote-cluster-id", "provider")
	notOurs := regexp.MustCompile(notOursPattern)
	for _, name := range []string{takenNS, "kube-public", "default"} {
		t.Run("taken "+name, func(t *testing.T) {
			was, err := admin.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r := on(t, provider, "grant", "namespace", name, "--remote-cluster-id", "consumer")
			t.Logf("%s", lastLine(r.stderr))
			if r.code != 1 || (!strings.Contains(r.stderr, `"`+name+`"`) && !strings.Contains(r.stderr, " "+name+" ")) {
				t.Errorf("grant namespace %s: want exit 1 naming it: %s", name, r)
			}
			if name == takenNS && !notOurs.MatchString(r.stderr) {
				t.Errorf("grant namespace %s: the error does not say it was not created by kubectl federate: %s", name, r.stderr)
			}
			now, err := admin.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if now.ResourceVersion != was.ResourceVersion || !maps.Equal(now.Labels, was.Labels) || !maps.Equal(now.Annotations, was.Annotations) {
				t.Errorf("namespace %s was changed: labels %v -> %v, annotations %v -> %v", name, was.Labels, now.Labels, was.Annotations, now.Annotations)
			}
			if _, err := admin.RbacV1().RoleBindings(name).Get(ctx, member.RoleBindingName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("RoleBinding %s/%s exists (err = %v)", name, member.RoleBindingName, err)
			}
			for what, err := range map[string]error{
				"ResourceQuota": getErr(admin.CoreV1().ResourceQuotas(name).Get(ctx, sandboxObject, metav1.GetOptions{})),
				"LimitRange":    getErr(admin.CoreV1().LimitRanges(name).Get(ctx, sandboxObject, metav1.GetOptions{})),
				"NetworkPolicy": getErr(admin.NetworkingV1().NetworkPolicies(name).Get(ctx, sandboxObject, metav1.GetOptions{})),
			} {
				if !apierrors.IsNotFound(err) {
					t.Errorf("%s in %s (err = %v)", what, name, err)
				}
			}
			podRefused(t, newAs, "the pairing's identity", name, "adopted")
		})
	}
	if n := nsList(t, mustOn(t, consumer, "request", "namespace", "--remote-cluster-id", "provider", "-o", "json"))[takenNS]; n.Phase != grants.NamespaceRefused {
		t.Errorf("the consumer's request for the taken name: %+v, want Refused", n)
	}

	// Revoke removes the extra namespace and the request.
	mustOn(t, provider, "revoke", "namespace", extraNS, "--remote-cluster-id", "consumer")
	if _, err := admin.CoreV1().Namespaces().Get(ctx, extraNS, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after revoke namespace: err = %v, want NotFound", extraNS, err)
	}
	if _, ok := nsList(t, mustOn(t, provider, "grant", "namespace", "--remote-cluster-id", "consumer", "-o", "json"))[extraNS]; ok {
		t.Errorf("%s is still listed after revoke namespace", extraNS)
	}
	if _, err := newAs.CoreV1().Pods(extraNS).Create(ctx, restrictedPod("after-revoke"), metav1.CreateOptions{}); err == nil {
		t.Errorf("the pairing's identity still creates pods in %s after revoke namespace", extraNS)
	}
	// The tenant namespace and its identity are untouched by it.
	if _, err := newAs.CoreV1().Pods(tenantNS).Create(ctx, restrictedPod("tenant-still-works"), metav1.CreateOptions{}); err != nil {
		t.Errorf("the pairing's identity in its tenant namespace after revoke namespace: %v", err)
	}

	// Unauthenticate deletes the extra namespaces (granted here in one shot) and leaves the taken one alone.
	const extra2 = "e2e-extra-2"
	mustOn(t, consumer, "request", "namespace", extra2, "--remote-kubeconfig", provider.Kubeconfig)
	if _, err := newAs.CoreV1().Pods(extra2).Create(ctx, restrictedPod("one-shot"), metav1.CreateOptions{}); err != nil {
		t.Errorf("the pairing's identity in the namespace granted in one shot: %v", err)
	}
	unauthenticate(t)
	if _, err := admin.CoreV1().Namespaces().Get(ctx, extra2, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after unauthenticate: err = %v, want NotFound", extra2, err)
	}
	now, err := admin.CoreV1().Namespaces().Get(ctx, takenNS, metav1.GetOptions{})
	if err != nil || now.DeletionTimestamp != nil || now.ResourceVersion != taken.ResourceVersion {
		t.Errorf("unauthenticate touched the namespace %s it did not create (err = %v)", takenNS, err)
	}
}

// runFor runs kubectl-federate with a deadline of its own, which kills it: a command that ignores its
// --timeout shows as exit -1 after limit.
func runFor(t *testing.T, limit time.Duration, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	return newCommand(ctx, t.TempDir(), nil, federateBin, args...).run(t)
}

// The first thing a consumer does after pairing with a freshly set-up provider, asking for a slice or a
// namespace, must work once the provider's quota controller has discovered the federate.dev resources (it
// looks every 30 seconds). authenticate installs those resources and creates the tenant namespace's quota
// in the same run, before the controller knows them; the controller then counts them in that quota only
// at its next full resync (5 minutes by default), and until then the API server refuses every request the
// consumer leaves there ("status unknown for quota"), which create resourceslice waits out past its
// --timeout. The provider here is a new cluster of its own, so that what earlier tests did to the shared
// one does not matter.
func TestSliceRequestOnFreshProvider(t *testing.T) {
	start := time.Now()
	clusters, err := kubeenv.Start(t.Context(), kubeenv.Options{Dir: t.TempDir(), Names: []string{"fresh"}})
	if err != nil {
		t.Fatal(err)
	}
	fresh := clusters[0]
	t.Cleanup(fresh.Stop)
	t.Logf("a fresh provider started in %s", time.Since(start).Round(10*time.Millisecond))
	mustRun(t, "", "authenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", fresh.Kubeconfig,
		"--cluster-id", "consumer", "--remote-cluster-id", "fresh")
	// The consumer's side is what matters: the fresh cluster goes away with its namespaces.
	atCleanup(t, "unauthenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", fresh.Kubeconfig, "--keep-namespaces")
	paired := time.Now()

	// Wait, as the administrator, until the quota controller has discovered the federate.dev resources
	// (a quota of the test's own counts them); from then on the product has no reason to wait.
	admin := kubernetes.NewForConfigOrDie(fresh.Config)
	quotas := admin.CoreV1().ResourceQuotas("default")
	hard := corev1.ResourceList{}
	for _, r := range countedRequests {
		hard[r] = resource.MustParse("10")
	}
	if _, err := quotas.Create(t.Context(), &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "e2e-discovery"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	requestsCounted(t, fresh, "default", "e2e-discovery")
	t.Logf("the quota controller counts the federate.dev resources %s after authenticate", time.Since(paired).Round(100*time.Millisecond))

	// Both requests at once, each with a --timeout and a deadline of the test's own.
	const timeout = 5 * time.Second
	requests := map[string][]string{
		"create resourceslice": {"create", "resourceslice", "e2e-fresh", "--remote-cluster-id", "fresh", "--cpu", "1", "--memory", "1Gi",
			"--timeout", timeout.String(), "--kubeconfig", consumer.Kubeconfig},
		"request namespace": {"request", "namespace", "e2e-fresh", "--remote-cluster-id", "fresh",
			"--timeout", timeout.String(), "--kubeconfig", consumer.Kubeconfig},
	}
	results := make(chan struct {
		what string
		r    result
	}, len(requests))
	for what, args := range requests {
		go func() {
			results <- struct {
				what string
				r    result
			}{what, runFor(t, timeout+5*time.Second, args...)}
		}()
	}
	failed := false
	for range requests {
		res := <-results
		r := res.r
		switch r.code {
		case 0:
			t.Logf("%s on a fresh provider: done %s after authenticate", res.what, time.Since(paired).Round(100*time.Millisecond))
		case -1:
			failed = true
			t.Errorf("%s on a fresh provider: still running after %s although --timeout %s was given (killed): %s", res.what, r.wall.Round(time.Second), timeout, r)
		default:
			failed = true
			t.Errorf("%s on a fresh provider: exit %d after %s: %s", res.what, r.code, r.wall.Round(time.Second), r)
		}
	}
	if failed {
		q, err := admin.CoreV1().ResourceQuotas(tenantNS).Get(context.Background(), sandboxObject, metav1.GetOptions{})
		if err == nil {
			for _, r := range countedRequests {
				if _, ok := q.Status.Used[r]; !ok {
					t.Errorf("ResourceQuota %s/%s on the fresh provider, %s after authenticate: status.used has no %s (status.hard has it: %s), though the quota controller counts it in a new quota",
						tenantNS, sandboxObject, time.Since(paired).Round(time.Second), r, q.Status.Hard.Name(r, resource.DecimalSI))
				}
			}
		}
	}
}

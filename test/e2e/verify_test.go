//go:build e2e

package e2e

// Issue 37: the provider's administrator, after a pairing with a slice, an extra namespace and an
// exchange credential, breaks the sandbox one way at a time. verify exits 4 naming each break and the
// object behind it, and writes nothing; verify --repair restores what init and issuance own (the rest the
// administrator undoes), and verify then exits 0.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/verify"
	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

const (
	verifySlice = "vslice"
	verifyExtra = "verify-extra"
	verifyCRB   = "verify-tenants-edit"
	verifyAdmin = "verify-bob-admin"
	bob         = "verify-bob"
)

// verifyWatched is what the plain verify runs must leave as they found it: every kind the corpus aims at or
// verify reads, on both clusters, by resourceVersion.
var verifyWatched = append(slices.Clone(watched),
	schema.GroupVersionResource{Version: "v1", Resource: "pods"},
	schema.GroupVersionResource{Version: "v1", Resource: "services"},
	schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"},
	schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"},
	schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"},
	schema.GroupVersionResource{Version: "v1", Resource: "limitranges"},
	schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
	schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"},
	schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"},
	schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
	schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
	schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"},
	schema.GroupVersionResource{Group: "federate.dev", Version: "v1alpha1", Resource: "resourceslices"},
	schema.GroupVersionResource{Group: "federate.dev", Version: "v1alpha1", Resource: "exchangerequests"},
	schema.GroupVersionResource{Group: "federate.dev", Version: "v1alpha1", Resource: "namespacerequests"},
)

func everythingSnapshot(t *testing.T) snapshot {
	t.Helper()
	s := snapshot{}
	for _, c := range []*kubeenv.Cluster{consumer, provider} {
		for _, gvr := range verifyWatched {
			list, err := dyn(t, c).Resource(gvr).List(t.Context(), metav1.ListOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range list.Items {
				if o.GetNamespace() == "kube-system" || o.GetNamespace() == "kube-node-lease" {
					continue // the control plane's own heartbeats
				}
				s[fmt.Sprintf("%s %s %s/%s", c.Name, gvr.Resource, o.GetNamespace(), o.GetName())] = o.GetResourceVersion()
			}
		}
	}
	return s
}

// verifyOnce runs a plain verify and checks that it wrote nothing.
func verifyOnce(t *testing.T, args ...string) result {
	t.Helper()
	before := everythingSnapshot(t)
	r := cli(t, "", append([]string{"verify", "--kubeconfig", provider.Kubeconfig}, args...)...)
	if d := before.diff(everythingSnapshot(t)); len(d) > 0 {
		t.Errorf("verify changed the clusters:\n%s", strings.Join(d, "\n"))
	}
	return r
}

// allowedAs waits until the API server's authorizer answers an access of user in groups as want (its
// RBAC cache follows a binding a moment after it is made or deleted).
func allowedAs(t *testing.T, admin kubernetes.Interface, user string, groups []string, a authzv1.ResourceAttributes, want bool) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s allowed %v to %s %s", user, want, a.Verb, a.Resource), func() error {
		r, err := admin.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authzv1.SubjectAccessReview{
			Spec: authzv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &a}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if r.Status.Allowed != want {
			return fmt.Errorf("allowed %v", r.Status.Allowed)
		}
		return nil
	})
}

// pairedForVerify pairs the clusters and grants the consumer a slice, an extra namespace and an exchange
// credential (alice acting as bob, reading pods in the extra namespace). It returns the request's name.
func pairedForVerify(t *testing.T) string {
	t.Helper()
	freshPairing(t)
	mustOn(t, consumer, "create", "resourceslice", verifySlice, "--remote-cluster-id", "provider", "--remote-kubeconfig", provider.Kubeconfig,
		"--cpu", "1", "--memory", "1Gi")
	mustOn(t, provider, "grant", "namespace", verifyExtra, "--remote-cluster-id", "consumer")
	applyRules(t, `    - name: verify
      type: StaticMappingIdentityExchanger
      source: {user: alice, cluster: provider}
      target: {user: `+bob+`}
      scope: {verbs: [get, list], resources: [pods], namespaces: [`+verifyExtra+`]}
`)
	name := strings.TrimSpace(mustOn(t, consumer, "request", "exchange", "--remote-cluster-id", "provider", "--for-user", "alice").stdout)
	mustOn(t, provider, "allow", "exchange", name, "--remote-cluster-id", "consumer")
	for _, ns := range []string{tenantNS, member.SliceNamespace("consumer", verifySlice), verifyExtra} {
		settle(t, provider, ns)
		waitQuotaSynced(t, kubernetes.NewForConfigOrDie(provider.Config), ns)
	}
	return name
}

func TestVerify(t *testing.T) {
	request := pairedForVerify(t)
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(provider.Config)
	sliceNS := member.SliceNamespace("consumer", verifySlice)
	tenantGroups := []string{member.TenantGroup, "system:authenticated"}
	secretsInKubeSystem := authzv1.ResourceAttributes{Namespace: "kube-system", Verb: "get", Resource: "secrets"}
	everyResource := authzv1.ResourceAttributes{Verb: "*", Group: "*", Resource: "*"}

	holds := func(t *testing.T, r result) {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("verify does not hold on an intact sandbox: %s", r)
		}
		for _, want := range []string{"consumer   sandbox", tenantNS, sliceNS, verifyExtra, "rights                 slice " + verifySlice,
			"attacks refused as pairing", "attacks refused as slice " + verifySlice, request} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("verify does not show %q:\n%s", want, r.stdout)
			}
		}
	}
	t.Run("an intact sandbox holds", func(t *testing.T) {
		start := time.Now()
		holds(t, verifyOnce(t))
		t.Logf("verify of one tenant (three namespaces, an exchange grant) took %s", time.Since(start).Round(time.Millisecond))
	})

	for _, b := range []struct {
		name     string
		breakIt  func(t *testing.T)
		want     []string // in verify's output: the break and the object behind it
		repaired bool     // verify --repair restores it; else the administrator undoes it
		undo     func(t *testing.T)
	}{{
		name: "an admission policy binding deleted",
		breakIt: func(t *testing.T) {
			if err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, sandboxObject+"-pods", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		want:     []string{"drift: ValidatingAdmissionPolicyBinding federate-sandbox-pods: is missing"},
		repaired: true,
	}, {
		name: "edit bound cluster-wide to the tenants group",
		breakIt: func(t *testing.T) {
			if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: verifyCRB},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: member.TenantGroup}},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			allowedAs(t, admin, "kubectl-federate:consumer:anyone", tenantGroups, secretsInKubeSystem, true)
		},
		want: []string{"BROKEN: ClusterRoleBinding " + verifyCRB + " binds ClusterRole edit to group kubectl-federate:tenants",
			"admitted, granted by ClusterRoleBinding " + verifyCRB + " (ClusterRole edit): ", "secret-in-kube-system"},
		undo: func(t *testing.T) {
			if err := admin.RbacV1().ClusterRoleBindings().Delete(ctx, verifyCRB, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			allowedAs(t, admin, "kubectl-federate:consumer:anyone", tenantGroups, secretsInKubeSystem, false)
		},
	}, {
		name: "the Pod Security label removed",
		breakIt: func(t *testing.T) {
			if _, err := admin.CoreV1().Namespaces().Patch(ctx, tenantNS, types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":null}}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		want:     []string{"drift: Namespace " + tenantNS + ": label pod-security.kubernetes.io/enforce is missing (issuance sets restricted)"},
		repaired: true,
	}, {
		name: "the NetworkPolicy deleted",
		breakIt: func(t *testing.T) {
			if err := admin.NetworkingV1().NetworkPolicies(verifyExtra).Delete(ctx, sandboxObject, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		want:     []string{"drift: NetworkPolicy " + verifyExtra + "/federate-sandbox: is missing"},
		repaired: true,
	}, {
		name: "the quota raised by hand",
		breakIt: func(t *testing.T) {
			if _, err := admin.CoreV1().ResourceQuotas(tenantNS).Patch(ctx, sandboxObject, types.MergePatchType,
				[]byte(`{"spec":{"hard":{"requests.cpu":"100"}}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		want:     []string{"drift: ResourceQuota " + tenantNS + "/federate-sandbox: requests.cpu is 100 (the ledger gives "},
		repaired: true,
	}, {
		name: "the exchange target made cluster-admin",
		breakIt: func(t *testing.T) {
			if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: verifyAdmin},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: bob}},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			allowedAs(t, admin, bob, []string{"system:authenticated"}, everyResource, true)
		},
		want: []string{"BROKEN: target " + bob + " may now do beyond its scope", "every verb on every resource (cluster-admin)",
			"bindings naming it: ClusterRoleBinding " + verifyAdmin + " (ClusterRole cluster-admin)"},
		undo: func(t *testing.T) {
			if err := admin.RbacV1().ClusterRoleBindings().Delete(ctx, verifyAdmin, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			allowedAs(t, admin, bob, []string{"system:authenticated"}, everyResource, false)
		},
	}} {
		t.Run(b.name, func(t *testing.T) {
			b.breakIt(t)
			r := verifyOnce(t)
			if r.code != 4 || !strings.Contains(r.stderr, "do not hold") {
				t.Errorf("verify after the break: exit %d, want 4 saying what does not hold:\n%s", r.code, r)
			}
			for _, want := range b.want {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("verify does not name the break: %q not in\n%s", want, r.stdout)
				}
			}
			t.Logf("verify after %s:\n%s", b.name, r.stdout)
			repair := cli(t, "", "verify", "--kubeconfig", provider.Kubeconfig, "--repair")
			switch {
			case b.repaired && repair.code != 0:
				t.Errorf("verify --repair did not restore it: %s", repair)
			case !b.repaired && repair.code != 4:
				t.Errorf("verify --repair of what it does not own: exit %d, want 4 (nothing repaired, still named):\n%s", repair.code, repair)
			case !b.repaired && strings.Contains(repair.stderr, "Restored"):
				t.Errorf("verify --repair restored something of what it does not own:\n%s", repair.stderr)
			}
			t.Logf("verify --repair:\n%s", repair.stderr)
			if !b.repaired {
				b.undo(t)
			}
			holds(t, verifyOnce(t))
		})
	}

	// The corpus's reads and the reviews are admitted for an identity that holds the right (here the
	// provider's administrator, not impersonating): the attacks can fail, and NotFound means allowed.
	t.Run("the corpus's access attacks get through with the rights", func(t *testing.T) {
		for _, a := range verify.Corpus(verify.Params{Namespace: tenantNS, Prefix: verify.ObjectPrefix}) {
			if a.Object.Name != "" {
				continue // the writes: dry runs that admission (not RBAC) refuses even an administrator
			}
			if got := a.Judge(a.Try(ctx, admin, true), false); got != verify.Admitted {
				t.Errorf("%s as the administrator: %s, want admitted", a.Name, got)
			}
		}
	})
}


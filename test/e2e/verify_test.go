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

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	pkgkube "github.com/federate-dev/kubectl-federate/pkg/kube"
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

// everythingSnapshot is every object of every resource the clusters serve and list, by resourceVersion,
// on both clusters: what the plain verify runs must leave as they found it. Discovery finds the resources,
// so a kind verify (or a new attack) might touch is never left out. Only the control plane's own
// heartbeats (kube-system's leader-election Leases and kube-node-lease) move by themselves, and are left out.
func everythingSnapshot(t *testing.T) snapshot {
	t.Helper()
	s := snapshot{}
	for _, c := range []*kubeenv.Cluster{consumer, provider} {
		// Listing every resource lists the deprecated ones too (ComponentStatus, v1 Endpoints): their
		// warnings say nothing about verify.
		cfg := rest.CopyConfig(c.Config)
		cfg.WarningHandler = rest.NoWarnings{}
		disc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		d, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		lists, err := disc.ServerPreferredResources()
		if err != nil {
			t.Fatalf("%s: discovery: %v", c.Name, err)
		}
		for _, l := range lists {
			gv, err := schema.ParseGroupVersion(l.GroupVersion)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range l.APIResources {
				if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
					continue // a subresource, or a resource that cannot be listed (reviews: created, never stored)
				}
				gvr := gv.WithResource(r.Name)
				list, err := d.Resource(gvr).List(t.Context(), metav1.ListOptions{})
				if err != nil {
					t.Fatalf("%s: list %s: %v", c.Name, gvr, err)
				}
				for _, o := range list.Items {
					if gvr.Resource == "leases" && (o.GetNamespace() == "kube-system" || o.GetNamespace() == "kube-node-lease") {
						continue // the control plane's own heartbeats
					}
					s[fmt.Sprintf("%s %s %s/%s", c.Name, gvr.GroupResource(), o.GetNamespace(), o.GetName())] = o.GetResourceVersion()
				}
			}
		}
	}
	if len(s) == 0 {
		t.Fatal("the snapshot holds nothing")
	}
	return s
}

// verifyOnce runs a plain verify and checks that it wrote nothing.
func verifyOnce(t *testing.T, args ...string) result {
	t.Helper()
	before := everythingSnapshot(t)
	for _, k := range []string{"provider networkpolicies.networking.k8s.io " + tenantNS + "/" + sandboxObject,
		"provider resourcequotas " + tenantNS + "/" + sandboxObject, "provider namespaces /" + verifyExtra,
		"provider validatingadmissionpolicies.admissionregistration.k8s.io /" + sandboxObject + "-pods", "consumer namespaces /federate-system"} {
		if _, ok := before[k]; !ok {
			t.Fatalf("the snapshot (%d objects) does not hold %s", len(before), k)
		}
	}
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

// admittedAs waits until the API server's admission answers the corpus's attack, sent by the tenant as a
// dry run, as want (Pod Security, the admission policies and the quota follow a change a moment later).
func admittedAs(t *testing.T, tenant pkgkube.Interface, p verify.Params, attack string, want bool) {
	t.Helper()
	i := slices.IndexFunc(verify.Corpus(p), func(a verify.Attack) bool { return a.Name == attack })
	if i < 0 {
		t.Fatalf("no attack %s in the corpus", attack)
	}
	a := verify.Corpus(p)[i]
	eventually(t, fmt.Sprintf("%s admitted %v in %s", attack, want, p.Namespace), func() error {
		err := a.Try(t.Context(), tenant, true)
		if got := a.Judge(err, false); (got == verify.Admitted) != want {
			return fmt.Errorf("%s: %w", got, err)
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
	_, tenantCfg := issuedConfig(t)
	tenantPlugin := pluginClient(t, tenantCfg)
	quota, err := admin.CoreV1().ResourceQuotas(tenantNS).Get(ctx, sandboxObject, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	quotaCPU := quota.Spec.Hard[corev1.ResourceRequestsCPU]
	inTenantNS := verify.Params{Namespace: tenantNS, Prefix: verify.ObjectPrefix, QuotaCPU: &quotaCPU}

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
		holds(t, verifyOnce(t))
	})

	for _, b := range []struct {
		name     string
		breakIt  func(t *testing.T)
		want     []string // in verify's output: the break and the object behind it
		repaired bool     // verify --repair restores it; else the administrator undoes it
		foreign  string   // the ClusterRoleBinding verify --repair must leave (the administrator's to undo)
		undo     func(t *testing.T)
	}{{
		name: "an admission policy binding deleted",
		breakIt: func(t *testing.T) {
			if err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, sandboxObject+"-pods", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			admittedAs(t, tenantPlugin, inTenantNS, "nodename", true)
		},
		want: []string{"drift: ValidatingAdmissionPolicyBinding federate-sandbox-pods: is missing",
			"BROKEN: admitted where ValidatingAdmissionPolicy federate-sandbox-pods (and its binding) should refuse: nodename"},
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
		foreign: verifyCRB,
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
			admittedAs(t, tenantPlugin, inTenantNS, "privileged", true)
		},
		want: []string{"drift: Namespace " + tenantNS + ": label pod-security.kubernetes.io/enforce is missing (issuance sets restricted)",
			"BROKEN: admitted where the label pod-security.kubernetes.io/enforce of Namespace " + tenantNS + " should refuse: privileged, "},
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
			admittedAs(t, tenantPlugin, inTenantNS, "cpu-over-quota", true)
		},
		want: []string{"drift: ResourceQuota " + tenantNS + "/federate-sandbox: requests.cpu is 100 (the ledger gives " + quotaCPU.String() + ")",
			"BROKEN: admitted where ResourceQuota " + tenantNS + "/federate-sandbox should refuse: cpu-over-quota"},
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
		foreign: verifyAdmin,
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
			if b.foreign != "" {
				// Not its to remove: it is still there, for its administrator to undo.
				if _, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, b.foreign, metav1.GetOptions{}); err != nil {
					t.Errorf("verify --repair touched ClusterRoleBinding %s, which it does not own: %v", b.foreign, err)
				}
			}
			if !b.repaired {
				b.undo(t)
			}
			holds(t, verifyOnce(t))
		})
	}

	// The corpus's reads and the reviews are admitted for an identity that holds the right (here the
	// provider's administrator, not impersonating): the attacks can fail, and NotFound means allowed.
	t.Run("the corpus's access attacks get through with the rights", func(t *testing.T) {
		tried := 0
		for _, a := range verify.Corpus(verify.Params{Namespace: tenantNS, Prefix: verify.ObjectPrefix}) {
			if a.Object.Name != "" {
				continue // the writes: dry runs that admission (not RBAC) refuses even an administrator
			}
			tried++
			if got := a.Judge(a.Try(ctx, pluginClient(t, provider.Config), true), false); got != verify.Admitted {
				t.Errorf("%s as the administrator: %s, want admitted", a.Name, got)
			}
		}
		if tried == 0 {
			t.Fatal("the corpus holds no access attack")
		}
		t.Logf("%d access attacks admitted for the administrator", tried)
	})
}

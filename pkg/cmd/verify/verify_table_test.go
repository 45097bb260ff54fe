package verify_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/internal/fakeapi"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
	"github.com/federate-dev/kubectl-federate/pkg/verify"
)

// sandboxGuard is farm's API server answering the escape corpus as a sandbox that holds: each attack, known
// by what it sends, is refused by its first guard; the attacks named in admit get through. (What really
// refuses each one is proven end to end: test/e2e TestVerify, TestSandboxRefusesEscapes.)
func sandboxGuard(namespaces []string, admit ...string) func(clienttesting.Action) error {
	type key struct{ verb, resource, ns, name string }
	guards := map[key]verify.Attack{}
	cpu := resource.MustParse("1")
	for _, ns := range namespaces {
		for _, a := range verify.Corpus(verify.Params{Namespace: ns, Prefix: verify.ObjectPrefix, Scheduler: "s", Toleration: "t", Volume: verify.Absent,
			ClasslessRefused: true, QuotaCPU: &cpu}) {
			k := key{a.Access.Verb, a.Object.Resource.Resource, a.Object.Namespace, a.Object.Name}
			if a.Object.Name == "" { // a read of an object that does not exist
				k = key{a.Access.Verb, a.Access.Resource, a.Access.Namespace, verify.Absent}
				if a.Access.Verb == "list" {
					k.name = ""
				}
			}
			guards[k] = a
		}
	}
	return func(act clienttesting.Action) error {
		k := key{act.GetVerb(), act.GetResource().Resource, act.GetNamespace(), ""}
		switch a := act.(type) {
		case clienttesting.CreateActionImpl:
			if m, err := metav1ObjectName(a); err == nil {
				k.name = m
			}
			if a.GetSubresource() != "" {
				k.name = a.Name
			}
		case clienttesting.GetActionImpl:
			k.name = a.GetName()
		case clienttesting.PatchActionImpl:
			k.name = a.GetName()
		case clienttesting.UpdateActionImpl:
			k.verb, k.name = "update", verify.Absent
		}
		attack, ok := guards[k]
		if !ok {
			return nil
		}
		for _, name := range admit {
			if attack.Name == name {
				return fakeapi.ErrAdmit
			}
		}
		return apierrors.NewForbidden(schema.GroupResource{Resource: k.resource}, k.name, errors.New("refused: "+attack.Guards[0]))
	}
}

func metav1ObjectName(a clienttesting.CreateActionImpl) (string, error) {
	type named interface{ GetName() string }
	if n, ok := a.GetObject().(named); ok {
		return n.GetName(), nil
	}
	return "", fmt.Errorf("no name")
}

// guarded is a world whose provider farm answers the corpus as a sandbox that holds, but for admit.
func guarded(build func(t *testing.T) *cmdtest.Env, namespaces []string, admit ...string) *cmdtest.TableWorld {
	return cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := build(t)
		e.World.Cluster("farm").Guard = sandboxGuard(namespaces, admit...)
		return e
	})
}

const tenantNS = "federate-tenant-edge"

var header = []string{"REMOTE", "CHECK", "NAME", "RESULT"}

// rows checks the table: the rows, in order, each its REMOTE, CHECK and NAME, and a RESULT that starts
// with what is given.
func rows(want ...[4]string) func(t *testing.T, _ *cmdtest.Env, out string) {
	return func(t *testing.T, _ *cmdtest.Env, out string) {
		t.Helper()
		got := cmdtest.TableOf(t, out, header...)
		if len(got) != len(want) {
			t.Fatalf("%d rows, want %d:\n%s", len(got), len(want), out)
		}
		for i, w := range want {
			cmdtest.WantRow(t, got[i], map[string]string{"REMOTE": w[0], "CHECK": w[1], "NAME": w[2]})
			if !strings.HasPrefix(got[i]["RESULT"], w[3]) {
				t.Errorf("row %d RESULT %q, want it to start with %q", i, got[i]["RESULT"], w[3])
			}
		}
	}
}

// clusterRows are the cluster's own rows on a fake, which runs no NetworkPolicy engine and has no Nodes.
var clusterRows = [][4]string{
	{"-", "admission", "federate-sandbox-*", "ok"},
	{"-", "tenant-role", "federate-tenant", "ok"},
	{"-", "networkpolicy-engine", "-", "warning: no NetworkPolicy engine found"},
	{"-", "pod-ranges", "-", "warning: this cluster's pod address ranges could not be read"},
}

// tenantOK are edge's rows on a provider whose sandbox holds.
func tenantOK() [][4]string {
	return [][4]string{{"edge", "sandbox", tenantNS, "ok (as issuance made it)"}, {"edge", "rights", "pairing", "ok (bound only by its sandbox)"},
		{"edge", "escapes", tenantNS, "ok ("}}
}

func withCluster(tenant ...[4]string) [][4]string {
	return append(append([][4]string{}, clusterRows...), tenant...)
}

// verify proves every sandbox of farm and exits 0 when it holds, 4 naming each break and its object when
// it does not, 1 on bad input or a consumer it does not know; it never writes but with --repair, which
// restores what issuance owns (--dry-run shows it instead) and verifies again.
func TestCommandTableVerify(t *testing.T) {
	ns := []string{tenantNS}
	holds := guarded(cmdtest.Paired, ns)
	privileged := guarded(cmdtest.Paired, ns, "privileged", "hostpid")
	edit := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		farm := e.World.Cluster("farm")
		farm.Guard = sandboxGuard(ns)
		rbac := farm.Clientset.RbacV1()
		if _, err := rbac.ClusterRoles().Create(t.Context(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "edit"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets", "pods"}, Verbs: []string{"*"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := rbac.ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenants-edit"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "kubectl-federate:tenants"}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return e
	})
	noPolicy := func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Paired(t)
		farm := e.World.Cluster("farm")
		farm.Guard = sandboxGuard(ns)
		if err := farm.DynamicClient.Resource(sandbox.NetworkPolicyGVR).Namespace(tenantNS).Delete(t.Context(), sandbox.SandboxName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		return e
	}
	noPolicyShared := cmdtest.NewTableWorld(noPolicy)
	noPolicyFresh := &cmdtest.TableWorld{Build: noPolicy, Fresh: true}
	tenantOK := tenantOK()
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "every sandbox holds", World: holds, Args: []string{"verify", "--kubeconfig", "farm"}, Stdout: rows(withCluster(tenantOK...)...)},
		{Name: "one consumer", World: holds, Args: []string{"verify", "--kubeconfig", "farm", "--remote-cluster-id", "edge"},
			Stdout: rows(append(clusterRows[:2:2], tenantOK...)...)},
		{Name: "-o json", World: holds, Args: []string{"verify", "--kubeconfig", "farm", "-o", "json"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				list := cmdtest.JSONObject(t, out)
				names := cmdtest.ListNames(t, list)
				want := []string{"cluster.admission", "cluster.tenant-role", "cluster.networkpolicy-engine", "cluster.pod-ranges",
					"edge.sandbox." + tenantNS, "edge.rights.pairing", "edge.escapes." + tenantNS}
				if strings.Join(names, " ") != strings.Join(want, " ") {
					t.Fatalf("items %v, want %v", names, want)
				}
				cmdtest.WantFields(t, list, map[string]string{"items.0.kind": "VerifyCheck", "items.0.status.check": "admission", "items.0.status.state": "ok",
					"items.2.status.state": "warning", "items.4.status.remoteClusterID": "edge", `items.4.metadata.labels.federate\.dev/remote-cluster-id`: "edge",
					"items.6.status.check": "escapes", "items.6.status.state": "ok"})
				if d, _ := cmdtest.FieldAt(list, "items.6.status.detail").(string); !strings.Contains(d, "attacks refused as pairing") {
					t.Errorf("the escapes row's detail %q does not say how many attacks were refused", d)
				}
			}},
		{Name: "-o yaml", World: holds, Args: []string{"verify", "--kubeconfig", "farm", "-o", "yaml"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				cmdtest.WantFields(t, cmdtest.YAMLObject(t, out), map[string]string{"kind": "List", "items.5.status.check": "rights", "items.5.status.name": "pairing"})
			}},
		{Name: "an escape admitted", World: privileged, Args: []string{"verify", "--kubeconfig", "farm"},
			Code: 4, Err: "1 check(s) do not hold: edge escapes " + tenantNS + ": BROKEN",
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				rows(withCluster(tenantOK[0], tenantOK[1], [4]string{"edge", "escapes", tenantNS,
					"BROKEN: admitted where the label pod-security.kubernetes.io/enforce of Namespace " + tenantNS + " should refuse: privileged, hostpid"})...)(t, e, out)
			}},
		{Name: "a binding to the tenants group", World: edit, Args: []string{"verify", "--kubeconfig", "farm", "-o", "wide"},
			Code: 4, Err: "1 check(s) do not hold: edge rights pairing: BROKEN",
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				got := cmdtest.TableOf(t, out, append(header, "OBJECTS")...)
				cmdtest.WantRow(t, got[5], map[string]string{"CHECK": "rights", "OBJECTS": "ClusterRoleBinding tenants-edit",
					"RESULT": "BROKEN: ClusterRoleBinding tenants-edit binds ClusterRole edit to group kubectl-federate:tenants (every tenant's certificate carries it): rights in every namespace and cluster-wide beyond the sandbox"})
			}},
		{Name: "a NetworkPolicy deleted", World: noPolicyShared, Args: []string{"verify", "--kubeconfig", "farm", "--remote-cluster-id", "edge"},
			Code: 4, Err: "1 check(s) do not hold: edge sandbox " + tenantNS + ": drift",
			Stdout: rows(append(clusterRows[:2:2], [4]string{"edge", "sandbox", tenantNS,
				"drift: NetworkPolicy " + tenantNS + "/federate-sandbox: is missing"}, tenantOK[1], tenantOK[2])...)},
		{Name: "--repair restores it and verifies again", World: noPolicyFresh, Args: []string{"verify", "--kubeconfig", "farm", "--repair"},
			Stderr: []string{"Restored NetworkPolicy " + tenantNS + "/federate-sandbox (is missing"},
			Wrote:  map[string][]string{"farm": {"patch networkpolicies"}},
			Stdout: rows(withCluster(tenantOK...)...)},
		{Name: "--repair --dry-run", World: noPolicyShared, Args: []string{"verify", "--kubeconfig", "farm", "--repair", "--dry-run"}, DryRun: true,
			Code: 4, Err: "1 check(s) do not hold: edge sandbox " + tenantNS + ": drift",
			Stderr: []string{"(dry run) Would restore NetworkPolicy " + tenantNS + "/federate-sandbox"},
			Stdout: func(t *testing.T, _ *cmdtest.Env, out string) {
				if !strings.Contains(out, "# farm: would apply networkpolicy/federate-sandbox in "+tenantNS) {
					t.Errorf("stdout does not show the NetworkPolicy the repair would write:\n%s", out)
				}
			}},
		{Name: "--repair with nothing to restore", World: holds, Args: []string{"verify", "--kubeconfig", "farm", "--repair"},
			Stderr: []string{"Nothing that init or issuance own needed restoring"}, Stdout: rows(withCluster(tenantOK...)...)},
		{Name: "a consumer farm does not know", World: holds, Args: []string{"verify", "--kubeconfig", "farm", "--remote-cluster-id", "nobody"},
			Code: 1, Err: `--remote-cluster-id: consumer "nobody" not found on this provider (no Tenant); known: edge`},
		{Name: "a slice farm did not grant", World: holds, Args: []string{"verify", "--kubeconfig", "farm", "--remote-cluster-id", "edge", "--resource-slice", "nope"},
			Code: 1, Err: `resource slice "nope" not found granted to consumer "edge"; there is none`},
		{Name: "--resource-slice without the consumer", World: cmdtest.WorldBare, Args: []string{"verify", "--kubeconfig", "farm", "--resource-slice", "batch"},
			Code: 1, Usage: true, Err: "--resource-slice: needs --remote-cluster-id"},
		{Name: "--extra-namespace without the consumer", World: cmdtest.WorldBare, Args: []string{"verify", "--kubeconfig", "farm", "--extra-namespace", "team-a"},
			Code: 1, Usage: true, Err: "--extra-namespace: needs --remote-cluster-id"},
		{Name: "a slice and a namespace", World: cmdtest.WorldBare, Args: []string{"verify", "--kubeconfig", "farm", "--remote-cluster-id", "edge", "--resource-slice", "a", "--extra-namespace", "b"},
			Code: 1, Usage: true, Err: "[extra-namespace resource-slice] were all set"},
		{Name: "a cluster never initialized", World: cmdtest.WorldBare, Args: []string{"verify", "--kubeconfig", "farm"},
			Code: 1, Err: "not initialized"},
	})
}

// A slice is verified as its own identity in its own namespace, and alone with --resource-slice.
func TestCommandTableVerifySlice(t *testing.T) {
	sliceNS := "fs-edge-batch-" // its hash follows
	world := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.ImportedSlice(t)
		l, err := e.World.Cluster("farm").Clientset.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var all []string
		for _, n := range l.Items {
			all = append(all, n.Name)
			if strings.HasPrefix(n.Name, sliceNS) {
				e.Vars["slice"] = n.Name
			}
		}
		e.World.Cluster("farm").Guard = sandboxGuard(all)
		return e
	})
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "the pairing and its slice", World: world, Args: []string{"verify", "--kubeconfig", "farm"},
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				slice := e.Vars["slice"]
				rows(withCluster([4]string{"edge", "sandbox", tenantNS, "ok"}, [4]string{"edge", "sandbox", slice, "ok"},
					[4]string{"edge", "rights", "pairing", "ok"}, [4]string{"edge", "rights", "slice batch", "ok"},
					[4]string{"edge", "escapes", tenantNS, "ok ("}, [4]string{"edge", "escapes", slice, "ok ("})...)(t, e, out)
				if !strings.Contains(out, "attacks refused as slice batch") {
					t.Errorf("the slice's namespace was not attacked as the slice's identity:\n%s", out)
				}
			}},
		{Name: "--resource-slice", World: world, Args: []string{"verify", "--kubeconfig", "farm", "--remote-cluster-id", "edge", "--resource-slice", "batch"},
			Stdout: func(t *testing.T, e *cmdtest.Env, out string) {
				slice := e.Vars["slice"]
				rows(append(clusterRows[:2:2], [4]string{"edge", "sandbox", slice, "ok"}, [4]string{"edge", "rights", "slice batch", "ok"},
					[4]string{"edge", "escapes", slice, "ok ("})...)(t, e, out)
			}},
	})
}

// An exchange credential is checked against what was accepted: its scope's reach and its target's own;
// a target that gained rights since (the fake's authorizer now allows bob everything) is BROKEN.
func TestCommandTableVerifyExchange(t *testing.T) {
	world := guarded(cmdtest.Issued, []string{tenantNS})
	gained := cmdtest.NewTableWorld(func(t *testing.T) *cmdtest.Env {
		e := cmdtest.Issued(t)
		farm := e.World.Cluster("farm")
		farm.Guard = sandboxGuard([]string{tenantNS})
		farm.SARAllow = func(spec authzv1.SubjectAccessReviewSpec) bool { return spec.User == "bob" }
		return e
	})
	check := func(result string) func(t *testing.T, e *cmdtest.Env, out string) {
		return func(t *testing.T, e *cmdtest.Env, out string) {
			got := cmdtest.TableOf(t, out, header...)
			if len(got) != 6 || got[5]["CHECK"] != "exchange" || !strings.HasPrefix(got[5]["NAME"], "mapping-") || !strings.HasPrefix(got[5]["RESULT"], result) {
				t.Fatalf("want the tenant's rows and its grant's, %q:\n%s", result, out)
			}
			rows(append(clusterRows[:2:2], append(tenantOK(), [4]string{"edge", "exchange", got[5]["NAME"], result})...)...)(t, e, out)
		}
	}
	cmdtest.RunTable(t, []cmdtest.Row{
		{Name: "an issued grant", World: world, Args: []string{"verify", "--kubeconfig", "farm", "--remote-cluster-id", "edge"},
			Stdout: check("ok (constrained, acting as bob for get,list,watch on ")},
		{Name: "its target gained rights", World: gained, Args: []string{"verify", "--kubeconfig", "farm", "--remote-cluster-id", "edge"},
			Code: 4, Err: "edge exchange mapping-",
			Stdout: check("BROKEN: target bob may now do beyond its scope (the API server still holds this credential to its scope): ")},
	})
}

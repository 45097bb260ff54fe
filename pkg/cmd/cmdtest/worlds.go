package cmdtest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Worlds. Each builds on the one before, through the commands (or the domain where no command can on a
// fake), so that a row starts from a state the product itself made.

// Paired is edge paired with farm, and lone never initialized.
func Paired(t *testing.T) *Env {
	return &Env{World: PairedWorld(t, "lone"), Vars: map[string]string{}}
}

// Nonce is Paired with an unused nonce made on farm for lone.
func Nonce(t *testing.T) *Env {
	e := Paired(t)
	e.Must(t, "create", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone")
	return e
}

// PendingSlice is Paired with the slice batch asked of farm by edge, not yet answered.
func PendingSlice(t *testing.T) *Env {
	e := Paired(t)
	e.Must(t, "create", "resourceslice", "batch", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--cpu", "1", "--memory", "1Gi")
	return e
}

// ImportedSlice is PendingSlice with batch accepted on farm and imported on edge.
func ImportedSlice(t *testing.T) *Env {
	e := PendingSlice(t)
	e.Must(t, "accept", "resourceslice", "batch", "--kubeconfig", "farm", "--remote-cluster-id", "edge")
	e.Must(t, "import", "resourceslice", "batch", "--kubeconfig", "edge", "--remote-cluster-id", "farm")
	return e
}

// RulesFile is edge's identity-exchange rules: alice maps to bob within edge's tenant namespace,
// root gets the pairing's own identity (a privileged rule, weighed first for its priority), the group
// ops reaching farm maps to deployer (with a group and a UID).
const RulesFile = `apiVersion: federate.dev/v1alpha1
kind: ClusterGatewayConfiguration
spec:
  clientIdentityExchanger:
    rules:
    - name: mapping
      type: StaticMappingIdentityExchanger
      source: {user: alice}
      target: {user: bob}
      scope: {namespaces: [federate-tenant-edge]}
    - name: admin
      type: PrivilegedIdentityExchanger
      priority: 10
      source: {user: root}
    - name: ops
      type: StaticMappingIdentityExchanger
      source: {group: ops, cluster: farm}
      target: {user: deployer, groups: [deployers], uid: "42"}
`

// File writes a file in a temporary directory and returns its path.
func File(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// RulesPaths is Paired with the rule file written ({rules}), not yet applied.
func RulesPaths(t *testing.T) *Env {
	e := Paired(t)
	e.Vars["rules"] = File(t, "rules.yaml", RulesFile)
	return e
}

// Rules is Paired with the rules applied on edge.
func Rules(t *testing.T) *Env {
	e := RulesPaths(t)
	e.Must(t, "exchange", "apply", "-f", e.Vars["rules"], "--kubeconfig", "edge")
	return e
}

// Request is Rules with alice's exchange request left on farm ({request}), pending.
func Request(t *testing.T) *Env {
	e := Rules(t)
	e.Vars["request"] = strings.TrimSpace(e.Must(t, "request", "exchange", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--for-user", "alice").Stdout)
	return e
}

// Issued is Request with the request allowed on farm. The command cannot allow on a fake (its
// constrained-impersonation probe needs a ServiceAccount token and an HTTP round trip), so the domain
// step does, with the fake's impersonation support given; the consumer then fetches the credential.
func Issued(t *testing.T) *Env {
	e := Request(t)
	if _, err := exchange.AllowExchange(t.Context(), e.World.Domain("farm"), exchange.AllowExchangeOptions{ConsumerID: "edge", Names: []string{e.Vars["request"]}}); err != nil {
		t.Fatal(err)
	}
	e.Must(t, "request", "exchange", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--for-user", "alice")
	// Revoking an issued credential waits out the API server's impersonation cache: a fake has none.
	ttl := handshake.ImpersonationCacheTTL
	handshake.ImpersonationCacheTTL = 0
	t.Cleanup(func() { handshake.ImpersonationCacheTTL = ttl })
	return e
}

// Denied is Request with the request refused on farm.
func Denied(t *testing.T) *Env {
	e := Request(t)
	e.Must(t, "deny", "exchange", e.Vars["request"], "--kubeconfig", "farm", "--remote-cluster-id", "edge", "--reason", "not for prod")
	return e
}

// The worlds above, for rows.
var (
	WorldPaired        = NewTableWorld(Paired)
	WorldNonce         = NewTableWorld(Nonce)
	WorldPendingSlice  = NewTableWorld(PendingSlice)
	WorldImportedSlice = NewTableWorld(ImportedSlice)
	WorldRulesPaths    = NewTableWorld(RulesPaths)
	WorldRules         = NewTableWorld(Rules)
	WorldRequest       = NewTableWorld(Request)
	WorldIssued        = NewTableWorld(Issued)
	WorldDenied        = NewTableWorld(Denied)
)

// Worlds the tables of several commands share.

// NonceFile is Nonce with the ticket farm made for lone written to a file ({nonce}).
func NonceFile(t *testing.T) *Env {
	e := Nonce(t)
	e.Vars["nonce"] = File(t, "nonce.txt", e.Must(t, "get", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone").Stdout)
	return e
}

// HeldUser is the user of the pairing's identity edge holds on farm, as status says.
func HeldUser(t *testing.T, e *Env) string {
	t.Helper()
	list := JSONObject(t, e.Must(t, "status", "--kubeconfig", "edge", "-o", "json").Stdout)
	user, _ := FieldAt(list, "items.0.status.user").(string)
	if FieldAt(list, "items.0.status.kind") != "ControlPlane" || user == "" {
		t.Fatalf("status holds no pairing identity: %v", list)
	}
	return user
}

// Bare is the table clusters, none initialized.
func Bare(t *testing.T) *Env {
	return &Env{World: NewWorld(t, Clusters...), Vars: map[string]string{}}
}

// Cordoned is Paired with edge cordoned on farm.
func Cordoned(t *testing.T) *Env {
	e := Paired(t)
	e.Must(t, "cordon", "tenant", "--kubeconfig", "farm", "--remote-cluster-id", "edge")
	return e
}

// TenantFile is NonceFile with lone's signed Tenant written to a file ({tenant}).
func TenantFile(t *testing.T) *Env {
	e := NonceFile(t)
	e.Vars["tenant"] = File(t, "tenant.yaml", e.Must(t, "generate", "tenant", "--kubeconfig", "lone", "--nonce-file", e.Vars["nonce"]).Stdout)
	return e
}

// IdentityFile is TenantFile with the Identity farm issued for it written to a file ({identity}).
func IdentityFile(t *testing.T) *Env {
	e := TenantFile(t)
	e.Vars["identity"] = File(t, "identity.yaml", e.Must(t, "generate", "identity", "--kubeconfig", "farm", "--remote-cluster-id", "lone", "-f", e.Vars["tenant"]).Stdout)
	return e
}

// Initialized is the three clusters initialized under their names, none paired. (Never initialized,
// the fakes would all derive one default ID from one kube-system UID: mesh would call them one cluster.)
func Initialized(t *testing.T) *Env {
	e := Bare(t)
	for _, n := range Clusters {
		e.World.Init(n, n)
	}
	return e
}

// Meshed is Initialized with edge and farm meshed: each a consumer of the other.
func Meshed(t *testing.T) *Env {
	e := Initialized(t)
	e.Must(t, "mesh", "--kubeconfigs", "edge,farm")
	return e
}

// The shared worlds above, for rows.
var (
	WorldNonceFile    = NewTableWorld(NonceFile)
	WorldInitialized  = NewTableWorld(Initialized)
	WorldMeshed       = NewTableWorld(Meshed)
	WorldBare         = NewTableWorld(Bare)
	WorldCordoned     = NewTableWorld(Cordoned)
	WorldTenantFile   = NewTableWorld(TenantFile)
	WorldIdentityFile = NewTableWorld(IdentityFile)
)

// RegexpMatch tells whether s matches the expression.
func RegexpMatch(expr, s string) bool { return regexp.MustCompile(expr).MatchString(s) }

// CordonedStatus checks status on farm says whether edge is CordonedStatus.
func CordonedStatus(want string) func(t *testing.T, e *Env, out string) {
	return func(t *testing.T, e *Env, _ string) {
		t.Helper()
		list := JSONObject(t, e.Must(t, "status", "--kubeconfig", "farm", "-o", "json").Stdout)
		WantFields(t, list, map[string]string{"items.0.status.remoteClusterID": "edge", "items.0.status.cordoned": want})
	}
}

// CordonWrites are what a cordon sends the provider: the label on the namespaces, the Tenant's status;
// an event says it.
var CordonWrites = map[string][]string{"farm": {"patch namespaces", "create events", "patch tenants"}}

// InitWrites checks an initialization's Writes: the namespace, the handshake key and the cluster ID in
// this order, then (in parallel, so in no set order) the role tenants get and the CRDs.
func InitWrites(t *testing.T, got []string) {
	t.Helper()
	if !IsSubsequence(got, []string{"create namespaces", "create secrets", "create configmaps"}) ||
		!slices.Contains(got, "patch clusterroles") || !slices.Contains(got, "patch customresourcedefinitions") || !slices.Contains(got, "patch validatingadmissionpolicies") {
		t.Errorf("sent %v, want an initialization", got)
	}
}

// MeshTable checks mesh's and unmesh's table: a row per directed pair, in this order, with its result.
func MeshTable(want ...[3]string) func(t *testing.T, _ *Env, out string) {
	return func(t *testing.T, _ *Env, out string) {
		t.Helper()
		rows := TableOf(t, out, "CONSUMER", "PROVIDER", "RESULT", "TIME")
		if len(rows) != len(want) {
			t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), out)
		}
		for i, w := range want {
			WantRow(t, rows[i], map[string]string{"CONSUMER": w[0], "PROVIDER": w[1], "RESULT": w[2]})
		}
	}
}

// Federated is Paired as a federated pairing leaves it (authenticate --credential federated
// --service-account ci:deployer): farm's Tenant records edge's issuer and ServiceAccount, and the
// federated user and audience issued; edge's Identity is federated, and no kubeconfig is stored. The
// fakes cannot mint or authenticate a ServiceAccount token: a row proves nothing that needs one.
func Federated(t *testing.T) *Env {
	e := Paired(t)
	const user = "kubectl-federate:edge:0123456789abcdef:system:serviceaccount:ci:deployer"
	const audience = "kubectl-federate:farm:edge:0123456789abcdef"
	sa := map[string]any{"namespace": "ci", "name": "deployer", "uid": "0a1b2c3d-0000-4000-8000-000000000001"}
	update := func(cluster string, gvr schema.GroupVersionResource, ns, name string, set func(map[string]any)) {
		res := e.World.Cluster(cluster).DynamicClient.Resource(gvr).Namespace(ns)
		u, err := res.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		set(u.Object)
		if _, err := res.Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	update("farm", v1alpha1.TenantGVR, member.TenantNamespace("edge"), "edge", func(o map[string]any) {
		_ = unstructured.SetNestedMap(o, map[string]any{"issuer": "https://edge.example:6443", "serviceAccount": sa}, "spec", "federated")
		_ = unstructured.SetNestedField(o, v1alpha1.CredentialFederated, "status", "credential")
		_ = unstructured.SetNestedField(o, user, "status", "user")
		_ = unstructured.SetNestedField(o, audience, "status", "audience")
	})
	update("edge", v1alpha1.IdentityGVR, member.SystemNamespace, member.IdentityName("farm"), func(o map[string]any) {
		_ = unstructured.SetNestedField(o, v1alpha1.CredentialFederated, "spec", "credential")
		_ = unstructured.SetNestedMap(o, map[string]any{"serviceAccount": sa, "audience": audience, "user": user}, "spec", "federated")
	})
	if err := e.World.Cluster("edge").Clientset.CoreV1().Secrets(member.SystemNamespace).Delete(t.Context(), member.KubeconfigSecretName("farm"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	return e
}

// WorldFederated is Federated, for rows.
var WorldFederated = NewTableWorld(Federated)

package handshake

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/kube/kubetest"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

const testIssuer = "https://edge-1.example:6443"

func federatedRequest() *v1alpha1.FederatedRequest {
	return &v1alpha1.FederatedRequest{Issuer: testIssuer,
		ServiceAccount: v1alpha1.ServiceAccountRef{Namespace: "ci", Name: "deployer", UID: "0b5c9a2e-7f31-4c8e-9d40-1a2b3c4d5e6f"}}
}

func federatedTenant(t *testing.T) *v1alpha1.Tenant {
	t.Helper()
	n := credential.NameFederated("gpu-farm", "edge-1", credential.ExpectedUser("edge-1", "nonce"))
	f := federatedRequest()
	return &v1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "edge-1", Namespace: "federate-tenant-edge-1"},
		Spec:       v1alpha1.TenantSpec{ClusterID: "edge-1", ProviderClusterID: "gpu-farm", Federated: f},
		Status:     v1alpha1.TenantStatus{Credential: v1alpha1.CredentialFederated, User: n.User(f.ServiceAccount), Audience: n.Audience},
	}
}

// The entry pins everything the pairing's security rests on: the issuer, one audience, the subject and
// UID of one ServiceAccount, a day's lifetime at most, a username under the issuance's prefix, no group,
// and no system: name.
func TestAuthenticatorEntry(t *testing.T) {
	tenant := federatedTenant(t)
	e, err := Authenticator(tenant)
	if err != nil {
		t.Fatal(err)
	}
	if e.Issuer.URL != testIssuer || len(e.Issuer.Audiences) != 1 || e.Issuer.Audiences[0] != tenant.Status.Audience {
		t.Errorf("issuer %+v", e.Issuer)
	}
	if !strings.HasPrefix(tenant.Status.Audience, "kubectl-federate:gpu-farm:edge-1:") {
		t.Errorf("audience %q is not unique to the provider, the consumer and the issuance", tenant.Status.Audience)
	}
	if got := e.ClaimMappings.Username; got.Claim != "sub" || got.Prefix+"system:serviceaccount:ci:deployer" != tenant.Status.User ||
		!strings.HasPrefix(got.Prefix, "kubectl-federate:edge-1:") {
		t.Errorf("username mapping %+v for user %q", got, tenant.Status.User)
	}
	var rules []string
	for _, r := range e.ClaimValidationRules {
		rules = append(rules, r.Expression)
		if !strings.HasPrefix(r.Message, "kubectl federate: ") {
			t.Errorf("rule %q: message %q does not name its author", r.Expression, r.Message)
		}
	}
	for _, want := range []string{
		"claims.sub == 'system:serviceaccount:ci:deployer'",
		"claims['kubernetes.io'].serviceaccount.uid == '0b5c9a2e-7f31-4c8e-9d40-1a2b3c4d5e6f'",
		"has(claims.iat) && int(claims.exp) - int(claims.iat) <= 86400",
	} {
		if !strings.Contains(strings.Join(rules, "\n"), want) {
			t.Errorf("no claim validation rule %q in %q", want, rules)
		}
	}
	if len(e.UserValidationRules) != 2 || !strings.Contains(e.UserValidationRules[0].Expression, "startsWith('system:')") ||
		!strings.Contains(e.UserValidationRules[1].Expression, "user.groups.all") {
		t.Errorf("user validation rules %+v", e.UserValidationRules)
	}
	data, err := AuthenticationConfigYAML(e)
	if err != nil {
		t.Fatal(err)
	}
	var back AuthenticationConfiguration
	if err := yaml.UnmarshalStrict(data, &back); err != nil || back.APIVersion != "apiserver.config.k8s.io/v1" || back.Kind != "AuthenticationConfiguration" || len(back.JWT) != 1 {
		t.Fatalf("%v\n%s", err, data)
	}
	if strings.Contains(string(data), "groups:") {
		t.Errorf("the entry maps groups:\n%s", data)
	}
}

func TestAuthenticatorRefusesWhatIsNotFederated(t *testing.T) {
	for name, mutate := range map[string]func(*v1alpha1.Tenant){
		"a certificate pairing": func(t *v1alpha1.Tenant) { t.Status.Credential = v1alpha1.CredentialCertificate },
		"no request":            func(t *v1alpha1.Tenant) { t.Spec.Federated = nil },
		"no audience":           func(t *v1alpha1.Tenant) { t.Status.Audience = "" },
		"an http issuer":        func(t *v1alpha1.Tenant) { t.Spec.Federated.Issuer = "http://edge-1.example" },
		"another account's user": func(t *v1alpha1.Tenant) {
			t.Status.User = strings.Replace(t.Status.User, "deployer", "admin", 1)
		},
		"a quote in the namespace": func(t *v1alpha1.Tenant) { t.Spec.Federated.ServiceAccount.Namespace = "ci'" },
	} {
		t.Run(name, func(t *testing.T) {
			tenant := federatedTenant(t)
			mutate(tenant)
			if e, err := Authenticator(tenant); err == nil {
				t.Fatalf("built %+v", e)
			}
		})
	}
}

func TestCELString(t *testing.T) {
	if got := celString(`a'b\c`); got != `'a\'b\\c'` {
		t.Errorf("celString = %s", got)
	}
}

// The diagnosis reads the provider's metrics for the issuer's hash and names what is missing.
func TestDiagnoseAuthenticator(t *testing.T) {
	h := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(testIssuer)))
	other := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("https://other")))
	for _, tc := range []struct {
		name, metrics, want string
	}{
		{"nothing", "", "has no authenticator for issuer " + testIssuer + ": the entry is not installed"},
		{"another issuer's keys", metricJWKSFetch + `{apiserver_id_hash="x",jwt_issuer_hash="` + other + `",result="success"} 1.7e+09`, "the entry is not installed"},
		{"keys fetched", metricJWKSFetch + `{apiserver_id_hash="x",jwt_issuer_hash="` + h + `",result="success"} 1.7e+09`, "is not the one printed"},
		{"keys not fetched", metricJWKSFetch + `{apiserver_id_hash="x",jwt_issuer_hash="` + h + `",result="failure"} 1.7e+09`, "cannot fetch its keys"},
		{"not initialized", metricLatency + `{jwt_issuer_hash="` + h + `",result="failure"} 3`, "not initialized: it cannot read the issuer's discovery document"},
		{"reload failed", metricReload + `{apiserver_id_hash="x",status="failure"} 1.8e+09` + "\n" + metricReload + `{apiserver_id_hash="x",status="success"} 1.7e+09`, "its last reload of its authentication configuration failed (at 2027-01-15T08:00:00Z)"},
		{"reload failed before it succeeded", metricReload + `{apiserver_id_hash="x",status="failure"} 1.7e+09` + "\n" + metricReload + `{apiserver_id_hash="x",status="success"} 1.8e+09`, "the entry is not installed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := diagnose(parseMetrics([]byte("# HELP x\n# TYPE x gauge\n"+tc.metrics+"\n")), testIssuer)
			if !strings.Contains(got, tc.want) {
				t.Fatalf("diagnosis %q does not say %q", got, tc.want)
			}
		})
	}
}

func TestValidateFederatedTenant(t *testing.T) {
	good := func() *v1alpha1.Tenant {
		return &v1alpha1.Tenant{Spec: v1alpha1.TenantSpec{ClusterID: "edge-1", ProviderClusterID: "gpu-farm", PublicKey: []byte("k"),
			Signature: []byte("s"), Federated: federatedRequest()}}
	}
	if err := ValidateTenant(good(), "edge-1", "gpu-farm"); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		mutate func(*v1alpha1.Tenant)
		want   string
	}{
		"a CSR too":               {func(t *v1alpha1.Tenant) { t.Spec.CSR = []byte("csr") }, "spec.csr: a federated request carries no CSR"},
		"an http issuer":          {func(t *v1alpha1.Tenant) { t.Spec.Federated.Issuer = "http://x" }, "spec.federated.issuer"},
		"an issuer with a query":  {func(t *v1alpha1.Tenant) { t.Spec.Federated.Issuer = testIssuer + "?a=b" }, "spec.federated.issuer"},
		"the issuer as discovery": {func(t *v1alpha1.Tenant) { t.Spec.Federated.DiscoveryURL = testIssuer + "/" }, "spec.federated.discoveryURL: must differ"},
		"a CA that is not PEM":    {func(t *v1alpha1.Tenant) { t.Spec.Federated.IssuerCA = []byte("nope") }, "spec.federated.issuerCA: holds no PEM"},
		"a bad namespace":         {func(t *v1alpha1.Tenant) { t.Spec.Federated.ServiceAccount.Namespace = "CI" }, "spec.federated.serviceAccount.namespace"},
		"a bad name":              {func(t *v1alpha1.Tenant) { t.Spec.Federated.ServiceAccount.Name = "a'b" }, "spec.federated.serviceAccount.name"},
		"a bad UID":               {func(t *v1alpha1.Tenant) { t.Spec.Federated.ServiceAccount.UID = "x' || true" }, "spec.federated.serviceAccount.uid"},
	} {
		t.Run(name, func(t *testing.T) {
			tenant := good()
			tc.mutate(tenant)
			err := ValidateTenant(tenant, "edge-1", "gpu-farm")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func federatedIdentity(key []byte) *v1alpha1.Identity {
	n := credential.NameFederated("gpu-farm", "edge-1", credential.ExpectedUser("edge-1", "nonce"))
	sa := federatedRequest().ServiceAccount
	id := &v1alpha1.Identity{Spec: v1alpha1.IdentitySpec{ClusterID: "gpu-farm", ConsumerClusterID: "edge-1", Namespace: "federate-tenant-edge-1",
		APIServer: "https://gpu-farm.example:6443", Credential: v1alpha1.CredentialFederated,
		Federated: &v1alpha1.FederatedIdentity{ServiceAccount: sa, Audience: n.Audience, User: n.User(sa)}}}
	credential.SealIdentity(key, &id.Spec)
	return id
}

func TestValidateFederatedIdentity(t *testing.T) {
	cred, err := ValidateIdentity(federatedIdentity(nil), "edge-1", testNow())
	if err != nil || cred.User != federatedIdentity(nil).Spec.Federated.User || !cred.NotAfter.IsZero() {
		t.Fatalf("%+v %v", cred, err)
	}
	for name, tc := range map[string]struct {
		mutate func(*v1alpha1.Identity)
		want   string
	}{
		"a token":       {func(id *v1alpha1.Identity) { id.Spec.Token = "t" }, "spec.token: a federated identity carries no token"},
		"a certificate": {func(id *v1alpha1.Identity) { id.Spec.Certificate = []byte("c") }, "spec.certificate: a federated identity carries no certificate"},
		"no federated":  {func(id *v1alpha1.Identity) { id.Spec.Federated = nil }, "spec.federated: is missing"},
		"no audience":   {func(id *v1alpha1.Identity) { id.Spec.Federated.Audience = "" }, "spec.federated.audience"},
		"another consumer's": {func(id *v1alpha1.Identity) {
			id.Spec.Federated.User = strings.Replace(id.Spec.Federated.User, "edge-1", "edge-2", 1)
		}, "is not a federated user of consumer"},
		"a system user":         {func(id *v1alpha1.Identity) { id.Spec.Federated.User = "system:admin" }, "is not a federated user of consumer"},
		"another account":       {func(id *v1alpha1.Identity) { id.Spec.Federated.ServiceAccount.Name = "admin" }, "spec.federated.user"},
		"a federated on a cert": {func(id *v1alpha1.Identity) { id.Spec.Credential = "" }, "spec.federated: only a federated identity"},
	} {
		t.Run(name, func(t *testing.T) {
			id := federatedIdentity(nil)
			tc.mutate(id)
			_, err := ValidateIdentity(id, "edge-1", testNow())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// Every field a federated identity adds is sealed: an audience, an account or a user changed in transit
// is named by its MAC.
func TestFederatedIdentityIsSealed(t *testing.T) {
	key := credential.IntegrityKey("nonce")
	if err := credential.VerifyIdentity(key, &federatedIdentity(key).Spec); err != nil {
		t.Fatal(err)
	}
	for field, mutate := range map[string]func(*v1alpha1.FederatedIdentity){
		"federated.audience":       func(f *v1alpha1.FederatedIdentity) { f.Audience = "kubectl-federate:evil" },
		"federated.serviceAccount": func(f *v1alpha1.FederatedIdentity) { f.ServiceAccount.Namespace = "other" },
		"federated.user":           func(f *v1alpha1.FederatedIdentity) { f.User += "x" },
	} {
		id := federatedIdentity(key)
		mutate(id.Spec.Federated)
		if err := credential.VerifyIdentity(key, &id.Spec); err == nil || !strings.Contains(err.Error(), "spec."+field+": does not match") {
			t.Errorf("%s changed: %v", field, err)
		}
	}
}

// A federated identity imported again is the one imported: the stored copy carries the type the API server
// defaults (ControlPlane), the identity.yaml none, and the MACs still verify on both (the type is not
// sealed). Any sealed field changed, or another type, is another identity.
func TestSameIdentitySpecDespiteDefaultedType(t *testing.T) {
	key := credential.IntegrityKey("nonce")
	file := federatedIdentity(key).Spec
	stored := federatedIdentity(key).Spec
	stored.Type = v1alpha1.IdentityControlPlane
	if !sameIdentitySpec(&stored, &file) {
		t.Error("the stored identity, type defaulted, is not the identity.yaml it was imported from")
	}
	if err := credential.VerifyIdentity(key, &stored); err != nil {
		t.Errorf("the defaulted type broke the MACs: %v", err)
	}
	if file.Type != "" {
		t.Fatalf("the identity compared was no identity.yaml as issued: type %q", file.Type)
	}
	other := stored
	other.Type = v1alpha1.IdentityResource
	if sameIdentitySpec(&other, &file) {
		t.Error("a Resource identity is the same as the pairing's")
	}
	moved := stored
	moved.APIServer = "https://elsewhere.example:6443"
	if sameIdentitySpec(&moved, &file) {
		t.Error("another API server is the same identity")
	}
}

// The signature covers every field of a federated request: any one changed, or the request moved to
// another nonce, fails to verify.
func TestFederatedMessageBindsEveryField(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sig := credential.Sign(priv, credential.FederatedMessage("gpu-farm", "edge-1", "nonce", federatedRequest(), ""))
	for name, mutate := range map[string]func(f *v1alpha1.FederatedRequest) (nonce, proxy string){
		"unchanged": func(*v1alpha1.FederatedRequest) (string, string) { return "nonce", "" },
		"issuer":    func(f *v1alpha1.FederatedRequest) (string, string) { f.Issuer += "x"; return "nonce", "" },
		"discovery": func(f *v1alpha1.FederatedRequest) (string, string) { f.DiscoveryURL = "https://x"; return "nonce", "" },
		"CA":        func(f *v1alpha1.FederatedRequest) (string, string) { f.IssuerCA = []byte("x"); return "nonce", "" },
		"account": func(f *v1alpha1.FederatedRequest) (string, string) {
			f.ServiceAccount.Name = "admin"
			return "nonce", ""
		},
		"UID":   func(f *v1alpha1.FederatedRequest) (string, string) { f.ServiceAccount.UID = ""; return "nonce", "" },
		"nonce": func(*v1alpha1.FederatedRequest) (string, string) { return "other", "" },
		"proxy": func(*v1alpha1.FederatedRequest) (string, string) { return "nonce", "http://proxy" },
	} {
		f := federatedRequest()
		nonce, proxy := mutate(f)
		err := credential.VerifySignature(pub, credential.FederatedMessage("gpu-farm", "edge-1", nonce, f, proxy), sig)
		if (err == nil) != (name == "unchanged") {
			t.Errorf("%s: verify = %v", name, err)
		}
	}
	if credential.VerifySignature(pub, credential.Message("gpu-farm", "edge-1", "nonce", nil, ""), sig) == nil {
		t.Error("a federated signature verifies as a certificate request's")
	}
}

func TestFederatedNaming(t *testing.T) {
	issued := credential.ExpectedUser("edge-1", "nonce")
	n := credential.NameFederated("gpu-farm", "edge-1", issued)
	sa := federatedRequest().ServiceAccount
	back, err := credential.FederatedNamingOf(n.User(sa), n.Audience, sa)
	if err != nil || back != n {
		t.Fatalf("%+v %v, want %+v", back, err, n)
	}
	if !IsFederatedUser(n.User(sa), "edge-1") || IsFederatedUser(issued, "edge-1") || IsFederatedUser(n.User(sa), "edge") {
		t.Error("IsFederatedUser")
	}
	if n2 := credential.NameFederated("gpu-farm", "edge-1", credential.ExpectedUser("edge-1", "another nonce")); n2.Audience == n.Audience || n2.Prefix == n.Prefix {
		t.Error("two issuances share a name")
	}
	if _, err := credential.FederatedNamingOf(n.User(sa), n.Audience, v1alpha1.ServiceAccountRef{Namespace: "ci", Name: "other"}); err == nil {
		t.Error("a user read back under another account")
	}
}

func TestClusterInternal(t *testing.T) {
	for host, want := range map[string]bool{
		"kubernetes.default.svc": true, "kubernetes.default.svc.cluster.local": true, "kubernetes": true,
		"localhost": false, "127.0.0.1": false, "::1": false, "oidc.eks.eu-west-1.amazonaws.com": false, "": false,
	} {
		if got := clusterInternal(host); got != want {
			t.Errorf("clusterInternal(%q) = %v", host, got)
		}
	}
}

// A federated request names a ServiceAccount that exists: else nothing is signed and nothing written.
func TestFederatedRequestNeedsItsServiceAccount(t *testing.T) {
	c := &member.Cluster{Kube: kubetest.Fake()}
	_, _, err := resolveFederated(context.Background(), c, FederatedOptions{ServiceAccount: v1alpha1.ServiceAccountRef{Namespace: "ci", Name: "deployer"}})
	if err == nil || !strings.Contains(err.Error(), "ServiceAccount ci/deployer not found on this cluster (the consumer)") {
		t.Fatalf("err = %v", err)
	}
}

func testNow() time.Time { return time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC) }

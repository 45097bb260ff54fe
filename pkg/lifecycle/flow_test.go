package lifecycle

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/kube/kubetest"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// manualFlow runs the four manual steps; it returns the Tenant and the nonce value.
func manualFlow(t *testing.T, consumer, provider *fakeCluster) (*v1alpha1.Tenant, string) {
	t.Helper()
	n, created, err := handshake.CreateNonce(t.Context(), provider.Cluster, handshake.NonceOptions{ConsumerID: "consumer", TTL: time.Hour})
	if err != nil || !created {
		t.Fatalf("CreateNonce: %v %v", created, err)
	}
	tenant, err := handshake.GenerateTenant(t.Context(), consumer.Cluster, handshake.TenantOptions{ProviderID: "provider", Nonce: n.Value})
	if err != nil {
		t.Fatalf("GenerateTenant: %v", err)
	}
	return tenant, n.Value
}

// The manual flow on fakes: every artefact where the design says, the certificate for the CSR's key, and
// a kubeconfig that points at the provider with the consumer's key.
func TestManualFlowOnFakes(t *testing.T) {
	consumer, provider := fakePair(t)
	tenant, n := manualFlow(t, consumer, provider)
	if err := credential.VerifySignature(tenant.Spec.PublicKey, credential.Message("provider", "consumer", n, mustParseCSR(t, tenant.Spec.CSR).Raw, ""), tenant.Spec.Signature); err != nil {
		t.Fatalf("the Tenant's signature: %v", err)
	}
	if _, err := consumer.kube.CoreV1().Secrets(member.SystemNamespace).Get(t.Context(), member.PendingKeySecretName("provider"), metav1.GetOptions{}); err != nil {
		t.Fatalf("pending key not in federate-system: %v", err)
	}
	id, err := handshake.IssueIdentity(t.Context(), provider.Cluster, issueOptions(tenant))
	if err != nil {
		t.Fatalf("IssueIdentity: %v", err)
	}
	if len(provider.Approved()) != 1 {
		t.Fatalf("approved %v, want exactly the run's one CSR", provider.Approved())
	}
	if n := provider.count("delete", "certificatesigningrequests"); n != 1 {
		t.Errorf("the run's CSR deleted %d times, want 1", n)
	}
	if err := credential.VerifyIdentity(credential.IntegrityKey(n), &id.Spec); err != nil {
		t.Fatalf("the identity's MACs: %v", err)
	}
	st := provider.tenant(t).Status
	if st.Phase != handshake.PhaseActive || st.User != credential.ExpectedUser("consumer", n) || st.Sandbox == nil || st.Sandbox.PodSecurity != sandbox.PodSecurityRestricted {
		t.Errorf("Tenant status %+v", st)
	}
	rb, err := provider.kube.RbacV1().RoleBindings(member.TenantNamespace("consumer")).Get(t.Context(), member.RoleBindingName, metav1.GetOptions{})
	if err != nil || len(rb.Subjects) != 1 || rb.Subjects[0].Name != st.User || rb.RoleRef.Name != member.DefaultClusterRole {
		t.Errorf("RoleBinding %+v (%v)", rb, err)
	}
	// The record of the used nonce keeps the integrity key, so a re-run returns the same identity. It only
	// reads: with the binding gone (as revoke's first step leaves it, before it marks the Tenant Revoked)
	// the re-run of the public request does not bind the user again.
	if err := provider.kube.RbacV1().RoleBindings(member.TenantNamespace("consumer")).Delete(t.Context(), member.RoleBindingName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := handshake.IssueIdentity(t.Context(), provider.Cluster, issueOptions(tenant))
	if err != nil || !slices.Equal(again.Spec.Certificate, id.Spec.Certificate) || len(provider.Approved()) != 1 {
		t.Fatalf("re-run: %v, approvals %v", err, provider.Approved())
	}
	if _, err := provider.kube.RbacV1().RoleBindings(member.TenantNamespace("consumer")).Get(t.Context(), member.RoleBindingName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a re-run of an issued request bound its user again: %v", err)
	}
	res, err := handshake.ImportIdentity(t.Context(), consumer.Cluster, id)
	if err != nil || res.AlreadyImported {
		t.Fatalf("ImportIdentity: %+v %v", res, err)
	}
	data, err := handshake.GetKubeconfig(t.Context(), consumer.Cluster, "provider")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := kubeconfig.ClientCertificate(data)
	if err != nil || !slices.Equal(cert, id.Spec.Certificate) || !strings.Contains(string(data), "https://provider.example:6443") {
		t.Errorf("kubeconfig: %v\n%s", err, data)
	}
	if _, err := consumer.kube.CoreV1().Secrets(member.SystemNamespace).Get(t.Context(), member.PendingKeySecretName("provider"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pending key after import: %v", err)
	}
	if res, err := handshake.ImportIdentity(t.Context(), consumer.Cluster, id); err != nil || !res.AlreadyImported {
		t.Errorf("second import: %+v %v", res, err)
	}
	info, err := Pairings(t.Context(), provider.Cluster)
	if err != nil || len(info.Tenants) != 1 || info.Tenants[0].Sandbox == nil {
		t.Errorf("provider info %+v %v", info, err)
	}
	if info, err := Pairings(t.Context(), consumer.Cluster); err != nil || len(info.Identities) != 1 || info.Identities[0].ProviderID != "provider" {
		t.Errorf("consumer info %+v %v", info, err)
	}
}

func mustParseCSR(t *testing.T, p []byte) *x509.CertificateRequest {
	t.Helper()
	c, err := credential.ParseCSR(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The sandbox the provider builds: namespace labels, quota, limits, network policy, ServiceAccount.
func TestSandboxObjects(t *testing.T) {
	consumer, provider := fakePair(t)
	tenant, _ := manualFlow(t, consumer, provider)
	o := issueOptions(tenant)
	o.Sandbox = sandbox.Options{PodSecurity: sandbox.PodSecurityBaseline, PriorityClasses: []string{"batch"}, Quota: sandbox.MustResources(map[string]string{"pods": "3"}),
		StorageClasses: []string{"fast"}, Tolerations: []string{"example.com/gpu"}, RuntimeClasses: []string{"gvisor"}, Schedulers: []string{"batch-scheduler"}}
	if _, err := handshake.IssueIdentity(t.Context(), provider.Cluster, o); err != nil {
		t.Fatal(err)
	}
	ns := member.TenantNamespace("consumer")
	live, err := provider.kube.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{sandbox.LabelSandbox: "true", sandbox.PsaPrefix + "enforce": "baseline", sandbox.PsaPrefix + "warn": "baseline",
		sandbox.PsaPrefix + "audit": "baseline", member.LabelRole: member.RoleProvider, member.LabelRemoteClusterID: "consumer"} {
		if live.Labels[k] != v {
			t.Errorf("namespace label %s = %q, want %q", k, live.Labels[k], v)
		}
	}
	for k, v := range map[string]string{sandbox.AnnotationPriorityClasses: "batch", sandbox.AnnotationStorageClasses: "fast", sandbox.AnnotationTolerations: "example.com/gpu",
		sandbox.AnnotationRuntimeClasses: "gvisor", sandbox.AnnotationSchedulers: "batch-scheduler"} {
		if live.Annotations[k] != v {
			t.Errorf("namespace annotation %s = %q, want %q", k, live.Annotations[k], v)
		}
	}
	if st := provider.tenant(t).Status.Sandbox; st == nil || !slices.Equal(st.StorageClasses, []string{"fast"}) || !slices.Equal(st.Tolerations, []string{"example.com/gpu"}) ||
		!slices.Equal(st.RuntimeClasses, []string{"gvisor"}) || !slices.Equal(st.Schedulers, []string{"batch-scheduler"}) {
		t.Errorf("Tenant status.sandbox %+v", st)
	}
	get := func(gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
		u, err := provider.dyn.Resource(gvr).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%v %s: %v", gvr, name, err)
		}
		return u
	}
	hard, _, _ := unstructured.NestedStringMap(get(sandbox.ResourceQuotaGVR, sandbox.SandboxName).Object, "spec", "hard")
	if hard["pods"] != "3" || hard["services.nodeports"] != "0" || hard["services.loadbalancers"] != "0" || hard["limits.cpu"] != "10" {
		t.Errorf("quota %v", hard)
	}
	if lim, _, _ := unstructured.NestedSlice(get(sandbox.LimitRangeGVR, sandbox.SandboxName).Object, "spec", "limits"); len(lim) != 1 {
		t.Errorf("limit range %v", lim)
	}
	except, _, _ := unstructured.NestedSlice(get(sandbox.NetworkPolicyGVR, sandbox.SandboxName).Object, "spec", "egress")
	if !strings.Contains(fmtAny(except), "169.254.0.0/16") || !strings.Contains(fmtAny(except), "fe80::/10") {
		t.Errorf("network policy egress %v", except)
	}
	if auto, _, _ := unstructured.NestedBool(get(sandbox.ServiceAccountGVR, "default").Object, "automountServiceAccountToken"); auto {
		t.Error("default ServiceAccount mounts a token")
	}
	// The probes were sent as dry runs only: nothing was created by them.
	if pods, _ := provider.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{}); len(pods.Items) != 0 {
		t.Errorf("probes left pods: %v", pods.Items)
	}
}

func fmtAny(v any) string { b, _ := json.Marshal(v); return string(b) }

// A cluster that admits the probes (no admission policy) never gets an identity issued: the run stops
// with a clear error instead of handing out an unguarded namespace.
func TestUnenforcedSandboxIssuesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the policy timeout")
	}
	consumer, provider := fakePair(t)
	tenant, _ := manualFlow(t, consumer, provider)
	provider.AdmitAll = true
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := handshake.IssueIdentity(ctx, provider.Cluster, issueOptions(tenant))
	if err == nil {
		t.Fatal("issued with an unenforced sandbox")
	}
	if _, err := provider.kube.RbacV1().RoleBindings(member.TenantNamespace("consumer")).Get(t.Context(), member.RoleBindingName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("RoleBinding created: %v", err)
	}
}

// Every forged request is refused before anything is issued: no CSR approved, no binding, and (before the
// CSR) the nonce not consumed.
func TestForgedTenantsIssueNothing(t *testing.T) {
	cases := map[string]struct {
		mutate func(tn *v1alpha1.Tenant)
		want   string
	}{
		"altered proxy":     {func(tn *v1alpha1.Tenant) { tn.Spec.ProxyURL = "http://attacker:3128" }, "spec.signature"},
		"flipped signature": {func(tn *v1alpha1.Tenant) { tn.Spec.Signature[0] ^= 1 }, "spec.signature"},
		"other consumer":    {func(tn *v1alpha1.Tenant) { tn.Spec.ClusterID = "intruder" }, "spec.clusterID"},
		"other provider":    {func(tn *v1alpha1.Tenant) { tn.Spec.ProviderClusterID = "elsewhere" }, "spec.providerClusterID"},
		"short key":         {func(tn *v1alpha1.Tenant) { tn.Spec.PublicKey = tn.Spec.PublicKey[:10] }, "spec.publicKey"},
		"garbage csr":       {func(tn *v1alpha1.Tenant) { tn.Spec.CSR = []byte("nope") }, "spec.csr"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			consumer, provider := fakePair(t)
			tenant, _ := manualFlow(t, consumer, provider)
			forged := tenant.DeepCopyTenant()
			c.mutate(forged)
			_, err := handshake.IssueIdentity(t.Context(), provider.Cluster, issueOptions(forged))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if n := provider.count("create", "certificatesigningrequests"); n != 0 || len(provider.Approved()) != 0 {
				t.Errorf("CSRs created %d, approved %v", n, provider.Approved())
			}
			if n := provider.count("create", "rolebindings"); n != 0 {
				t.Errorf("RoleBindings created: %d", n)
			}
			if _, _, err := handshake.GetNonce(t.Context(), provider.Cluster, "consumer"); err != nil {
				t.Errorf("the nonce was consumed: %v", err)
			}
			// The genuine request still issues.
			if _, err := handshake.IssueIdentity(t.Context(), provider.Cluster, issueOptions(tenant)); err != nil {
				t.Errorf("genuine request after the forgery: %v", err)
			}
		})
	}
}

// A signer that returns something else than what was asked is caught: the identity is not handed out.
func TestDishonestSignerIsRefused(t *testing.T) {
	for name, signer := range map[string]func(req *x509.CertificateRequest, seconds int32) *x509.Certificate{
		"a year instead of an hour": func(req *x509.CertificateRequest, _ int32) *x509.Certificate {
			return &x509.Certificate{SerialNumber: big.NewInt(9), Subject: req.Subject, PublicKey: req.PublicKey, NotBefore: fakeNow,
				NotAfter: fakeNow.Add(365 * 24 * time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		},
		"another subject": func(req *x509.CertificateRequest, s int32) *x509.Certificate {
			subj := req.Subject
			subj.Organization = []string{"system:masters"}
			return &x509.Certificate{SerialNumber: big.NewInt(9), Subject: subj, PublicKey: req.PublicKey, NotBefore: fakeNow,
				NotAfter: fakeNow.Add(time.Duration(s) * time.Second), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		},
		"server auth only": func(req *x509.CertificateRequest, s int32) *x509.Certificate {
			return &x509.Certificate{SerialNumber: big.NewInt(9), Subject: req.Subject, PublicKey: req.PublicKey, NotBefore: fakeNow,
				NotAfter: fakeNow.Add(time.Duration(s) * time.Second), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			consumer, provider := fakePair(t)
			tenant, _ := manualFlow(t, consumer, provider)
			provider.Signer = signer
			if _, err := handshake.IssueIdentity(t.Context(), provider.Cluster, issueOptions(tenant)); err == nil || !strings.Contains(err.Error(), "issued certificate") {
				t.Fatalf("err = %v", err)
			}
			if _, err := provider.kube.RbacV1().RoleBindings(member.TenantNamespace("consumer")).Get(t.Context(), member.RoleBindingName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("RoleBinding created for a refused certificate: %v", err)
			}
		})
	}
}

// An identity altered on its way to the consumer is refused naming the field, and nothing is stored.
func TestAlteredIdentityIsRefused(t *testing.T) {
	consumer, provider := fakePair(t)
	tenant, _ := manualFlow(t, consumer, provider)
	id, err := handshake.IssueIdentity(t.Context(), provider.Cluster, issueOptions(tenant))
	if err != nil {
		t.Fatal(err)
	}
	for field, mutate := range map[string]func(s *v1alpha1.IdentitySpec){
		"apiServer": func(s *v1alpha1.IdentitySpec) { s.APIServer = "https://attacker:6443" },
		"proxyURL":  func(s *v1alpha1.IdentitySpec) { s.ProxyURL = "http://attacker:3128" },
		"ca":        func(s *v1alpha1.IdentitySpec) { s.CA = append([]byte(nil), provider.CA.Raw...) },
	} {
		altered := *id
		altered.Spec.Integrity = id.Spec.Integrity
		mutate(&altered.Spec)
		if field == "ca" {
			altered.Spec.CA = id.Spec.CA // a non-PEM CA would fail shape checks first; keep it, change the MAC
			altered.Spec.Integrity = map[string][]byte{}
			for k, v := range id.Spec.Integrity {
				altered.Spec.Integrity[k] = v
			}
			altered.Spec.Integrity["ca"] = []byte("0123456789abcdef0123456789abcdef")
		}
		before := len(consumer.kube.Actions())
		_, err := handshake.ImportIdentity(t.Context(), consumer.Cluster, &altered)
		if err == nil || !strings.Contains(err.Error(), "spec."+field) {
			t.Errorf("altered %s: err = %v", field, err)
		}
		for _, a := range consumer.kube.Actions()[before:] {
			if a.GetVerb() != "get" {
				t.Errorf("altered %s: %s %s", field, a.GetVerb(), a.GetResource().Resource)
			}
		}
	}
}

// authenticate over two fakes: the one-shot run converges on a re-run, which renews (new user, binding
// moved), and unauthenticate revokes first and removes every object of the pairing.
func TestAuthenticateRenewUnauthenticate(t *testing.T) {
	consumer, provider := newFakeCluster(t), newFakeCluster(t)
	o := AuthenticateOptions{ConsumerID: "consumer", ProviderID: "provider", APIServer: "https://provider.example:6443", Expiration: time.Hour}
	first, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, o)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	second, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, o)
	if err != nil {
		t.Fatalf("Authenticate again: %v", err)
	}
	if first.User == second.User {
		t.Errorf("a renewal kept the user %q", first.User)
	}
	rb, err := provider.kube.RbacV1().RoleBindings(member.TenantNamespace("consumer")).Get(t.Context(), member.RoleBindingName, metav1.GetOptions{})
	if err != nil || len(rb.Subjects) != 1 || rb.Subjects[0].Name != second.User {
		t.Errorf("binding after renewal %+v %v", rb, err)
	}
	if _, err := provider.kube.CoordinationV1().Leases(member.SystemNamespace).Get(t.Context(), "authenticate-consumer", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("lease left: %v", err)
	}
	// Same cluster on both sides is refused.
	if _, err := Authenticate(t.Context(), consumer.Cluster, consumer.Cluster, o); err == nil {
		t.Error("one cluster authenticated to itself")
	}
	var ic *member.IDConflictError
	if _, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, AuthenticateOptions{ConsumerID: "other"}); !errors.As(err, &ic) || ic.Side != "consumer" {
		t.Errorf("another consumer ID: %v", err)
	}

	provider.kube.ClearActions()
	if _, err := Unauthenticate(t.Context(), consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Fatalf("Unauthenticate: %v", err)
	}
	deletes := []string{}
	for _, a := range provider.actions() {
		if strings.HasPrefix(a, "delete") {
			deletes = append(deletes, a)
		}
	}
	if len(deletes) == 0 || deletes[0] != "delete rolebindings" {
		t.Errorf("the RoleBinding was not the first thing deleted: %v", deletes)
	}
	if _, err := handshake.GetKubeconfig(t.Context(), consumer.Cluster, "provider"); err == nil {
		t.Error("kubeconfig left on the consumer")
	}
	if _, err := provider.dyn.Resource(v1alpha1.TenantGVR).Namespace(member.TenantNamespace("consumer")).Get(t.Context(), "consumer", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Tenant left: %v", err)
	}
	if _, err := Unauthenticate(t.Context(), consumer.Cluster, provider.Cluster, UnauthenticateOptions{KeepNamespaces: true}); err != nil {
		t.Errorf("Unauthenticate again: %v", err)
	}
}

// revoke keeps the record (pinned key, expiry) and only changes the phase; the default ServiceAccount is
// replaced without token automount.
func TestRevokeKeepsTheRecord(t *testing.T) {
	consumer, provider := fakePair(t)
	tenant, _ := manualFlow(t, consumer, provider)
	if _, err := handshake.IssueIdentity(t.Context(), provider.Cluster, issueOptions(tenant)); err != nil {
		t.Fatal(err)
	}
	ns := member.TenantNamespace("consumer")
	if _, err := provider.kube.CoreV1().Pods(ns).Create(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "work", Namespace: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Revoke(t.Context(), provider.Cluster, "consumer"); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	st := provider.tenant(t).Status
	if st.Phase != handshake.PhaseRevoked || len(st.PinnedPublicKey) == 0 || st.NotAfter == nil || st.Sandbox == nil {
		t.Errorf("status after revoke %+v", st)
	}
	if _, err := provider.kube.RbacV1().RoleBindings(ns).Get(t.Context(), member.RoleBindingName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("RoleBinding after revoke: %v", err)
	}
	// Swept twice: once while the refusal is confirmed, once after it is.
	if provider.count("delete-collection", "pods") != 2 || provider.count("create", "subjectaccessreviews") == 0 {
		t.Errorf("pods not swept twice around an access review: %v", provider.actions())
	}

	if _, err := Revoke(t.Context(), provider.Cluster, "consumer"); err != nil {
		t.Errorf("revoke again: %v", err)
	}
}

// A namespace of the sandbox's name that kubectl federate did not create is refused, never adopted.
func TestForeignNamespaceIsRefused(t *testing.T) {
	consumer, provider := fakePair(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: member.TenantNamespace("consumer"), Labels: map[string]string{"team": "payments"}}}
	if _, err := provider.kube.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tenant, _ := manualFlow(t, consumer, provider)
	_, err := handshake.IssueIdentity(t.Context(), provider.Cluster, issueOptions(tenant))
	if !errors.Is(err, member.ErrNotOurs) || !strings.Contains(err.Error(), "namespace "+ns.Name) {
		t.Fatalf("err = %v", err)
	}
	live, _ := provider.kube.CoreV1().Namespaces().Get(t.Context(), ns.Name, metav1.GetOptions{})
	if len(live.Labels) != 1 {
		t.Errorf("the foreign namespace was relabelled: %v", live.Labels)
	}
	if len(provider.Approved()) != 0 {
		t.Errorf("approved %v for a refused sandbox", provider.Approved())
	}
}

// Nonces: expired ones are pruned by the nonce commands, a used one cannot be fetched, an own ID is refused.
func TestNonceLifecycleOnFakes(t *testing.T) {
	_, provider := fakePair(t)
	if _, _, err := handshake.CreateNonce(t.Context(), provider.Cluster, handshake.NonceOptions{ConsumerID: "provider", TTL: time.Hour}); !errors.Is(err, member.ErrOwnID) {
		t.Errorf("a nonce for this cluster itself: %v", err)
	}
	if _, _, err := handshake.CreateNonce(t.Context(), provider.Cluster, handshake.NonceOptions{ConsumerID: "old", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	provider.Now = func() time.Time { return fakeNow.Add(time.Hour) }
	if _, _, err := handshake.GetNonce(t.Context(), provider.Cluster, "old"); !errors.Is(err, nonce.ErrExpired) {
		t.Errorf("expired nonce: %v", err)
	}
	if _, err := provider.kube.CoreV1().Secrets(member.SystemNamespace).Get(t.Context(), nonce.SecretName("old"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("expired nonce not removed: %v", err)
	}
}

// init refuses another ID on an initialized cluster, and a re-run changes nothing.
func TestInitOnFakes(t *testing.T) {
	c := newFakeCluster(t)
	self, err := sandbox.Init(t.Context(), c.Cluster, "")
	if err != nil || self.ClusterID != "cluster-01234567" {
		t.Fatalf("default ID: %+v %v", self, err)
	}
	fresh := &member.Cluster{Kube: kubetest.Wrap(c.kube), Dynamic: c.dyn, Now: c.Now}
	var ic *member.IDConflictError
	if _, err := sandbox.Init(t.Context(), fresh, "other"); !errors.As(err, &ic) || ic.Have != "cluster-01234567" {
		t.Errorf("another ID: %v", err)
	}
	c.kube.ClearActions()
	if _, err := sandbox.Init(t.Context(), fresh, ""); err != nil {
		t.Fatal(err)
	}
	for _, a := range c.actions() {
		if !strings.HasPrefix(a, "get") {
			t.Errorf("re-run of init changed something: %s", a)
		}
	}
}

// A signer that answers later is waited for by watch, and the certificate it writes is the one issued.
func TestSlowSignerIsWatched(t *testing.T) {
	consumer, provider := fakePair(t)
	tenant, _ := manualFlow(t, consumer, provider)
	provider.DeferSigning = true
	id, err := handshake.IssueIdentity(t.Context(), provider.Cluster, issueOptions(tenant))
	if err != nil {
		t.Fatalf("IssueIdentity with a slow signer: %v", err)
	}
	if len(id.Spec.Certificate) == 0 {
		t.Fatal("no certificate")
	}
}

// A second pairing removed without --keep-namespaces waits for its namespace to go.
func TestUnauthenticateDeletesTheSandbox(t *testing.T) {
	consumer, provider := newFakeCluster(t), newFakeCluster(t)
	o := AuthenticateOptions{ConsumerID: "consumer", ProviderID: "provider", APIServer: "https://provider.example:6443", Expiration: time.Hour,
		KeyAlgorithm: credential.KeyEd25519}
	if _, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, o); err != nil {
		t.Fatal(err)
	}
	if _, err := Unauthenticate(t.Context(), consumer.Cluster, provider.Cluster, UnauthenticateOptions{}); err != nil {
		t.Fatalf("Unauthenticate: %v", err)
	}
	if _, err := provider.kube.CoreV1().Namespaces().Get(t.Context(), member.TenantNamespace("consumer"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("sandbox namespace left: %v", err)
	}
	// With --force and the other side's ID, one side is cleaned even if the other is not initialized.
	if _, err := Unauthenticate(t.Context(), consumer.Cluster, provider.Cluster, UnauthenticateOptions{Force: true, ConsumerID: "other"}); err == nil {
		t.Error("a wrong --cluster-id was accepted")
	}
}

// A lease left by a dead process of this host is taken over at once.
func TestDeadLeaseHolderIsTakenOver(t *testing.T) {
	consumer, provider := fakePair(t)
	host, _ := os.Hostname()
	holder := host + "/999999999/abcdef"
	seconds := int32(3600)
	now := metav1.NewMicroTime(fakeNow)
	if _, err := provider.kube.CoordinationV1().Leases(member.SystemNamespace).Create(t.Context(), &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "authenticate-consumer", Namespace: member.SystemNamespace},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, AuthenticateOptions{APIServer: "https://p:6443", KeyAlgorithm: credential.KeyRSA3072}); err != nil {
		t.Fatalf("Authenticate past a dead holder's lease: %v", err)
	}
}

// Sandbox options: defaults, overrides, and every refusal names its input.
func TestSandboxOptions(t *testing.T) {
	o, err := sandbox.Options{}.Validate()
	if err != nil || o.PodSecurity != sandbox.PodSecurityRestricted || o.Quota.Pods().String() != "20" {
		t.Fatalf("defaults: %+v %v", o, err)
	}
	q, err := sandbox.ParseResourceList("--quota", "pods=50, requests.cpu=16")
	if err != nil || len(q) != 2 {
		t.Fatalf("ParseResourceList: %v %v", q, err)
	}
	o, _ = sandbox.Options{Quota: q}.Validate()
	if got := sandbox.FormatResourceList(o.Status().Quota); !strings.Contains(got, "pods=50") || !strings.Contains(got, "services.nodeports=0") {
		t.Errorf("merged quota %s", got)
	}
	for in, want := range map[string]string{"pods": "NAME=QUANTITY", "pods=x": "not a quantity", "pods=-1": "negative",
		"pods=1,pods=2": "given twice", "=1": "NAME=QUANTITY", "a b=1": "not a resource name"} {
		if _, err := sandbox.ParseResourceList("--quota", in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	for _, bad := range []sandbox.Options{
		{PodSecurity: "none"}, {PriorityClasses: []string{"system-node-critical"}}, {PriorityClasses: []string{"Not_A_Name"}},
		{DefaultRequests: sandbox.MustResources(map[string]string{"cpu": "4"})},
	} {
		if _, err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if err := credential.ValidateKeyAlgorithm("dsa"); err == nil {
		t.Error("key algorithm dsa accepted")
	}
}

// After revoke, the same (old) request gets no identity back: a new one needs a new nonce.
func TestRevokedRequestIsNotReturned(t *testing.T) {
	consumer, provider := fakePair(t)
	tenant, _ := manualFlow(t, consumer, provider)
	if _, err := handshake.IssueIdentity(t.Context(), provider.Cluster, issueOptions(tenant)); err != nil {
		t.Fatal(err)
	}
	if _, err := Revoke(t.Context(), provider.Cluster, "consumer"); err != nil {
		t.Fatal(err)
	}
	if _, err := handshake.IssueIdentity(t.Context(), provider.Cluster, issueOptions(tenant)); !errors.Is(err, member.ErrRevoked) {
		t.Fatalf("re-issue of a revoked request: %v", err)
	}
	if _, err := provider.kube.RbacV1().RoleBindings(member.TenantNamespace("consumer")).Get(t.Context(), member.RoleBindingName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a binding came back: %v", err)
	}
	// A new nonce and Tenant issue anew, into the same sandbox.
	fresh, _ := manualFlow(t, consumer, provider)
	if _, err := handshake.IssueIdentity(t.Context(), provider.Cluster, issueOptions(fresh)); err != nil {
		t.Fatalf("a new request after revoke: %v", err)
	}
	if st := provider.tenant(t).Status; st.Phase != handshake.PhaseActive {
		t.Errorf("phase after re-issuance %q", st.Phase)
	}
}

// infos records a run's Info reports.
type infos struct{ msgs []string }

func (r *infos) Begin(string, string) func(error) { return func(error) {} }
func (r *infos) Warn(string)                      {}
func (r *infos) Info(msg string)                  { r.msgs = append(r.msgs, msg) }

// writes lists a fake cluster's actions other than reads, through either client.
func (f *fakeCluster) writes() []string {
	var out []string
	for _, a := range append(f.kube.Actions(), f.dyn.Actions()...) {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
			out = append(out, v+" "+a.GetResource().Resource)
		}
	}
	return out
}

// The manual flow on two clusters never initialized: each takes the ID its administrator, or the nonce,
// names; nothing derives an ID the other side would refuse; a consumer under another ID is refused before
// anything is written.
func TestManualFlowNamesNeverInitializedClusters(t *testing.T) {
	provider, consumer := newFakeCluster(t), newFakeCluster(t)

	// The provider names itself, or nothing happens.
	if _, _, err := handshake.CreateNonce(t.Context(), provider.Cluster, handshake.NonceOptions{ConsumerID: "edge-1", TTL: time.Hour}); !errors.Is(err, member.ErrNoClusterID) {
		t.Fatalf("a nonce on a never-initialized provider without its ID: %v, want ErrNoClusterID", err)
	}
	if w := provider.writes(); len(w) > 0 {
		t.Fatalf("the refused nonce wrote %v", w)
	}
	if _, _, err := handshake.CreateNonce(t.Context(), provider.Cluster, handshake.NonceOptions{ClusterID: "gpu-farm", ConsumerID: "edge-1", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	n, ticket, err := handshake.GetNonce(t.Context(), provider.Cluster, "edge-1")
	if err != nil || ticket != (nonce.Ticket{ProviderID: "gpu-farm", ConsumerID: "edge-1", Nonce: n.Value}) {
		t.Fatalf("GetNonce: %+v %v", ticket, err)
	}
	var conflict *member.IDConflictError
	if _, _, err := handshake.CreateNonce(t.Context(), provider.Cluster, handshake.NonceOptions{ClusterID: "other", ConsumerID: "edge-1", TTL: time.Hour}); !errors.As(err, &conflict) || conflict.Have != "gpu-farm" {
		t.Errorf("a nonce naming the provider by another ID: %v", err)
	}

	// A consumer initialized as another cluster is refused, naming both IDs, with nothing written.
	other := newFakeCluster(t)
	if _, err := sandbox.Init(t.Context(), other.Cluster, "edge-2"); err != nil {
		t.Fatal(err)
	}
	other.kube.ClearActions()
	other.dyn.ClearActions()
	fresh := &member.Cluster{Kube: kubetest.Wrap(other.kube), Dynamic: other.dyn, Now: other.Now}
	_, err = handshake.GenerateTenant(t.Context(), fresh, handshake.TenantOptions{ProviderID: ticket.ProviderID, ConsumerID: ticket.ConsumerID, Nonce: ticket.Nonce})
	if !errors.As(err, &conflict) || conflict.Side != "consumer" || conflict.Want != "edge-1" || conflict.Have != "edge-2" ||
		!strings.Contains(err.Error(), `"edge-1"`) || !strings.Contains(err.Error(), `"edge-2"`) {
		t.Errorf("a nonce for edge-1 on the consumer edge-2: %v", err)
	}
	if w := other.writes(); len(w) > 0 {
		t.Errorf("the refused request wrote %v", w)
	}

	// A bare nonce does not name the consumer: a never-initialized one is refused, not given a derived ID.
	if _, err := handshake.GenerateTenant(t.Context(), consumer.Cluster, handshake.TenantOptions{ProviderID: "gpu-farm", Nonce: ticket.Nonce}); !errors.Is(err, member.ErrNoClusterID) {
		t.Errorf("a bare nonce on a never-initialized consumer: %v, want ErrNoClusterID", err)
	}
	if w := consumer.writes(); len(w) > 0 {
		t.Errorf("the refused request wrote %v", w)
	}

	// The ticket's consumer ID initializes the consumer, which says so; the provider then issues.
	said := &infos{}
	consumer.Report = said
	tenant, err := handshake.GenerateTenant(t.Context(), consumer.Cluster, handshake.TenantOptions{ProviderID: ticket.ProviderID, ConsumerID: ticket.ConsumerID, Nonce: ticket.Nonce})
	if err != nil {
		t.Fatal(err)
	}
	if self, err := consumer.Load(t.Context()); err != nil || self.ClusterID != "edge-1" || tenant.Spec.ClusterID != "edge-1" || tenant.Spec.ProviderClusterID != "gpu-farm" {
		t.Fatalf("consumer %+v (%v), Tenant %+v", self, err, tenant.Spec)
	}
	if !slices.ContainsFunc(said.msgs, func(m string) bool { return strings.Contains(m, `"edge-1"`) && strings.Contains(m, `"gpu-farm"`) }) {
		t.Errorf("the consumer did not say which ID it took: %q", said.msgs)
	}
	o := issueOptions(tenant)
	o.ConsumerID = "edge-1"
	if _, err := handshake.IssueIdentity(t.Context(), provider.Cluster, o); err != nil {
		t.Fatalf("IssueIdentity: %v", err)
	}
}

// A renewal binds its new user beside the current one while the certificate is issued (one round trip
// fewer); a certificate that is then refused leaves the current user bound alone, and a renewal that
// succeeds leaves the new user alone.
func TestRefusedRenewalKeepsTheCurrentBinding(t *testing.T) {
	consumer, provider := newFakeCluster(t), newFakeCluster(t)
	o := AuthenticateOptions{ConsumerID: "consumer", ProviderID: "provider", APIServer: "https://provider.example:6443", Expiration: time.Hour}
	first, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, o)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	subjects := func() []string {
		t.Helper()
		rb, err := provider.kube.RbacV1().RoleBindings(member.TenantNamespace("consumer")).Get(t.Context(), member.RoleBindingName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range rb.Subjects {
			names = append(names, s.Name)
		}
		return names
	}
	provider.Signer = func(req *x509.CertificateRequest, s int32) *x509.Certificate {
		subj := req.Subject
		subj.Organization = []string{"system:masters"}
		return &x509.Certificate{SerialNumber: big.NewInt(9), Subject: subj, PublicKey: req.PublicKey, NotBefore: fakeNow,
			NotAfter: fakeNow.Add(time.Duration(s) * time.Second), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	}
	if _, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, o); err == nil || !strings.Contains(err.Error(), "issued certificate") {
		t.Fatalf("renewal with a dishonest signer: err = %v", err)
	}
	if got := subjects(); len(got) != 1 || got[0] != first.User {
		t.Errorf("after a refused renewal the binding names %v, want only %s", got, first.User)
	}
	provider.Signer = nil
	second, err := Authenticate(t.Context(), consumer.Cluster, provider.Cluster, o)
	if err != nil {
		t.Fatalf("renewal: %v", err)
	}
	if got := subjects(); len(got) != 1 || got[0] != second.User || second.User == first.User {
		t.Errorf("after a renewal the binding names %v, want only %s", got, second.User)
	}
}

//go:build e2e

package e2e

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// maxToken is the longest token the signer-less provider issues (--service-account-max-token-expiration).
const maxToken = 24 * time.Hour

// startNoSigner starts a provider like EKS in the one respect that matters here: its controller-manager
// signs no kube-apiserver-client certificate (approved CSRs stay empty), and its API server caps tokens.
func startNoSigner(t *testing.T) *kubeenv.Cluster {
	t.Helper()
	start := time.Now()
	clusters, err := kubeenv.Start(t.Context(), kubeenv.Options{Dir: t.TempDir(), Names: []string{"nosigner"},
		ControllerManagerArgs: []string{kubeenv.WithoutClientSigner},
		APIServerArgs:         []string{"--service-account-max-token-expiration=" + maxToken.String()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(clusters[0].Stop)
	t.Logf("a provider without the client signer started in %s", time.Since(start).Round(10*time.Millisecond))
	return clusters[0]
}

// selfReview authenticates with cfg and returns the user, or the error.
func selfReview(t *testing.T, cfg *rest.Config) (string, error) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return r.Status.UserInfo.Username, nil
}

// storedKubeconfig returns the consumer's kubeconfig for providerID, its REST config and its token.
func storedKubeconfig(t *testing.T, providerID string) ([]byte, *rest.Config, string) {
	t.Helper()
	r := mustRun(t, "", "get", "kubeconfig", "--kubeconfig", consumer.Kubeconfig, "--remote-cluster-id", providerID)
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	return []byte(r.stdout), cfg, cfg.BearerToken
}

// tokenExpiry reads a JWT's exp claim.
func tokenExpiry(t *testing.T, token string) time.Time {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct{ Exp int64 }
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	return time.Unix(claims.Exp, 0)
}

func tenantStatus(t *testing.T, c *kubeenv.Cluster) v1alpha1.TenantStatus {
	t.Helper()
	u, err := dyn(t, c).Resource(v1alpha1.TenantGVR).Namespace(member.TenantNamespace("consumer")).Get(t.Context(), "consumer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(u.Object)
	var tenant v1alpha1.Tenant
	if err := json.Unmarshal(data, &tenant); err != nil {
		t.Fatal(err)
	}
	return tenant.Status
}

// near tells whether got is within a minute of want.
func near(got, want time.Time) bool { return got.Sub(want).Abs() < time.Minute }

// On a provider whose controller-manager signs no client certificate (EKS), --credential certificate
// fails naming the way out and leaves nothing behind, --credential auto falls back to a token, the token
// works within the sandbox only and expires when the API server says, renewal and revocation kill the
// old tokens, and the manual flow carries a token in identity.yaml, sealed like every other field.
func TestTokenCredentialOnProviderWithoutSigner(t *testing.T) {
	nosigner := startNoSigner(t)
	atCleanup(t, "unauthenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", nosigner.Kubeconfig, "--keep-namespaces")
	pair := []string{"--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", nosigner.Kubeconfig,
		"--cluster-id", "consumer", "--remote-cluster-id", "nosigner", "--signer-timeout", "3s"}

	// 1. A certificate, which never comes: a clear error, and nothing of a pairing on either side.
	r := cli(t, "", append([]string{"authenticate"}, pair...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "no certificate came within 3s") || !strings.Contains(r.stderr, "--credential token") {
		t.Fatalf("authenticate with a certificate on a signer-less provider: want exit 1 naming --credential token: %s", r)
	}
	// The first pairing began its sandbox alongside the CSR (one round trip ahead of the certificate): the
	// run removed it, waiting until the namespace controller was done.
	if !strings.Contains(r.stderr, "Namespace "+member.TenantNamespace("consumer")+" removed: this run made it, and issued nothing into it") {
		t.Errorf("authenticate does not say it removed the namespace it began:\n%s", r.stderr)
	}
	if left := pairingObjects(t, nosigner, "consumer"); len(left) > 0 {
		t.Errorf("the failed certificate issuance left on the provider: %v", left)
	}
	if left := pairingObjects(t, consumer, "nosigner"); len(left) > 0 {
		t.Errorf("the failed certificate issuance left on the consumer: %v", left)
	}
	admin := kubernetes.NewForConfigOrDie(nosigner.Config)
	if _, err := admin.CoreV1().Namespaces().Get(t.Context(), member.TenantNamespace("consumer"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("tenant namespace after the failed issuance: %v", err)
	}
	if csrs, err := admin.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{}); err != nil || len(csrs.Items) > 0 {
		t.Errorf("CSRs after the failed issuance: %v %v", csrs, err)
	}

	// 2. auto: the same wait, then a token, said so; the API server caps it at 24h, also said.
	r = mustRun(t, "", append([]string{"authenticate", "--credential", "auto"}, pair...)...)
	for _, want := range []string{"WARNING (remote) The signer issued no client certificate in time", "falling back to a ServiceAccount token", "The API server shortened the token to 24h0m0s"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("authenticate --credential auto: stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "ERROR") {
		t.Errorf("authenticate --credential auto reports an error although it fell back:\n%s", r.stderr)
	}
	_, cfg, token := storedKubeconfig(t, "nosigner")
	if token == "" || len(cfg.CertData) > 0 {
		t.Fatalf("the kubeconfig holds no token only (token %d bytes, certificate %d bytes)", len(token), len(cfg.CertData))
	}
	if strings.Contains(r.stdout+r.stderr, token) {
		t.Error("authenticate printed the token")
	}
	saPrefix := "system:serviceaccount:" + member.TenantNamespace("consumer") + ":" + credential.CredentialServiceAccount + "-"
	saUser, err := selfReview(t, cfg)
	if err != nil || !strings.HasPrefix(saUser, saPrefix) {
		t.Fatalf("whoami with the token: %q %v, want %s*", saUser, err, saPrefix)
	}
	st := tenantStatus(t, nosigner)
	exp := tokenExpiry(t, token)
	if st.Credential != v1alpha1.CredentialToken || st.User != saUser || st.NotAfter == nil || !st.NotAfter.Time.Equal(exp) || len(st.Certificate) > 0 {
		t.Errorf("Tenant status: credential %q user %q notAfter %v certificate %d bytes; the token expires at %s", st.Credential, st.User, st.NotAfter, len(st.Certificate), exp)
	}
	if !near(exp, time.Now().Add(maxToken)) {
		t.Errorf("the token expires at %s, not 24h from now", exp)
	}
	var id *unstructured.Unstructured
	id, err = dyn(t, consumer).Resource(v1alpha1.IdentityGVR).Namespace(member.SystemNamespace).Get(t.Context(), member.IdentityName("nosigner"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tok, found, _ := unstructuredString(id.Object, "spec", "token"); found || tok != "" {
		t.Error("the Identity object carries the token; only the kubeconfig Secret may")
	}
	if na, _, _ := unstructuredString(id.Object, "status", "notAfter"); na != exp.UTC().Format(time.RFC3339) {
		t.Errorf("Identity status.notAfter %q, the token expires at %s", na, exp.UTC().Format(time.RFC3339))
	}

	// 3. The token's identity is a tenant like a certificate's: its namespace only, and the sandbox's
	// tenant-only policies apply to it.
	tenant := kubernetes.NewForConfigOrDie(cfg)
	ns := member.TenantNamespace("consumer")
	if _, err := tenant.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "token-works"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("the token cannot create a ConfigMap in its namespace: %v", err)
	}
	if _, err := tenant.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the token lists ConfigMaps in default: %v", err)
	}
	_, saName, _ := strings.Cut(strings.TrimPrefix(saUser, "system:serviceaccount:"), ":")
	if _, err := tenant.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), saName, &authv1.TokenRequest{}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the token mints itself another token: %v", err)
	}
	fin := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "token-finalizer", Finalizers: []string{"example.com/never"}}}
	if _, err := tenant.CoreV1().ConfigMaps(ns).Create(t.Context(), fin, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "may not add finalizers") {
		t.Errorf("the token adds a finalizer the sandbox refuses to tenants: %v", err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "as-credential"}, Spec: restrictedPodSpec()}
	pod.Spec.ServiceAccountName = saName
	if _, err := tenant.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "must not run as a "+credential.CredentialServiceAccount+"-*") {
		t.Errorf("a pod runs as the credential ServiceAccount: %v", err)
	}

	// 3b. Resource slices: one shot with auto, through the pairing (whose identity is the token) with
	// --credential token, and a certificate refused with nothing made.
	slicesWithTokens(t, nosigner)

	// 4. Renewal with --credential token (no wait for the signer) and a lifetime within the cap: a new
	// token, as long as asked, and the old one no longer authenticates.
	r = mustRun(t, "", append([]string{"authenticate", "--credential", "token", "--expiration", "2h"}, pair...)...)
	if strings.Contains(r.stderr, "shortened") {
		t.Errorf("a 2h token was reported shortened:\n%s", r.stderr)
	}
	_, cfg2, token2 := storedKubeconfig(t, "nosigner")
	if token2 == token {
		t.Fatal("renewal kept the same token")
	}
	if exp2 := tokenExpiry(t, token2); !near(exp2, time.Now().Add(2*time.Hour)) {
		t.Errorf("the renewed token expires at %s, not 2h from now", exp2)
	}
	tokenRefused(t, "the old token after renewal", tenant, ns)
	if user, err := selfReview(t, cfg2); err != nil || !strings.HasPrefix(user, saPrefix) || user == saUser {
		t.Fatalf("whoami with the renewed token: %q %v (the old one was %q)", user, err, saUser)
	}

	// 5. Revocation: the token is refused at once (it no longer even authenticates).
	mustRun(t, "", "revoke", "--remote-cluster-id", "consumer", "--kubeconfig", nosigner.Kubeconfig)
	tokenRefused(t, "the token after revoke", kubernetes.NewForConfigOrDie(cfg2), ns)
	mustRun(t, "", "unauthenticate", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", nosigner.Kubeconfig)

	// 6. The manual flow: generate identity with a certificate fails and puts the nonce back, so the same
	// tenant.yaml is answered with a token; identity.yaml then carries the token, says so, and is sealed.
	dir := t.TempDir()
	env := []string{"N=" + nosigner.Kubeconfig}
	r = sh(t, dir, `
		kubectl federate create nonce --remote-cluster-id consumer --kubeconfig "$N"
		kubectl federate get nonce --remote-cluster-id consumer --kubeconfig "$N" > nonce.txt
		kubectl federate generate tenant --remote-cluster-id nosigner --nonce-file nonce.txt --kubeconfig "$C" > tenant.yaml
		if kubectl federate generate identity --remote-cluster-id consumer -f tenant.yaml --signer-timeout 2s --kubeconfig "$N" > cert.yaml 2> cert.err; then
		  echo "a certificate was issued without a signer"; exit 1
		fi
		if kubectl get ns federate-tenant-consumer --kubeconfig "$N" > /dev/null 2>&1; then
		  echo "the failed certificate issuance left the tenant namespace"; exit 1
		fi
		kubectl federate generate identity --remote-cluster-id consumer -f tenant.yaml --credential token --kubeconfig "$N" > identity.yaml
		# tenant.yaml is public: a copy of it never fetches the token again
		if kubectl federate generate identity --remote-cluster-id consumer -f tenant.yaml --credential token --kubeconfig "$N" > again.yaml 2> again.err; then
		  echo "a re-run handed the token out again"; exit 1
		fi
		grep -q "handed out once only" again.err
		test ! -s again.yaml
	`, env...)
	if r.code != 0 {
		t.Fatalf("manual flow with a token: %s", r)
	}
	if certErr, _ := os.ReadFile(filepath.Join(dir, "cert.err")); !strings.Contains(string(certErr), "--credential token") {
		t.Errorf("generate identity without a signer does not name --credential token:\n%s", certErr)
	}
	if !strings.Contains(r.stderr, "carries a ServiceAccount token, which is the credential itself") {
		t.Errorf("generate identity --credential token does not warn that identity.yaml is a secret:\n%s", r.stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "identity.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var issued v1alpha1.Identity
	if err := yaml.Unmarshal(data, &issued); err != nil {
		t.Fatal(err)
	}
	if issued.Spec.Credential != v1alpha1.CredentialToken || issued.Spec.Token == "" || len(issued.Spec.Certificate) > 0 {
		t.Fatalf("identity.yaml: credential %q, token %d bytes, certificate %d bytes", issued.Spec.Credential, len(issued.Spec.Token), len(issued.Spec.Certificate))
	}
	// A token swapped in transit (here: the renewed one of step 4, a real token of the same ServiceAccount
	// name) fails its MAC; nothing is imported.
	forged := strings.Replace(string(data), issued.Spec.Token, token2, 1)
	if err := os.WriteFile(filepath.Join(dir, "forged.yaml"), []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}
	r = cli(t, "", "import", "identity", "-f", filepath.Join(dir, "forged.yaml"), "--kubeconfig", consumer.Kubeconfig)
	if r.code == 0 || !strings.Contains(r.stderr, "spec.token: does not match its integrity MAC") {
		t.Errorf("import of a forged token: %s", r)
	}
	if left := pairingObjects(t, consumer, "nosigner"); strings.Contains(strings.Join(left, " "), "kubeconfig-") {
		t.Errorf("the forged import stored a kubeconfig: %v", left)
	}
	r = sh(t, dir, `
		kubectl federate import identity -f identity.yaml --kubeconfig "$C"
		kubectl federate import identity -f identity.yaml --kubeconfig "$C"
		kubectl federate get kubeconfig --remote-cluster-id nosigner --kubeconfig "$C" > nosigner.kubeconfig
		kubectl --kubeconfig nosigner.kubeconfig auth whoami -o jsonpath='{.status.userInfo.username}'
	`)
	if lines := strings.Split(r.stdout, "\n"); r.code != 0 || !strings.Contains(lines[1], "unchanged") || !strings.HasPrefix(lines[len(lines)-1], saPrefix) {
		t.Fatalf("import (twice) and use of a token identity.yaml: %s", r)
	}
}

// On a provider that does sign, --credential token still issues a token, as long as asked, and
// --credential auto takes the certificate.
func TestTokenCredentialOnProviderWithSigner(t *testing.T) {
	defer unauthenticate(t)
	authenticate(t, "--credential", "token", "--expiration", "3h")
	_, cfg, token := storedKubeconfig(t, "provider")
	if token == "" {
		t.Fatal("no token in the kubeconfig")
	}
	if exp := tokenExpiry(t, token); !near(exp, time.Now().Add(3*time.Hour)) {
		t.Errorf("the token expires at %s, not 3h from now", exp)
	}
	if user, err := selfReview(t, cfg); err != nil || !strings.HasPrefix(user, "system:serviceaccount:") {
		t.Fatalf("whoami: %q %v", user, err)
	}
	// Back to a certificate: the token's ServiceAccount goes, and with it the token.
	r := authenticate(t, "--credential", "auto")
	if strings.Contains(r.stderr, "falling back") {
		t.Errorf("auto fell back to a token on a provider that signs:\n%s", r.stderr)
	}
	_, cfg2, token2 := storedKubeconfig(t, "provider")
	if token2 != "" || len(cfg2.CertData) == 0 {
		t.Fatalf("auto on a signing provider: token %d bytes, certificate %d bytes", len(token2), len(cfg2.CertData))
	}
	tokenRefused(t, "the token after renewal with a certificate", kubernetes.NewForConfigOrDie(cfg), member.TenantNamespace("consumer"))
	if st := tenantStatus(t, provider); st.Credential != v1alpha1.CredentialCertificate {
		t.Errorf("Tenant status.credential %q after a certificate renewal", st.Credential)
	}
}

// slicesWithTokens grants resource slices with token credentials on a provider without the client signer.
func slicesWithTokens(t *testing.T, nosigner *kubeenv.Cluster) {
	t.Helper()
	admin := kubernetes.NewForConfigOrDie(nosigner.Config)
	tenantNS := member.TenantNamespace("consumer")
	sliceUser := func(slice string) string {
		return "system:serviceaccount:" + member.SliceNamespace("consumer", slice) + ":" + credential.CredentialServiceAccount + "-"
	}
	sliceConfig := func(slice string) *rest.Config {
		r := mustOn(t, consumer, "get", "kubeconfig", "--remote-cluster-id", "nosigner", "--resource-slice", slice)
		cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(r.stdout))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.BearerToken == "" || len(cfg.CertData) > 0 {
			t.Fatalf("slice %s: the kubeconfig holds no token only", slice)
		}
		return cfg
	}

	// One shot, auto: falls back like the pairing did.
	r := mustRun(t, "", "create", "resourceslice", "tok-auto", "--cpu", "1", "--memory", "1Gi", "--credential", "auto", "--signer-timeout", "2s",
		"--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", nosigner.Kubeconfig)
	if !strings.Contains(r.stderr, "falling back to a ServiceAccount token") || strings.Contains(r.stderr, "ERROR") {
		t.Errorf("create resourceslice --credential auto:\n%s", r.stderr)
	}
	autoCfg := sliceConfig("tok-auto")
	if user, err := selfReview(t, autoCfg); err != nil || !strings.HasPrefix(user, sliceUser("tok-auto")) {
		t.Errorf("the slice's token is %q (%v), want %s*", user, err, sliceUser("tok-auto"))
	}
	if _, err := kubernetes.NewForConfigOrDie(autoCfg).CoreV1().ConfigMaps(tenantNS).List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the slice's token in the tenant namespace: %v, want Forbidden", err)
	}
	if _, err := admin.CoreV1().Secrets(tenantNS).Get(t.Context(), member.SliceTokenSecretName("tok-auto"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the one-shot slice's token still waits on the provider: %v", err)
	}

	// Through the pairing: the provider chooses a token; it waits in the tenant namespace until imported.
	mustOn(t, consumer, "create", "resourceslice", "tok-pair", "--remote-cluster-id", "nosigner", "--cpu", "1", "--memory", "1Gi")
	r = mustOn(t, nosigner, "accept", "resourceslice", "tok-pair", "--remote-cluster-id", "consumer", "--credential", "token")
	if _, err := admin.CoreV1().Secrets(tenantNS).Get(t.Context(), member.SliceTokenSecretName("tok-pair"), metav1.GetOptions{}); err != nil {
		t.Fatalf("the slice's token does not wait in the tenant namespace: %v", err)
	}
	u, err := dyn(t, nosigner).Resource(v1alpha1.ResourceSliceGVR).Namespace(tenantNS).Get(t.Context(), "tok-pair", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tok, found, _ := unstructuredString(u.Object, "status", "token"); found || tok != "" {
		t.Error("the provider's ResourceSlice carries the token in its status")
	}
	if cred, _, _ := unstructuredString(u.Object, "status", "credential"); cred != v1alpha1.CredentialToken {
		t.Errorf("status.credential %q", cred)
	}
	mustOn(t, consumer, "import", "resourceslice", "tok-pair", "--remote-cluster-id", "nosigner")
	if r := mustOn(t, consumer, "import", "resourceslice", "tok-pair", "--remote-cluster-id", "nosigner"); !strings.Contains(r.stdout, "unchanged") {
		t.Errorf("a second import changed something: %s", r)
	}
	if _, err := admin.CoreV1().Secrets(tenantNS).Get(t.Context(), member.SliceTokenSecretName("tok-pair"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the slice's token still waits on the provider after import: %v", err)
	}
	pairCfg := sliceConfig("tok-pair")
	if user, err := selfReview(t, pairCfg); err != nil || !strings.HasPrefix(user, sliceUser("tok-pair")) {
		t.Errorf("the slice's token is %q (%v)", user, err)
	}
	// Accepting again keeps the token (the consumer holds it): still valid.
	mustOn(t, nosigner, "accept", "resourceslice", "tok-pair", "--remote-cluster-id", "consumer", "--credential", "token")
	if _, err := selfReview(t, pairCfg); err != nil {
		t.Errorf("a second accept ended the imported token: %v", err)
	}

	// A certificate for a slice: refused naming --credential token, and no namespace made.
	mustOn(t, consumer, "create", "resourceslice", "tok-cert", "--remote-cluster-id", "nosigner", "--cpu", "1", "--memory", "1Gi")
	r = cli(t, "", "accept", "resourceslice", "tok-cert", "--remote-cluster-id", "consumer", "--signer-timeout", "2s", "--kubeconfig", nosigner.Kubeconfig)
	if r.code != 1 || !strings.Contains(r.stderr, "--credential token") {
		t.Errorf("accept with a certificate on a signer-less provider: %s", r)
	}
	if _, err := admin.CoreV1().Namespaces().Get(t.Context(), member.SliceNamespace("consumer", "tok-cert"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused slice's namespace: %v", err)
	}

	// Deleting a slice ends its token.
	mustOn(t, nosigner, "delete", "resourceslice", "tok-pair", "--remote-cluster-id", "consumer")
	tokenRefused(t, "a deleted slice's token", kubernetes.NewForConfigOrDie(pairCfg), member.SliceNamespace("consumer", "tok-pair"))
}

// tokenRefused checks that a replaced or revoked token may do nothing in its namespace at once, and is
// refused outright (401) once the API server's cache of successful token authentications (10 s) has
// forgotten it: its ServiceAccount is gone.
func tokenRefused(t *testing.T, what string, cs kubernetes.Interface, ns string) {
	t.Helper()
	_, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
		t.Errorf("%s: listing ConfigMaps in %s: %v, want Forbidden or Unauthorized at once", what, ns, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := cs.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if apierrors.IsUnauthorized(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: still authenticates 30 s later: %v", what, err)
			return
		}
		time.Sleep(time.Second) // polling the authenticator's cache: there is nothing to watch
	}
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	cur := any(obj)
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		if cur, ok = m[f]; !ok {
			return "", false, nil
		}
	}
	s, _ := cur.(string)
	return s, true, nil
}

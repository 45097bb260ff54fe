//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// A federated pairing on real clusters: the consumer fed-a names its ServiceAccount ci/deployer, the tool
// prints the provider's authenticator entry and refuses to call the pairing ready until the provider's API
// server (which reads the entry from its authentication configuration, written here as its administrator
// would) authenticates a token minted on fed-a as the pairing's user and authorizes it. Nothing secret is
// written to either cluster on the way.
func TestFederated(t *testing.T) {
	env := startFederated(t)
	a, p := env.a, env.p
	// Initialized first: init writes each cluster's handshake key, which is no part of a pairing.
	mustRun(t, "", "init", "--kubeconfig", a.Kubeconfig, "--cluster-id", a.Name)
	mustRun(t, "", "init", "--kubeconfig", p.Kubeconfig, "--cluster-id", p.Name)
	serviceAccount(t, a, "ci", "deployer")
	secretsBefore := map[string][]string{a.Name: secretsOf(t, a), p.Name: secretsOf(t, p)}
	federate := pairArgs(a, p, "--credential", "federated", "--service-account", "ci:deployer")

	// fed-a lets no anonymous request read its discovery document yet: the run says so, prints the entry
	// and exits 4, since the provider does not take the token (no entry installed).
	r := cli(t, "", append([]string{"authenticate"}, federate...)...)
	if r.code != 4 {
		t.Fatalf("authenticate before the entry is installed: want exit 4\n%s", r)
	}
	contains(t, "authenticate's stderr", r.stderr,
		"forbidden to anonymous requests (403): bind ClusterRole system:service-account-issuer-discovery to Group system:unauthenticated",
		"set up but not ready: the provider does not authenticate this cluster's tokens (401 Unauthorized)",
		"has no authenticator for issuer "+a.Issuer+": the entry is not installed",
		"then prove it with: kubectl federate status --check")
	first := jwtEntries(t, r.stdout)
	if len(first) != 1 {
		t.Fatalf("%d entries printed, want 1:\n%s", len(first), r.stdout)
	}
	checkEntry(t, first[0], a)

	// As the docs ask of the consumer's administrator: anonymous requests may read its discovery document.
	allowAnonymousDiscovery(t, a)
	r = cli(t, "", append([]string{"authenticate"}, federate...)...)
	if r.code != 4 || strings.Contains(r.stderr, "forbidden to anonymous") {
		t.Fatalf("authenticate once discovery is allowed: want exit 4, the entry still not installed\n%s", r)
	}
	second := jwtEntries(t, r.stdout)
	if !sameEntries(t, first, second) {
		t.Fatalf("a re-run of the pairing printed another entry:\n%v\n%v", first, second)
	}

	// The provider's administrator installs it; the API server reloads its configuration.
	install(t, p, second...)
	st := mustRun(t, "", "status", "--check", "--kubeconfig", a.Kubeconfig, "-o", "json")
	contains(t, "status --check", st.stdout, `"credential": "Federated"`, `"state": "ok"`)
	r = mustRun(t, "", append([]string{"authenticate"}, pairArgs(a, p)...)...)
	contains(t, "a re-run with the entry installed", r.stderr, "authenticates this cluster's token as kubectl-federate:fed-a:",
		"tokens of ServiceAccount ci/deployer for audience kubectl-federate:fed-p:fed-a:", "no credential stored")
	if !sameEntries(t, second, jwtEntries(t, r.stdout)) {
		t.Fatalf("a re-run of a proven pairing printed another entry:\n%s", r.stdout)
	}

	// Nothing secret was written to either cluster: the same Secrets, unchanged, as before the pairing.
	for _, c := range []*kubeenv.Cluster{a, p} {
		if after := secretsOf(t, c); !slices.Equal(after, secretsBefore[c.Name]) {
			t.Errorf("%s's Secrets changed with the pairing:\nbefore %v\nafter  %v", c.Name, secretsBefore[c.Name], after)
		}
	}

	// A second consumer, fed-b, pairs the same way with a ServiceAccount of the very same name: the
	// provider now trusts both issuers, each for its own pairing.
	b := env.b
	allowAnonymousDiscovery(t, b)
	serviceAccount(t, b, "ci", "deployer")
	r = cli(t, "", append([]string{"authenticate"}, pairArgs(b, p, "--credential", "federated", "--service-account", "ci:deployer")...)...)
	if r.code != 4 {
		t.Fatalf("fed-b before its entry: want exit 4\n%s", r)
	}
	install(t, p, append(second, jwtEntries(t, r.stdout)...)...)
	mustRun(t, "", "status", "--check", "--kubeconfig", b.Kubeconfig)

	logTable(t, "Tokens presented to the provider fed-p (fed-a's pairing trusted for ci/deployer, fed-b's likewise):",
		tryAll(t, p, "federate-tenant-fed-a", federatedAttempts(t, env, second[0])))

	federatedExport(t, env, second[0])

	// The provider's administrator prints the entries any time, from the Tenants' records.
	got := jwtEntries(t, mustRun(t, "", "get", "authenticator", "--kubeconfig", p.Kubeconfig).stdout)
	if len(got) != 2 || !sameEntries(t, got[:1], second) {
		t.Fatalf("get authenticator printed other entries than the ones issued:\n%v", got)
	}
	// renew has nothing to rotate.
	r = mustRun(t, "", "renew", "--kubeconfig", a.Kubeconfig, "--remote-kubeconfig", p.Kubeconfig, "--remote-cluster-id", p.Name)
	contains(t, "renew of a federated pairing", r.stdout, "pairing/fed-p has nothing to rotate: federated, it holds no credential")

	federatedRevocation(t, env, second)
	federatedManualFlow(t, env)
}

// federatedExport exports fed-a's pairing for a tool on fed-a: a format that would store a token is
// refused with nothing written; --exec writes a Secret holding no credential whose client runs the plugin,
// which mints a token of ci/deployer on fed-a each time, and the provider takes it as the pairing's user.
func federatedExport(t *testing.T, env *federatedEnv, entry map[string]any) {
	a, p := env.a, env.p
	if _, err := kube(t, a).CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	exp := []string{"export", "kubeconfig", "--kubeconfig", a.Kubeconfig, "--remote-cluster-id", p.Name, "-n", "flux-system"}
	r := cli(t, "", exp...)
	if r.code != 1 || !strings.Contains(r.stderr, "the pairing is federated: its credential is a token minted on demand, never stored") {
		t.Fatalf("export kubeconfig of a federated pairing without --exec: want exit 1, refused\n%s", r)
	}
	if l, err := kube(t, a).CoreV1().Secrets("flux-system").List(t.Context(), metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Fatalf("the refused export wrote Secrets: %v %v", l, err)
	}
	mustRun(t, "", append(exp, "--exec", "--exec-command", federateBin)...)
	sec, err := kube(t, a).CoreV1().Secrets("flux-system").Get(t.Context(), p.Name+"-kubeconfig", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sec.Data) != 1 || sec.Data["kubeconfig"] == nil {
		t.Errorf("the export's Secret holds more than the client's kubeconfig: %v", slices.Collect(maps.Keys(sec.Data)))
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(sec.Data["kubeconfig"])
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BearerToken != "" || cfg.CertData != nil || cfg.ExecProvider == nil || !slices.Equal(cfg.ExecProvider.Args, []string{"credential", "--remote-cluster-id", p.Name}) {
		t.Fatalf("the exported client: token %t, certificate %t, plugin %+v", cfg.BearerToken != "", cfg.CertData != nil, cfg.ExecProvider)
	}
	// The tool's pod reads the consumer as its own ServiceAccount would; here, the consumer's kubeconfig.
	cfg.ExecProvider.Env = append(cfg.ExecProvider.Env, clientcmdapi.ExecEnvVar{Name: "KUBECONFIG", Value: a.Kubeconfig})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := cs.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the exported client on the provider: %v", err)
	}
	want := entry["claimMappings"].(map[string]any)["username"].(map[string]any)["prefix"].(string) + "system:serviceaccount:ci:deployer"
	if rev.Status.UserInfo.Username != want {
		t.Errorf("the exported client is %q on the provider, want %q", rev.Status.UserInfo.Username, want)
	}
	// The plugin mints anew each time: two runs, two tokens, both the pairing's audience and short-lived.
	var tokens []string
	for range 2 {
		out := mustRun(t, "", "credential", "--kubeconfig", a.Kubeconfig, "--remote-cluster-id", p.Name).stdout
		var ec struct {
			Status struct {
				Token string `json:"token"`
			} `json:"status"`
		}
		if err := json.Unmarshal([]byte(out), &ec); err != nil || ec.Status.Token == "" {
			t.Fatalf("credential printed no token: %v\n%s", err, out)
		}
		tokens = append(tokens, ec.Status.Token)
		_, claims := claimsOf(t, ec.Status.Token)
		aud := entry["issuer"].(map[string]any)["audiences"].([]any)[0]
		if auds, _ := claims["aud"].([]any); len(auds) != 1 || auds[0] != aud || claims["exp"].(float64)-claims["iat"].(float64) > 3600 {
			t.Errorf("a minted token's audience %v and lifetime %v s", claims["aud"], claims["exp"].(float64)-claims["iat"].(float64))
		}
	}
	if tokens[0] == tokens[1] {
		t.Error("the plugin handed out the same token twice: it was stored, not minted")
	}
	// Nothing of the pairing's was stored in the meantime: the consumer's own namespace holds no Secret of it.
	for _, s := range secretsOf(t, a) {
		if strings.HasPrefix(s, "federate-system/") && strings.Contains(s, p.Name) {
			t.Errorf("a Secret of the pairing on the consumer: %s", s)
		}
	}
	t.Logf("| export kubeconfig (no --exec) of the federated pairing | refused, exit 1, nothing written |")
	t.Logf("| export kubeconfig --exec: the client's plugin mints on fed-a | Secret with the client's kubeconfig only; SelfSubjectReview on fed-p: %s |", rev.Status.UserInfo.Username)
}

// federatedManualFlow removes fed-b's pairing (the run prints the entry to remove) and makes it again by
// the manual flow, each administrator on their own cluster: the import proves it, and is not ready until
// the provider's administrator installs what get authenticator prints.
func federatedManualFlow(t *testing.T, env *federatedEnv) {
	b, p := env.b, env.p
	r := mustRun(t, "", append([]string{"unauthenticate"}, pairArgs(b, p)...)...)
	removed := jwtEntries(t, r.stdout)
	if len(removed) != 1 || removed[0]["issuer"].(map[string]any)["url"] != b.Issuer {
		t.Fatalf("unauthenticate printed %v, want fed-b's entry to remove", removed)
	}
	contains(t, "unauthenticate", r.stderr, "remove the jwt entry printed on stdout (issuer "+b.Issuer+")")
	if g := cli(t, "", "get", "authenticator", "--kubeconfig", p.Kubeconfig, "--remote-cluster-id", b.Name); g.code != 1 || !strings.Contains(g.stderr, "not found") {
		t.Errorf("get authenticator of a removed pairing: want NotFound\n%s", g)
	}

	dir := t.TempDir()
	script := `set -euo pipefail
kubectl federate create nonce --kubeconfig "$P" --remote-cluster-id fed-b
kubectl federate get nonce --kubeconfig "$P" --remote-cluster-id fed-b > nonce.txt
kubectl federate generate tenant --kubeconfig "$B" --nonce-file nonce.txt --service-account ci:deployer > tenant.yaml
kubectl federate generate identity --kubeconfig "$P" --remote-cluster-id fed-b -f tenant.yaml > identity.yaml
`
	r = sh(t, dir, script, "B="+b.Kubeconfig, "P="+p.Kubeconfig)
	if r.code != 0 {
		t.Fatalf("the manual flow: %s", r)
	}
	contains(t, "generate identity", r.stderr, "kubectl federate get authenticator --remote-cluster-id fed-b")
	tenant, err := os.ReadFile(filepath.Join(dir, "tenant.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "tenant.yaml", string(tenant), "federated:", "issuer: "+b.Issuer, "name: deployer")
	if strings.Contains(string(tenant), "csr:") {
		t.Errorf("a federated tenant.yaml carries a CSR:\n%s", tenant)
	}
	imp := sh(t, dir, `kubectl federate import identity --kubeconfig "$B" -f identity.yaml`, "B="+b.Kubeconfig)
	if imp.code != 4 {
		t.Fatalf("import identity before the entry is installed: want exit 4\n%s", imp)
	}
	contains(t, "import identity", imp.stdout, "federated: tokens of ServiceAccount ci/deployer minted on demand, no credential stored")
	contains(t, "import identity", imp.stderr, "set up but not ready", "401 Unauthorized")
	install(t, p, jwtEntries(t, mustRun(t, "", "get", "authenticator", "--kubeconfig", p.Kubeconfig).stdout)...)
	imp = sh(t, dir, `kubectl federate import identity --kubeconfig "$B" -f identity.yaml`, "B="+b.Kubeconfig)
	if imp.code != 0 || !strings.Contains(imp.stdout, " unchanged (") {
		t.Fatalf("import identity again, the entry installed: want exit 0, unchanged\n%s", imp)
	}
	mustRun(t, "", "status", "--check", "--kubeconfig", b.Kubeconfig)
	// The import dropped the request's integrity key: no Secret is left on the consumer for the pairing.
	for _, s := range secretsOf(t, b) {
		if strings.Contains(s, "fed-p") {
			t.Errorf("a Secret of the pairing is left on the consumer: %s", s)
		}
	}
}

// federatedRevocation revokes fed-a on the provider: a token minted before (which the entry still
// authenticates) is refused what it could do, at once; authenticate issues under a new user and audience
// afterwards, which the old entry does not take, and the old token dies with the old entry.
func federatedRevocation(t *testing.T, env *federatedEnv, installed []map[string]any) {
	a, p := env.a, env.p
	ns := "federate-tenant-fed-a"
	audience := installed[0]["issuer"].(map[string]any)["audiences"].([]any)[0].(string)
	token := mint(t, a, "ci", "deployer", 3600, audience)
	if err := createPod(t, p, token, ns); err != nil {
		t.Fatalf("the pairing's token before revoke: %v", err)
	}
	// revoke returns once the provider's own access review refuses the user (lifecycle.Revoke): the very
	// next request with the same token is refused, with no retry.
	start := time.Now()
	r := mustRun(t, "", "revoke", "--kubeconfig", p.Kubeconfig, "--remote-cluster-id", a.Name)
	contains(t, "revoke", r.stderr, "authenticator entry of issuer "+a.Issuer+" may stay")
	err := createPod(t, p, token, ns)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("the same token at once after revoke: %v, want 403 Forbidden", err)
	}
	refusedIn := time.Since(start).Round(time.Millisecond)
	u, werr := whoAmI(t, p, token)
	t.Logf("| the pairing's token (ci/deployer, its audience) after revoke | authenticated as %s (the entry stays); creating a pod: %d %v, %s after revoke began |",
		u.Username, err.(apierrors.APIStatus).Status().Code, err, refusedIn)
	if werr != nil || !strings.HasPrefix(u.Username, "kubectl-federate:fed-a:") {
		t.Errorf("the entry stays, so the token still authenticates: %+v %v", u, werr)
	}
	st := cli(t, "", "status", "--check", "--kubeconfig", a.Kubeconfig, "-o", "json")
	if st.code != 4 || !strings.Contains(st.stdout, `"state": "revoked"`) {
		t.Errorf("status --check after revoke: want exit 4, revoked\n%s", st)
	}

	// Authenticated again: a new user and audience, which the entry installed (the revoked one's) does
	// not take: the run names that the installed entry is not the one printed.
	r = cli(t, "", append([]string{"authenticate"}, pairArgs(a, p)...)...)
	if r.code != 4 {
		t.Fatalf("authenticate after revoke, the old entry installed: want exit 4\n%s", r)
	}
	contains(t, "authenticate after revoke", r.stderr, "has an authenticator for issuer "+a.Issuer+" and its keys, yet refused the token: the entry installed is not the one printed")
	fresh := jwtEntries(t, r.stdout)
	if sameEntries(t, fresh, installed) {
		t.Fatal("authenticate after revoke printed the revoked pairing's entry again")
	}
	if newAudience := fresh[0]["issuer"].(map[string]any)["audiences"].([]any)[0]; newAudience == audience {
		t.Fatalf("the new issuance kept the revoked audience %s", audience)
	}
	// The new entry replaces the old one (one entry per issuer); fed-b's stays.
	entries := jwtEntries(t, mustRun(t, "", "get", "authenticator", "--kubeconfig", p.Kubeconfig).stdout)
	install(t, p, entries...)
	mustRun(t, "", "status", "--check", "--kubeconfig", a.Kubeconfig)
	if _, err := whoAmI(t, p, token); !apierrors.IsUnauthorized(err) {
		t.Errorf("the revoked pairing's token once its entry is replaced: %v, want 401", err)
	}
}

// createPod creates a pod in ns, as a server-side dry run, through token.
func createPod(t *testing.T, c *kubeenv.Cluster, token, ns string) error {
	t.Helper()
	cs, err := kubernetes.NewForConfig(bearer(c, token))
	if err != nil {
		t.Fatal(err)
	}
	no := false
	_, err = cs.CoreV1().Pods(ns).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: &no, Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, RunAsNonRoot: ptrTo(true),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}}}},
	}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

func ptrTo[T any](v T) *T { return &v }

// federatedAttempts are the tokens presented to the provider once fed-a's and fed-b's entries are
// installed: fed-a's own pairing token, and every way around it.
func federatedAttempts(t *testing.T, env *federatedEnv, entry map[string]any) []attempt {
	a, b := env.a, env.b
	issuer := entry["issuer"].(map[string]any)
	audience := issuer["audiences"].([]any)[0].(string)
	user := entry["claimMappings"].(map[string]any)["username"].(map[string]any)["prefix"].(string) + "system:serviceaccount:ci:deployer"
	serviceAccount(t, a, "ci", "other")
	genuine := mint(t, a, "ci", "deployer", 600, audience)
	header, claims := claimsOf(t, genuine)
	key := signingKey(t, a)
	otherUID := map[string]any{"namespace": "ci", "serviceaccount": map[string]any{"name": "deployer", "uid": "00000000-0000-0000-0000-000000000000"}}
	return []attempt{
		{name: "fed-a's ci/deployer, the pairing's audience (minted by TokenRequest)", token: func() string { return mint(t, a, "ci", "deployer", 600, audience) }, want: user, allowed: true},
		{name: "fed-a's ci/deployer, the pairing's audience, 1 day (the longest a token may live)", token: func() string { return mint(t, a, "ci", "deployer", 86400, audience) }, want: user, allowed: true},
		{name: "fed-a's ci/other (another ServiceAccount), the pairing's audience", token: func() string { return mint(t, a, "ci", "other", 600, audience) }, refused: true},
		{name: "fed-a's kube-system/default, the pairing's audience", token: func() string { return mint(t, a, "kube-system", "default", 600, audience) }, refused: true},
		{name: "fed-a's ci/deployer, another audience", token: func() string { return mint(t, a, "ci", "deployer", 600, "kubectl-federate:fed-p:fed-a:other") }, refused: true},
		{name: "fed-a's ci/deployer, the provider's own API audience", token: func() string { return mint(t, a, "ci", "deployer", 600, "https://kubernetes.default.svc") }, refused: true},
		{name: "fed-a's ci/deployer, the pairing's audience, 2 days", token: func() string { return mint(t, a, "ci", "deployer", 2*86400, audience) }, refused: true},
		{name: "fed-b's ci/deployer (another consumer's issuer, trusted for its own pairing), fed-a's audience", token: func() string { return mint(t, b, "ci", "deployer", 600, audience) }, refused: true},
		{name: "signed with fed-a's key: sub system:admin", token: func() string {
			return forge(t, key, header, fresh(with(claims, map[string]any{"sub": "system:admin"})))
		}, refused: true},
		{name: "signed with fed-a's key: sub system:serviceaccount:kube-system:default", token: func() string {
			return forge(t, key, header, fresh(with(claims, map[string]any{"sub": "system:serviceaccount:kube-system:default"})))
		}, refused: true},
		{name: "signed with fed-a's key: ci/deployer's name, another UID (an account made again)", token: func() string {
			return forge(t, key, header, fresh(with(claims, map[string]any{"kubernetes.io": otherUID})))
		}, refused: true},
		{name: "signed with fed-a's key: no iat", token: func() string {
			return forge(t, key, header, with(fresh(claims), map[string]any{"iat": nil}))
		}, refused: true},
		{name: "signed with fed-a's key: ci/deployer with groups [system:masters], username system:admin, extra claims", token: func() string {
			return forge(t, key, header, fresh(with(claims, map[string]any{"groups": []string{"system:masters"}, "username": "system:admin",
				"email": "admin@example.com", "preferred_username": "system:admin"})))
		}, want: user, allowed: true},
		{name: "signed with fed-b's key (an issuer the provider trusts for fed-b): every claim of fed-a's pairing token", token: func() string {
			return forge(t, signingKey(t, b), header, fresh(claims))
		}, refused: true},
		{name: "signed with fed-b's key: fed-b's issuer, fed-a's audience, sub system:admin", token: func() string {
			return forge(t, signingKey(t, b), header, fresh(with(claims, map[string]any{"iss": b.Issuer, "sub": "system:admin"})))
		}, refused: true},
		{name: "signed with a key no cluster knows: every claim of fed-a's pairing token", token: func() string {
			return forge(t, strangerKey(t), header, fresh(claims))
		}, refused: true},
		{name: "unsigned (alg none): every claim of fed-a's pairing token", token: func() string {
			h := with(header, map[string]any{"alg": "none"})
			tok := forge(t, key, h, fresh(claims))
			return tok[:strings.LastIndexByte(tok, '.')+1]
		}, refused: true},
	}
}

// secretsOf lists every Secret of c, with its resourceVersion: a Secret created, changed or deleted shows.
func secretsOf(t *testing.T, c *kubeenv.Cluster) []string {
	t.Helper()
	list, err := kube(t, c).CoreV1().Secrets("").List(context.WithoutCancel(t.Context()), metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	var out []string
	for _, s := range list.Items {
		out = append(out, s.Namespace+"/"+s.Name+"@"+s.ResourceVersion)
	}
	slices.Sort(out)
	return out
}

// checkEntry checks the printed entry trusts a's issuer, with a's CA, for one audience, and pins one
// ServiceAccount under a prefix of a's.
func checkEntry(t *testing.T, e map[string]any, a *kubeenv.Cluster) {
	t.Helper()
	issuer, _ := e["issuer"].(map[string]any)
	if issuer["url"] != a.Issuer || issuer["certificateAuthority"] != string(a.Config.CAData) {
		t.Errorf("issuer %v, want %s with its CA", issuer, a.Issuer)
	}
	if auds, _ := issuer["audiences"].([]any); len(auds) != 1 || !strings.HasPrefix(auds[0].(string), "kubectl-federate:fed-p:fed-a:") {
		t.Errorf("audiences %v", issuer["audiences"])
	}
	user, _ := e["claimMappings"].(map[string]any)["username"].(map[string]any)
	if user["claim"] != "sub" || !strings.HasPrefix(user["prefix"].(string), "kubectl-federate:fed-a:") {
		t.Errorf("username mapping %v", user)
	}
}

// sameEntries tells whether two printed entry lists are the same.
func sameEntries(t *testing.T, a, b []map[string]any) bool {
	t.Helper()
	return mustYAML(t, a) == mustYAML(t, b)
}

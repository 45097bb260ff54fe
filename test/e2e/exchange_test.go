//go:build e2e

package e2e

// Identity exchange (cluster-gateway's ClientIdentityExchanger, seed 003): the consumer's rules decide which
// of its users reach the provider as the pairing's identity and which as another identity; another
// identity is a credential of its own that may impersonate exactly its target on the provider, and
// nothing else; an external HTTPS service answers for some users and any failure of it refuses; the
// provider consents (allow exchange, or one shot) and refuses what it must with nothing created; renewal
// keeps the credentials, unauthenticate removes them on both sides.

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/status"
	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// exchangeService is a real local HTTPS exchange service; mode says how it answers.
type exchangeService struct {
	*httptest.Server
	mode atomic.Value // "ok", "malformed", "500", "slow"
}

func startExchangeService(t *testing.T) *exchangeService {
	t.Helper()
	s := &exchangeService{}
	s.mode.Store("ok")
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req exchange.Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.Method != http.MethodPost {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		switch s.mode.Load() {
		case "malformed":
			_, _ = w.Write([]byte(`{"user": "alice-ext", "groups": `))
		case "500":
			http.Error(w, "exchanger down", http.StatusInternalServerError)
		case "slow":
			select {
			case <-time.After(exchange.ExternalTimeout + 3*time.Second):
			case <-r.Context().Done():
			}
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"user": strings.TrimPrefix(req.User, "ext-") + "-ext", "groups": []string{"ext-team"}})
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// exchangeRules is the seed's file, corrected (anchored pattern, https), with the e2e provider's ID as
// cluster, and two rules of equal priority.
func exchangeRules(svc *exchangeService) string {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: svc.Certificate().Raw})
	return `apiVersion: cluster.core.oam.dev/v1alpha1
kind: ClusterGatewayConfiguration
spec:
  clientIdentityExchanger:
    rules:
    - name: super-user
      source:
        group: sudoer
      type: PrivilegedIdentityExchanger
      priority: 10
    - name: mapping
      source:
        user: user-12345
        cluster: provider
      target:
        user: user-34567
        groups: [team-a]
      type: StaticMappingIdentityExchanger
      priority: 100
    - name: external
      source:
        userPattern: "ext-.*"
      url: ` + svc.URL + `/exchange
      caBundle: ` + base64.StdEncoding.EncodeToString(ca) + `
      type: ExternalIdentityExchanger
      priority: 20
    - name: tie-first
      source: {user: tie}
      target: {user: tie-a}
      type: StaticMappingIdentityExchanger
      priority: 50
    - name: tie-second
      source: {userPattern: "ti.*"}
      target: {user: tie-b}
      type: StaticMappingIdentityExchanger
      priority: 50
`
}

var (
	clusterRolesGVR        = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	clusterRoleBindingsGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
	csrsGVR                = schema.GroupVersionResource{Group: "certificates.k8s.io", Version: "v1", Resource: "certificatesigningrequests"}
	roleBindingsGVR        = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
)

// exchangeObjects lists what exists for identity exchange on both clusters: the provider's ClusterRoles,
// ClusterRoleBindings, CSRs and ExchangeRequests, the consumer's Secrets.
func exchangeObjects(t *testing.T) []string {
	t.Helper()
	var out []string
	list := func(c *kubeenv.Cluster, gvr schema.GroupVersionResource, ns, sel string) {
		l, err := dyn(t, c).Resource(gvr).Namespace(ns).List(t.Context(), metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range l.Items {
			out = append(out, c.Name+" "+gvr.Resource+" "+o.GetName()+" "+o.GetResourceVersion())
		}
	}
	list(provider, clusterRolesGVR, "", member.LabelExchange)
	list(provider, clusterRoleBindingsGVR, "", member.LabelExchange)
	list(provider, roleBindingsGVR, "", member.LabelExchange)
	list(provider, csrsGVR, "", "")
	list(provider, v1alpha1.ExchangeRequestGVR, tenantNS, "")
	list(consumer, secretsGVR, member.SystemNamespace, member.LabelExchange)
	slices.Sort(out)
	return out
}

// kubectlAs runs kubectl with a kubeconfig file.
func kubectlAs(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	return runIn(t, "", "", filepath.Join(binDir, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
}

// whoamiFile is `kubectl auth whoami` with a kubeconfig file.
func whoamiFile(t *testing.T, kubeconfig string, args ...string) (authnv1.UserInfo, result) {
	t.Helper()
	r := kubectlAs(t, kubeconfig, append([]string{"auth", "whoami", "-o", "json"}, args...)...)
	var review authnv1.SelfSubjectReview
	if r.code == 0 {
		if err := json.Unmarshal([]byte(r.stdout), &review); err != nil {
			t.Fatalf("auth whoami: %v\n%s", err, r)
		}
	}
	return review.Status.UserInfo, r
}

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExchange(t *testing.T) {
	start := time.Now()
	defer func() { t.Logf("TestExchange took %s", time.Since(start).Round(time.Second)) }()
	freshPairing(t)
	defer unauthenticate(t)
	svc := startExchangeService(t)
	rules := exchangeRules(svc)
	rulesFile := writeFile(t, "rules.yaml", rules)
	oneShot := []string{"--remote-kubeconfig", provider.Kubeconfig}
	getKubeconfig := func(args ...string) result {
		return on(t, consumer, append([]string{"get", "kubeconfig", "--remote-cluster-id", "provider"}, args...)...)
	}

	t.Run("apply", func(t *testing.T) {
		// Created on a consumer that holds no rules, configured where an earlier test left some.
		if r := mustOn(t, consumer, "exchange", "apply", "-f", rulesFile); r.stdout != "configmap/federate-exchange-rules created\n" && r.stdout != "configmap/federate-exchange-rules configured\n" {
			t.Errorf("first apply: %s", r)
		}
		if r := mustOn(t, consumer, "exchange", "apply", "-f", rulesFile); !strings.Contains(r.stdout, "unchanged") {
			t.Errorf("second apply: %s", r)
		}
		if r := mustOn(t, consumer, "exchange", "get", "-o", "yaml"); r.stdout != rules {
			t.Errorf("stored rules differ from the file:\n%s", r.stdout)
		}
		if r := mustOn(t, consumer, "exchange", "rules"); !strings.Contains(r.stdout, "mapping") || !strings.Contains(r.stdout, "user=user-34567,group=team-a") {
			t.Errorf("table: %s", r)
		}
	})

	// Done 6: every kind of bad file is refused naming the field, and the stored rules stay.
	t.Run("bad files", func(t *testing.T) {
		head := "apiVersion: cluster.core.oam.dev/v1alpha1\nkind: ClusterGatewayConfiguration\nspec:\n  clientIdentityExchanger:\n    rules:\n" +
			"    - {name: ok, type: PrivilegedIdentityExchanger, source: {group: g}}\n"
		for _, c := range []struct{ rule, want string }{
			{`{name: x, type: Magic, source: {user: a}}`, `spec.clientIdentityExchanger.rules[1].type "Magic": must be one of`},
			{`{name: x, type: StaticMappingIdentityExchanger, source: {user: a}}`, `rules[1].target: a StaticMappingIdentityExchanger rule needs one`},
			{`{name: x, type: PrivilegedIdentityExchanger, source: {user: a}, target: {user: b}}`, `rules[1].target: a PrivilegedIdentityExchanger rule`},
			{`{name: x, type: ExternalIdentityExchanger, source: {userPattern: "ext-*"}, url: "http://external.exchanger/"}`, `rules[1].url "http://external.exchanger/": must be https`},
			{`{name: x, type: ExternalIdentityExchanger, source: {user: a}}`, `rules[1].url: an ExternalIdentityExchanger rule needs`},
			{`{name: x, type: PrivilegedIdentityExchanger, source: {userPattern: "(ext"}}`, `rules[1].source.userPattern "(ext": is not a valid regular expression`},
			{`{name: ok, type: PrivilegedIdentityExchanger, source: {user: a}}`, `rules[1].name "ok": rules[0] has the same name`},
			{`{name: Not_A_Label, type: PrivilegedIdentityExchanger, source: {user: a}}`, `rules[1].name "Not_A_Label": must be a DNS label`},
			{`{name: x, type: PrivilegedIdentityExchanger, source: {}}`, `rules[1].source: must set at least one matcher`},
			{`{name: x, type: PrivilegedIdentityExchanger, source: {user: a, userPattern: "a.*"}}`, `rules[1].source: user and userPattern are both set`},
			{`{name: x, type: StaticMappingIdentityExchanger, source: {user: a}, target: {user: b, groups: ["system:masters"]}}`, `rules[1].target.groups[0] "system:masters"`},
			{`{name: x, type: PrivilegedIdentityExchanger, source: {user: a}, sudo: true}`, `spec.clientIdentityExchanger.rules[1].sudo: unknown field`},
		} {
			before := takeSnapshot(t)
			r := on(t, consumer, "exchange", "apply", "-f", writeFile(t, "bad.yaml", head+"    - "+c.rule+"\n"))
			if r.code == 0 || !strings.Contains(r.stderr, c.want) {
				t.Errorf("rule %s: want a failure naming %q, got %s", c.rule, c.want, r)
			}
			if d := before.diff(takeSnapshot(t)); len(d) > 0 {
				t.Errorf("rule %s: a refused file changed %v", c.rule, d)
			}
		}
		if r := mustOn(t, consumer, "exchange", "get", "-o", "yaml"); r.stdout != rules {
			t.Errorf("stored rules changed by bad files:\n%s", r.stdout)
		}
	})

	// Done 1: the seed's rules resolve as documented; ties go by file order; nobody else gets anything.
	t.Run("resolve", func(t *testing.T) {
		for _, c := range []struct {
			args       []string
			rule, user string
		}{
			{[]string{"--for-user", "user-12345", "--for-group", "sudoer"}, "mapping", "user-34567"},
			{[]string{"--for-user", "user-12345"}, "mapping", "user-34567"},
			{[]string{"--for-user", "bob", "--for-group", "dev", "--for-group", "sudoer"}, "super-user", ""},
			{[]string{"--for-user", "ext-alice"}, "external", "alice-ext"},
			{[]string{"--for-user", "tie"}, "tie-first", "tie-a"},
			{[]string{"--for-user", "tim"}, "tie-second", "tie-b"},
		} {
			r := mustOn(t, consumer, append([]string{"exchange", "resolve", "--remote-cluster-id", "provider", "-o", "json"}, c.args...)...)
			var obj struct {
				Status struct {
					Rule    string           `json:"rule"`
					Pairing bool             `json:"pairingIdentity"`
					Target  *exchange.Target `json:"target"`
				} `json:"status"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &obj); err != nil {
				t.Fatal(err, r)
			}
			got := obj.Status
			if got.Rule != c.rule || (c.user == "") != got.Pairing || (got.Target != nil && got.Target.User != c.user) {
				t.Errorf("resolve %v: got %+v, want rule %s target %q", c.args, got, c.rule, c.user)
			}
		}
		// user-12345 reaching another provider is not the mapping's
		r := on(t, consumer, "exchange", "resolve", "--remote-cluster-id", "elsewhere", "--for-user", "user-12345")
		if r.code == 0 || !strings.Contains(r.stderr, "no identity-exchange rule matches") {
			t.Errorf("user-12345 to another provider: %s", r)
		}
		r = on(t, consumer, "exchange", "resolve", "--remote-cluster-id", "provider", "--for-user", "nobody", "--for-group", "sudoers")
		if r.code == 0 || !strings.Contains(r.stderr, `--for-user "nobody": no identity-exchange rule matches`) {
			t.Errorf("nobody: %s", r)
		}
		if r := mustOn(t, consumer, "exchange", "resolve", "--remote-cluster-id", "provider", "--for-user", "user-12345"); !strings.Contains(r.stdout, "mapping") {
			t.Errorf("table: %s", r)
		}
		// A privileged user gets the pairing's own kubeconfig.
		pairing := mustOn(t, consumer, "get", "kubeconfig", "--remote-cluster-id", "provider").stdout
		if r := getKubeconfig("--for-user", "bob", "--for-group", "sudoer"); r.code != 0 || r.stdout != pairing {
			t.Errorf("privileged: %s", r)
		}
		if r := getKubeconfig("--for-user", "nobody"); r.code == 0 || r.stdout != "" {
			t.Errorf("nobody got a kubeconfig: %s", r)
		}
	})

	// Done 2: the external service's malformed answer, 500 and timeout each refuse, with nothing created.
	t.Run("external refusals", func(t *testing.T) {
		before := exchangeObjects(t)
		for mode, want := range map[string]string{
			"malformed": "is not the JSON object",
			"500":       "answered HTTP 500",
			"slow":      "did not answer within 5s",
		} {
			svc.mode.Store(mode)
			r := getKubeconfig(append([]string{"--for-user", "ext-mallory"}, oneShot...)...)
			if r.code == 0 || !strings.Contains(r.stderr, "no identity is handed out") || !strings.Contains(r.stderr, want) || r.stdout != "" {
				t.Errorf("service %s: want a refusal naming %q, got %s", mode, want, r)
			}
			if r := on(t, consumer, "exchange", "resolve", "--remote-cluster-id", "provider", "--for-user", "ext-mallory"); r.code == 0 {
				t.Errorf("resolve with service %s: %s", mode, r)
			}
		}
		svc.mode.Store("ok")
		if after := exchangeObjects(t); !slices.Equal(before, after) {
			t.Errorf("refused exchanges left objects: before %v, after %v", before, after)
		}
	})

	// Done 3: a static kubeconfig acts as its target and as nobody else.
	var staticFile string
	keep := t.TempDir()
	t.Run("static one shot", func(t *testing.T) {
		r := getKubeconfig(append([]string{"--for-user", "user-12345", "--for-group", "sudoer"}, oneShot...)...)
		if r.code != 0 {
			t.Fatalf("get kubeconfig: %s", r)
		}
		staticFile = filepath.Join(keep, "static.kubeconfig")
		if err := os.WriteFile(staticFile, []byte(r.stdout), 0o600); err != nil {
			t.Fatal(err)
		}
		info, wr := whoamiFile(t, staticFile)
		if wr.code != 0 || info.Username != "user-34567" || !slices.Contains(info.Groups, "team-a") {
			t.Fatalf("whoami: %+v %s", info, wr)
		}
		pairingFile, _ := issuedConfig(t)
		pairingUser, pr := whoamiFile(t, pairingFile)
		if pr.code != 0 {
			t.Fatal(pr)
		}
		for _, as := range [][]string{{"--as", "other-user"}, {"--as", pairingUser.Username}, {"--as-group", "system:masters"},
			{"--as", "user-34567", "--as-group", "team-b"}, {"--as", "system:admin"}} {
			// auth whoami hides the reason; any request shows the impersonation refused.
			if r := kubectlAs(t, staticFile, append([]string{"get", "--raw", "/version"}, as...)...); r.code == 0 ||
				!strings.Contains(r.stderr, "Forbidden") || !strings.Contains(r.stderr, "cannot impersonate") {
				t.Errorf("static kubeconfig with %v: want Forbidden, got %s", as, r)
			}
		}
		// Without the impersonation fields, the credential's own user can do nothing.
		cfg, err := clientcmd.LoadFromFile(staticFile)
		if err != nil {
			t.Fatal(err)
		}
		for _, ai := range cfg.AuthInfos {
			ai.Impersonate, ai.ImpersonateGroups = "", nil
		}
		bare := filepath.Join(t.TempDir(), "bare.kubeconfig")
		if err := clientcmd.WriteToFile(*cfg, bare); err != nil {
			t.Fatal(err)
		}
		self, br := whoamiFile(t, bare)
		if br.code != 0 || !regexp.MustCompile(`^kubectl-federate:consumer:exchange-[0-9a-f]{32}$`).MatchString(self.Username) {
			t.Errorf("bare credential: %+v %s", self, br)
		}
		for _, args := range [][]string{{"get", "pods", "-n", tenantNS}, {"get", "pods", "-n", "default"}, {"get", "secrets", "-A"}} {
			if r := kubectlAs(t, bare, args...); r.code == 0 || !strings.Contains(r.stderr, "forbidden") {
				t.Errorf("bare credential %v: want forbidden, got %s", args, r)
			}
		}
		// Its own rights are the constrained-impersonation verbs only (and what every authenticated user
		// has: self reviews, discovery): no legacy impersonate, nothing to act on as itself.
		r = kubectlAs(t, bare, "auth", "can-i", "--list", "-n", tenantNS)
		for line := range strings.SplitSeq(r.stdout, "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || f[0] == "Resources" || strings.Contains(f[0], "selfsubject") {
				continue
			}
			verbs := strings.Trim(f[len(f)-1], "[]")
			if strings.HasPrefix(f[0], "[") && verbs == "get" { // discovery's non-resource URLs
				continue
			}
			for _, v := range strings.Split(verbs, " ") {
				if !strings.HasPrefix(v, "impersonate:user-info") && !strings.HasPrefix(v, "impersonate-on:user-info:") {
					t.Errorf("bare credential may %s: %s", v, line)
				}
			}
		}
		bareCfg, err := clientcmd.BuildConfigFromFlags("", bare)
		if err != nil {
			t.Fatal(err)
		}
		bareCS := kubernetes.NewForConfigOrDie(bareCfg)
		for _, c := range []struct {
			verb, group, user string
			want              bool
		}{
			{"impersonate:user-info", "authentication.k8s.io", "user-34567", true},
			{"impersonate:user-info", "authentication.k8s.io", "other", false},
			{"impersonate", "", "user-34567", false}, // never the legacy verb
		} {
			review, err := bareCS.AuthorizationV1().SelfSubjectAccessReviews().Create(t.Context(), &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authzv1.ResourceAttributes{Verb: c.verb, Group: c.group, Resource: "users", Name: c.user}}}, metav1.CreateOptions{})
			if err != nil || review.Status.Allowed != c.want {
				t.Errorf("may the bare credential %s users/%s (group %q)? want %v, got %+v %v", c.verb, c.user, c.group, c.want, review, err)
			}
		}
		// Asking again reuses the credential: nothing is issued.
		before := exchangeObjects(t)
		again := getKubeconfig("--for-user", "user-12345", "--for-group", "sudoer")
		if again.code != 0 || again.stdout != r0(t, staticFile) {
			t.Errorf("second get kubeconfig: %s", again)
		}
		if after := exchangeObjects(t); !slices.Equal(before, after) {
			t.Errorf("reuse changed objects: before %v, after %v", before, after)
		}
		// status shows the credential on both sides; --check proves it acts as its target.
		var held, issued bool
		for _, s := range statusOf(t, mustOn(t, consumer, "status", "--check", "-o", "json")).Credentials {
			if s.Kind == status.KindExchange && s.Target == "user-34567" {
				held = true
				if s.Check == nil || !s.Check.OK || s.Check.User != "user-34567" || s.NotAfter == nil {
					t.Errorf("consumer status of the exchange credential: %+v check %+v", s, s.Check)
				}
			}
		}
		for _, s := range statusOf(t, mustOn(t, provider, "status", "-o", "json")).Credentials {
			issued = issued || (s.Kind == status.KindExchange && s.Target == "user-34567" && s.RemoteClusterID == "consumer")
		}
		if !held || !issued {
			t.Errorf("status lists the exchange credential held %v, issued %v", held, issued)
		}
	})

	t.Run("external one shot", func(t *testing.T) {
		r := getKubeconfig(append([]string{"--for-user", "ext-alice"}, oneShot...)...)
		if r.code != 0 {
			t.Fatalf("get kubeconfig: %s", r)
		}
		info, wr := whoamiFile(t, writeFile(t, "ext.kubeconfig", r.stdout))
		if wr.code != 0 || info.Username != "alice-ext" || !slices.Contains(info.Groups, "ext-team") {
			t.Errorf("whoami: %+v %s", info, wr)
		}
	})

	// Done 4: the manual flow: pending with the provider's command named, allow, then the credential.
	t.Run("manual flow", func(t *testing.T) {
		r := getKubeconfig("--for-user", "tie")
		m := regexp.MustCompile(`kubectl federate allow exchange (tie-first-[0-9a-f]{32}) --remote-cluster-id consumer`).FindStringSubmatch(r.stderr)
		if r.code == 0 || r.stdout != "" || m == nil {
			t.Fatalf("first get kubeconfig: %s", r)
		}
		name := m[1]
		before := exchangeObjects(t)
		if r := getKubeconfig("--for-user", "tie"); r.code == 0 || !strings.Contains(r.stderr, "waiting for the provider's consent") {
			t.Errorf("second get kubeconfig: %s", r)
		}
		if after := exchangeObjects(t); !slices.Equal(before, after) {
			t.Errorf("asking again changed objects: before %v, after %v", before, after)
		}
		list := mustOn(t, provider, "allow", "exchange", "--remote-cluster-id", "consumer")
		if !strings.Contains(list.stdout, "tie-first-") || !strings.Contains(list.stdout, "tie-a") || !strings.Contains(list.stdout, "Pending") {
			t.Errorf("allow exchange (list): %s", list)
		}
		if r := mustOn(t, provider, "allow", "exchange", name, "--remote-cluster-id", "consumer"); !strings.Contains(r.stdout, "Issued") {
			t.Errorf("allow exchange: %s", r)
		}
		allowed := exchangeObjects(t)
		mustOn(t, provider, "allow", "exchange", name, "--remote-cluster-id", "consumer")
		if again := exchangeObjects(t); !slices.Equal(allowed, again) {
			t.Errorf("allowing again changed objects: before %v, after %v", allowed, again)
		}
		// Answering by rule, which the tenant names, is gone: only names the administrator saw are answered.
		if r := on(t, provider, "allow", "exchange", "--remote-cluster-id", "consumer", "--rule", "tie-first"); r.code == 0 || !strings.Contains(r.stderr, "unknown flag: --rule") {
			t.Errorf("allow exchange --rule: %s", r)
		}
		if again := exchangeObjects(t); !slices.Equal(allowed, again) {
			t.Errorf("allow exchange --rule changed objects: before %v, after %v", allowed, again)
		}
		r = getKubeconfig("--for-user", "tie")
		if r.code != 0 {
			t.Fatalf("get kubeconfig after allow: %s", r)
		}
		if info, wr := whoamiFile(t, writeFile(t, "tie.kubeconfig", r.stdout)); wr.code != 0 || info.Username != "tie-a" {
			t.Errorf("whoami: %+v %s", info, wr)
		}
	})

	// Done 4: the provider refuses a system: target and a CSR for another user, naming the field, with
	// nothing created.
	t.Run("provider refuses", func(t *testing.T) {
		key, err := credential.NewClientKey("")
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalPKIXPublicKey(key.Public())
		if err != nil {
			t.Fatal(err)
		}
		scope := exchange.Scope{}.Canonical()
		for _, c := range []struct {
			rule   string
			target exchange.Target
			cn     string
			want   string
		}{
			{"evil", exchange.Target{User: "system:masters"}, "", `spec.target.user "system:masters": names in the system: namespace`},
			{"evilgroup", exchange.Target{User: "eve", Groups: []string{"system:masters"}}, "", `spec.target.groups[0] "system:masters"`},
			{"wrongcn", exchange.Target{User: "eve"}, "kubectl-federate:consumer:exchange-00000000000000000000000000000000", `spec.csr: subject CN "kubectl-federate:consumer:exchange-00000000000000000000000000000000" is not the user of this request`},
		} {
			hash := exchange.RequestHash(c.rule, c.target, scope, der)
			name := exchange.RequestName(c.rule, hash)
			cn := c.cn
			if cn == "" {
				cn = exchange.User("consumer", hash)
			}
			csr, err := credential.NewCSR(cn, key)
			if err != nil {
				t.Fatal(err)
			}
			obj := &v1alpha1.ExchangeRequest{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.ExchangeRequestKind},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tenantNS},
				Spec: v1alpha1.ExchangeRequestSpec{Rule: c.rule, Target: v1alpha1.ExchangeTarget{User: c.target.User, Groups: c.target.Groups},
					Scope: v1alpha1.ExchangeScope{Verbs: scope.Verbs, Resources: scope.Resources}, CSR: csr}}
			data, _ := json.Marshal(obj)
			u := &unstructured.Unstructured{}
			if err := json.Unmarshal(data, &u.Object); err != nil {
				t.Fatal(err)
			}
			if _, err := dyn(t, provider).Resource(v1alpha1.ExchangeRequestGVR).Namespace(tenantNS).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			before := exchangeObjects(t)
			r := on(t, provider, "allow", "exchange", name, "--remote-cluster-id", "consumer")
			if r.code == 0 || !strings.Contains(r.stderr, c.want) {
				t.Errorf("%s: want a refusal naming %q, got %s", c.rule, c.want, r)
			}
			after := exchangeObjects(t)
			var created []string
			for _, o := range after {
				if !slices.Contains(before, o) && !strings.Contains(o, "exchangerequests "+name) {
					created = append(created, o)
				}
			}
			if len(created) > 0 {
				t.Errorf("%s: the refusal created %v", c.rule, created)
			}
			got, err := dyn(t, provider).Resource(v1alpha1.ExchangeRequestGVR).Namespace(tenantNS).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if phase, _, _ := unstructured.NestedString(got.Object, "status", "phase"); phase != exchange.ExchangeRefused {
				t.Errorf("%s: phase %q, want Refused", c.rule, phase)
			}
		}
	})

	// Done 5: renewal keeps exchange credentials; unauthenticate removes them on both sides.
	t.Run("lifecycle", func(t *testing.T) {
		authenticate(t)
		if info, r := whoamiFile(t, staticFile); r.code != 0 || info.Username != "user-34567" {
			t.Errorf("after renewal: %+v %s", info, r)
		}
		unauthenticate(t)
		if _, r := whoamiFile(t, staticFile); r.code == 0 {
			t.Errorf("after unauthenticate the static kubeconfig still works: %s", r)
		}
		var left []string
		for _, o := range exchangeObjects(t) {
			if !strings.Contains(o, "certificatesigningrequests") && !strings.Contains(o, "exchangerequests") {
				left = append(left, o)
			}
		}
		if len(left) > 0 {
			t.Errorf("unauthenticate left %v", left)
		}
		cs := kubernetes.NewForConfigOrDie(provider.Config)
		if csrs, err := cs.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{LabelSelector: member.LabelExchange}); err != nil || len(csrs.Items) > 0 {
			t.Errorf("exchange CSRs left: %v %v", csrs, err)
		}
	})

	// revoke on the provider alone takes every exchange credential's rights away at once.
	t.Run("revoke", func(t *testing.T) {
		authenticate(t)
		r := getKubeconfig(append([]string{"--for-user", "user-12345"}, oneShot...)...)
		if r.code != 0 {
			t.Fatalf("get kubeconfig: %s", r)
		}
		file := writeFile(t, "static.kubeconfig", r.stdout)
		if info, wr := whoamiFile(t, file); wr.code != 0 || info.Username != "user-34567" {
			t.Fatalf("whoami: %+v %s", info, wr)
		}
		mustOn(t, provider, "revoke", "--remote-cluster-id", "consumer")
		if r := kubectlAs(t, file, "get", "--raw", "/version"); r.code == 0 || !strings.Contains(r.stderr, "cannot impersonate") {
			t.Errorf("after revoke the static kubeconfig still works: %s", r)
		}
		for _, o := range exchangeObjects(t) {
			if strings.Contains(o, "clusterrole") {
				t.Errorf("revoke left %s", o)
			}
		}
		// A revoked pairing gets nothing; renewed, it asks anew rather than hand out the dead kubeconfig.
		if r := getKubeconfig("--for-user", "user-12345"); r.code == 0 || r.stdout != "" {
			t.Errorf("get kubeconfig for a revoked pairing: %s", r)
		}
		authenticate(t)
		r = getKubeconfig(append([]string{"--for-user", "user-12345"}, oneShot...)...)
		if r.code != 0 || r.stdout == r0(t, file) {
			t.Fatalf("get kubeconfig after renewal: %s", r)
		}
		if info, wr := whoamiFile(t, writeFile(t, "renewed.kubeconfig", r.stdout)); wr.code != 0 || info.Username != "user-34567" {
			t.Errorf("whoami after renewal: %+v %s", info, wr)
		}
		// The same rule and target granted again do not revive the revoked credential.
		if r := kubectlAs(t, file, "get", "--raw", "/version"); r.code == 0 || !strings.Contains(r.stderr, "Forbidden") {
			t.Errorf("the revoked kubeconfig works again after a new grant of the same rule and target: %s", r)
		}
	})
}

// r0 reads a file.
func r0(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

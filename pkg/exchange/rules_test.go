package exchange

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"
)

const seedCorrected = `apiVersion: cluster.core.oam.dev/v1alpha1
kind: ClusterGatewayConfiguration
spec:
  clientIdentityExchanger:
    rules:
    - name: super-user
      source: {group: sudoer}
      type: PrivilegedIdentityExchanger
      priority: 10
    - name: mapping
      source: {user: user-12345, cluster: cluster-34567}
      target: {user: user-34567}
      type: StaticMappingIdentityExchanger
      priority: 100
    - name: external
      source: {userPattern: "ext-.*"}
      url: https://external.exchanger/
      type: ExternalIdentityExchanger
      priority: 20
`

func TestSeedResolves(t *testing.T) {
	cfg, err := Parse([]byte(seedCorrected))
	if err != nil {
		t.Fatal(err)
	}
	rules := cfg.Spec.ClientIdentityExchanger.Rules
	for _, c := range []struct {
		req  Request
		want string
	}{
		{Request{User: "user-12345", Groups: []string{"sudoer"}, Cluster: "cluster-34567"}, "mapping"},
		{Request{User: "user-12345", Cluster: "cluster-34567"}, "mapping"},
		{Request{User: "user-12345", Groups: []string{"sudoer"}, Cluster: "other"}, "super-user"},
		{Request{User: "bob", Groups: []string{"dev", "sudoer"}, Cluster: "cluster-34567"}, "super-user"},
		{Request{User: "ext-alice", Cluster: "cluster-34567"}, "external"},
		{Request{User: "ext-alice", Groups: []string{"sudoer"}, Cluster: "c"}, "external"}, // 20 beats 10
		{Request{User: "xext-alice", Cluster: "c"}, ""},                                    // anchored
		{Request{User: "ext-", Cluster: "c"}, "external"},
		{Request{User: "user-12345", Cluster: "cluster-3456"}, ""},
		{Request{User: "nobody", Groups: []string{"sudoers"}, Cluster: "c"}, ""},
	} {
		r, ok := Resolve(rules, c.req)
		got := ""
		if ok {
			got = r.Name
		}
		if got != c.want {
			t.Errorf("Resolve(%+v) = %q, want %q", c.req, got, c.want)
		}
	}
}

func TestTiesGoByFileOrder(t *testing.T) {
	file := `apiVersion: federate.dev/v1alpha1
kind: ClusterGatewayConfiguration
spec:
  clientIdentityExchanger:
    rules:
    - {name: low, type: PrivilegedIdentityExchanger, priority: 1, source: {userPattern: ".*"}}
    - {name: first, type: StaticMappingIdentityExchanger, priority: 5, source: {groupPattern: "team-.*"}, target: {user: a}}
    - {name: second, type: StaticMappingIdentityExchanger, priority: 5, source: {userPattern: "al.*"}, target: {user: b}}
    - {name: uid, type: StaticMappingIdentityExchanger, priority: 5, source: {uid: "42", user: zed}, target: {user: c, groups: [g], uid: u}}
`
	cfg, err := Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	rules := cfg.Spec.ClientIdentityExchanger.Rules
	for _, c := range []struct {
		req  Request
		want string
	}{
		{Request{User: "alice", Groups: []string{"x", "team-a"}}, "first"},
		{Request{User: "alice"}, "second"},
		{Request{User: "zed", UID: "42"}, "uid"},
		{Request{User: "zed", UID: "43"}, "low"},
	} {
		if r, _ := Resolve(rules, c.req); r == nil || r.Name != c.want {
			t.Errorf("Resolve(%+v) = %v, want %q", c.req, r, c.want)
		}
	}
	// Reordered, the other rule of equal priority wins.
	rules[1], rules[2] = rules[2], rules[1]
	if r, _ := Resolve(rules, Request{User: "alice", Groups: []string{"team-a"}}); r.Name != "second" {
		t.Errorf("after reordering: %q", r.Name)
	}
}

func TestUnvalidatedPatternMatchesNobody(t *testing.T) {
	rules := []Rule{{Name: "r", Type: Privileged, Source: Source{UserPattern: ".*"}}}
	if _, ok := Resolve(rules, Request{User: "alice"}); ok {
		t.Fatal("a pattern never compiled matched")
	}
}

func TestBadFilesNameTheField(t *testing.T) {
	head := "apiVersion: federate.dev/v1alpha1\nkind: ClusterGatewayConfiguration\nspec:\n  clientIdentityExchanger:\n    rules:\n"
	ok := "    - {name: ok, type: PrivilegedIdentityExchanger, source: {group: g}}\n"
	ca := base64.StdEncoding.EncodeToString([]byte("not pem"))
	for _, c := range []struct{ rule, want string }{
		{`{name: x, type: Magic, source: {user: a}}`, `rules[1].type "Magic": must be one of`},
		{`{name: x, source: {user: a}}`, `rules[1].type: must be one of`},
		{`{name: x, type: StaticMappingIdentityExchanger, source: {user: a}}`, `rules[1].target: a StaticMappingIdentityExchanger rule needs one`},
		{`{name: x, type: StaticMappingIdentityExchanger, source: {user: a}, target: {groups: [g]}}`, `rules[1].target.user: must not be empty`},
		{`{name: x, type: PrivilegedIdentityExchanger, source: {user: a}, target: {user: b}}`, `rules[1].target: a PrivilegedIdentityExchanger rule`},
		{`{name: x, type: ExternalIdentityExchanger, source: {user: a}, url: "https://e/", target: {user: b}}`, `rules[1].target: an ExternalIdentityExchanger rule's target`},
		{`{name: x, type: ExternalIdentityExchanger, source: {user: a}}`, `rules[1].url: an ExternalIdentityExchanger rule needs`},
		{`{name: x, type: ExternalIdentityExchanger, source: {user: a}, url: "http://external.exchanger/"}`, `rules[1].url "http://external.exchanger/": must be https`},
		{`{name: x, type: ExternalIdentityExchanger, source: {user: a}, url: "ftp://e/"}`, `rules[1].url "ftp://e/": must be https`},
		{`{name: x, type: ExternalIdentityExchanger, source: {user: a}, url: "https://e/", caBundle: ` + ca + `}`, `rules[1].caBundle: holds no PEM`},
		{`{name: x, type: PrivilegedIdentityExchanger, source: {user: a}, url: "https://e/"}`, `rules[1].url: only an ExternalIdentityExchanger`},
		{`{name: x, type: PrivilegedIdentityExchanger, source: {userPattern: "ext-("}}`, `rules[1].source.userPattern "ext-(": is not a valid regular expression`},
		{`{name: ok, type: PrivilegedIdentityExchanger, source: {user: a}}`, `rules[1].name "ok": rules[0] has the same name`},
		{`{name: Bad_Name, type: PrivilegedIdentityExchanger, source: {user: a}}`, `rules[1].name "Bad_Name": must be a DNS label`},
		{`{name: "", type: PrivilegedIdentityExchanger, source: {user: a}}`, `rules[1].name: must not be empty`},
		{`{name: ` + strings.Repeat("a", 41) + `, type: PrivilegedIdentityExchanger, source: {user: a}}`, `must be a DNS label of at most 40`},
		{`{name: x, type: PrivilegedIdentityExchanger, source: {}}`, `rules[1].source: must set at least one matcher`},
		{`{name: x, type: PrivilegedIdentityExchanger}`, `rules[1].source: must set at least one matcher`},
		{`{name: x, type: PrivilegedIdentityExchanger, source: {user: a, userPattern: b}}`, `rules[1].source: user and userPattern are both set`},
		{`{name: x, type: PrivilegedIdentityExchanger, source: {cluster: a, clusterPattern: b}}`, `rules[1].source: cluster and clusterPattern are both set`},
		{`{name: x, type: StaticMappingIdentityExchanger, source: {user: a}, target: {user: "system:admin"}}`, `rules[1].target.user "system:admin": names in the system: namespace`},
		{`{name: x, type: StaticMappingIdentityExchanger, source: {user: a}, target: {user: b, groups: [ok, "system:masters"]}}`, `rules[1].target.groups[1] "system:masters"`},
		{`{name: x, type: StaticMappingIdentityExchanger, source: {user: a}, target: {user: b, uid: "system:x"}}`, `rules[1].target.uid "system:x"`},
		{`{name: x, type: StaticMappingIdentityExchanger, source: {user: a}, target: {user: "kubectl-federate:other:x"}}`, `rules[1].target.user "kubectl-federate:other:x": names starting with kubectl-federate:`},
		{`{name: x, type: StaticMappingIdentityExchanger, source: {user: a}, target: {user: b, groups: ["kubectl-federate:tenants"]}}`, `rules[1].target.groups[0]`},
		{`{name: x, type: PrivilegedIdentityExchanger, source: {user: a}, extra: 1}`, `spec.clientIdentityExchanger.rules[1].extra: unknown field`},
		{`{name: x, type: PrivilegedIdentityExchanger, source: {users: a}}`, `rules[1].source.users: unknown field`},
		{`{name: x, type: PrivilegedIdentityExchanger, priority: high, source: {user: a}}`, `priority`},
	} {
		_, err := Parse([]byte(head + ok + "    - " + c.rule + "\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("rule %s: got %v, want an error containing %q", c.rule, err, c.want)
		}
	}
	for _, c := range []struct{ file, want string }{
		{"", "is empty"},
		{"apiVersion: v1\nkind: ClusterGatewayConfiguration\n", `apiVersion "v1"`},
		{"apiVersion: federate.dev/v1alpha1\nkind: ConfigMap\n", `kind "ConfigMap"`},
		{"apiVersion: federate.dev/v1alpha1\nkind: ClusterGatewayConfiguration\nspec: {other: 1}\n", "spec.other: unknown field"},
		{"- a\n- b\n", "the rule file"},
	} {
		_, err := Parse([]byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("file %q: got %v, want %q", c.file, err, c.want)
		}
	}
}

func TestURLs(t *testing.T) {
	for u, ok := range map[string]bool{
		"https://e.example/x": true, "http://127.0.0.1:8080/": true, "http://127.1.2.3/": true, "http://[::1]:9/": true,
		"http://localhost/": true, "http://10.0.0.1/": false, "http://e.example/": false, "https://": false,
		"https://user:pw@e/": false, "/relative": false, "http://localhost.evil.example/": false,
	} {
		if err := ValidateURL("url", u); (err == nil) != ok {
			t.Errorf("ValidateURL(%q) = %v, want ok=%v", u, err, ok)
		}
	}
}

func TestGrantAndRequestHashes(t *testing.T) {
	tgt := Target{User: "u", Groups: []string{"a", "b"}}
	sc := Scope{Verbs: []string{"list", "get"}, Resources: []string{"pods"}, Namespaces: []string{"team-a"}}
	a := GrantHash("r", tgt, sc)
	if len(a) != 32 {
		t.Errorf("grant hash %q: want 32 hex digits (128 bits)", a)
	}
	if a != GrantHash("r", Target{User: "u", Groups: []string{"b", "a"}}, Scope{Verbs: []string{"get", "list", "get"}, Resources: []string{"pods"}, Namespaces: []string{"team-a"}}) {
		t.Error("the grant hash depends on the order or repeats of groups and verbs")
	}
	different := []struct {
		rule string
		t    Target
		s    Scope
	}{
		{"r2", tgt, sc},
		{"r", Target{User: "u", Groups: []string{"a"}}, sc},
		{"r", Target{User: "u", Groups: []string{"a", "b"}, UID: "x"}, sc},
		{"r", tgt, Scope{Verbs: []string{"get"}, Resources: []string{"pods"}, Namespaces: []string{"team-a"}}},
		{"r", tgt, Scope{Verbs: []string{"list", "get"}, Resources: []string{"pods", "pods/log"}, Namespaces: []string{"team-a"}}},
		{"r", tgt, Scope{Verbs: []string{"list", "get"}, Resources: []string{"pods"}}},
		// An item of one list never reads as the next list: a group named "verbs" is not a verb.
		{"r", Target{User: "u", Groups: []string{"a", "b", "verbs"}}, Scope{Verbs: []string{"get"}, Resources: []string{"pods"}, Namespaces: []string{"team-a"}}},
	}
	for _, d := range different {
		if GrantHash(d.rule, d.t, d.s) == a {
			t.Errorf("%+v shares the grant hash of %+v", d, sc)
		}
	}
	if GrantHash("a", Target{User: "b"}, sc) == GrantHash("a\x00b", Target{User: ""}, sc) {
		t.Error("ambiguous encoding of rule and user")
	}
	k1, k2 := RequestHash("r", tgt, sc, []byte("key-1")), RequestHash("r", tgt, sc, []byte("key-2"))
	if k1 == k2 || k1 == a || len(k1) != 32 {
		t.Errorf("request hashes %q %q (grant %q): a new key must be a new request", k1, k2, a)
	}
}

func TestScopes(t *testing.T) {
	for _, c := range []struct {
		s    Scope
		want string // "" for valid
	}{
		{Scope{}, ""},
		{Scope{Verbs: []string{"get", "*"}, Resources: []string{"pods", "pods/log", "deployments.apps", "deployments.apps/scale", "*"}, Namespaces: []string{"team-a"}}, ""},
		{Scope{Verbs: []string{"GET"}}, `s.verbs[0] "GET"`},
		{Scope{Verbs: []string{"get list"}}, `s.verbs[0]`},
		{Scope{Resources: []string{"Pods"}}, `s.resources[0] "Pods"`},
		{Scope{Resources: []string{"pods/"}}, `s.resources[0] "pods/"`},
		{Scope{Resources: []string{"deployments.Apps"}}, `the group "Apps"`},
		{Scope{Resources: []string{""}}, `s.resources[0] ""`},
		{Scope{Namespaces: []string{"Team_A"}}, `s.namespaces[0] "Team_A"`},
		{Scope{Namespaces: make([]string, 33)}, "at most 32"},
	} {
		err := ValidateScope("s", c.s)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("ValidateScope(%+v) = %v, want %q", c.s, err, c.want)
		}
	}
	d := Scope{}.Canonical()
	if !slices.Equal(d.Verbs, []string{"get", "list", "watch"}) || slices.Contains(d.Resources, "secrets") || !d.ClusterWide() {
		t.Errorf("defaults %+v: want read verbs, no Secrets, cluster-wide", d)
	}
	if got := (Scope{Verbs: []string{"list", "get"}, Resources: []string{"pods"}, Namespaces: []string{"b", "a"}}).String(); got != "get,list on pods in a,b" {
		t.Errorf("String() = %q", got)
	}
	if got := (Scope{Verbs: []string{"get"}, Resources: []string{"pods"}}).String(); !strings.HasSuffix(got, "cluster-wide") {
		t.Errorf("a scope with no namespace must say it is cluster-wide: %q", got)
	}
	r, err := ParseResource("deployments.apps/scale")
	if err != nil || r != (Resource{Group: "apps", Resource: "deployments", Subresource: "scale"}) || r.String() != "deployments.apps/scale" || r.RBACResource() != "deployments/scale" {
		t.Errorf("ParseResource: %+v %v", r, err)
	}
}

func TestReach(t *testing.T) {
	ns := []string{"team-a"}
	for _, c := range []struct {
		s    Scope
		want []string
	}{
		{Scope{Verbs: []string{"get", "list"}, Resources: []string{"pods"}, Namespaces: ns}, nil},
		{Scope{}, nil}, // the defaults read, cluster-wide, and never Secrets
		{Scope{Verbs: []string{"create"}, Resources: []string{"pods"}, Namespaces: ns}, nil},
		{Scope{Verbs: []string{"create"}, Resources: []string{"pods"}}, []string{ReachClusterWrite}},
		{Scope{Verbs: []string{"get"}, Resources: []string{"secrets"}, Namespaces: ns}, []string{ReachSecrets}},
		{Scope{Verbs: []string{"create"}, Resources: []string{"rolebindings.rbac.authorization.k8s.io"}, Namespaces: ns}, []string{ReachRBAC}},
		{Scope{Verbs: []string{"get"}, Resources: []string{"roles.rbac.authorization.k8s.io"}, Namespaces: ns}, nil},
		{Scope{Verbs: []string{"bind"}, Resources: []string{"clusterroles.rbac.authorization.k8s.io"}, Namespaces: ns}, []string{ReachRBAC}},
		{Scope{Verbs: []string{"impersonate"}, Resources: []string{"users"}, Namespaces: ns}, []string{ReachImpersonation}},
		{Scope{Verbs: []string{"create"}, Resources: []string{"serviceaccounts/token"}, Namespaces: ns}, []string{ReachTokens}},
		{Scope{Verbs: []string{"update"}, Resources: []string{"certificatesigningrequests.certificates.k8s.io/approval"}, Namespaces: ns}, []string{ReachCSRApproval}},
		{Scope{Verbs: []string{"get"}, Resources: []string{"nodes/proxy"}, Namespaces: ns}, []string{ReachNodeProxy}},
		{Scope{Verbs: []string{"get"}, Resources: []string{"*"}, Namespaces: ns}, []string{ReachSecrets, ReachEveryResource, ReachNodeProxy}},
		{Scope{Verbs: []string{"*"}, Resources: []string{"pods"}, Namespaces: ns}, []string{ReachEveryVerb}},
	} {
		if got := c.s.Reach(); !slices.Equal(got, c.want) {
			t.Errorf("Reach(%s) = %q, want %q", c.s, got, c.want)
		}
	}
}

func TestRuleScope(t *testing.T) {
	file := `apiVersion: federate.dev/v1alpha1
kind: ClusterGatewayConfiguration
spec:
  clientIdentityExchanger:
    rules:
    - name: reader
      type: StaticMappingIdentityExchanger
      source: {user: alice}
      target: {user: alice}
      scope: {verbs: [get, list], resources: [pods], namespaces: [team-a]}
    - name: defaults
      type: StaticMappingIdentityExchanger
      source: {user: bob}
      target: {user: bob}
`
	cfg, err := Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	rules := cfg.Spec.ClientIdentityExchanger.Rules
	if got := rules[0].GrantScope(); got.String() != "get,list on pods in team-a" {
		t.Errorf("scope %q", got.String())
	}
	if got := rules[1].GrantScope(); !slices.Equal(got.Verbs, DefaultVerbs) {
		t.Errorf("default scope %+v", got)
	}
	for _, c := range []struct{ edit, want string }{
		{"namespaces: [team-a]", "namespaces: [Team-A]"},
		{"verbs: [get, list]", "verbs: [get, list], extra: 1"},
	} {
		_, err := Parse([]byte(strings.Replace(file, c.edit, c.want, 1)))
		if err == nil || !strings.Contains(err.Error(), "spec.clientIdentityExchanger.rules[0].scope") {
			t.Errorf("%s: want an error naming rules[0].scope, got %v", c.want, err)
		}
	}
	priv := strings.Replace(file, "type: StaticMappingIdentityExchanger\n      source: {user: alice}\n      target: {user: alice}",
		"type: PrivilegedIdentityExchanger\n      source: {user: alice}", 1)
	if _, err := Parse([]byte(priv)); err == nil || !strings.Contains(err.Error(), "rules[0].scope") {
		t.Errorf("a privileged rule with a scope: %v", err)
	}
}

func TestCABundleNamesItsField(t *testing.T) {
	file := `apiVersion: federate.dev/v1alpha1
kind: ClusterGatewayConfiguration
spec:
  clientIdentityExchanger:
    rules:
    - name: external
      type: ExternalIdentityExchanger
      source: {userPattern: "ext-.*"}
      url: https://exchanger.example/exchange
      caBundle: LS0tLS1CRUdJTi...
`
	_, err := Parse([]byte(file))
	if err == nil || !strings.Contains(err.Error(), "spec.clientIdentityExchanger.rules[0].caBundle: is not base64") {
		t.Errorf("a placeholder caBundle: %v", err)
	}
}

// The order rules are listed in is the order Resolve weighs them: the highest priority first, file order
// among equals.
func TestInOrderIsResolveOrder(t *testing.T) {
	rules := []Rule{{Name: "a", Priority: 10}, {Name: "b", Priority: 100}, {Name: "c"}, {Name: "d", Priority: 100}, {Name: "e", Priority: 10}}
	var got []string
	for _, r := range InOrder(rules) {
		got = append(got, r.Name)
	}
	if strings.Join(got, " ") != "b d a e c" {
		t.Errorf("InOrder: %v", got)
	}
	if rules[0].Name != "a" {
		t.Error("InOrder changed its argument")
	}
}

package exchange

import (
	"encoding/base64"
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

func TestHash(t *testing.T) {
	a := Hash(Target{User: "u", Groups: []string{"a", "b"}})
	if a != Hash(Target{User: "u", Groups: []string{"b", "a"}}) || len(a) != 8 {
		t.Errorf("hash %q depends on group order", a)
	}
	if a == Hash(Target{User: "u", Groups: []string{"a"}}) || a == Hash(Target{User: "u", Groups: []string{"a", "b"}, UID: "x"}) {
		t.Error("different targets share a hash")
	}
	if Hash(Target{User: "a", Groups: []string{"b"}}) == Hash(Target{User: "a\x00b"}) {
		t.Error("ambiguous encoding")
	}
}

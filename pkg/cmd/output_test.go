package cmd_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
)

// printWorld is a paired world (edge consumes from farm) where every data command has something to print:
// a class, a slice granted through the one-shot path and one only recorded on the consumer, an extra
// namespace, exchange rules and a pending ExchangeRequest, an audit trail, and a nonce for a third cluster
// (lone) with its Tenant request in tenantFile.
func printWorld(t *testing.T) (w *cmdtest.World, tenantFile, rulesFile string) {
	t.Helper()
	w = cmdtest.NewWorld(t, "edge", "farm", "lone")
	dir := t.TempDir()
	rulesFile = filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rulesFile, []byte(`apiVersion: federate.dev/v1alpha1
kind: ClusterGatewayConfiguration
spec:
  clientIdentityExchanger:
    rules:
    - name: mapping
      type: StaticMappingIdentityExchanger
      source: {user: alice}
      target: {user: bob}
      scope: {namespaces: [federate-tenant-edge]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, step := range [][]string{
		{"authenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "farm", "--cluster-id", "edge", "--remote-cluster-id", "farm"},
		{"create", "resourceslice-class", "small", "--max-cpu", "2", "--max-memory", "4Gi", "--kubeconfig", "farm"},
		{"create", "resourceslice", "batch", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--cpu", "1", "--memory", "1Gi", "--submit=false"},
		{"request", "namespace", "edge-ci", "--kubeconfig", "edge", "--remote-kubeconfig", "farm"},
		{"exchange", "apply", "-f", rulesFile, "--kubeconfig", "edge"},
		{"create", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone"},
	} {
		if r := w.Run(step...); r.Code != 0 {
			t.Fatalf("%v: %s", step, r)
		}
	}
	// The one-shot slice is granted on the provider; its import on the consumer proves the credential over
	// HTTP, which a fake cannot serve, so it stops there with the slice recorded on both sides.
	if r := w.Run("create", "resourceslice", "gpu", "--kubeconfig", "edge", "--remote-kubeconfig", "farm", "--cpu", "1", "--memory", "1Gi"); !strings.Contains(r.Stderr, "Slice certificate issued") {
		t.Fatalf("create resourceslice gpu: %s", r)
	}
	// request exchange reaches the provider through the pairing's kubeconfig (HTTP): the domain step
	// leaves the same pending ExchangeRequest.
	_, err := exchange.RequestExchange(t.Context(), w.Domain("edge"), w.Domain("farm"), exchange.Options{ProviderID: "farm", Rule: "mapping",
		Target: exchange.Target{User: "bob"}, Scope: exchange.Scope{Namespaces: []string{"federate-tenant-edge"}}})
	var pending *exchange.PendingError
	if !errorsAs(err, &pending) {
		t.Fatalf("request exchange: %v", err)
	}
	n := w.Run("get", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone")
	tenant := w.Run("generate", "tenant", "--kubeconfig", "lone", "--nonce", n.Stdout)
	if n.Code != 0 || tenant.Code != 0 {
		t.Fatalf("nonce and tenant: %s\n%s", n, tenant)
	}
	tenantFile = filepath.Join(dir, "tenant.yaml")
	if err := os.WriteFile(tenantFile, []byte(tenant.Stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	return w, tenantFile, rulesFile
}

// printCase is a data command and what its objects are: kind.group and the names, in order.
type printCase struct {
	args  []string
	kind  string
	names []string
	list  bool
	// stored: -o yaml prints the file as stored (exchange get), not the object with its name
	stored bool
}

// Every data command prints with kubectl's formats: -o name as kind.group/name, jsonpath (over
// .items[*] for a list, which prints as a v1 List), go-template, json and yaml; a template that does not
// parse is a usage error (exit 1) before any request, and one that fails on the object prints nothing.
func TestKubectlOutputFormats(t *testing.T) {
	w, tenantFile, _ := printWorld(t)
	nonce := strings.TrimSpace(w.Run("get", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone").Stdout)
	cases := []printCase{
		{[]string{"status", "--kubeconfig", "farm"}, "credentialstatus.federate.dev",
			[]string{"provider.edge.controlplane", "provider.edge.resourceslice.gpu", "provider.lone.nonce"}, true, false},
		{[]string{"status", "--kubeconfig", "edge"}, "credentialstatus.federate.dev", nil, true, false},
		{[]string{"status", "--history", "--kubeconfig", "farm"}, "auditrecord.federate.dev", nil, true, false},
		{[]string{"info", "--kubeconfig", "farm"}, "clusterinfo.federate.dev", []string{"farm"}, false, false},
		{[]string{"get", "resourceslices", "--kubeconfig", "farm", "--remote-cluster-id", "edge"}, "resourcesliceinfo.federate.dev", []string{"gpu"}, true, false},
		{[]string{"get", "resourceslices", "--kubeconfig", "edge"}, "resourcesliceinfo.federate.dev", []string{"batch", "gpu"}, true, false},
		{[]string{"accept", "resourceslice", "--kubeconfig", "farm", "--remote-cluster-id", "edge"}, "resourcesliceinfo.federate.dev", []string{"gpu"}, true, false},
		{[]string{"accept", "resourceslice", "gpu", "--kubeconfig", "farm", "--remote-cluster-id", "edge"}, "resourceslice.federate.dev", []string{"gpu"}, false, false},
		{[]string{"grant", "namespace", "--kubeconfig", "farm", "--remote-cluster-id", "edge"}, "extranamespace.federate.dev", []string{"edge-ci"}, true, false},
		{[]string{"allow", "exchange", "--kubeconfig", "farm", "--remote-cluster-id", "edge"}, "exchangerequestinfo.federate.dev", nil, true, false},
		{[]string{"exchange", "get", "--kubeconfig", "edge"}, "clustergatewayconfiguration.federate.dev", []string{"federate-exchange-rules"}, false, true},
		{[]string{"exchange", "resolve", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--for-user", "alice"}, "exchangeresolution.federate.dev", []string{"mapping"}, false, false},
		{[]string{"get", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone"}, "nonceticket.federate.dev", []string{"lone"}, false, false},
		{[]string{"version"}, "version.federate.dev", []string{"kubectl-federate"}, false, false},
		{[]string{"generate", "tenant", "--kubeconfig", "lone", "--nonce", nonce}, "tenant.federate.dev", []string{"lone"}, false, false},
		{[]string{"generate", "identity", "--kubeconfig", "farm", "--remote-cluster-id", "lone", "-f", tenantFile}, "identity.federate.dev", []string{"controlplane-farm"}, false, false},
		{[]string{"create", "resourceslice-class", "small", "--max-cpu", "2", "--max-memory", "4Gi", "--kubeconfig", "farm"}, "resourcesliceclass.federate.dev", []string{"small"}, false, false},
		{[]string{"create", "resourceslice", "batch", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--cpu", "1", "--memory", "1Gi", "--submit=false"},
			"resourceslice.federate.dev", []string{"batch"}, false, false},
	}
	for _, c := range cases {
		t.Run(caseName(c.args), func(t *testing.T) {
			names := c.names
			if names == nil { // what this listing holds is whatever -o name says; the other formats must agree
				names = namesOf(t, c.kind, w.Run(append(c.args, "-o", "name")...))
				if len(names) == 0 {
					t.Fatalf("%v -o name printed nothing", c.args)
				}
			}
			checkFormats(t, w, c, names)
		})
	}
}

// caseName is the command's words and the cluster it runs on.
func caseName(args []string) string {
	var words []string
	for i, a := range args {
		if strings.HasPrefix(a, "-") {
			if a == "--kubeconfig" {
				words = append(words, "on", args[i+1])
			}
			if a == "--history" || a == "--submit=false" {
				words = append(words, a)
			}
			continue
		}
		if i == 0 || !strings.HasPrefix(args[i-1], "-") {
			words = append(words, a)
		}
	}
	return strings.Join(words, " ")
}

// namesOf reads -o name's lines, each kind.group/name.
func namesOf(t *testing.T, kind string, r cmdtest.Result) []string {
	t.Helper()
	if r.Code != 0 {
		t.Fatalf("-o name: %s", r)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		k, name, ok := strings.Cut(l, "/")
		if !ok || k != kind || name == "" {
			t.Fatalf("-o name printed %q, want %s/NAME:\n%s", l, kind, r)
		}
		out = append(out, name)
	}
	return out
}

func checkFormats(t *testing.T, w *cmdtest.World, c printCase, names []string) {
	t.Helper()
	run := func(o ...string) cmdtest.Result {
		t.Helper()
		r := w.Run(append(slices.Clone(c.args), o...)...)
		if r.Code != 0 {
			t.Fatalf("%v: %s", o, r)
		}
		return r
	}
	if got := namesOf(t, c.kind, run("-o", "name")); !slices.Equal(got, names) {
		t.Errorf("-o name: %v, want %v", got, names)
	}
	path, tmpl, want := "{.metadata.name}", "{{.metadata.name}}", names[0]
	if c.list {
		path, tmpl, want = "{.items[*].metadata.name}", `{{range .items}}{{.metadata.name}} {{end}}`, strings.Join(names, " ")
	}
	if r := run("-o", "jsonpath="+path); r.Stdout != want {
		t.Errorf("-o jsonpath=%s printed %q, want %q", path, r.Stdout, want)
	}
	if r := run("-o", "go-template="+tmpl); strings.TrimSpace(r.Stdout) != want {
		t.Errorf("-o go-template=%s printed %q, want %q", tmpl, r.Stdout, want)
	}
	if r := run("--template", tmpl); strings.TrimSpace(r.Stdout) != want {
		t.Errorf("--template %s (go-template) printed %q, want %q", tmpl, r.Stdout, want)
	}
	for _, format := range []string{"json", "yaml"} {
		r := run("-o", format)
		var obj map[string]any
		var err error
		if format == "json" {
			err = json.Unmarshal([]byte(r.Stdout), &obj)
		} else {
			err = yaml.Unmarshal([]byte(r.Stdout), &obj)
		}
		if err != nil {
			t.Fatalf("-o %s does not parse: %v\n%s", format, err, r.Stdout)
		}
		items := []any{obj}
		if c.list {
			if obj["apiVersion"] != "v1" || obj["kind"] != "List" {
				t.Errorf("-o %s: a listing prints as a v1 List, got %v %v", format, obj["apiVersion"], obj["kind"])
			}
			items, _ = obj["items"].([]any)
		}
		var got []string
		for _, it := range items {
			m, _ := it.(map[string]any)
			meta, _ := m["metadata"].(map[string]any)
			name, _ := meta["name"].(string)
			got = append(got, name)
			group, _, _ := strings.Cut(m["apiVersion"].(string), "/")
			if kind, _ := m["kind"].(string); strings.ToLower(kind)+"."+group != c.kind {
				t.Errorf("-o %s: an item of kind %v %v, want %s", format, m["apiVersion"], m["kind"], c.kind)
			}
		}
		if c.stored && format == "yaml" {
			got = names // the rule file names nothing; -o name and the others name it as stored
		}
		if !slices.Equal(got, names) {
			t.Errorf("-o %s: names %v, want %v", format, got, names)
		}
	}

	// A template that does not parse is the user's mistake: named, a usage error, nothing sent.
	m := cmdtest.Marks(w, "edge", "farm", "lone")
	r := w.Run(append(slices.Clone(c.args), "-o", "jsonpath={.items[")...)
	cmdtest.Expect(t, w, r, 1, nil, []string{"-o, --output jsonpath={.items[:", "See 'kubectl federate"}, m)
	if r.Stdout != "" {
		t.Errorf("a bad template printed %q", r.Stdout)
	}
	// One that names a missing key, with --allow-missing-template-keys=false, fails on the object and
	// prints nothing of it (cli-runtime's dump for debugging stays off stdout).
	r = w.Run(append(slices.Clone(c.args), "-o", "go-template={{.nope.deeper}}", "--allow-missing-template-keys=false")...)
	if r.Code != 1 || r.Stdout != "" || !strings.Contains(r.Stderr, `error: -o go-template: error executing template "{{.nope.deeper}}"`) ||
		!strings.Contains(r.Stderr, `map has no entry for key "nope"`) {
		t.Errorf("a template failing on the object: %s", r)
	}
}

// The default output stays the command's own: an object's default YAML is still sigs.k8s.io/yaml of the
// object without creationTimestamp and empty status (keys sorted, no "---"), and the human forms are
// unchanged.
func TestDefaultOutputIsUnchanged(t *testing.T) {
	w, _, _ := printWorld(t)
	nonce := strings.TrimSpace(w.Run("get", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone").Stdout)
	tenant := w.Run("generate", "tenant", "--kubeconfig", "lone", "--nonce", nonce)
	var m map[string]any
	if err := yaml.Unmarshal([]byte(tenant.Stdout), &m); err != nil {
		t.Fatal(err, tenant)
	}
	want, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if tenant.Stdout != string(want) || strings.Contains(tenant.Stdout, "creationTimestamp") || strings.Contains(tenant.Stdout, "status:") {
		t.Errorf("generate tenant's default YAML changed:\n%s\nwant:\n%s", tenant.Stdout, want)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--kubeconfig", "farm"}, "REMOTE   ROLE       KIND"},
		{[]string{"get", "resourceslices", "--kubeconfig", "farm", "--remote-cluster-id", "edge"}, "CONSUMER   PROVIDER   NAME"},
		{[]string{"version"}, "kubectl-federate version "},
		{[]string{"get", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone"}, "federate-nonce.v1.farm.lone."},
	} {
		if r := w.Run(c.args...); r.Code != 0 || !strings.HasPrefix(r.Stdout, c.want) {
			t.Errorf("%v: want the human form %q first:\n%s", c.args, c.want, r)
		}
	}
}

// -o completes kubectl's formats and the command's own.
func TestOutputFormatsComplete(t *testing.T) {
	w := cmdtest.NewWorld(t, "edge")
	for _, c := range []struct {
		line []string
		want []string
	}{
		{[]string{"status", "--kubeconfig", "edge", "-o", ""}, []string{"json", "yaml", "name", "jsonpath", "jsonpath-file", "go-template", "go-template-file", "wide"}},
		{[]string{"version", "-o", ""}, []string{"json", "yaml", "name", "jsonpath", "go-template"}},
	} {
		got := completions(t, w.Run(append([]string{"__complete"}, c.line...)...).Stdout)
		for _, want := range c.want {
			if !slices.Contains(got, want) {
				t.Errorf("%v: completions %v lack %q", c.line, got, want)
			}
		}
	}
	if r := w.Run("version", "-o", "wide"); r.Code != 1 || !strings.Contains(r.Stderr, `invalid argument "wide" for "-o, --output" flag: must be one of json, yaml,`) ||
		!strings.Contains(r.Stderr, "jsonpath") {
		t.Errorf("-o wide where a command has no wide form: %s", r)
	}
}

func errorsAs[T error](err error, target *T) bool { return errors.As(err, target) }

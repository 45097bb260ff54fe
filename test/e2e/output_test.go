//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/views"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// With stdout and stderr piped, no command writes escape codes, and every -o json output parses.
func TestPipedOutputIsPlainAndJSONParses(t *testing.T) {
	_, n, _ := pairingStart(t)
	P, C := provider.Kubeconfig, consumer.Kubeconfig
	for _, args := range [][]string{
		{"version", "-o", "json"},
		{"info", "--kubeconfig", P, "-o", "json"},
		{"info", "--kubeconfig", C, "-o", "json"},
		{"get", "nonce", "--kubeconfig", P, "--remote-cluster-id", "consumer", "-o", "json"},
		{"generate", "tenant", "--kubeconfig", C, "--remote-cluster-id", "provider", "--nonce", n, "-o", "json"},
	} {
		r := mustRun(t, "", args...)
		if !json.Valid([]byte(r.stdout)) {
			t.Errorf("%v: stdout is not JSON:\n%s", args, r.stdout)
		}
		if strings.Contains(r.stdout+r.stderr, "\x1b") {
			t.Errorf("%v: escape codes in piped output", args)
		}
	}
	for _, args := range [][]string{
		{"--help"}, {"authenticate", "--help"}, {"info", "--kubeconfig", P}, {"completion", "bash"},
	} {
		r := mustRun(t, "", args...)
		if strings.Contains(r.stdout+r.stderr, "\x1b[") {
			t.Errorf("%v: escape codes in piped output", args)
		}
	}
	// --color always is the one way to get colour on a pipe.
	r := mustRun(t, "", "authenticate", "--kubeconfig", C, "--remote-kubeconfig", P, "--color", "always")
	if !strings.Contains(r.stderr, "\x1b[") || strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("--color always: colour belongs on stderr only: %q", r.stderr)
	}
}

// -v N is kubectl's: client-go logs each request and its answer on stderr at 6, and stdout still carries
// the data only (here the JSON, which parses).
func TestVerbosityLogsRequests(t *testing.T) {
	mustOn(t, provider, "init", "--cluster-id", "provider") // status reads an initialized cluster
	r := on(t, provider, "status", "-o", "json", "-v", "6")
	if r.code != 0 || !strings.Contains(r.stderr, `"Response" verb="GET" url="`+provider.Server) || !strings.Contains(r.stderr, `status="200 OK"`) {
		t.Errorf("status -v 6 logged no request: %s", r)
	}
	var v any
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Errorf("status -o json -v 6: stdout is not the JSON alone: %v\n%s", err, r.stdout)
	}
	if r := on(t, provider, "status", "-o", "json"); strings.Contains(r.stderr, "round_trippers") {
		t.Errorf("status without -v logged requests: %s", r.stderr)
	}
}

// itemsOf decodes what a listing prints with -o json, a List whose items carry the view under status, into
// the views.
func itemsOf[T any](t *testing.T, stdout string) []T {
	t.Helper()
	return itemsOfKind[T](t, stdout, func(kind string) bool { return kind != views.KindExport })
}

// itemsOfKind is itemsOf for the items whose kind is chosen: status lists its exports after its credentials.
func itemsOfKind[T any](t *testing.T, stdout string, chosen func(kind string) bool) []T {
	t.Helper()
	var l struct {
		Kind  string `json:"kind"`
		Items []struct {
			Kind   string `json:"kind"`
			Status T      `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(stdout), &l); err != nil || l.Kind != "List" {
		t.Fatalf("not a List (%v):\n%s", err, stdout)
	}
	out := make([]T, 0, len(l.Items))
	for _, it := range l.Items {
		if chosen(it.Kind) {
			out = append(out, it.Status)
		}
	}
	return out
}

// kubectl's printing on a real pairing: -o name, jsonpath (over .items[*], with a filter) and go-template
// on status and get resourceslices of both sides, and on the consumer's namespace requests, read through
// the pairing.
func TestKubectlPrinting(t *testing.T) {
	authenticate(t)
	defer unauthenticate(t)
	mustRun(t, "", "create", "resourceslice", "print-s1", "--cpu", "100m", "--memory", "64Mi",
		"--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
	mustOn(t, consumer, "request", "namespace", "consumer-print", "--remote-cluster-id", "provider")

	// kubectl's own listings of our kinds across namespaces: one NAMESPACE column (kubectl's), the
	// grant's namespace under a name of its own.
	for _, c := range []struct {
		kubeconfig, resource string
	}{{consumer.Kubeconfig, "identities.federate.dev"}, {provider.Kubeconfig, "resourceslices.federate.dev"}, {consumer.Kubeconfig, "resourceslices.federate.dev"}} {
		r := kubectlAs(t, c.kubeconfig, "get", c.resource, "-A")
		header := strings.SplitN(r.stdout, "\n", 2)[0]
		if r.code != 0 || strings.Count(header, "NAMESPACE") != 1 {
			t.Errorf("kubectl get %s -A: want one NAMESPACE column: %s", c.resource, r)
		}
	}

	names := mustOn(t, consumer, "status", "-o", "name").stdout
	for _, want := range []string{"credentialstatus.federate.dev/consumer.provider.controlplane\n", "credentialstatus.federate.dev/consumer.provider.resourceslice.print-s1\n"} {
		if !strings.Contains(names, want) {
			t.Errorf("status -o name lacks %q:\n%s", want, names)
		}
	}
	var fromName []string
	for _, l := range strings.Fields(names) {
		fromName = append(fromName, strings.TrimPrefix(l, "credentialstatus.federate.dev/"))
	}
	if r := mustOn(t, consumer, "status", "-o", "jsonpath={.items[*].metadata.name}"); r.stdout != strings.Join(fromName, " ") {
		t.Errorf("status -o jsonpath over .items[*]: %q, want %q", r.stdout, strings.Join(fromName, " "))
	}
	r := mustOn(t, consumer, "status", "-o", `go-template={{range .items}}{{.status.kind}} {{.status.credential}} {{.metadata.labels}}{{"\n"}}{{end}}`)
	// Each row's labels are its record's (the consumer's Identity of the pairing or of the slice), which -l selects on.
	for _, want := range []string{"ControlPlane Certificate map[app.kubernetes.io/managed-by:kubectl-federate federate.dev/remote-cluster-id:provider federate.dev/role:consumer]\n",
		"ResourceSlice Certificate map[app.kubernetes.io/managed-by:kubectl-federate federate.dev/remote-cluster-id:provider federate.dev/resource-slice:print-s1 federate.dev/role:consumer]\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status -o go-template lacks %q:\n%s", want, r.stdout)
		}
	}

	// The provider's side: the slice's user, by a jsonpath filter on status and on get resourceslices, agree.
	user := mustOn(t, provider, "status", "-o", `jsonpath={.items[?(@.status.kind=="ResourceSlice")].status.user}`).stdout
	sliceUser := mustOn(t, provider, "get", "resourceslices", "--remote-cluster-id", "consumer", "-o", `jsonpath={.items[?(@.metadata.name=="print-s1")].status.user}`).stdout
	if user == "" || user != sliceUser {
		t.Errorf("the slice's user: status says %q, get resourceslices %q", user, sliceUser)
	}
	if r := mustOn(t, consumer, "get", "resourceslices", "-o", "name"); r.stdout != "resourcesliceinfo.federate.dev/print-s1\n" {
		t.Errorf("get resourceslices -o name on the consumer: %q", r.stdout)
	}
	if r := mustOn(t, consumer, "get", "resourceslices", "-o", `go-template={{range .items}}{{.metadata.name}}={{.status.phase}},{{index .metadata.labels "federate.dev/remote-cluster-id"}}{{end}}`); r.stdout != "print-s1=Imported,provider" {
		t.Errorf("get resourceslices -o go-template on the consumer: %q", r.stdout)
	}
	if r := mustOn(t, provider, "get", "resourceslices", "--remote-cluster-id", "consumer", "-o", "jsonpath={.items[*].status.phase}"); r.stdout != "Accepted" {
		t.Errorf("get resourceslices -o jsonpath on the provider: %q", r.stdout)
	}
	if r := mustOn(t, consumer, "request", "namespace", "--remote-cluster-id", "provider", "-o", "jsonpath={.items[*].metadata.name}"); r.stdout != "consumer-print" {
		t.Errorf("request namespace -o jsonpath through the pairing: %q", r.stdout)
	}
	// A template that does not parse: exit 1, named, nothing on stdout.
	if r := on(t, consumer, "status", "-o", "go-template={{.items"); r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "-o, --output go-template={{.items: ") {
		t.Errorf("a bad template: %s", r)
	}

	// kubectl's own columns leave no cell blank that has a meaning: the pairing's identity is of type
	// ControlPlane (its spec says so by leaving the type out, which the CRD defaults), a tenant never
	// cordoned shows false, a slice nobody answered shows Pending (the provider's copy, whose status the
	// consumer cannot write).
	mustOn(t, consumer, "create", "resourceslice", "print-pending", "--remote-cluster-id", "provider", "--cpu", "100m", "--memory", "64Mi")
	for _, c := range []struct {
		kubeconfig, resource, row, column, want string
	}{
		{consumer.Kubeconfig, "identities.federate.dev", member.IdentityName("provider"), "TYPE", v1alpha1.IdentityControlPlane},
		{consumer.Kubeconfig, "identities.federate.dev", member.SliceIdentityName("provider", "print-s1"), "TYPE", v1alpha1.IdentityResource},
		{provider.Kubeconfig, "tenants.federate.dev", "consumer", "CORDONED", "false"},
		{provider.Kubeconfig, "resourceslices.federate.dev", "print-pending", "PHASE", "Pending"},
		{provider.Kubeconfig, "resourceslices.federate.dev", "print-s1", "PHASE", "Accepted"},
	} {
		r := kubectlAs(t, c.kubeconfig, "get", c.resource, "-A")
		if got, ok := tableCell(r.stdout, c.row, c.column); r.code != 0 || !ok || got != c.want {
			t.Errorf("kubectl get %s -A: %s of %s is %q (found: %v), want %q:\n%s", c.resource, c.column, c.row, got, ok, c.want, r)
		}
	}

	// kubectl explain says what each field means, from the descriptions the API server publishes.
	for _, c := range []struct {
		kubeconfig, field, want string
	}{
		{provider.Kubeconfig, "tenants.spec", "signed with its handshake key"},
		{provider.Kubeconfig, "tenants.status.cordoned", "may start no new workloads"},
		{consumer.Kubeconfig, "identities.spec.type", "the pairing's own identity"},
		{provider.Kubeconfig, "resourceslices.status.phase", "Pending until answered"},
	} {
		r := kubectlAs(t, c.kubeconfig, "explain", c.field, "--api-version", v1alpha1.APIVersion)
		if text := strings.Join(strings.Fields(r.stdout), " "); r.code != 0 || !strings.Contains(text, c.want) {
			t.Errorf("kubectl explain %s: want %q in the description:\n%s", c.field, c.want, r)
		}
	}
}

// A cluster initialized by an earlier version holds the CRDs of its install generation: init, finding the
// record's generation older, installs them again, and with them the defaults and descriptions kubectl shows.
func TestKubectlPrintingAfterUpgrade(t *testing.T) {
	mustOn(t, consumer, "init", "--cluster-id", "consumer")
	const typeDefault = "{.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.type.default}"
	// What the previous generation left: the identity's type without a default, the record at 18.
	for _, args := range [][]string{
		{"patch", "crd", "identities.federate.dev", "--type", "json", "-p",
			`[{"op":"replace","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/type","value":{"type":"string","enum":["ControlPlane","Resource"]}}]`},
		{"annotate", "configmap", member.ClusterConfigMap, "-n", member.SystemNamespace, member.InstallGenAnnot + "=18", "--overwrite"},
	} {
		if r := kubectlAs(t, consumer.Kubeconfig, args...); r.code != 0 {
			t.Fatalf("kubectl %v: %s", args, r)
		}
	}
	if r := kubectlAs(t, consumer.Kubeconfig, "get", "crd", "identities.federate.dev", "-o", "jsonpath="+typeDefault); r.code != 0 || r.stdout != "" {
		t.Fatalf("the old generation's CRD still has the default: %s", r)
	}
	mustOn(t, consumer, "init")
	if r := kubectlAs(t, consumer.Kubeconfig, "get", "crd", "identities.federate.dev", "-o", "jsonpath="+typeDefault); r.code != 0 || r.stdout != v1alpha1.IdentityControlPlane {
		t.Errorf("init on a cluster of generation 18 left the identity's CRD without its default: %s", r)
	}
	if r := kubectlAs(t, consumer.Kubeconfig, "get", "configmap", member.ClusterConfigMap, "-n", member.SystemNamespace,
		"-o", "jsonpath={.metadata.annotations.federate\\.dev/install-generation}"); r.stdout != member.InstallGeneration || member.InstallGeneration == "18" {
		t.Errorf("the record's generation after init: %q, want %q (and past 18)", r.stdout, member.InstallGeneration)
	}
}

// tableCell is the cell of column in the row whose NAME is name, in a table kubectl printed: each cell
// starts where its column's header does, so a blank cell reads as "" rather than as its neighbour.
func tableCell(table, name, column string) (string, bool) {
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	if len(lines) < 2 {
		return "", false
	}
	header := lines[0]
	var starts []int
	for i := 0; i < len(header); i++ {
		if header[i] != ' ' && (i == 0 || (header[i-1] == ' ' && i > 1 && header[i-2] == ' ')) {
			starts = append(starts, i)
		}
	}
	cell := func(line string, k int) string {
		from, to := starts[k], len(line)
		if k+1 < len(starts) && starts[k+1] < to {
			to = starts[k+1]
		}
		if from >= len(line) {
			return ""
		}
		return strings.TrimSpace(line[from:to])
	}
	nameAt, colAt := -1, -1
	for k := range starts {
		switch cell(header, k) {
		case "NAME":
			nameAt = k
		case column:
			colAt = k
		}
	}
	if nameAt < 0 || colAt < 0 {
		return "", false
	}
	for _, line := range lines[1:] {
		if cell(line, nameAt) == name {
			return cell(line, colAt), true
		}
	}
	return "", false
}

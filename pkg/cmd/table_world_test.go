package cmd_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// The TestCommandTable* tests run one whole command line per row, as kubectl tests its own commands:
// each row sets up a world of fake clusters (edge consumes from farm; lone is a third cluster), runs the
// line through the real command tree, and checks the exit code, stdout, stderr's one error line, and
// what was sent to each cluster. A row that writes gets a world of its own; rows that must send nothing
// share one (see tableWorld).

// tableClusters are the clusters of every table world: each row's writes are checked on all of them.
var tableClusters = []string{"edge", "farm", "lone"}

// tableEnv is one row's world and the values its setup produced (a request's name, a file's path), which
// the row's arguments name as {key}.
type tableEnv struct {
	w    *cmdtest.World
	vars map[string]string
}

func (e *tableEnv) expand(args []string) []string {
	out := slices.Clone(args)
	for i := range out {
		for k, v := range e.vars {
			out[i] = strings.ReplaceAll(out[i], "{"+k+"}", v)
		}
	}
	return out
}

// must runs a setup step, which must succeed.
func (e *tableEnv) must(t *testing.T, args ...string) cmdtest.Result {
	t.Helper()
	r := e.w.Run(args...)
	if r.Code != 0 {
		t.Fatalf("setup %v: %s", args, r)
	}
	return r
}

// tableWorld builds a row's world. A row that must send nothing shares its world with the test's other
// such rows, built once (every create on a fake costs client-go's fake a new REST mapper: building
// worlds is most of these tests' time); a row that writes gets a world of its own, as does every row of
// a fresh world. A shared row that writes all the same fails, and the rows after it get a new world.
type tableWorld struct {
	build func(t *testing.T) *tableEnv
	fresh bool // never shared: it changes the process (the working directory)
}

func newWorld(build func(t *testing.T) *tableEnv) *tableWorld { return &tableWorld{build: build} }

// tableRow is one command line run in a world of its own, or shared with rows that send nothing.
type tableRow struct {
	name  string
	world *tableWorld
	args  []string // {key} is replaced by the world's value of that name, here and in err and stderr
	code  int
	// usage: a usage error, so the help pointer follows the error line; a failure that is not one
	// must not point at the help.
	usage bool
	// err is a distinctive part of stderr's one error line (exit != 0): it names the problem.
	err string
	// stderr are other lines stderr must hold (progress, warnings).
	stderr []string
	// stdout checks what was printed; nil: a failure prints nothing on stdout.
	stdout func(t *testing.T, e *tableEnv, out string)
	// writes are each cluster's exact writes; a cluster named neither here nor in wrote must get none.
	writes map[string][]string
	// wrote are writes a cluster must have got, in this order, among others (a long sequence's key steps).
	wrote map[string][]string
	// sent checks a cluster's writes instead (a sequence whose order is not the product's: parallel steps).
	sent map[string]func(t *testing.T, got []string)
	// dryRun: every cluster's store must be as before. A dry run's writes reach the fakes as actions,
	// which the world's dry-run layer answers without storing, so Writes would list them.
	dryRun bool
}

func runTable(t *testing.T, rows []tableRow) {
	t.Helper()
	shared := map[*tableWorld]*tableEnv{}
	for _, row := range rows {
		// What a shared world's rows send is checked like any other's: none may write, or it fails.
		share := !row.world.fresh && len(row.writes) == 0 && len(row.wrote) == 0 && len(row.sent) == 0
		if share && shared[row.world] == nil {
			shared[row.world] = row.world.build(t) // here, so that a failed setup stops the test
		}
		spoiled := false
		t.Run(row.name, func(t *testing.T) {
			e := shared[row.world]
			if !share {
				e = row.world.build(t)
			}
			before := marks(e.w, tableClusters...)
			snaps := map[string]string{}
			if row.dryRun {
				for _, n := range tableClusters {
					snaps[n] = e.w.Snapshot(n)
				}
			}
			defer func() { spoiled = share && worldChanged(e, before, snaps) }()
			r := e.w.Run(e.expand(row.args)...)

			unchanged := map[string]cmdtest.Mark{}
			for n, m := range before {
				if len(row.writes[n]) == 0 && len(row.wrote[n]) == 0 && row.sent[n] == nil && !row.dryRun {
					unchanged[n] = m
				}
			}
			expect(t, e.w, r, row.code, nil, e.expand(row.stderr), unchanged)
			for n, snap := range snaps {
				if e.w.Snapshot(n) != snap {
					t.Errorf("a dry run changed %s", n)
				}
			}
			checkErrorLine(t, r, row.code, row.usage, e.expand([]string{row.err})[0])
			if row.stdout != nil {
				row.stdout(t, e, r.Stdout)
			} else if row.code != 0 && r.Stdout != "" {
				t.Errorf("a failure printed on stdout:\n%s", r)
			}
			for n, want := range row.writes {
				if len(want) == 0 {
					continue
				}
				if got := e.w.Writes(n, before[n]); !slices.Equal(got, want) {
					t.Errorf("%s was sent %v, want exactly %v", n, got, want)
				}
			}
			for n, want := range row.wrote {
				if got := e.w.Writes(n, before[n]); !isSubsequence(got, want) {
					t.Errorf("%s was sent %v, want among them, in this order, %v", n, got, want)
				}
			}
			for n, check := range row.sent {
				check(t, e.w.Writes(n, before[n]))
			}
		})
		if spoiled { // the row failed for writing: the next rows get a world as it was
			delete(shared, row.world)
		}
	}
}

// worldChanged tells whether a row changed its world: a write since the marks, or, for a dry run (whose
// writes reach the fakes as actions, answered without being stored), a store unlike its snapshot.
func worldChanged(e *tableEnv, before map[string]cmdtest.Mark, snaps map[string]string) bool {
	for _, n := range tableClusters {
		if snap, dry := snaps[n]; dry {
			if e.w.Snapshot(n) != snap {
				return true
			}
		} else if len(e.w.Writes(n, before[n])) > 0 {
			return true
		}
	}
	return false
}

// checkErrorLine checks that a failure's one error line names the problem, that only a usage error
// points at the help, and that a success says no error.
func checkErrorLine(t *testing.T, r cmdtest.Result, code int, usage bool, want string) {
	t.Helper()
	var line string
	for _, l := range strings.Split(r.Stderr, "\n") {
		if strings.HasPrefix(l, "error: ") {
			line = l
		}
	}
	if code == 0 {
		if line != "" {
			t.Errorf("a success printed an error line: %q", line)
		}
		return
	}
	if !strings.Contains(line, want) {
		t.Errorf("error line %q lacks %q", line, want)
	}
	help := strings.Contains(r.Stderr, "See 'kubectl federate ") && strings.Contains(r.Stderr, " -h' for help and examples")
	if help != usage {
		t.Errorf("points at the help: %v, want %v (a usage error: %v):\n%s", help, usage, usage, r)
	}
}

// isSubsequence tells whether want is a subsequence of got.
func isSubsequence(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// Worlds. Each builds on the one before, through the commands (or the domain where no command can on a
// fake), so that a row starts from a state the product itself made.

// tablePaired is edge paired with farm, and lone never initialized.
func tablePaired(t *testing.T) *tableEnv {
	return &tableEnv{w: pairedWorld(t, "lone"), vars: map[string]string{}}
}

// tableNonce is tablePaired with an unused nonce made on farm for lone.
func tableNonce(t *testing.T) *tableEnv {
	e := tablePaired(t)
	e.must(t, "create", "nonce", "--kubeconfig", "farm", "--remote-cluster-id", "lone")
	return e
}

// tablePendingSlice is tablePaired with the slice batch asked of farm by edge, not yet answered.
func tablePendingSlice(t *testing.T) *tableEnv {
	e := tablePaired(t)
	e.must(t, "create", "resourceslice", "batch", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--cpu", "1", "--memory", "1Gi")
	return e
}

// tableImportedSlice is tablePendingSlice with batch accepted on farm and imported on edge.
func tableImportedSlice(t *testing.T) *tableEnv {
	e := tablePendingSlice(t)
	e.must(t, "accept", "resourceslice", "batch", "--kubeconfig", "farm", "--remote-cluster-id", "edge")
	e.must(t, "import", "resourceslice", "batch", "--kubeconfig", "edge", "--remote-cluster-id", "farm")
	return e
}

// tableRulesFile is edge's identity-exchange rules: alice maps to bob within edge's tenant namespace,
// root gets the pairing's own identity (a privileged rule, weighed first for its priority), the group
// ops reaching farm maps to deployer (with a group and a UID).
const tableRulesFile = `apiVersion: federate.dev/v1alpha1
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

// tableFile writes a file in a temporary directory and returns its path.
func tableFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// tableRulesPaths is tablePaired with the rule file written ({rules}), not yet applied.
func tableRulesPaths(t *testing.T) *tableEnv {
	e := tablePaired(t)
	e.vars["rules"] = tableFile(t, "rules.yaml", tableRulesFile)
	return e
}

// tableRules is tablePaired with the rules applied on edge.
func tableRules(t *testing.T) *tableEnv {
	e := tableRulesPaths(t)
	e.must(t, "exchange", "apply", "-f", e.vars["rules"], "--kubeconfig", "edge")
	return e
}

// tableRequest is tableRules with alice's exchange request left on farm ({request}), pending.
func tableRequest(t *testing.T) *tableEnv {
	e := tableRules(t)
	e.vars["request"] = strings.TrimSpace(e.must(t, "request", "exchange", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--for-user", "alice").Stdout)
	return e
}

// tableIssued is tableRequest with the request allowed on farm. The command cannot allow on a fake (its
// constrained-impersonation probe needs a ServiceAccount token and an HTTP round trip), so the domain
// step does, with the fake's impersonation support given; the consumer then fetches the credential.
func tableIssued(t *testing.T) *tableEnv {
	e := tableRequest(t)
	if _, err := exchange.AllowExchange(t.Context(), e.w.Domain("farm"), exchange.AllowExchangeOptions{ConsumerID: "edge", Names: []string{e.vars["request"]}}); err != nil {
		t.Fatal(err)
	}
	e.must(t, "request", "exchange", "--kubeconfig", "edge", "--remote-cluster-id", "farm", "--for-user", "alice")
	// Revoking an issued credential waits out the API server's impersonation cache: a fake has none.
	ttl := handshake.ImpersonationCacheTTL
	handshake.ImpersonationCacheTTL = 0
	t.Cleanup(func() { handshake.ImpersonationCacheTTL = ttl })
	return e
}

// tableDenied is tableRequest with the request refused on farm.
func tableDenied(t *testing.T) *tableEnv {
	e := tableRequest(t)
	e.must(t, "deny", "exchange", e.vars["request"], "--kubeconfig", "farm", "--remote-cluster-id", "edge", "--reason", "not for prod")
	return e
}

// The worlds above, for rows.
var (
	worldPaired        = newWorld(tablePaired)
	worldNonce         = newWorld(tableNonce)
	worldPendingSlice  = newWorld(tablePendingSlice)
	worldImportedSlice = newWorld(tableImportedSlice)
	worldRulesPaths    = newWorld(tableRulesPaths)
	worldRules         = newWorld(tableRules)
	worldRequest       = newWorld(tableRequest)
	worldIssued        = newWorld(tableIssued)
	worldDenied        = newWorld(tableDenied)
)

// Output decoding.

// wantStdout is a stdout check for an exact text, whose {key}s are the world's values.
func wantStdout(want string) func(t *testing.T, e *tableEnv, out string) {
	return func(t *testing.T, e *tableEnv, out string) {
		t.Helper()
		if w := e.expand([]string{want})[0]; out != w {
			t.Errorf("stdout %q, want %q", out, w)
		}
	}
}

func jsonObject(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	return m
}

func yamlObject(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(out), &m); err != nil || m == nil {
		t.Fatalf("stdout is not a YAML object: %v\n%s", err, out)
	}
	return m
}

// fieldAt is the value at a dotted path (items.0.status.role) of a decoded object, nil if absent; `\.`
// is a dot within a key (metadata.labels.federate\.dev/role).
func fieldAt(obj any, path string) any {
	for _, k := range strings.Split(strings.ReplaceAll(path, `\.`, "\x00"), ".") {
		k = strings.ReplaceAll(k, "\x00", ".")
		switch o := obj.(type) {
		case map[string]any:
			obj = o[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(o) {
				return nil
			}
			obj = o[i]
		default:
			return nil
		}
	}
	return obj
}

// wantFields checks fields of a decoded object: path -> the value's text (a string as it is, anything
// else as JSON: 10, true, ["a","b"]; <absent> for no value).
func wantFields(t *testing.T, obj map[string]any, want map[string]string) {
	t.Helper()
	for path, w := range want {
		got := fieldAt(obj, path)
		var s string
		switch v := got.(type) {
		case string:
			s = v
		case nil:
			s = "<absent>"
		default:
			b, _ := json.Marshal(v)
			s = string(b)
		}
		if s != w {
			t.Errorf("%s = %s, want %s", path, s, w)
		}
	}
}

// listNames are the metadata.name of a v1 List's items.
func listNames(t *testing.T, list map[string]any) []string {
	t.Helper()
	if list["apiVersion"] != "v1" || list["kind"] != "List" {
		t.Fatalf("not a v1 List: %v %v", list["apiVersion"], list["kind"])
	}
	items, _ := list["items"].([]any)
	names := []string{}
	for i := range items {
		name, _ := fieldAt(list, "items."+strconv.Itoa(i)+".metadata.name").(string)
		names = append(names, name)
	}
	return names
}

// headerCell is a column's header: words with single spaces between them (tabwriter pads with three).
var headerCell = regexp.MustCompile(`\S+( \S+)*`)

// tableOf reads a table printed with tabwriter: each row's cells by the header's columns (a header may
// hold a space: POD SECURITY). It fails the test when the first line is not the header wanted.
func tableOf(t *testing.T, out string, header ...string) []map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	cols := headerCell.FindAllStringIndex(lines[0], -1)
	var names []string
	for _, c := range cols {
		names = append(names, lines[0][c[0]:c[1]])
	}
	if !slices.Equal(names, header) {
		t.Fatalf("table header %q, want %q:\n%s", names, header, out)
	}
	var rows []map[string]string
	for _, l := range lines[1:] {
		row := map[string]string{}
		for i, c := range cols {
			end := len(l)
			if i+1 < len(cols) {
				end = min(cols[i+1][0], len(l))
			}
			if c[0] < len(l) {
				row[names[i]] = strings.TrimSpace(l[c[0]:end])
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// wantRow checks cells of a table row.
func wantRow(t *testing.T, row map[string]string, want map[string]string) {
	t.Helper()
	for col, w := range want {
		if row[col] != w {
			t.Errorf("column %s = %q, want %q (row %v)", col, row[col], w, row)
		}
	}
}

// kubeconfigOf decodes a printed kubeconfig and checks what every one must be: a Config whose current
// context reaches the server, in the namespace, as a user holding a key.
func kubeconfigOf(t *testing.T, out, server, namespace string) map[string]any {
	t.Helper()
	kc := yamlObject(t, out)
	wantFields(t, kc, map[string]string{"kind": "Config", "clusters.0.cluster.server": server, "contexts.0.context.namespace": namespace})
	if fieldAt(kc, "current-context") != fieldAt(kc, "contexts.0.name") {
		t.Errorf("current-context %v is not the context %v", fieldAt(kc, "current-context"), fieldAt(kc, "contexts.0.name"))
	}
	if key, _ := fieldAt(kc, "users.0.user.client-key-data").(string); key == "" {
		t.Errorf("the kubeconfig holds no client key:\n%s", out)
	}
	return kc
}

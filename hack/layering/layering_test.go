package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The domain packages name what is wrong in domain terms (a field, a cluster, an object); the command
// layer translates that into its own flags and says which command comes next (pkg/cmd/flags NextStep),
// since one domain function serves commands where a flag means different clusters, and a hint written
// here would go stale the day a command is renamed.
var domainPackages = []string{"../../pkg/handshake", "../../pkg/internal/parallel", "../../pkg/internal/objects", "../../pkg/member", "../../pkg/credential", "../../pkg/sandbox", "../../pkg/grants", "../../pkg/exchange", "../../pkg/status", "../../pkg/lifecycle", "../../pkg/verify", "../../pkg/export", "../../pkg/nonce", "../../pkg/kubeconfig", "../../pkg/kube", "../../pkg/apis/federate/v1alpha1"}

var (
	// A flag anywhere in a string: "--cluster-id", "(with --for-user)", "x --as y".
	flagName = regexp.MustCompile(`(^|[^\w-])--[a-z][a-z0-9]*(-[a-z0-9]+)*\b`)
	// A command to run: "kubectl federate init", "kubectl auth can-i". The product's own name in
	// messages ("kubectl federate sandbox: ...", "this kubectl federate reads") is not a command.
	commandName = regexp.MustCompile(`\bkubectl (federate )?(init|create|accept|deny|delete|get|import|generate|grant|revoke|renew|` +
		`authenticate|unauthenticate|request|allow|exchange|export|status|cordon|uncordon|drain|mesh|unmesh|info|auth|apply)\b` +
		// Or a command without the product's name: "run generate tenant again", "create resourceslice".
		`|\b(init|create|accept|deny|delete|get|import|generate|grant|revoke|renew|request|allow|export) ` +
		`(tenant|identity|nonce|resourceslices?|resourceslice-class|namespace|kubeconfig|exchange)\b`)
)

func TestNoFlagOrCommandNamesInTheDomain(t *testing.T) {
	checked := 0
	for _, dir := range domainPackages {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			ast.Inspect(file, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					s = lit.Value
				}
				if m := flagName.FindString(s); m != "" {
					t.Errorf("%s names a flag (%s) in %q", fset.Position(lit.Pos()), strings.TrimSpace(m), s)
				}
				if m := commandName.FindString(s); m != "" {
					t.Errorf("%s names a command (%s) in %q", fset.Position(lit.Pos()), m, s)
				}
				return true
			})
		}
	}
	if checked < 40 {
		t.Fatalf("checked %d files: the package list is wrong", checked)
	}
}

// The patterns catch what they are for, and let the product's own name through.
func TestFlagAndCommandPatterns(t *testing.T) {
	for s, want := range map[string]bool{
		"give it with --cluster-id":                true,
		"(allowed with --priority-classes)":        true,
		"--for-user":                               true,
		"run kubectl federate init":                true,
		"; run generate tenant again":              true,
		"run create resourceslice again":           true,
		"the re-run and deleteExports find it":     false,
		"needs a dry-run create: forbidden":        false,
		"create a new nonce and have the consumer": false,
		"find it with kubectl auth can-i --list":   true,
		"kubectl federate sandbox: pods must not":  false,
		"this kubectl federate reads v1":           false,
		"a-b--c":                                   false,
		"spec.class":                               false,
	} {
		if got := flagName.MatchString(s) || commandName.MatchString(s); got != want {
			t.Errorf("%q: matched %v, want %v", s, got, want)
		}
	}
}

// splitPackages are the rooms pkg/handshake was split into: each has a doc.go that indexes its files.
var splitPackages = []string{"../../pkg/handshake", "../../pkg/member", "../../pkg/credential", "../../pkg/sandbox", "../../pkg/grants", "../../pkg/exchange", "../../pkg/status", "../../pkg/lifecycle", "../../pkg/verify"}

// doc.go names every file's one job: a file it does not name is a room no one can find from the index,
// and a name it keeps after the file moved sends a reader to the wrong room.
func TestDocIndexesEveryFile(t *testing.T) {
	for _, dir := range splitPackages {
		doc, err := os.ReadFile(filepath.Join(dir, "doc.go"))
		if err != nil {
			t.Fatal(err)
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, f := range files {
			f = filepath.Base(f)
			if strings.HasSuffix(f, "_test.go") || f == "doc.go" {
				continue
			}
			have[f] = true
			if !strings.Contains(string(doc), "//\t"+f+" ") {
				t.Errorf("%s/doc.go does not name %s and its job", dir, f)
			}
		}
		for _, m := range regexp.MustCompile(`(?m)^//\t([a-z_]+\.go) `).FindAllStringSubmatch(string(doc), -1) {
			if !have[m[1]] {
				t.Errorf("%s/doc.go names %s, which is not in the package", dir, m[1])
			}
		}
	}
}

// maxFuncLines is how long a domain function may grow: a long step is cut into named steps (a small type
// whose methods are the steps, in order), so that each reads in one screen.
const maxFuncLines = 85

// No function of a room is longer than maxFuncLines; the longest is logged, the number a closing note
// quotes.
func TestNoLongDomainFunctions(t *testing.T) {
	longest, where := 0, ""
	for _, dir := range append(splitPackages, "../../pkg/internal/parallel", "../../pkg/internal/objects") {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range file.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
				if n > longest {
					longest, where = n, filepath.Base(dir)+"/"+filepath.Base(f)+" "+fd.Name.Name
				}
				if n > maxFuncLines {
					t.Errorf("%s: %s is %d lines (at most %d): cut it into named steps", f, fd.Name.Name, n, maxFuncLines)
				}
			}
		}
	}
	t.Logf("the longest domain function: %s, %d lines", where, longest)
}

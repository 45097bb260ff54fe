package cmdtest

import (
	"slices"
	"strings"
	"testing"
)

// The TestCommandTable* tests run one whole command line per row, as kubectl tests its own commands:
// each row sets up a world of fake clusters (edge consumes from farm; lone is a third cluster), runs the
// line through the real command tree, and checks the exit code, stdout, stderr's one error line, and
// what was sent to each cluster. A row that writes gets a world of its own; rows that must send nothing
// share one (see TableWorld).

// Clusters are the clusters of every table world: each row's writes are checked on all of them.
var Clusters = []string{"edge", "farm", "lone"}

// Env is one row's world and the values its setup produced (a request's name, a file's path), which
// the row's arguments name as {key}.
type Env struct {
	World *World
	Vars  map[string]string
}

// Expand replaces each {key} in args with the world's value of that name.
func (e *Env) Expand(args []string) []string {
	out := slices.Clone(args)
	for i := range out {
		for k, v := range e.Vars {
			out[i] = strings.ReplaceAll(out[i], "{"+k+"}", v)
		}
	}
	return out
}

// Must runs a setup step, which must succeed.
func (e *Env) Must(t *testing.T, args ...string) Result {
	t.Helper()
	r := e.World.Run(args...)
	if r.Code != 0 {
		t.Fatalf("setup %v: %s", args, r)
	}
	return r
}

// TableWorld builds a row's world. A row that must send nothing shares its world with the test's other
// such rows, built once (every create on a fake costs client-go's fake a new REST mapper: building
// worlds is most of these tests' time); a row that writes gets a world of its own, as does every row of
// a fresh world. A shared row that writes all the same fails, and the rows after it get a new world.
type TableWorld struct {
	Build func(t *testing.T) *Env
	Fresh bool // never shared: it changes the process (the working directory)
}

// NewTableWorld is a world rows may share when they send nothing.
func NewTableWorld(build func(t *testing.T) *Env) *TableWorld { return &TableWorld{Build: build} }

// Row is one command line run in a world of its own, or shared with rows that send nothing.
type Row struct {
	Name  string
	World *TableWorld
	Args  []string // {key} is replaced by the world's value of that name, here and in err and stderr
	Code  int
	// usage: a usage error, so the help pointer follows the error line; a failure that is not one
	// must not point at the help.
	Usage bool
	// err is a distinctive part of stderr's one error line (exit != 0): it names the problem.
	Err string
	// stderr are other lines stderr must hold (progress, warnings).
	Stderr []string
	// NotStderr are texts stderr must not hold (noise a command once printed).
	NotStderr []string
	// stdout checks what was printed; nil: a failure prints nothing on stdout.
	Stdout func(t *testing.T, e *Env, out string)
	// writes are each cluster's exact writes; a cluster named neither here nor in wrote must get none.
	Writes map[string][]string
	// wrote are writes a cluster must have got, in this order, among others (a long sequence's key steps).
	Wrote map[string][]string
	// sent checks a cluster's writes instead (a sequence whose order is not the product's: parallel steps).
	Sent map[string]func(t *testing.T, got []string)
	// dryRun: every cluster's store must be as before. A dry run's writes reach the fakes as actions,
	// which the world's dry-run layer answers without storing, so Writes would list them.
	DryRun bool
}

// RunTable runs each row as a subtest: its world, its command line, and every check the row names.
func RunTable(t *testing.T, rows []Row) {
	t.Helper()
	shared := map[*TableWorld]*Env{}
	for _, row := range rows {
		// What a shared world's rows send is checked like any other's: none may write, or it fails.
		share := !row.World.Fresh && len(row.Writes) == 0 && len(row.Wrote) == 0 && len(row.Sent) == 0
		if share && shared[row.World] == nil {
			shared[row.World] = row.World.Build(t) // here, so that a failed setup stops the test
		}
		spoiled := false
		t.Run(row.Name, func(t *testing.T) {
			if row.Code != 0 && row.Err == "" {
				t.Fatal("a row that fails names the error it expects (Err): an empty text would match any error line")
			}
			e := shared[row.World]
			if !share {
				e = row.World.Build(t)
			}
			before := Marks(e.World, Clusters...)
			snaps := map[string]string{}
			if row.DryRun {
				for _, n := range Clusters {
					snaps[n] = e.World.Snapshot(n)
				}
			}
			defer func() { spoiled = share && worldChanged(e, before, snaps) }()
			r := e.World.Run(e.Expand(row.Args)...)

			unchanged := map[string]Mark{}
			for n, m := range before {
				if len(row.Writes[n]) == 0 && len(row.Wrote[n]) == 0 && row.Sent[n] == nil && !row.DryRun {
					unchanged[n] = m
				}
			}
			Expect(t, e.World, r, row.Code, nil, e.Expand(row.Stderr), unchanged)
			for _, not := range e.Expand(row.NotStderr) {
				if strings.Contains(r.Stderr, not) {
					t.Errorf("stderr holds %q:\n%s", not, r)
				}
			}
			for n, snap := range snaps {
				if e.World.Snapshot(n) != snap {
					t.Errorf("a dry run changed %s", n)
				}
			}
			checkErrorLine(t, r, row.Code, row.Usage, e.Expand([]string{row.Err})[0])
			if row.Stdout != nil {
				row.Stdout(t, e, r.Stdout)
			} else if row.Code != 0 && r.Stdout != "" {
				t.Errorf("a failure printed on stdout:\n%s", r)
			}
			for n, want := range row.Writes {
				if len(want) == 0 {
					continue
				}
				if got := e.World.Writes(n, before[n]); !slices.Equal(got, want) {
					t.Errorf("%s was sent %v, want exactly %v", n, got, want)
				}
			}
			for n, want := range row.Wrote {
				if got := e.World.Writes(n, before[n]); !IsSubsequence(got, want) {
					t.Errorf("%s was sent %v, want among them, in this order, %v", n, got, want)
				}
			}
			for n, check := range row.Sent {
				check(t, e.World.Writes(n, before[n]))
			}
		})
		if spoiled { // the row failed for writing: the next rows get a world as it was
			delete(shared, row.World)
		}
	}
}

// worldChanged tells whether a row changed its world: a write since the Marks, or, for a dry run (whose
// writes reach the fakes as actions, answered without being stored), a store unlike its snapshot.
func worldChanged(e *Env, before map[string]Mark, snaps map[string]string) bool {
	for _, n := range Clusters {
		if snap, dry := snaps[n]; dry {
			if e.World.Snapshot(n) != snap {
				return true
			}
		} else if len(e.World.Writes(n, before[n])) > 0 {
			return true
		}
	}
	return false
}

// checkErrorLine checks that a failure's one error line names the problem, that only a usage error
// points at the help, and that a success says no error.
func checkErrorLine(t *testing.T, r Result, code int, usage bool, want string) {
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

// IsSubsequence tells whether want is a subsequence of got.
func IsSubsequence(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

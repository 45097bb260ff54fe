package cmd_test

import (
	"testing"
)

// delete resourceslice-class removes a class on the provider; a class it has no record of is NotFound.
// (table_delete_test.go holds delete's other tables; this one is apart only to leave that file as it is.)
func TestCommandTableDeleteResourceSliceClass(t *testing.T) {
	withClass := newWorld(func(t *testing.T) *tableEnv {
		e := tablePaired(t)
		e.must(t, "create", "resourceslice-class", "small", "--kubeconfig", "farm", "--max-cpu", "4")
		return e
	})
	del := func(more ...string) []string {
		return append([]string{"delete", "resourceslice-class", "--kubeconfig", "farm"}, more...)
	}
	runTable(t, []tableRow{
		{name: "a class", world: withClass, args: del("small"),
			stdout: func(t *testing.T, e *tableEnv, out string) {
				wantStdout("resourcesliceclass/small deleted\n")(t, e, out)
				// Gone: a second delete finds nothing.
				if r := e.w.Run(del("small")...); r.Code != 1 {
					t.Errorf("the class is still there: %s", r)
				}
			},
			writes: map[string][]string{"farm": {"delete resourcesliceclasses", "delete resourcesliceclasses"}}},
		// The DELETE is sent and answered NotFound (as kubectl delete does): the store is as before.
		{name: "a class this cluster has no record of", world: withClass, args: del("nope"), dryRun: true,
			code: 1, err: `ResourceSliceClass "nope": not found`},
		{name: "a name that is no DNS label", world: withClass, args: del("Bad"),
			code: 1, usage: true, err: `NAME "Bad": must be a DNS label`},
		{name: "no name", world: withClass, args: del(),
			code: 1, usage: true, err: "NAME: exactly 1 argument(s) required, got 0"},
		// Unlike every other removal, it has no --ignore-not-found.
		{name: "--ignore-not-found", world: withClass, args: del("nope", "--ignore-not-found"),
			code: 1, usage: true, err: "unknown flag: --ignore-not-found"},
	})
}

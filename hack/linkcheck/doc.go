// Package linkcheck holds the binary to what the linker can drop. Once any reachable function calls
// reflect.Value.MethodByName (or Method) with a name known only at run time, the linker keeps every
// exported method of every linked type (measured when client-go's scheme was linked: 35 MB grew to 54).
// text/template's executor is such a function; cobra's usage and help templates, cli-runtime's go-template
// printer and the like reach it, each harmlessly on its own. The test builds the plugin with
// -ldflags=-dumpdep and names the chain from our code to the first such call (linkcheck_test.go).
//
// It also holds start-up to running no garbage collection in `--help` (TestHelpRunsNoCollection): the
// run's init trace shows internal/startup initialized before the large allocators, and its GC trace
// shows no collection; and to linking none of the packages whose initializers cost most for what the
// plugin uses of them (TestNoSchemeOfEveryGroupIsLinked): client-go's scheme of every API group, its
// clientset and discovery, cli-runtime's generic flags, client-go's fakes.
package linkcheck

// Package gotemplate runs kubectl's -o go-template over an object decoded from JSON: the language of
// text/template (parsed by text/template/parse, so the syntax and its errors are the standard library's),
// with its builtins and kubectl's two functions (exists, base64decode), printing what text/template prints.
//
// Why not text/template itself: its executor looks a method up by a name known only at run time
// (reflect.Value.MethodByName in state.evalField). A binary that can reach such a call makes the Go linker
// keep every exported method of every type it links, since any might be called; with every Kubernetes
// API type linked through client-go's scheme that was 20 MB of the binary (52.6 MB instead of 32.6 MB)
// and the time to map it at every start. The data kubectl's template printer executes on is a JSON
// document (maps, slices, strings, numbers, booleans), which has no methods to call, so this executor
// leaves the method lookup out and the linker keeps only the methods that are called.
package gotemplate

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"text/template/parse"
)

// Template is one parsed template with the templates it defines.
type Template struct {
	name       string
	trees      map[string]*parse.Tree
	funcs      map[string]reflect.Value
	missingKey missingKey
}

type missingKey int

const (
	missingInvalid missingKey = iota // "missingkey=default" or "invalid": print <no value>
	missingZero                      // "missingkey=zero": the map's zero value
	missingError                     // "missingkey=error": fail
)

// New returns an empty template named name whose pipelines may call funcs (each a function returning one
// value, or a value and an error), beside the builtins.
func New(name string, funcs map[string]any) *Template {
	t := &Template{name: name, funcs: map[string]reflect.Value{}}
	for k, f := range funcs {
		t.funcs[k] = reflect.ValueOf(f)
	}
	return t
}

// Parse parses text as the template's body, as text/template's Parse does (same syntax, same errors).
func (t *Template) Parse(text string) error {
	user := map[string]any{}
	for k, f := range t.funcs {
		user[k] = f.Interface()
	}
	names := map[string]any{}
	for k := range builtins {
		names[k] = true // the parser checks only that a function name exists
	}
	trees, err := parse.Parse(t.name, text, "", "", user, names)
	if err != nil {
		return err
	}
	t.trees = trees
	return nil
}

// Option sets the behaviour for a missing map key, as text/template's "missingkey=..." does.
func (t *Template) Option(opt string) {
	switch opt {
	case "missingkey=default", "missingkey=invalid":
		t.missingKey = missingInvalid
	case "missingkey=zero":
		t.missingKey = missingZero
	case "missingkey=error":
		t.missingKey = missingError
	default:
		panic("gotemplate: unrecognized option " + opt)
	}
}

// Execute writes the template applied to data to w.
func (t *Template) Execute(w io.Writer, data any) (err error) {
	root := t.trees[t.name]
	s := &state{t: t, tree: root, w: w}
	defer func() {
		if r := recover(); r != nil {
			var e execError
			var we writeError
			switch {
			case errors.As(asError(r), &e):
				err = e.err
			case errors.As(asError(r), &we):
				err = we.err
			default:
				panic(r)
			}
		}
	}()
	v := reflect.ValueOf(data)
	s.vars = []variable{{"$", v}}
	if root == nil || root.Root == nil {
		s.errorf("%q is an incomplete or empty template", t.name)
	}
	s.walk(v, root.Root)
	return nil
}

func asError(r any) error {
	if e, ok := r.(error); ok {
		return e
	}
	return nil
}

type execError struct{ err error }

func (e execError) Error() string { return e.err.Error() }

type writeError struct{ err error }

func (e writeError) Error() string { return e.err.Error() }

// control flow of {{break}} and {{continue}}, recovered by the range that runs them.
type loopSignal int

const (
	signalBreak loopSignal = iota
	signalContinue
)

type variable struct {
	name  string
	value reflect.Value
}

type state struct {
	t     *Template
	tree  *parse.Tree // the template being executed, for error locations
	w     io.Writer
	node  parse.Node
	vars  []variable
	depth int
}

const maxDepth = 100000

// noFinal marks a command that has no value piped into it.
type noFinalType struct{}

var noFinal = reflect.ValueOf(noFinalType{})

func isNoFinal(v reflect.Value) bool { return v.IsValid() && v.Type() == noFinal.Type() }

var (
	reflectValueType = reflect.TypeFor[reflect.Value]()
	errorType        = reflect.TypeFor[error]()
	stringerType     = reflect.TypeFor[fmt.Stringer]()
)

func (s *state) at(n parse.Node) { s.node = n }

// errorf stops the execution with text/template's message: where, in which template, at what.
func (s *state) errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if s.node == nil || s.tree == nil {
		panic(execError{fmt.Errorf("template: %s: %s", s.t.name, msg)})
	}
	location, context := s.tree.ErrorContext(s.node)
	panic(execError{fmt.Errorf("template: %s: executing %q at <%s>: %s", location, s.tree.Name, context, msg)})
}

func (s *state) wrapErr(err error) {
	location, context := s.tree.ErrorContext(s.node)
	panic(execError{fmt.Errorf("template: %s: executing %q at <%s>: %w", location, s.tree.Name, context, err)})
}

func (s *state) write(b []byte) {
	if _, err := s.w.Write(b); err != nil {
		panic(writeError{err})
	}
}

func (s *state) mark() int { return len(s.vars) }

func (s *state) pop(m int) { s.vars = s.vars[:m] }

func (s *state) push(name string, v reflect.Value) { s.vars = append(s.vars, variable{name, v}) }

func (s *state) setVar(name string, v reflect.Value) {
	for i := len(s.vars) - 1; i >= 0; i-- {
		if s.vars[i].name == name {
			s.vars[i].value = v
			return
		}
	}
	s.errorf("undefined variable: %s", name)
}

func (s *state) varValue(name string) reflect.Value {
	for i := len(s.vars) - 1; i >= 0; i-- {
		if s.vars[i].name == name {
			return s.vars[i].value
		}
	}
	s.errorf("undefined variable: %s", name)
	return reflect.Value{}
}

func (s *state) walk(dot reflect.Value, node parse.Node) {
	s.at(node)
	switch n := node.(type) {
	case *parse.ActionNode:
		v := s.evalPipeline(dot, n.Pipe)
		if len(n.Pipe.Decl) == 0 {
			s.printValue(n, v)
		}
	case *parse.BreakNode:
		panic(signalBreak)
	case *parse.ContinueNode:
		panic(signalContinue)
	case *parse.CommentNode:
	case *parse.IfNode:
		s.walkIfOrWith(parse.NodeIf, dot, n.Pipe, n.List, n.ElseList)
	case *parse.WithNode:
		s.walkIfOrWith(parse.NodeWith, dot, n.Pipe, n.List, n.ElseList)
	case *parse.ListNode:
		for _, c := range n.Nodes {
			s.walk(dot, c)
		}
	case *parse.RangeNode:
		s.walkRange(dot, n)
	case *parse.TemplateNode:
		s.walkTemplate(dot, n)
	case *parse.TextNode:
		s.write(n.Text)
	default:
		s.errorf("unknown node: %s", n)
	}
}

func (s *state) walkIfOrWith(typ parse.NodeType, dot reflect.Value, pipe *parse.PipeNode, list, elseList *parse.ListNode) {
	defer s.pop(s.mark())
	v := s.evalPipeline(dot, pipe)
	t, ok := isTrue(indirectInterface(v))
	if !ok {
		s.errorf("if/with can't use %v", v)
	}
	switch {
	case t && typ == parse.NodeWith:
		s.walk(v, list)
	case t:
		s.walk(dot, list)
	case elseList != nil:
		s.walk(dot, elseList)
	}
}

func (s *state) walkRange(dot reflect.Value, r *parse.RangeNode) {
	s.at(r)
	defer func() {
		if p := recover(); p != nil && p != signalBreak {
			panic(p)
		}
	}()
	defer s.pop(s.mark())
	val, _ := indirect(s.evalPipeline(dot, r.Pipe))
	mark := s.mark()
	decl := r.Pipe.Decl
	one := func(index, elem reflect.Value) {
		switch {
		case len(decl) == 1 && r.Pipe.IsAssign:
			s.setVar(decl[0].Ident[0], elem)
		case len(decl) > 1 && r.Pipe.IsAssign:
			s.setVar(decl[0].Ident[0], index)
			s.setVar(decl[1].Ident[0], elem)
		case len(decl) == 1:
			s.vars[len(s.vars)-1].value = elem
		case len(decl) > 1:
			s.vars[len(s.vars)-1].value = elem
			s.vars[len(s.vars)-2].value = index
		}
		defer s.pop(mark)
		defer func() {
			if p := recover(); p != nil && p != signalContinue {
				panic(p)
			}
		}()
		s.walk(elem, r.List)
	}
	ran := false
	switch val.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if len(decl) > 1 {
			s.errorf("can't use %v to iterate over more than one variable", val)
		}
		for v := range val.Seq() {
			ran = true
			one(reflect.Value{}, v)
		}
	case reflect.Array, reflect.Slice:
		for i := 0; i < val.Len(); i++ {
			ran = true
			one(reflect.ValueOf(i), val.Index(i))
		}
	case reflect.Map:
		for _, k := range sortedKeys(val) {
			ran = true
			one(k, val.MapIndex(k))
		}
	case reflect.Invalid: // nil acts as an empty map
	default:
		s.errorf("range can't iterate over %v", val)
	}
	if !ran && r.ElseList != nil {
		s.walk(dot, r.ElseList)
	}
}

// sortedKeys orders a map's keys as text/template does (fmt's order): JSON objects have string keys.
func sortedKeys(m reflect.Value) []reflect.Value {
	keys := m.MapKeys()
	sort.Slice(keys, func(i, j int) bool { return compareKeys(keys[i], keys[j]) < 0 })
	return keys
}

func compareKeys(a, b reflect.Value) int {
	switch a.Kind() {
	case reflect.String:
		return strings.Compare(a.String(), b.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return cmpOrdered(a.Int(), b.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return cmpOrdered(a.Uint(), b.Uint())
	case reflect.Float32, reflect.Float64:
		return cmpOrdered(a.Float(), b.Float())
	case reflect.Bool:
		return cmpOrdered(boolInt(a.Bool()), boolInt(b.Bool()))
	}
	return strings.Compare(fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface()))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func cmpOrdered[T int64 | uint64 | float64 | int](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s *state) walkTemplate(dot reflect.Value, t *parse.TemplateNode) {
	s.at(t)
	tree := s.t.trees[t.Name]
	if tree == nil || tree.Root == nil {
		s.errorf("template %q not defined", t.Name)
	}
	if s.depth == maxDepth {
		s.errorf("exceeded maximum template depth (%v)", maxDepth)
	}
	dot = s.evalPipeline(dot, t.Pipe)
	inner := *s
	inner.depth++
	inner.tree = tree
	inner.vars = []variable{{"$", dot}} // no dynamic scoping
	inner.walk(dot, tree.Root)
}

func (s *state) evalPipeline(dot reflect.Value, pipe *parse.PipeNode) reflect.Value {
	if pipe == nil {
		return reflect.Value{}
	}
	s.at(pipe)
	v := noFinal
	for _, cmd := range pipe.Cmds {
		v = s.evalCommand(dot, cmd, v)
		if v.Kind() == reflect.Interface && v.Type().NumMethod() == 0 {
			v = v.Elem()
		}
	}
	for _, d := range pipe.Decl {
		if pipe.IsAssign {
			s.setVar(d.Ident[0], v)
		} else {
			s.push(d.Ident[0], v)
		}
	}
	return v
}

func (s *state) notAFunction(args []parse.Node, final reflect.Value) {
	if len(args) > 1 || !isNoFinal(final) {
		s.errorf("can't give argument to non-function %s", args[0])
	}
}

func (s *state) evalCommand(dot reflect.Value, cmd *parse.CommandNode, final reflect.Value) reflect.Value {
	first := cmd.Args[0]
	switch n := first.(type) {
	case *parse.FieldNode:
		s.at(n)
		return s.evalFieldChain(dot, dot, n, n.Ident, cmd.Args, final)
	case *parse.ChainNode:
		return s.evalChainNode(dot, n, cmd.Args, final)
	case *parse.IdentifierNode:
		return s.evalFunction(dot, n, cmd, cmd.Args, final)
	case *parse.PipeNode:
		s.notAFunction(cmd.Args, final)
		return s.evalPipeline(dot, n)
	case *parse.VariableNode:
		return s.evalVariableNode(dot, n, cmd.Args, final)
	}
	s.at(first)
	s.notAFunction(cmd.Args, final)
	switch n := first.(type) {
	case *parse.BoolNode:
		return reflect.ValueOf(n.True)
	case *parse.DotNode:
		return dot
	case *parse.NilNode:
		s.errorf("nil is not a command")
	case *parse.NumberNode:
		return s.idealConstant(n)
	case *parse.StringNode:
		return reflect.ValueOf(n.Text)
	}
	s.errorf("can't evaluate command %q", first)
	return reflect.Value{}
}

// idealConstant is a number written in the template with no type to convert it to: a float if written
// as one, else an int.
func (s *state) idealConstant(n *parse.NumberNode) reflect.Value {
	s.at(n)
	switch {
	case n.IsComplex:
		return reflect.ValueOf(n.Complex128)
	case n.IsFloat && !isHexInt(n.Text) && !isRuneInt(n.Text) && strings.ContainsAny(n.Text, ".eEpP"):
		return reflect.ValueOf(n.Float64)
	case n.IsInt:
		i := int(n.Int64)
		if int64(i) != n.Int64 {
			s.errorf("%s overflows int", n.Text)
		}
		return reflect.ValueOf(i)
	case n.IsUint:
		s.errorf("%s overflows int", n.Text)
	}
	return reflect.Value{}
}

func isRuneInt(s string) bool { return len(s) > 0 && s[0] == '\'' }

func isHexInt(s string) bool {
	return len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && !strings.ContainsAny(s, "pP")
}

func (s *state) evalChainNode(dot reflect.Value, chain *parse.ChainNode, args []parse.Node, final reflect.Value) reflect.Value {
	s.at(chain)
	if len(chain.Field) == 0 {
		s.errorf("internal error: no fields in evalChainNode")
	}
	if chain.Node.Type() == parse.NodeNil {
		s.errorf("indirection through explicit nil in %s", chain)
	}
	recv := s.evalArg(dot, nil, chain.Node)
	return s.evalFieldChain(dot, recv, chain, chain.Field, args, final)
}

func (s *state) evalVariableNode(dot reflect.Value, v *parse.VariableNode, args []parse.Node, final reflect.Value) reflect.Value {
	s.at(v)
	val := s.varValue(v.Ident[0])
	if len(v.Ident) == 1 {
		s.notAFunction(args, final)
		return val
	}
	return s.evalFieldChain(dot, val, v, v.Ident[1:], args, final)
}

func (s *state) evalFieldChain(dot, recv reflect.Value, node parse.Node, ident []string, args []parse.Node, final reflect.Value) reflect.Value {
	n := len(ident)
	for i := 0; i < n-1; i++ {
		recv = s.evalField(ident[i], node, nil, noFinal, recv)
	}
	return s.evalField(ident[n-1], node, args, final, recv)
}

// evalField is a map's entry: the only fields a JSON document has.
func (s *state) evalField(name string, node parse.Node, args []parse.Node, final, recv reflect.Value) reflect.Value {
	if !recv.IsValid() {
		if s.t.missingKey == missingError {
			s.errorf("nil data; no entry for key %q", name)
		}
		return reflect.Value{}
	}
	typ := recv.Type()
	recv, isNil := indirect(recv)
	if recv.Kind() == reflect.Interface && isNil {
		s.errorf("nil pointer evaluating %s.%s", typ, name)
	}
	if recv.Kind() == reflect.Map {
		key := reflect.ValueOf(name)
		if key.Type().AssignableTo(recv.Type().Key()) {
			if len(args) > 1 || !isNoFinal(final) {
				s.errorf("%s is not a method but has arguments", name)
			}
			v := recv.MapIndex(key)
			if !v.IsValid() {
				switch s.t.missingKey {
				case missingZero:
					v = reflect.Zero(recv.Type().Elem())
				case missingError:
					s.errorf("map has no entry for key %q", name)
				}
			}
			return v
		}
	}
	if recv.Kind() == reflect.Pointer && isNil {
		s.errorf("nil pointer evaluating %s.%s", typ, name)
	}
	s.errorf("can't evaluate field %s in type %s", name, typ)
	return reflect.Value{}
}

func (s *state) evalFunction(dot reflect.Value, node *parse.IdentifierNode, cmd parse.Node, args []parse.Node, final reflect.Value) reflect.Value {
	s.at(node)
	name := node.Ident
	fn, ok := s.t.funcs[name]
	builtin := false
	if !ok {
		fn, builtin = builtins[name]
		if !builtin {
			s.errorf("%q is not a defined function", name)
		}
	}
	return s.evalCall(dot, fn, builtin, cmd, name, args, final)
}

func (s *state) evalCall(dot, fn reflect.Value, builtin bool, node parse.Node, name string, args []parse.Node, final reflect.Value) reflect.Value {
	if args != nil {
		args = args[1:] // the function's own name
	}
	typ := fn.Type()
	numIn := len(args)
	if !isNoFinal(final) {
		numIn++
	}
	numFixed := len(args)
	if typ.IsVariadic() {
		numFixed = typ.NumIn() - 1
		if numIn < numFixed {
			s.errorf("wrong number of args for %s: want at least %d got %d", name, typ.NumIn()-1, len(args))
		}
	} else if numIn != typ.NumIn() {
		s.errorf("wrong number of args for %s: want %d got %d", name, typ.NumIn(), numIn)
	}
	switch out := typ.NumOut(); {
	case out == 1, out == 2 && typ.Out(1) == errorType:
	case out == 2:
		s.errorf("invalid function signature for %s: second return value should be error; is %s", name, typ.Out(1))
	default:
		s.errorf("function %s has %d return values; should be 1 or 2", name, out)
	}
	unwrap := func(v reflect.Value) reflect.Value {
		if v.Type() == reflectValueType {
			v = v.Interface().(reflect.Value)
		}
		return v
	}
	// and, or: evaluated left to right, stopping at the first that decides.
	if builtin && (name == "and" || name == "or") {
		var v reflect.Value
		for _, a := range args {
			v = s.evalArg(dot, reflectValueType, a).Interface().(reflect.Value)
			if truth(v) == (name == "or") {
				return v
			}
		}
		if !isNoFinal(final) {
			v = unwrap(s.validateType(final, reflectValueType))
		}
		return v
	}
	argv := make([]reflect.Value, numIn)
	i := 0
	for ; i < numFixed && i < len(args); i++ {
		argv[i] = s.evalArg(dot, typ.In(i), args[i])
	}
	if typ.IsVariadic() {
		elem := typ.In(typ.NumIn() - 1).Elem()
		for ; i < len(args); i++ {
			argv[i] = s.evalArg(dot, elem, args[i])
		}
	}
	if !isNoFinal(final) {
		t := typ.In(typ.NumIn() - 1)
		if typ.IsVariadic() {
			if numIn-1 < numFixed {
				t = typ.In(numIn - 1)
			} else {
				t = t.Elem()
			}
		}
		argv[i] = s.validateType(final, t)
	}
	if builtin && name == "call" {
		callee := final.String()
		if len(args) > 0 {
			callee = args[0].String()
		}
		argv = append([]reflect.Value{reflect.ValueOf(callee)}, argv...)
		fn = reflect.ValueOf(call)
	}
	v, err := safeCall(fn, argv)
	if err != nil {
		s.at(node)
		s.wrapErr(fmt.Errorf("error calling %s: %w", name, err))
	}
	return unwrap(v)
}

func safeCall(fn reflect.Value, args []reflect.Value) (v reflect.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
			} else {
				err = fmt.Errorf("%v", r)
			}
		}
	}()
	out := fn.Call(args)
	if len(out) == 2 && !out[1].IsNil() {
		return out[0], out[1].Interface().(error)
	}
	return out[0], nil
}

func canBeNil(typ reflect.Type) bool {
	switch typ.Kind() {
	case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice:
		return true
	case reflect.Struct:
		return typ == reflectValueType
	}
	return false
}

// validateType checks that v can be passed as typ (nil typ: anything), unwrapping an interface once.
func (s *state) validateType(v reflect.Value, typ reflect.Type) reflect.Value {
	if !v.IsValid() {
		if typ == nil {
			return reflect.ValueOf(nil)
		}
		if canBeNil(typ) {
			return reflect.Zero(typ)
		}
		s.errorf("invalid value; expected %s", typ)
	}
	if typ == reflectValueType && v.Type() != typ {
		return reflect.ValueOf(v)
	}
	if typ != nil && !v.Type().AssignableTo(typ) {
		if v.Kind() == reflect.Interface && !v.IsNil() {
			v = v.Elem()
			if v.Type().AssignableTo(typ) {
				return v
			}
		}
		switch {
		case v.Kind() == reflect.Pointer && v.Type().Elem().AssignableTo(typ):
			v = v.Elem()
			if !v.IsValid() {
				s.errorf("dereference of nil pointer of type %s", typ)
			}
		default:
			s.errorf("wrong type for value; expected %s; got %s", typ, v.Type())
		}
	}
	return v
}

func (s *state) evalArg(dot reflect.Value, typ reflect.Type, n parse.Node) reflect.Value {
	s.at(n)
	switch a := n.(type) {
	case *parse.DotNode:
		return s.validateType(dot, typ)
	case *parse.NilNode:
		if canBeNil(typ) {
			return reflect.Zero(typ)
		}
		s.errorf("cannot assign nil to %s", typ)
	case *parse.FieldNode:
		return s.validateType(s.evalFieldChain(dot, dot, a, a.Ident, []parse.Node{n}, noFinal), typ)
	case *parse.VariableNode:
		return s.validateType(s.evalVariableNode(dot, a, nil, noFinal), typ)
	case *parse.PipeNode:
		return s.validateType(s.evalPipeline(dot, a), typ)
	case *parse.IdentifierNode:
		return s.validateType(s.evalFunction(dot, a, a, nil, noFinal), typ)
	case *parse.ChainNode:
		return s.validateType(s.evalChainNode(dot, a, nil, noFinal), typ)
	}
	if typ == nil { // a chain's receiver: a constant
		return s.evalEmptyInterface(dot, n)
	}
	switch typ.Kind() {
	case reflect.Bool:
		if b, ok := n.(*parse.BoolNode); ok {
			v := reflect.New(typ).Elem()
			v.SetBool(b.True)
			return v
		}
		s.errorf("expected bool; found %s", n)
	case reflect.Complex64, reflect.Complex128:
		if c, ok := n.(*parse.NumberNode); ok && c.IsComplex {
			v := reflect.New(typ).Elem()
			v.SetComplex(c.Complex128)
			return v
		}
		s.errorf("expected complex; found %s", n)
	case reflect.Float32, reflect.Float64:
		if f, ok := n.(*parse.NumberNode); ok && f.IsFloat {
			v := reflect.New(typ).Elem()
			v.SetFloat(f.Float64)
			return v
		}
		s.errorf("expected float; found %s", n)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if i, ok := n.(*parse.NumberNode); ok && i.IsInt {
			v := reflect.New(typ).Elem()
			v.SetInt(i.Int64)
			return v
		}
		s.errorf("expected integer; found %s", n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if u, ok := n.(*parse.NumberNode); ok && u.IsUint {
			v := reflect.New(typ).Elem()
			v.SetUint(u.Uint64)
			return v
		}
		s.errorf("expected unsigned integer; found %s", n)
	case reflect.String:
		if str, ok := n.(*parse.StringNode); ok {
			v := reflect.New(typ).Elem()
			v.SetString(str.Text)
			return v
		}
		s.errorf("expected string; found %s", n)
	case reflect.Interface:
		if typ.NumMethod() == 0 {
			return s.evalEmptyInterface(dot, n)
		}
	case reflect.Struct:
		if typ == reflectValueType {
			return reflect.ValueOf(s.evalEmptyInterface(dot, n))
		}
	}
	s.errorf("can't handle %s for arg of type %s", n, typ)
	return reflect.Value{}
}

func (s *state) evalEmptyInterface(dot reflect.Value, n parse.Node) reflect.Value {
	s.at(n)
	switch a := n.(type) {
	case *parse.BoolNode:
		return reflect.ValueOf(a.True)
	case *parse.NumberNode:
		return s.idealConstant(a)
	case *parse.StringNode:
		return reflect.ValueOf(a.Text)
	}
	s.errorf("can't handle assignment of %s to empty interface argument", n)
	return reflect.Value{}
}

// printValue writes v as text/template does: fmt's form, "<no value>" for nothing.
func (s *state) printValue(n parse.Node, v reflect.Value) {
	s.at(n)
	p, ok := printable(v)
	if !ok {
		s.errorf("can't print %s of type %s", n, v.Type())
	}
	if _, err := fmt.Fprint(s.w, p); err != nil {
		panic(writeError{err})
	}
}

func printable(v reflect.Value) (any, bool) {
	if v.Kind() == reflect.Pointer {
		v, _ = indirect(v)
	}
	if !v.IsValid() {
		return "<no value>", true
	}
	if !v.Type().Implements(errorType) && !v.Type().Implements(stringerType) {
		switch v.Kind() {
		case reflect.Chan, reflect.Func:
			return nil, false
		}
	}
	return v.Interface(), true
}

// indirect goes through pointers and interfaces to the value they hold, saying whether one was nil.
func indirect(v reflect.Value) (reflect.Value, bool) {
	for ; v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface; v = v.Elem() {
		if v.IsNil() {
			return v, true
		}
	}
	return v, false
}

// indirectInterface is the value an interface holds (invalid for a nil one).
func indirectInterface(v reflect.Value) reflect.Value {
	if v.Kind() != reflect.Interface {
		return v
	}
	if v.IsNil() {
		return reflect.Value{}
	}
	return v.Elem()
}

func isTrue(v reflect.Value) (truth, ok bool) {
	if !v.IsValid() {
		return false, true
	}
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() > 0, true
	case reflect.Bool:
		return v.Bool(), true
	case reflect.Complex64, reflect.Complex128:
		return v.Complex() != 0, true
	case reflect.Chan, reflect.Func, reflect.Pointer, reflect.UnsafePointer, reflect.Interface:
		return !v.IsNil(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() != 0, true
	case reflect.Float32, reflect.Float64:
		return v.Float() != 0, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() != 0, true
	case reflect.Struct:
		return true, true
	}
	return false, false
}

func truth(v reflect.Value) bool {
	t, _ := isTrue(indirectInterface(v))
	return t
}

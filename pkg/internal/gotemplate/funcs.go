package gotemplate

import (
	"errors"
	"fmt"
	"reflect"
	"text/template"
)

// builtins are text/template's predefined functions, with its argument rules and messages. html, js and
// urlquery are text/template's own escapers (functions that do not reach its executor).
var builtins = map[string]reflect.Value{
	"and":      reflect.ValueOf(and),
	"or":       reflect.ValueOf(or),
	"not":      reflect.ValueOf(not),
	"call":     reflect.ValueOf(callSignature),
	"html":     reflect.ValueOf(template.HTMLEscaper),
	"js":       reflect.ValueOf(template.JSEscaper),
	"urlquery": reflect.ValueOf(template.URLQueryEscaper),
	"index":    reflect.ValueOf(index),
	"slice":    reflect.ValueOf(slice),
	"len":      reflect.ValueOf(length),
	"print":    reflect.ValueOf(fmt.Sprint),
	"printf":   reflect.ValueOf(fmt.Sprintf),
	"println":  reflect.ValueOf(fmt.Sprintln),
	"eq":       reflect.ValueOf(eq),
	"ne":       reflect.ValueOf(ne),
	"lt":       reflect.ValueOf(lt),
	"le":       reflect.ValueOf(le),
	"gt":       reflect.ValueOf(gt),
	"ge":       reflect.ValueOf(ge),
}

// and and or are evaluated by evalCall, which stops at the first argument that decides; these only give
// their signatures.
func and(first reflect.Value, rest ...reflect.Value) reflect.Value { return first }
func or(first reflect.Value, rest ...reflect.Value) reflect.Value  { return first }

// callSignature is call's signature as a template sees it (call itself takes the callee's name first).
func callSignature(fn reflect.Value, args ...reflect.Value) (reflect.Value, error) { return fn, nil }

func not(v reflect.Value) bool { return !truth(v) }

// call fails on any value a JSON document holds: none is a function. evalCall puts the name of what was
// called first, for the message.
func call(name string, fn reflect.Value, args ...reflect.Value) (reflect.Value, error) {
	fn = indirectInterface(fn)
	if !fn.IsValid() {
		return reflect.Value{}, errors.New("call of nil")
	}
	return reflect.Value{}, fmt.Errorf("non-function %s of type %s", name, fn.Type())
}

func indexArg(i reflect.Value, limit int) (int, error) {
	var x int64
	switch i.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x = i.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		x = int64(i.Uint()) //nolint:gosec // one past int64 wraps negative and is refused below
	case reflect.Invalid:
		return 0, errors.New("cannot index slice/array with nil")
	default:
		return 0, fmt.Errorf("cannot index slice/array with type %s", i.Type())
	}
	if x < 0 || int(x) < 0 || int(x) > limit {
		return 0, fmt.Errorf("index out of range: %d", x)
	}
	return int(x), nil
}

func index(item reflect.Value, indexes ...reflect.Value) (reflect.Value, error) {
	item = indirectInterface(item)
	if !item.IsValid() {
		return reflect.Value{}, errors.New("index of untyped nil")
	}
	for _, i := range indexes {
		i = indirectInterface(i)
		var isNil bool
		if item, isNil = indirect(item); isNil {
			return reflect.Value{}, errors.New("index of nil pointer")
		}
		switch item.Kind() {
		case reflect.Array, reflect.Slice, reflect.String:
			x, err := indexArg(i, item.Len())
			if err != nil {
				return reflect.Value{}, err
			}
			item = item.Index(x)
		case reflect.Map:
			k, err := mapKey(i, item.Type().Key())
			if err != nil {
				return reflect.Value{}, err
			}
			if x := item.MapIndex(k); x.IsValid() {
				item = x
			} else {
				item = reflect.Zero(item.Type().Elem())
			}
		default:
			return reflect.Value{}, fmt.Errorf("can't index item of type %s", item.Type())
		}
	}
	return item, nil
}

func intLike(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

func mapKey(v reflect.Value, t reflect.Type) (reflect.Value, error) {
	if !v.IsValid() {
		if !canBeNil(t) {
			return reflect.Value{}, fmt.Errorf("value is nil; should be of type %s", t)
		}
		v = reflect.Zero(t)
	}
	if v.Type().AssignableTo(t) {
		return v, nil
	}
	if intLike(v.Kind()) && intLike(t.Kind()) && v.Type().ConvertibleTo(t) {
		return v.Convert(t), nil
	}
	return reflect.Value{}, fmt.Errorf("value has type %s; should be %s", v.Type(), t)
}

func slice(item reflect.Value, indexes ...reflect.Value) (reflect.Value, error) {
	item = indirectInterface(item)
	if !item.IsValid() {
		return reflect.Value{}, errors.New("slice of untyped nil")
	}
	var isNil bool
	if item, isNil = indirect(item); isNil {
		return reflect.Value{}, errors.New("slice of nil pointer")
	}
	if len(indexes) > 3 {
		return reflect.Value{}, fmt.Errorf("too many slice indexes: %d", len(indexes))
	}
	var limit int
	switch item.Kind() {
	case reflect.String:
		if len(indexes) == 3 {
			return reflect.Value{}, errors.New("cannot 3-index slice a string")
		}
		limit = item.Len()
	case reflect.Array, reflect.Slice:
		limit = item.Cap()
	default:
		return reflect.Value{}, fmt.Errorf("can't slice item of type %s", item.Type())
	}
	idx := [3]int{0, item.Len()}
	for i, x := range indexes {
		n, err := indexArg(x, limit)
		if err != nil {
			return reflect.Value{}, err
		}
		idx[i] = n
	}
	if idx[0] > idx[1] {
		return reflect.Value{}, fmt.Errorf("invalid slice index: %d > %d", idx[0], idx[1])
	}
	if len(indexes) < 3 {
		return item.Slice(idx[0], idx[1]), nil
	}
	if idx[1] > idx[2] {
		return reflect.Value{}, fmt.Errorf("invalid slice index: %d > %d", idx[1], idx[2])
	}
	return item.Slice3(idx[0], idx[1], idx[2]), nil
}

func length(item reflect.Value) (int, error) {
	item, isNil := indirect(item)
	if isNil {
		return 0, errors.New("len of nil pointer")
	}
	switch item.Kind() {
	case reflect.Array, reflect.Chan, reflect.Map, reflect.Slice, reflect.String:
		return item.Len(), nil
	}
	return 0, fmt.Errorf("len of type %s", item.Type())
}

type kind int

const (
	invalidKind kind = iota
	boolKind
	complexKind
	intKind
	floatKind
	stringKind
	uintKind
)

var (
	errBadComparisonType = errors.New("invalid type for comparison")
	errNoComparison      = errors.New("missing argument for comparison")
)

func basicKind(v reflect.Value) (kind, error) {
	switch v.Kind() {
	case reflect.Bool:
		return boolKind, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intKind, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintKind, nil
	case reflect.Float32, reflect.Float64:
		return floatKind, nil
	case reflect.Complex64, reflect.Complex128:
		return complexKind, nil
	case reflect.String:
		return stringKind, nil
	}
	return invalidKind, errBadComparisonType
}

func isNil(v reflect.Value) bool {
	if !v.IsValid() {
		return true
	}
	switch v.Kind() {
	case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice:
		return v.IsNil()
	}
	return false
}

func eq(a reflect.Value, others ...reflect.Value) (bool, error) {
	a = indirectInterface(a)
	if len(others) == 0 {
		return false, errNoComparison
	}
	ka, _ := basicKind(a)
	for _, b := range others {
		b = indirectInterface(b)
		kb, _ := basicKind(b)
		same := false
		switch {
		case ka == intKind && kb == uintKind:
			same = a.Int() >= 0 && uint64(a.Int()) == b.Uint() //nolint:gosec // not negative: checked first
		case ka == uintKind && kb == intKind:
			same = b.Int() >= 0 && a.Uint() == uint64(b.Int()) //nolint:gosec // not negative: checked first
		case ka != kb:
			if a.IsValid() && b.IsValid() {
				return false, fmt.Errorf("incompatible types for comparison: %v and %v", a.Type(), b.Type())
			}
		case ka == boolKind:
			same = a.Bool() == b.Bool()
		case ka == complexKind:
			same = a.Complex() == b.Complex()
		case ka == floatKind:
			same = a.Float() == b.Float()
		case ka == intKind:
			same = a.Int() == b.Int()
		case ka == stringKind:
			same = a.String() == b.String()
		case ka == uintKind:
			same = a.Uint() == b.Uint()
		default:
			if a.Kind() != b.Kind() && a.IsValid() && b.IsValid() {
				return false, fmt.Errorf("non-comparable types %s: %v, %s: %v", a, a.Type(), b.Type(), b)
			}
			if isNil(a) || isNil(b) {
				same = isNil(a) == isNil(b)
			} else {
				if !b.Type().Comparable() {
					return false, fmt.Errorf("non-comparable type %s: %v", b, b.Type())
				}
				same = a.Interface() == b.Interface()
			}
		}
		if same {
			return true, nil
		}
	}
	return false, nil
}

func ne(a, b reflect.Value) (bool, error) {
	same, err := eq(a, b)
	return !same, err
}

func lt(a, b reflect.Value) (bool, error) {
	a = indirectInterface(a)
	ka, err := basicKind(a)
	if err != nil {
		return false, err
	}
	b = indirectInterface(b)
	kb, err := basicKind(b)
	if err != nil {
		return false, err
	}
	switch {
	case ka == intKind && kb == uintKind:
		return a.Int() < 0 || uint64(a.Int()) < b.Uint(), nil //nolint:gosec // not negative: checked first
	case ka == uintKind && kb == intKind:
		return b.Int() >= 0 && a.Uint() < uint64(b.Int()), nil //nolint:gosec // not negative: checked first
	case ka != kb:
		return false, fmt.Errorf("incompatible types for comparison: %v and %v", a.Type(), b.Type())
	case ka == boolKind, ka == complexKind:
		return false, errBadComparisonType
	case ka == floatKind:
		return a.Float() < b.Float(), nil
	case ka == intKind:
		return a.Int() < b.Int(), nil
	case ka == stringKind:
		return a.String() < b.String(), nil
	}
	return a.Uint() < b.Uint(), nil
}

func le(a, b reflect.Value) (bool, error) {
	less, err := lt(a, b)
	if less || err != nil {
		return less, err
	}
	return eq(a, b)
}

func gt(a, b reflect.Value) (bool, error) {
	lessOrEqual, err := le(a, b)
	if err != nil {
		return false, err
	}
	return !lessOrEqual, nil
}

func ge(a, b reflect.Value) (bool, error) {
	less, err := lt(a, b)
	if err != nil {
		return false, err
	}
	return !less, nil
}

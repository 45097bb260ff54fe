package gotemplate

import (
	"encoding/base64"
	"fmt"
	"reflect"
)

// KubectlFuncs are the functions kubectl's go-template printer adds to the builtins.
var KubectlFuncs = map[string]any{
	"exists":       exists,
	"base64decode": base64decode,
}

// exists tells whether item has an element at each of indices in turn (a map's key, a list's index).
func exists(item any, indices ...any) bool {
	v := reflect.ValueOf(item)
	for _, i := range indices {
		idx := reflect.ValueOf(i)
		var isNil bool
		if v, isNil = indirect(v); isNil {
			return false
		}
		switch v.Kind() {
		case reflect.Array, reflect.Slice, reflect.String:
			var x int64
			switch idx.Kind() {
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				x = idx.Int()
			case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
				x = int64(idx.Uint()) //nolint:gosec // one past int64 wraps negative and is refused below
			default:
				return false
			}
			if x < 0 || x >= int64(v.Len()) {
				return false
			}
			v = v.Index(int(x))
		case reflect.Map:
			if !idx.IsValid() {
				idx = reflect.Zero(v.Type().Key())
			}
			if !idx.Type().AssignableTo(v.Type().Key()) {
				return false
			}
			if x := v.MapIndex(idx); x.IsValid() {
				v = x
			} else {
				v = reflect.Zero(v.Type().Elem())
			}
		default:
			return false
		}
	}
	_, isNil := indirect(v)
	return !isNil
}

func base64decode(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", fmt.Errorf("base64 decode failed: %w", err)
	}
	return string(b), nil
}

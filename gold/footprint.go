package gold

import (
	"reflect"
)

// deepSize is the memory a value reaches through pointers, slices, maps, strings and
// interfaces (capacities, not lengths: what is allocated), not counting v's own top-level
// header. The sketch libraries keep their contents in unexported fields with no size accessor,
// and a state report must count what a sketch really holds (a sparse HyperLogLog is a few
// bytes, a dense one 2^p; a DDSketch grows its bins), so it is measured, not assumed.
// Reflection may read lengths and capacities of unexported fields; it never reads their
// values. seen stops shared pointers (a sketch's index mapping) from being counted twice.
func deepSize(v reflect.Value, seen map[uintptr]bool) int64 {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return 0
		}
		seen[v.Pointer()] = true
		e := v.Elem()
		return int64(e.Type().Size()) + deepSize(e, seen)
	case reflect.Interface:
		if v.IsNil() {
			return 0
		}
		e := v.Elem()
		if e.Kind() == reflect.Pointer {
			return deepSize(e, seen)
		}
		return int64(e.Type().Size()) + deepSize(e, seen)
	case reflect.Struct:
		var n int64
		for i := range v.NumField() {
			n += deepSize(v.Field(i), seen)
		}
		return n
	case reflect.Slice:
		if v.IsNil() || seen[v.Pointer()] {
			return 0
		}
		seen[v.Pointer()] = true
		el := v.Type().Elem()
		n := int64(v.Cap()) * int64(el.Size())
		if hasPointers(el) {
			for i := range v.Len() {
				n += deepSize(v.Index(i), seen)
			}
		}
		return n
	case reflect.Array:
		var n int64
		if hasPointers(v.Type().Elem()) {
			for i := range v.Len() {
				n += deepSize(v.Index(i), seen)
			}
		}
		return n
	case reflect.String:
		return int64(v.Len())
	case reflect.Map:
		if v.IsNil() || seen[v.Pointer()] {
			return 0
		}
		seen[v.Pointer()] = true
		// A Go map's entries and their slot overhead: keys and values side by side, a control
		// byte each, at a load factor of 7/8 (swiss tables).
		kt, vt := v.Type().Key(), v.Type().Elem()
		n := int64(v.Len()) * (int64(kt.Size()+vt.Size()) + 1) * 8 / 7
		if hasPointers(kt) || hasPointers(vt) {
			it := v.MapRange()
			for it.Next() {
				n += deepSize(it.Key(), seen) + deepSize(it.Value(), seen)
			}
		}
		return n
	}
	return 0
}

func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Map, reflect.String, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return true
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	}
	return false
}

// sketchSize is the heap a sketch holds: its struct and everything it reaches. seen is
// scratch, emptied here.
func sketchSize(sk any, seen map[uintptr]bool) int64 {
	clear(seen)
	v := reflect.ValueOf(sk)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return 0
	}
	return deepSize(v, seen)
}

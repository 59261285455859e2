package main

import (
	"encoding"
	"encoding/json"
	"reflect"
)

// emptyNotNull is the job's summary with every nil list made [] and every nil map {}, however
// deep, so the printed JSON has no null list or map on success or on failure (README: "an empty
// list is [] and an empty map {}, never null"). A job that fails part way returns a report
// whose lists it never filled; doing it here, once, keeps the rule whatever the job and
// whatever field a report gains later. A nil pointer (no report at all) comes back as nil.
func emptyNotNull(summary any) any {
	if summary == nil {
		return nil
	}
	v := reflect.ValueOf(summary)
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return fillEmpty(v).Interface()
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// fillEmpty is a copy of v (same type) with nil slices and maps replaced by empty ones. Values
// that marshal themselves (time.Time, custom encodings) and byte slices (base64 strings) are
// kept as they are; unexported struct fields, which JSON does not print, are copied unchanged.
func fillEmpty(v reflect.Value) reflect.Value {
	t := v.Type()
	if t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return v
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(t.Elem())
		out.Elem().Set(fillEmpty(v.Elem()))
		return out
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(t).Elem()
		out.Set(fillEmpty(v.Elem()))
		return out
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return v
		}
		if v.IsNil() {
			return reflect.MakeSlice(t, 0, 0)
		}
		out := reflect.MakeSlice(t, v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(fillEmpty(v.Index(i)))
		}
		return out
	case reflect.Array:
		out := reflect.New(t).Elem()
		for i := range v.Len() {
			out.Index(i).Set(fillEmpty(v.Index(i)))
		}
		return out
	case reflect.Map:
		out := reflect.MakeMapWithSize(t, v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(it.Key(), fillEmpty(it.Value()))
		}
		return out
	case reflect.Struct:
		out := reflect.New(t).Elem()
		out.Set(v)
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				out.Field(i).Set(fillEmpty(v.Field(i)))
			}
		}
		return out
	}
	return v
}

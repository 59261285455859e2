package pq

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/medallion-lake/medallion/txlog"
)

func encodeParts(parts []KeyPart) []byte {
	var b []byte
	for _, p := range parts {
		switch v := p.(type) {
		case nil:
			b = AppendKeyNull(b)
		case string:
			b = AppendKeyString(b, v)
		case int64:
			b = AppendKeyInt64(b, v)
		case float64:
			b = AppendKeyFloat64(b, v)
		}
	}
	return b
}

func TestKeyRoundTrip(t *testing.T) {
	tests := [][]KeyPart{
		nil,
		{"click"},
		{"a", nil, int64(-5), 2.5},
		{string(make([]byte, 300)), int64(math.MinInt64), math.Inf(-1)},
	}
	for _, parts := range tests {
		got, err := DecodeKey(string(encodeParts(parts)))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, parts) {
			t.Fatalf("round trip %v -> %v", parts, got)
		}
	}
	// Tuples that concatenate to the same text stay distinct; -0 and 0 group together.
	if string(encodeParts([]KeyPart{"a", "bc"})) == string(encodeParts([]KeyPart{"ab", "c"})) {
		t.Fatal("length prefix missing")
	}
	if string(AppendKeyFloat64(nil, math.Copysign(0, -1))) != string(AppendKeyFloat64(nil, 0)) {
		t.Fatal("-0 and 0 are different keys")
	}
}

func FuzzDecodeKey(f *testing.F) {
	f.Add(encodeParts([]KeyPart{"a", nil, int64(7), 1.5}))
	f.Add([]byte{keyString, 0xff, 0xff})
	f.Add([]byte{keyInt, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		parts, err := DecodeKey(string(b))
		if err != nil {
			if !errors.Is(err, ErrBadKey) {
				t.Fatalf("error %v is not ErrBadKey", err)
			}
			return
		}
		// Canonical encodings re-encode to themselves (NaN payloads and non-minimal varints
		// may not, so compare the decoded parts instead).
		again, err := DecodeKey(string(encodeParts(parts)))
		if err != nil || len(again) != len(parts) {
			t.Fatalf("re-decode %v: %v %v", parts, again, err)
		}
	})
}

// FuzzAppendKeyColumns: decoding a key straight into columns accepts exactly the keys
// DecodeKey accepts and writes what AppendKeyValue writes for each of its parts.
func FuzzAppendKeyColumns(f *testing.F) {
	f.Add(encodeParts([]KeyPart{"a", nil, int64(7), 1.5}))
	f.Add(encodeParts([]KeyPart{string(make([]byte, 300)), int64(math.MinInt64)}))
	f.Add([]byte{keyString, 0xff, 0xff})
	f.Add([]byte{keyInt, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		parts, derr := DecodeKey(string(b))
		// Columns shaped after the parts when they decode; strings otherwise.
		n := max(len(parts), 3)
		direct, viaParts := make([]*Column, n), make([]*Column, n)
		for k := range n {
			typ := txlog.PrimitiveType{Name: txlog.TypeString}
			if k < len(parts) {
				switch parts[k].(type) {
				case int64:
					typ.Name = txlog.TypeLong
				case float64:
					typ.Name = txlog.TypeDouble
				}
			}
			direct[k], _ = NewColumn(typ)
			viaParts[k], _ = NewColumn(typ)
		}
		want := len(parts)
		err := AppendKeyColumns(direct[:want], string(b))
		if derr != nil {
			if err == nil || !errors.Is(err, ErrBadKey) {
				t.Fatalf("DecodeKey fails (%v), AppendKeyColumns gives %v", derr, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("DecodeKey gives %v, AppendKeyColumns fails: %v", parts, err)
		}
		for k, p := range parts {
			AppendKeyValue(viaParts[k], p)
			if got, want := direct[k].Value(0), viaParts[k].Value(0); !reflect.DeepEqual(got, want) && !(isNaN(got) && isNaN(want)) {
				t.Fatalf("part %d: %v, want %v", k, got, want)
			}
		}
		if len(parts) > 0 {
			if err := AppendKeyColumns(direct[:len(parts)-1], string(b)); !errors.Is(err, ErrBadKey) {
				t.Fatalf("a key of %d parts into %d columns: %v", len(parts), len(parts)-1, err)
			}
		}
	})
}

func isNaN(v any) bool {
	f, ok := v.(float64)
	return ok && math.IsNaN(f)
}

package pq

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// ErrBadKey is returned when an encoded key cannot be decoded.
var ErrBadKey = errors.New("table: bad key")

// Key encoding: one tag byte per key part, then the value. Equal tuples give equal bytes and
// distinct tuples distinct bytes, so the bytes can be hashed and compared as the group key.
const (
	keyNull   = 0
	keyString = 1
	keyInt    = 2
	keyFloat  = 3
)

// AppendKeyNull appends a null key part.
func AppendKeyNull(dst []byte) []byte { return append(dst, keyNull) }

// AppendKeyString appends a string key part (length-prefixed, so "a","bc" != "ab","c").
func AppendKeyString(dst []byte, s string) []byte {
	dst = append(dst, keyString)
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// AppendKeyInt64 appends an integer (or timestamp) key part.
func AppendKeyInt64(dst []byte, v int64) []byte {
	dst = append(dst, keyInt)
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}

// AppendKeyFloat64 appends a float key part; -0 and NaN payloads are normalized as Spark
// normalizes floating grouping keys.
func AppendKeyFloat64(dst []byte, v float64) []byte {
	if v == 0 {
		v = 0
	}
	if math.IsNaN(v) {
		v = math.NaN()
	}
	dst = append(dst, keyFloat)
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(v))
}

// KeyPart is one decoded key part; Kind is nil for null, else string, int64 or float64.
type KeyPart = any

// DecodeKey splits an encoded key into its parts, so that key columns can be written back (AppendKeyValue).
func DecodeKey(key string) ([]KeyPart, error) {
	var parts []KeyPart
	for i := 0; i < len(key); {
		tag := key[i]
		i++
		switch tag {
		case keyNull:
			parts = append(parts, nil)
		case keyString:
			str, next, err := keyStringPart(key, i)
			if err != nil {
				return nil, err
			}
			parts = append(parts, str)
			i = next
		case keyInt, keyFloat:
			u, err := keyNumberPart(key, i)
			if err != nil {
				return nil, err
			}
			i += 8
			if tag == keyInt {
				parts = append(parts, int64(u))
			} else {
				parts = append(parts, math.Float64frombits(u))
			}
		default:
			return nil, fmt.Errorf("%w: key part at byte %d has unknown tag %d", ErrBadKey, i-1, tag)
		}
	}
	return parts, nil
}

// keyStringPart reads the string part whose varint length starts at key[i] (after its tag),
// and returns it with the index after it. DecodeKey and AppendKeyColumns read through it, so
// both accept the same keys.
func keyStringPart(key string, i int) (string, int, error) {
	var n uint64
	shift, ok := uint(0), false
	for ; i < len(key) && shift < 64; shift += 7 {
		c := key[i]
		i++
		n |= uint64(c&0x7f) << shift
		if c < 0x80 {
			ok = true
			break
		}
	}
	if !ok || uint64(len(key)-i) < n {
		return "", i, fmt.Errorf("%w: key string part is truncated at byte %d", ErrBadKey, i)
	}
	return key[i : i+int(n)], i + int(n), nil
}

// keyNumberPart reads the 8 big-endian bytes of a number part at key[i] (after its tag).
func keyNumberPart(key string, i int) (uint64, error) {
	if len(key)-i < 8 {
		return 0, fmt.Errorf("%w: key number part at byte %d is truncated", ErrBadKey, i-1)
	}
	var u uint64
	for _, c := range []byte(key[i : i+8]) {
		u = u<<8 | uint64(c)
	}
	return u, nil
}

// AppendKeyColumns decodes an encoded key straight into cols, one part a column (as
// AppendKeyValue writes each of DecodeKey's parts), without the parts slice and the boxing
// of each part that DecodeKey costs: the stream writes every gold row's key columns this way.
func AppendKeyColumns(cols []*Column, key string) error {
	k := 0
	for i := 0; i < len(key); k++ {
		if k >= len(cols) {
			return fmt.Errorf("%w: key has more than %d parts", ErrBadKey, len(cols))
		}
		c := cols[k]
		tag := key[i]
		i++
		switch tag {
		case keyNull:
			c.AppendNull()
		case keyString:
			str, next, err := keyStringPart(key, i)
			if err != nil {
				return err
			}
			c.AppendString(str)
			i = next
		case keyInt, keyFloat:
			u, err := keyNumberPart(key, i)
			if err != nil {
				return err
			}
			i += 8
			if tag == keyInt {
				appendKeyInt(c, int64(u))
			} else if v := math.Float64frombits(u); c.Kind == KindFloat32 {
				c.AppendFloat32(float32(v))
			} else {
				c.AppendFloat64(v)
			}
		default:
			return fmt.Errorf("%w: key part at byte %d has unknown tag %d", ErrBadKey, i-1, tag)
		}
	}
	if k != len(cols) {
		return fmt.Errorf("%w: key has %d parts, want %d", ErrBadKey, k, len(cols))
	}
	return nil
}

// AppendKeyPart appends row i of a key column to dst in the key encoding above. The gold
// operator groups on these keys, the dedup state keeps them and merge-late matches gold rows
// on them, so all of them encode a column the same way. Strings are passed without a copy:
// the encoder only appends their bytes. Decimals and nested kinds cannot be keys (the stream's
// plan refuses them) and would encode as null.
func AppendKeyPart(dst []byte, c *Column, i int) []byte {
	if c.IsNull(i) {
		return AppendKeyNull(dst)
	}
	switch c.Kind {
	case KindBytes:
		b := c.BytesAt(i)
		return AppendKeyString(dst, unsafe.String(unsafe.SliceData(b), len(b)))
	case KindInt64:
		return AppendKeyInt64(dst, c.Int64[i])
	case KindInt32:
		return AppendKeyInt64(dst, int64(c.Int32[i]))
	case KindFloat64:
		return AppendKeyFloat64(dst, c.Float64[i])
	case KindFloat32:
		return AppendKeyFloat64(dst, float64(c.Float32[i]))
	case KindBool:
		v := int64(0)
		if c.Bool[i] {
			v = 1
		}
		return AppendKeyInt64(dst, v)
	}
	return AppendKeyNull(dst)
}

// AppendKeyValue writes a decoded key part back into a column of the key's type.
func AppendKeyValue(c *Column, v KeyPart) {
	switch v := v.(type) {
	case nil:
		c.AppendNull()
	case string:
		c.AppendString(v)
	case float64:
		if c.Kind == KindFloat32 {
			c.AppendFloat32(float32(v))
		} else {
			c.AppendFloat64(v)
		}
	case int64:
		appendKeyInt(c, v)
	}
}

// appendKeyInt writes an integer key part in the column's type.
func appendKeyInt(c *Column, v int64) {
	switch c.Kind {
	case KindInt32:
		c.AppendInt32(int32(v))
	case KindBool:
		c.AppendBool(v != 0)
	default:
		c.AppendInt64(v)
	}
}

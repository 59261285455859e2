package pq

import (
	"encoding/base64"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go/variant"
)

// A Delta variant column (readerFeatures variantType) is stored in Parquet as a group of two
// binaries, metadata (the dictionary of field names) and value, in the encoding of the
// Parquet Variant spec. The reader turns each value into its JSON text, as Spark's to_json
// and CAST(v AS STRING) print it: the pipeline sees a variant as that string, and
// `table scan --format jsonl` prints it inline as JSON. The binary decoding is parquet-go's
// (variant.Decode, which rejects what the spec calls invalid); the JSON rendering is ours,
// following Spark's VariantUtil.toJson: dates, timestamps, binaries and UUIDs as JSON
// strings, decimals as plain numbers at their scale, object fields in their stored order.

// variantJSON appends the JSON text of the variant (metadata, value) to dst.
func variantJSON(dst, metadata, value []byte) ([]byte, error) {
	m, err := variant.DecodeMetadata(metadata)
	if err != nil {
		return dst, err
	}
	v, err := variant.Decode(m, value)
	if err != nil {
		return dst, err
	}
	return appendVariant(dst, v)
}

func appendVariant(dst []byte, v variant.Value) ([]byte, error) {
	switch v.Basic() {
	case variant.BasicObject:
		dst = append(dst, '{')
		for i, f := range v.ObjectValue().Fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, f.Name)
			dst = append(dst, ':')
			var err error
			if dst, err = appendVariant(dst, f.Value); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case variant.BasicArray:
		dst = append(dst, '[')
		for i, e := range v.ArrayValue().Elements {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendVariant(dst, e); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case variant.BasicShortString:
		return appendJSONString(dst, v.Str()), nil
	}
	switch v.Type() {
	case variant.PrimitiveNull:
		return append(dst, "null"...), nil
	case variant.PrimitiveTrue:
		return append(dst, "true"...), nil
	case variant.PrimitiveFalse:
		return append(dst, "false"...), nil
	case variant.PrimitiveInt8, variant.PrimitiveInt16, variant.PrimitiveInt32, variant.PrimitiveInt64:
		return strconv.AppendInt(dst, v.Int(), 10), nil
	case variant.PrimitiveDouble:
		return appendJSONFloat(dst, v.FloatValue(), 64), nil
	case variant.PrimitiveFloat:
		return appendJSONFloat(dst, v.FloatValue(), 32), nil
	case variant.PrimitiveDecimal4, variant.PrimitiveDecimal8:
		return append(dst, plainDecimal(big.NewInt(v.Int()), int(v.Scale()))...), nil
	case variant.PrimitiveDecimal16:
		le := v.Decimal16Value()
		var be [16]byte
		for i := range le {
			be[15-i] = le[i]
		}
		n := new(big.Int).SetBytes(be[:])
		if be[0]&0x80 != 0 { // two's complement
			n.Sub(n, new(big.Int).Lsh(big.NewInt(1), 128))
		}
		return append(dst, plainDecimal(n, int(v.Scale()))...), nil
	case variant.PrimitiveString:
		return appendJSONString(dst, v.Str()), nil
	case variant.PrimitiveBinary:
		return appendJSONString(dst, base64.StdEncoding.EncodeToString(v.Bytes())), nil
	case variant.PrimitiveDate:
		return appendJSONString(dst, time.Unix(v.Int()*86400, 0).UTC().Format("2006-01-02")), nil
	case variant.PrimitiveTimestamp:
		return appendJSONString(dst, time.UnixMicro(v.Int()).UTC().Format("2006-01-02 15:04:05.999999")+"+00:00"), nil
	case variant.PrimitiveTimestampNTZ:
		return appendJSONString(dst, time.UnixMicro(v.Int()).UTC().Format("2006-01-02 15:04:05.999999")), nil
	case variant.PrimitiveTimestampNanos:
		return appendJSONString(dst, time.Unix(0, v.Int()).UTC().Format("2006-01-02 15:04:05.999999999")+"+00:00"), nil
	case variant.PrimitiveTimestampNTZNanos:
		return appendJSONString(dst, time.Unix(0, v.Int()).UTC().Format("2006-01-02 15:04:05.999999999")), nil
	case variant.PrimitiveTime:
		return appendJSONString(dst, time.UnixMicro(v.Int()).UTC().Format("15:04:05.999999")), nil
	case variant.PrimitiveUUID:
		return appendJSONString(dst, v.UUIDValue().String()), nil
	}
	return dst, fmt.Errorf("variant type %d has no JSON form", v.Type())
}

// plainDecimal renders unscaled/10^scale without exponent, keeping the scale's digits (as
// Java's BigDecimal.toPlainString does).
func plainDecimal(unscaled *big.Int, scale int) string {
	neg := unscaled.Sign() < 0
	digits := new(big.Int).Abs(unscaled).String()
	if scale > 0 {
		if len(digits) <= scale {
			digits = strings.Repeat("0", scale-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

package sqlexpr

import (
	"math"
	"strconv"
	"strings"

	"github.com/medallion-lake/medallion/pq"
)

// Casts between the SQL types, with Spark's non-ANSI rules (a failed cast yields null), and
// the string parsers and formatters they use.

type castNode struct {
	x   enode
	t   sqlType
	out vec
}

func (n *castNode) typ() sqlType { return n.t }
func (n *castNode) eval(c *evalCtx) *vec {
	x := n.x.eval(c)
	castVec(x, n.x.typ(), n.t, c.n, &n.out)
	return &n.out
}

// castVec casts n rows of src from one type to another into dst, as Spark's Cast without
// ANSI mode: a value that does not convert is NULL.
func castVec(src *vec, from, to sqlType, n int, dst *vec) {
	dst.null = src.nullSlice(n)
	own := false // whether dst.null is dst's own buffer yet
	setNull := func(i int) {
		if !own {
			buf := growBools(nil, n)
			if dst.null != nil {
				copy(buf, dst.null)
			}
			dst.null, own = buf, true
		}
		dst.null[i] = true
	}
	if from.k == kNull {
		dst.null = growBools(nil, n)
		for i := range dst.null {
			dst.null[i] = true
		}
		fillZero(dst, to, n)
		return
	}
	switch to.k {
	case kLong, kInt:
		castToIntegral(src, from, to, n, dst, setNull)
	case kDouble:
		castToDouble(src, from, to, n, dst, setNull)
	case kDecimal:
		castToDecimal(src, from, to, n, dst, setNull)
	case kTimestamp:
		castToTimestamp(src, from, to, n, dst, setNull)
	case kDate:
		castToDate(src, from, to, n, dst, setNull)
	case kBool:
		castToBool(src, from, to, n, dst, setNull)
	case kString, kBinary:
		castToString(src, from, n, dst)
	default:
		fillAllNull(dst, to, n)
	}
}

// castToIntegral is castVec to an integer (int or bigint).
func castToIntegral(src *vec, from, to sqlType, n int, dst *vec, setNull func(int)) {
	switch from.k {
	case kInt, kLong:
		dst.i = src.i
	case kString:
		dst.i = growInts(dst.i, n)
		parseEach(src, dst.i[:n], setNull, func(b []byte) (int64, bool) { return parseSparkIntegral(b, to.k == kInt) })
	default:
		fillAllNull(dst, to, n)
	}
}

// parseEach sets out[i] to parse of row i of the strings in src. A NULL row gets the zero
// value; a string parse refuses gets the zero value and setNull(i): Spark's cast without ANSI
// mode yields NULL for it.
func parseEach[T any](src *vec, out []T, setNull func(int), parse func([]byte) (T, bool)) {
	var zero T
	for i := range out {
		out[i] = zero
		if src.isNull(i) {
			continue
		}
		v, ok := parse(src.str(i))
		if !ok {
			setNull(i)
			continue
		}
		out[i] = v
	}
}

// castToDouble is castVec to a double.
func castToDouble(src *vec, from, to sqlType, n int, dst *vec, setNull func(int)) {
	dst.f = growFloats(dst.f, n)
	switch from.k {
	case kInt, kLong:
		for i, v := range src.i[:n] {
			dst.f[i] = float64(v)
		}
	case kDecimal:
		for i, v := range src.d[:n] {
			dst.f[i] = decToDouble(v, from.s)
		}
	case kString:
		parseEach(src, dst.f[:n], setNull, parseSparkDouble)
	default:
		fillAllNull(dst, to, n)
	}
}

// castToDecimal is castVec to a decimal.
func castToDecimal(src *vec, from, to sqlType, n int, dst *vec, setNull func(int)) {
	dst.d = growDecs(dst.d, n)
	if from.k != kInt && from.k != kLong && from.k != kDecimal {
		fillAllNull(dst, to, n)
		return
	}
	for i := range n {
		dst.d[i] = pq.Decimal128{}
		if src.isNull(i) {
			continue
		}
		v := pq.Decimal128{}
		if from.k == kDecimal {
			v = src.d[i]
		} else {
			v = pq.DecimalFromInt64(src.i[i])
		}
		d, ok := decRescale(v, from.s, to.s, to.p) // from.s is 0 for integers
		if !ok {
			setNull(i)
			continue
		}
		dst.d[i] = d
	}
}

// castToTimestamp is castVec to a timestamp.
func castToTimestamp(src *vec, from, to sqlType, n int, dst *vec, setNull func(int)) {
	dst.i = growInts(dst.i, n)
	switch from.k {
	case kDate:
		for i, v := range src.i[:n] {
			dst.i[i] = v * 86400e6
		}
	case kString:
		parseEach(src, dst.i[:n], setNull, func(b []byte) (int64, bool) { return parseTimestampString(string(b)) })
	default:
		fillAllNull(dst, to, n)
	}
}

// castToDate is castVec to a date.
func castToDate(src *vec, from, to sqlType, n int, dst *vec, setNull func(int)) {
	dst.i = growInts(dst.i, n)
	if from.k != kString {
		fillAllNull(dst, to, n)
		return
	}
	parseEach(src, dst.i[:n], setNull, func(b []byte) (int64, bool) { return parseDateString(string(b)) })
}

// castToBool is castVec to a boolean.
func castToBool(src *vec, from, to sqlType, n int, dst *vec, setNull func(int)) {
	dst.b = growBools(dst.b, n)
	if from.k != kString {
		fillAllNull(dst, to, n)
		return
	}
	parseEach(src, dst.b[:n], setNull, func(b []byte) (bool, bool) {
		switch strings.ToLower(strings.TrimSpace(string(b))) {
		case "t", "true", "y", "yes", "1":
			return true, true
		case "f", "false", "n", "no", "0":
			return false, true
		}
		return false, false
	})
}

// castToString is castVec to a string or binary; it never yields a new null.
func castToString(src *vec, from sqlType, n int, dst *vec) {
	if from.k == kString || from.k == kBinary {
		dst.off, dst.data = src.off, src.data
		return
	}
	dst.data = dst.data[:0]
	dst.off = append(dst.off[:0], 0)
	for i := range n {
		if !src.isNull(i) {
			dst.data = appendSQLString(dst.data, src, from, i)
		}
		dst.off = append(dst.off, int32(len(dst.data)))
	}
}

func fillAllNull(dst *vec, t sqlType, n int) {
	dst.null = growBools(nil, n)
	for i := range dst.null {
		dst.null[i] = true
	}
	fillZero(dst, t, n)
}

// decimalToDouble is exact-then-rounded, like Java's BigDecimal.doubleValue.
func decimalToDouble(v int64, scale int) float64 {
	if scale == 0 {
		return float64(v)
	}
	if v > -(1<<53) && v < 1<<53 && scale <= 22 {
		return float64(v) / math.Pow10(scale)
	}
	f, _ := strconv.ParseFloat(pq.FormatDecimal(pq.Decimal128{Hi: v >> 63, Lo: uint64(v)}, scale), 64)
	return f
}

// appendSQLString appends row i of src (of type t) as Spark casts it to a string.
func appendSQLString(dst []byte, src *vec, t sqlType, i int) []byte {
	switch t.k {
	case kBool:
		return strconv.AppendBool(dst, src.b[i])
	case kInt, kLong:
		return strconv.AppendInt(dst, src.i[i], 10)
	case kDouble:
		return append(dst, javaDoubleString(src.f[i])...)
	case kDecimal:
		return append(dst, pq.FormatDecimal(src.d[i], t.s)...)
	case kDate:
		return append(dst, formatDate(src.i[i])...)
	case kTimestamp:
		return append(dst, formatTimestampSQL(src.i[i])...)
	}
	return dst
}

// parseSparkIntegral is Spark's cast of a string to an int or bigint: surrounding
// whitespace is ignored, a fraction is truncated, anything else (or overflow) is NULL.
func parseSparkIntegral(b []byte, int32Range bool) (int64, bool) {
	s := strings.TrimFunc(string(b), isSQLSpace)
	if s == "" {
		return 0, false
	}
	whole, frac, hasDot := strings.Cut(s, ".")
	if hasDot {
		for _, ch := range frac {
			if ch < '0' || ch > '9' {
				return 0, false
			}
		}
	}
	digits := strings.TrimLeft(whole, "+-")
	// Spark's UTF8String.toLong reads "." (and "-.") as 0: only a lone sign is no number.
	if len(whole)-len(digits) > 1 || digits == "" && !hasDot {
		return 0, false
	}
	for _, ch := range digits {
		if ch < '0' || ch > '9' {
			return 0, false
		}
	}
	if digits == "" {
		return 0, true
	}
	v, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return 0, false
	}
	if int32Range && (v < math.MinInt32 || v > math.MaxInt32) {
		return 0, false
	}
	return v, true
}

// parseSparkDouble is Spark's cast of a string to a double: Java's number syntax (with an
// optional d/f suffix), Infinity, NaN (any case), surrounding whitespace ignored.
func parseSparkDouble(b []byte) (float64, bool) {
	s := strings.TrimFunc(string(b), isSQLSpace)
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case "inf", "infinity":
		if strings.HasPrefix(s, "-") {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "nan":
		return math.NaN(), true
	}
	if n := len(s); n > 1 && strings.ContainsRune("dDfF", rune(s[n-1])) {
		s = s[:n-1]
	}
	if s == "" || strings.ContainsAny(s, "_xXpPiInN") {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

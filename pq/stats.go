package pq

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go/format"

	"github.com/medallion-lake/medallion/txlog"
)

// ErrSchemaMismatch reports data whose columns or types do not match the table schema.
var ErrSchemaMismatch = errors.New("table: schema mismatch")

// statsPrefixRunes is how many characters of a string min/max are kept (as delta-go does).
const statsPrefixRunes = 32

// statLeaf accumulates the stats of one leaf column that is not inside a list or map.
type statLeaf struct {
	path   []int
	typ    txlog.DataType
	kind   Kind
	minMax bool // whether min/max are collected (not for boolean and binary)
	nulls  int64
	has    bool
	bad    bool // NaN or infinite values: min/max omitted
	minI   int64
	maxI   int64
	minF   float64
	maxF   float64
	minB   []byte
	maxB   []byte
	minD   Decimal128
	maxD   Decimal128
	// footer is the Parquet leaf whose column chunk statistics give min/max (fromFooter), or
	// -1 when add observes them.
	footer int
}

type statsCollector struct {
	schema *txlog.StructType
	leaves []*statLeaf
	byPath map[string]*statLeaf
}

func pathKey(p []int) string {
	b := make([]byte, 0, 8)
	for _, i := range p {
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '.')
	}
	return string(b)
}

func newStatsCollector(s *txlog.StructType, limit int) *statsCollector {
	c := &statsCollector{schema: s, byPath: map[string]*statLeaf{}}
	var walk func(st *txlog.StructType, prefix []int)
	walk = func(st *txlog.StructType, prefix []int) {
		for i, f := range st.Fields {
			if limit >= 0 && len(c.leaves) >= limit {
				return
			}
			p := append(append([]int(nil), prefix...), i)
			switch t := f.Type.(type) {
			case *txlog.StructType:
				walk(t, p)
				continue
			case txlog.ArrayType, txlog.MapType:
				continue
			}
			k, err := KindOf(f.Type)
			if err != nil || k == KindNull {
				continue
			}
			l := &statLeaf{path: p, typ: f.Type, kind: k, footer: -1,
				minMax: f.Type.TypeName() != txlog.TypeBoolean && f.Type.TypeName() != txlog.TypeBinary}
			c.leaves = append(c.leaves, l)
			c.byPath[pathKey(p)] = l
		}
	}
	walk(s, nil)
	return c
}

func (c *statsCollector) add(cols []*Column, idx []int, lo, hi int) {
	var rows []int // the selected rows, or nil for the run [first, first+hi-lo)
	first, ok := contiguous(idx, lo, hi)
	if !ok {
		rows = idx[lo:hi]
	}
	for _, l := range c.leaves {
		col := cols[l.path[0]]
		for _, p := range l.path[1:] {
			col = col.Children[p]
		}
		if l.footer >= 0 && !col.hasNullsIn(idx, lo, hi) {
			continue
		}
		if l.footer < 0 && l.minMax && !l.bad && !col.hasNullsIn(idx, lo, hi) && l.observeRows(col, rows, first, hi-lo) {
			continue
		}
		for k := lo; k < hi; k++ {
			i := k
			if idx != nil {
				i = idx[k]
			}
			if col.IsNull(i) {
				l.nulls++
				continue
			}
			if !l.minMax || l.bad || l.footer >= 0 {
				continue
			}
			l.observe(col, i)
		}
	}
}

// fromFooter hands the min/max of the top-level integer and string leaves to the written
// file's column chunk statistics (readFooter): parquet-go computes every page's bounds for the
// page index and folds them into those, the same least and greatest values by the same order
// (signed integers; strings as bytes), and observing them a second time here cost a stream at
// 100k keys 2% of its CPU. leaf maps a top-level field to its Parquet leaf (-1: none). Nested
// fields keep add: a null struct's fields hold values add reads and Parquet does not store.
func (c *statsCollector) fromFooter(leaf func(field int) int) {
	for _, l := range c.leaves {
		switch {
		case !l.minMax || len(l.path) != 1:
		case l.kind == KindInt64, l.kind == KindInt32, l.kind == KindBytes:
			l.footer = leaf(l.path[0])
		}
	}
}

// readFooter takes the min/max of the leaves fromFooter chose from the file's row groups.
func (c *statsCollector) readFooter(groups []format.RowGroup) {
	for _, l := range c.leaves {
		if l.footer < 0 {
			continue
		}
		for g := range groups {
			st := &groups[g].Columns[l.footer].MetaData.Statistics
			if st.MinValue == nil || st.MaxValue == nil {
				continue // no value in this row group but nulls
			}
			l.footerBounds(st.MinValue, st.MaxValue)
		}
	}
}

// footerBounds widens l's min/max by a column chunk's (Parquet's plain encoding of each).
func (l *statLeaf) footerBounds(minV, maxV []byte) {
	if l.kind == KindBytes {
		if !l.has || bytes.Compare(minV, l.minB) < 0 {
			l.minB = append(l.minB[:0], minV...)
		}
		if !l.has || bytes.Compare(maxV, l.maxB) > 0 {
			l.maxB = append(l.maxB[:0], maxV...)
		}
		l.has = true
		return
	}
	var mn, mx int64
	if l.kind == KindInt64 {
		mn, mx = int64(binary.LittleEndian.Uint64(minV)), int64(binary.LittleEndian.Uint64(maxV))
	} else {
		mn, mx = int64(int32(binary.LittleEndian.Uint32(minV))), int64(int32(binary.LittleEndian.Uint32(maxV)))
	}
	if !l.has || mn < l.minI {
		l.minI = mn
	}
	if !l.has || mx > l.maxI {
		l.maxI = mx
	}
	l.has = true
}

// observeRows observes n non-null rows of the common kinds in one typed loop: rows rows[k],
// or first+k when rows is nil. It reports false, having done nothing, for the other kinds.
func (l *statLeaf) observeRows(col *Column, rows []int, first, n int) bool {
	if n == 0 {
		return true
	}
	switch l.kind {
	case KindInt64:
		mn, mx := minMaxOf(col.Int64, rows, first, n)
		if !l.has || mn < l.minI {
			l.minI = mn
		}
		if !l.has || mx > l.maxI {
			l.maxI = mx
		}
	case KindFloat64:
		mn, mx := minMaxOf(col.Float64, rows, first, n)
		if math.IsNaN(mn) || math.IsInf(mn, 0) || math.IsInf(mx, 0) {
			l.bad = true // min of values with a NaN is NaN
			return true
		}
		if !l.has || mn < l.minF {
			l.minF = mn
		}
		if !l.has || mx > l.maxF {
			l.maxF = mx
		}
	case KindBytes:
		mn, mx := minMaxBytes(col, rows, first, n)
		if v := col.BytesAt(mn); !l.has || bytes.Compare(v, l.minB) < 0 {
			l.minB = append(l.minB[:0], v...)
		}
		if v := col.BytesAt(mx); !l.has || bytes.Compare(v, l.maxB) > 0 {
			l.maxB = append(l.maxB[:0], v...)
		}
	default:
		return false
	}
	l.has = true
	return true
}

// minMaxOf returns the least and greatest of n rows of src (rows[k], or first+k when rows is
// nil). With floats, a NaN among them makes the least NaN.
func minMaxOf[T int64 | float64](src []T, rows []int, first, n int) (T, T) {
	if rows == nil {
		vs := src[first : first+n]
		mn, mx := vs[0], vs[0]
		for _, v := range vs[1:] {
			mn, mx = min(mn, v), max(mx, v)
		}
		return mn, mx
	}
	mn, mx := src[rows[0]], src[rows[0]]
	for _, i := range rows[1:] {
		v := src[i]
		mn, mx = min(mn, v), max(mx, v)
	}
	return mn, mx
}

// minMaxBytes returns the rows of the least and greatest of n rows of a bytes column (rows[k],
// or first+k when rows is nil). Most values fall strictly between the extremes found so far,
// which their first eight bytes, compared as one number, usually show without a byte compare.
func minMaxBytes(col *Column, rows []int, first, n int) (int, int) {
	offs, data := col.Offsets, col.Data
	row := func(k int) int {
		if rows == nil {
			return first + k
		}
		return rows[k]
	}
	mn, mx := row(0), row(0)
	pmin, pmax := bytesPrefix(data[offs[mn]:offs[mn+1]]), bytesPrefix(data[offs[mx]:offs[mx+1]])
	for k := 1; k < n; k++ {
		i := row(k)
		v := data[offs[i]:offs[i+1]]
		// A prefix strictly between the extremes' prefixes puts v strictly between them.
		p := bytesPrefix(v)
		if p > pmin && p < pmax {
			continue
		}
		if p <= pmin {
			// A value equal to the least is not above the greatest: one compare, not two,
			// for a column of one value (bronze's _source_file within an object).
			c := bytes.Compare(v, data[offs[mn]:offs[mn+1]])
			if c < 0 {
				mn, pmin = i, p
			}
			if c <= 0 {
				continue
			}
		}
		if p >= pmax && bytes.Compare(v, data[offs[mx]:offs[mx+1]]) > 0 {
			mx, pmax = i, p
		}
	}
	return mn, mx
}

// bytesPrefix is the first eight bytes of v as a big-endian number, zero-padded: when
// bytesPrefix(a) < bytesPrefix(b), a sorts before b.
func bytesPrefix(v []byte) uint64 {
	if len(v) >= 8 {
		return binary.BigEndian.Uint64(v)
	}
	var b [8]byte
	copy(b[:], v)
	return binary.BigEndian.Uint64(b[:])
}

func (l *statLeaf) observe(col *Column, i int) {
	first := !l.has
	l.has = true
	switch l.kind {
	case KindInt64:
		v := col.Int64[i]
		if first || v < l.minI {
			l.minI = v
		}
		if first || v > l.maxI {
			l.maxI = v
		}
	case KindInt32:
		v := int64(col.Int32[i])
		if first || v < l.minI {
			l.minI = v
		}
		if first || v > l.maxI {
			l.maxI = v
		}
	case KindFloat64, KindFloat32:
		var v float64
		if l.kind == KindFloat64 {
			v = col.Float64[i]
		} else {
			v = float64(col.Float32[i])
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			l.bad = true
			return
		}
		if first || v < l.minF {
			l.minF = v
		}
		if first || v > l.maxF {
			l.maxF = v
		}
	case KindBytes:
		v := col.BytesAt(i)
		if first || bytes.Compare(v, l.minB) < 0 {
			l.minB = append(l.minB[:0], v...)
		}
		if first || bytes.Compare(v, l.maxB) > 0 {
			l.maxB = append(l.maxB[:0], v...)
		}
	case KindDecimal:
		v := col.Decimal[i]
		if first || v.Cmp(l.minD) < 0 {
			l.minD = v
		}
		if first || v.Cmp(l.maxD) > 0 {
			l.maxD = v
		}
	}
}

// truncateMin cuts a string to a prefix, which stays a lower bound.
func truncateMin(s []byte) []byte {
	n, cut := 0, 0
	for cut < len(s) && n < statsPrefixRunes {
		_, size := utf8.DecodeRune(s[cut:])
		cut += size
		n++
	}
	return s[:cut]
}

// truncateMax cuts a string to a prefix and appends U+FFFD so that it stays an upper bound;
// when the next character sorts at or above U+FFFD the prefix grows by one character.
func truncateMax(s []byte) []byte {
	n, cut := 0, 0
	for cut < len(s) {
		r, size := utf8.DecodeRune(s[cut:])
		if n >= statsPrefixRunes && r < utf8.RuneError {
			return append(append([]byte(nil), s[:cut]...), "\ufffd"...)
		}
		cut += size
		n++
	}
	return s
}

// FormatStatsTimestamp renders microseconds as Delta stats do: ISO-8601 UTC with
// milliseconds. up rounds to the next millisecond so that a max stays an upper bound.
func FormatStatsTimestamp(us int64, up, ntz bool) (string, bool) {
	ms := us / 1000
	if us%1000 != 0 && (us < 0) != up {
		if up {
			ms++
		} else {
			ms--
		}
	}
	t := time.UnixMilli(ms).UTC()
	if t.Year() > 9999 || t.Year() < 0 {
		return "", false
	}
	if ntz {
		return t.Format("2006-01-02T15:04:05.000"), true
	}
	return t.Format("2006-01-02T15:04:05.000Z"), true
}

func (l *statLeaf) value(max bool) (json.RawMessage, bool) {
	if !l.minMax || !l.has || l.bad {
		return nil, false
	}
	pick := func(a, b int64) int64 {
		if max {
			return b
		}
		return a
	}
	switch l.kind {
	case KindInt64, KindInt32:
		v := pick(l.minI, l.maxI)
		switch l.typ.TypeName() {
		case txlog.TypeTimestamp, txlog.TypeTimestampNTZ:
			s, ok := FormatStatsTimestamp(v, max, l.typ.TypeName() == txlog.TypeTimestampNTZ)
			if !ok {
				return nil, false
			}
			return quote(s), true
		case txlog.TypeDate:
			return quote(time.Unix(v*86400, 0).UTC().Format("2006-01-02")), true
		}
		return json.RawMessage(strconv.FormatInt(v, 10)), true
	case KindFloat64, KindFloat32:
		v := l.minF
		if max {
			v = l.maxF
		}
		bits := 64
		if l.kind == KindFloat32 {
			bits = 32
		}
		return json.RawMessage(strconv.FormatFloat(v, 'g', -1, bits)), true
	case KindBytes:
		if max {
			return quote(string(truncateMax(l.maxB))), true
		}
		return quote(string(truncateMin(l.minB))), true
	case KindDecimal:
		d := l.minD
		if max {
			d = l.maxD
		}
		return json.RawMessage(FormatDecimal(d, l.typ.(txlog.DecimalType).Scale)), true
	}
	return nil, false
}

func quote(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// json renders the Delta stats object in schema order, keyed by physical names.
func (c *statsCollector) json(rows int64) string {
	var b bytes.Buffer
	b.WriteString(`{"numRecords":`)
	b.WriteString(strconv.FormatInt(rows, 10))
	sections := []struct {
		name string
		get  func(l *statLeaf) (json.RawMessage, bool)
	}{
		{"minValues", func(l *statLeaf) (json.RawMessage, bool) { return l.value(false) }},
		{"maxValues", func(l *statLeaf) (json.RawMessage, bool) { return l.value(true) }},
		{"nullCount", func(l *statLeaf) (json.RawMessage, bool) {
			return json.RawMessage(strconv.FormatInt(l.nulls, 10)), true
		}},
	}
	for _, sec := range sections {
		b.WriteString(`,"` + sec.name + `":`)
		c.render(&b, c.schema, nil, sec.get)
	}
	b.WriteString("}")
	return b.String()
}

// render writes one stats object for st and reports whether it had any key.
func (c *statsCollector) render(b *bytes.Buffer, st *txlog.StructType, prefix []int, get func(*statLeaf) (json.RawMessage, bool)) bool {
	b.WriteByte('{')
	n := 0
	for i := range st.Fields {
		f := &st.Fields[i]
		p := append(append([]int(nil), prefix...), i)
		mark := b.Len()
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(quote(f.PhysicalName()))
		b.WriteByte(':')
		wrote := false
		if sub, ok := f.Type.(*txlog.StructType); ok {
			wrote = c.render(b, sub, p, get)
		} else if l := c.byPath[pathKey(p)]; l != nil {
			if v, ok := get(l); ok {
				b.Write(v)
				wrote = true
			}
		}
		if !wrote {
			b.Truncate(mark)
			continue
		}
		n++
	}
	b.WriteByte('}')
	return n > 0
}

package pq

import (
	"io"
	"reflect"
	"slices"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
)

// flatReadable reports whether a top-level primitive leaf can be decoded page by page from
// parquet-go's typed page buffers (readFlat) instead of one parquet.Value per row. The other
// physical types (booleans, INT96, fixed-length arrays, decimals) take the general path.
func (n *rnode) flatReadable() bool {
	if n.missing || len(n.children) != 0 || n.repeated {
		return false
	}
	switch n.kind {
	case KindInt64:
		return n.phys == parquet.Int64 || n.phys == parquet.Int32
	case KindInt32:
		return n.phys == parquet.Int32
	case KindFloat64:
		return n.phys == parquet.Double || n.phys == parquet.Float
	case KindFloat32:
		return n.phys == parquet.Float
	case KindBytes:
		return n.phys == parquet.ByteArray
	}
	return false
}

// flatStruct reports whether a top-level struct can be read leaf by leaf with readFlat: every
// field a primitive leaf flatReadable takes, or absent from the file (always null), and at
// least one present. Gold's window (start and end timestamps) is such a struct: the assembler
// built it one parquet.Value per field per row.
func (n *rnode) flatStruct() bool {
	if n.kind != KindStruct || n.missing || n.variant || n.repeated || n.probe >= 0 || len(n.children) == 0 {
		return false
	}
	present := false
	for _, ch := range n.children {
		if ch.missing {
			continue
		}
		if !ch.flatReadable() {
			return false
		}
		present = true
	}
	return present
}

// Bounds of the reservations made from a row group's claimed size, which a corrupt footer
// could inflate; appends grow past them as usual when a real chunk is larger.
const (
	maxPresizeRows  = 1 << 22
	maxPresizeBytes = 1 << 28
)

// readFlat decodes the column chunk of a top-level primitive leaf straight into col: the
// values of each page are copied in bulk from its typed buffer (or looked up in the page's
// dictionary), so no per-row parquet.Value is built.
func (n *rnode) readFlat(cc parquet.ColumnChunk, col *Column, rows int) error {
	return n.readFlatLevels(cc, col, rows, nil, 0)
}

// readFlatStruct decodes a struct flatStruct accepts: each present field's chunk by readFlat
// (a field is null wherever its level says so, the struct's nulls included, as AppendNull
// leaves a null struct's fields), the absent fields null, and the struct null where the first
// present field's definition level is below the struct's.
func (n *rnode) readFlatStruct(chunks []parquet.ColumnChunk, col *Column, rows int) error {
	var nulls []bool
	first := true
	for k, ch := range n.children {
		fc := col.Children[k]
		if ch.missing {
			for range rows {
				fc.AppendNull()
			}
			continue
		}
		var levels *[]bool
		if first {
			levels, first = &nulls, false
		}
		if err := ch.readFlatLevels(chunks[ch.leaf], fc, rows, levels, n.def); err != nil {
			return err
		}
	}
	if len(nulls) != rows {
		return n.fail("has %d levels, the row group %d rows", len(nulls), rows)
	}
	for _, null := range nulls {
		if !null {
			col.markValid()
			continue
		}
		if len(col.Nulls) < col.Len {
			col.Nulls = append(col.Nulls, make([]bool, col.Len-len(col.Nulls))...)
		}
		col.Nulls = append(col.Nulls, true)
		col.Len++
	}
	return nil
}

// readFlatLevels is readFlat that also appends to *parent (when set) whether each row's
// definition level is below parentDef: the enclosing struct is null there.
func (n *rnode) readFlatLevels(cc parquet.ColumnChunk, col *Column, rows int, parent *[]bool, parentDef int) error {
	pages := cc.Pages()
	defer pages.Close()
	col.Grow(min(rows, maxPresizeRows), 0)
	if n.kind == KindBytes {
		col.beginDictionary()
	}
	for {
		pg, err := pages.ReadPage()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n.fail("read page: %v", err)
		}
		if err := n.appendPage(col, pg, rows); err != nil {
			return err
		}
		if parent != nil {
			*parent = appendParentNulls(*parent, pg, parentDef)
		}
		if col.Len > rows {
			return n.fail("has more than the row group's %d rows", rows)
		}
	}
	if col.Len != rows {
		return n.fail("has %d values, the row group %d rows", col.Len, rows)
	}
	return nil
}

// appendParentNulls appends, for each row of the page, whether its definition level is below
// def (appendPage has checked that the page has a level per value, or none: all defined).
func appendParentNulls(dst []bool, pg parquet.Page, def int) []bool {
	defs := pg.DefinitionLevels()
	if len(defs) == 0 {
		for range pg.NumValues() {
			dst = append(dst, false)
		}
		return dst
	}
	for _, d := range defs {
		dst = append(dst, int(d) < def)
	}
	return dst
}

func (n *rnode) appendPage(col *Column, pg parquet.Page, rows int) error {
	nv := int(pg.NumValues())
	defs := pg.DefinitionLevels()
	if len(defs) != 0 && len(defs) != nv {
		return n.fail("page has %d definition levels for %d values", len(defs), nv)
	}
	present := nv
	if len(defs) != 0 {
		present = 0
		for _, d := range defs {
			if int(d) >= n.def {
				present++
			}
		}
	}
	data := pg.Data()
	// Whether the page is dictionary-encoded is the page's own property: its index slice is
	// empty (nil) when every row of the page is null, and must not be read as "no dictionary".
	dict := pg.Dictionary()
	indexed := dict != nil
	var idx []int32
	if indexed {
		if data.Kind() != encoding.Int32 {
			return n.fail("dictionary page indexes are %s", data.Kind())
		}
		idx = data.Int32()
		data = dict.Page().Data()
		if len(idx) != present {
			return n.fail("page has %d dictionary indexes for %d present values", len(idx), present)
		}
		size := int32(dict.Len())
		for _, i := range idx {
			if i < 0 || i >= size {
				return n.fail("dictionary index %d out of range [0,%d)", i, size)
			}
		}
	}
	v, err := n.pageValues(data, indexed, idx, present)
	if err != nil {
		return err
	}
	if d := col.dict; n.kind == KindBytes && d != nil && d.valid {
		d.notePage(dict, v, defs, n.def)
	}
	if n.kind == KindBytes {
		size := len(v.data)
		if indexed {
			size = 0
			for _, k := range idx {
				size += int(v.offs[k+1] - v.offs[k])
			}
		}
		if col.Len == 0 && nv > 0 {
			// The first page predicts the chunk: reserve for every row at its mean length so
			// that the column's data does not grow by doubling (and copying) page after page.
			// Capped: the row count comes from a footer that may be corrupt.
			size = max(size, int(min(int64(size)*int64(rows)/int64(nv), maxPresizeBytes)))
		}
		col.Data = slices.Grow(col.Data, size)
	}
	if present == nv {
		v.appendRange(col, 0, nv)
		return nil
	}
	// Runs of present values are appended in bulk, nulls one by one.
	j := 0
	for i := 0; i < nv; {
		if int(defs[i]) < n.def {
			col.AppendNull()
			i++
			continue
		}
		k := i
		for k < nv && int(defs[k]) >= n.def {
			k++
		}
		v.appendRange(col, j, j+k-i)
		j += k - i
		i = k
	}
	return nil
}

// flatValues are the present values of one page, possibly through dictionary indexes.
type flatValues struct {
	n *rnode
	// indexed is set for a dictionary-encoded page: the j-th present value is then
	// dictionary entry idx[j], and the value buffers hold the dictionary, not the page.
	indexed bool
	idx     []int32
	i64     []int64
	i32     []int32
	f64     []float64
	f32     []float32
	data    []byte
	offs    []uint32
}

// encodingKind is the page buffer kind of the physical types readFlat handles.
func encodingKind(k parquet.Kind) encoding.Kind {
	switch k {
	case parquet.Int64:
		return encoding.Int64
	case parquet.Int32:
		return encoding.Int32
	case parquet.Double:
		return encoding.Double
	case parquet.Float:
		return encoding.Float
	case parquet.ByteArray:
		return encoding.ByteArray
	}
	return encoding.Undefined
}

func (n *rnode) pageValues(data encoding.Values, indexed bool, idx []int32, present int) (*flatValues, error) {
	v := &flatValues{n: n, indexed: indexed, idx: idx}
	want := encodingKind(n.phys)
	if data.Kind() != want {
		return nil, n.fail("page holds %s values, the column is %s", data.Kind(), want)
	}
	var count int
	switch want {
	case encoding.Int64:
		count = setValues(&v.i64, data.Int64())
	case encoding.Int32:
		count = setValues(&v.i32, data.Int32())
	case encoding.Double:
		count = setValues(&v.f64, data.Double())
	case encoding.Float:
		count = setValues(&v.f32, data.Float())
	case encoding.ByteArray:
		v.data, v.offs = data.ByteArray()
		// A buffer of no values may come without the leading offset.
		count = max(len(v.offs)-1, 0)
		if len(v.offs) == 0 && len(v.data) != 0 {
			return nil, n.fail("byte array page has %d data bytes and no offsets", len(v.data))
		}
		for k := 1; k < len(v.offs); k++ {
			if v.offs[k] < v.offs[k-1] || int(v.offs[k]) > len(v.data) {
				return nil, n.fail("byte array offsets out of order")
			}
		}
	}
	if !indexed && count != present {
		return nil, n.fail("page has %d values for %d present rows", count, present)
	}
	return v, nil
}

// setValues keeps a page's buffer of fixed-width values in *dst and returns how many it holds.
func setValues[T any](dst *[]T, vals []T) int {
	*dst = vals
	return len(vals)
}

// at maps the j-th present value of the page to its position in the value buffers.
func (v *flatValues) at(j int) int {
	if v.indexed {
		return int(v.idx[j])
	}
	return j
}

// appendPresent appends the present values [lo,hi) of a page whose values are vals to dst: a
// copy of the run, or through the dictionary indices idx when indexed.
func appendPresent[T int32 | float32](dst, vals []T, idx []int32, indexed bool, lo, hi int) []T {
	if !indexed {
		return append(dst, vals[lo:hi]...)
	}
	for _, k := range idx[lo:hi] {
		dst = append(dst, vals[k])
	}
	return dst
}

// appendRange appends the present values [lo,hi) of the page to col.
func (v *flatValues) appendRange(col *Column, lo, hi int) {
	n := v.n
	m := hi - lo
	switch {
	case v.indexed:
	case n.kind == KindInt64 && v.i64 != nil && n.unit == UnitMicros:
		// A page of longs or microsecond timestamps is the column's values as they are: one
		// copy, not a conversion per value (the event time of every replay and stream read).
		col.Int64 = append(col.Int64, v.i64[lo:hi]...)
		col.markValidN(m)
		return
	case n.kind == KindFloat64 && v.f64 != nil:
		col.Float64 = append(col.Float64, v.f64[lo:hi]...)
		col.markValidN(m)
		return
	}
	switch n.kind {
	case KindInt64:
		scale := int64(1)
		if n.unit == unitMillis {
			scale = 1000
		}
		for j := lo; j < hi; j++ {
			var x int64
			if v.i32 != nil {
				x = int64(v.i32[v.at(j)])
			} else {
				x = v.i64[v.at(j)]
			}
			switch n.unit {
			case unitNanos:
				x = FloorDiv(x, 1000)
			case unitDays:
				x *= 86400_000_000
			default:
				x *= scale
			}
			col.Int64 = append(col.Int64, x)
		}
	case KindInt32:
		col.Int32 = appendPresent(col.Int32, v.i32, v.idx, v.indexed, lo, hi)
	case KindFloat64:
		for j := lo; j < hi; j++ {
			if v.f32 != nil {
				col.Float64 = append(col.Float64, float64(v.f32[v.at(j)]))
			} else {
				col.Float64 = append(col.Float64, v.f64[v.at(j)])
			}
		}
	case KindFloat32:
		col.Float32 = appendPresent(col.Float32, v.f32, v.idx, v.indexed, lo, hi)
	case KindBytes:
		if !v.indexed {
			base := int32(len(col.Data)) - int32(v.offs[lo])
			col.Data = append(col.Data, v.data[v.offs[lo]:v.offs[hi]]...)
			for j := lo + 1; j <= hi; j++ {
				col.Offsets = append(col.Offsets, base+int32(v.offs[j]))
			}
		} else {
			for j := lo; j < hi; j++ {
				k := v.idx[j]
				col.Data = append(col.Data, v.data[v.offs[k]:v.offs[k+1]]...)
				col.Offsets = append(col.Offsets, int32(len(col.Data)))
			}
		}
	}
	col.markValidN(m)
}

// markValidN counts m present rows just appended to the column's values.
func (c *Column) markValidN(m int) {
	if len(c.Nulls) > 0 {
		for range m {
			c.Nulls = append(c.Nulls, false)
		}
	}
	c.Len += m
}

// beginDictionary starts recording the dictionary of a string column about to be read from
// one column chunk (see Column.Dictionary); a column that holds rows already gets none.
func (c *Column) beginDictionary() {
	if c.dict == nil {
		c.dict = &Dictionary{Values: &Column{Type: c.Type, Kind: KindBytes, Offsets: []int32{0}}}
	}
	d := c.dict
	d.Values.Reset()
	d.Index, d.src, d.valid = d.Index[:0], nil, c.Len == 0
}

// notePage records a page of the chunk: src is its dictionary (nil: the page is not
// dictionary-encoded, so the chunk has no one dictionary), v its present values, defs its
// definition levels (empty: no nulls) with def a present value's level. The first page's
// dictionary is copied once; a page through another one (a corrupt chunk: a chunk has one
// dictionary page) turns the record off.
func (d *Dictionary) notePage(src parquet.Dictionary, v *flatValues, defs []byte, def int) {
	switch {
	case src == nil || !v.indexed || reflect.ValueOf(src).Kind() != reflect.Pointer:
		// Compared below by identity: only a pointer compares without a panic and cheaply.
		d.valid = false
		return
	case d.src == nil:
		d.src = src
		vals := d.Values
		if len(v.offs) > 0 {
			base := v.offs[0]
			vals.Data = append(vals.Data[:0], v.data[base:v.offs[len(v.offs)-1]]...)
			for _, o := range v.offs[1:] {
				vals.Offsets = append(vals.Offsets, int32(o-base))
			}
			vals.Len = len(v.offs) - 1
		}
	case d.src != any(src):
		d.valid = false
		return
	}
	if len(defs) == 0 {
		d.Index = append(d.Index, v.idx...)
		return
	}
	j := 0
	for _, l := range defs {
		if int(l) < def {
			d.Index = append(d.Index, -1)
			continue
		}
		d.Index = append(d.Index, v.idx[j])
		j++
	}
}

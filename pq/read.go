package pq

import (
	"errors"
	"fmt"
	"io"
	"math/big"
	"reflect"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"github.com/medallion-lake/medallion/txlog"
)

// ErrBadDataFile reports a data file that cannot be read as the table schema says.
var ErrBadDataFile = errors.New("table: bad data file")

// timestamp units of a file leaf
const (
	UnitMicros = iota
	unitMillis
	unitNanos
	unitInt96
	unitDays // a date (INT32 days) read as timestamp_ntz: type widening
)

// rnode is the read plan of one field: where its values are in the file and at which
// definition levels it is present.
type rnode struct {
	name    string
	kind    Kind
	typ     txlog.DataType
	missing bool // not in the file: always null
	def     int  // definition level at which the node is non-null
	rep     int  // list/map: repetition level of the entries
	elemDef int  // list/map: definition level at which an entry exists
	leaf    int  // leaf column index
	phys    parquet.Kind
	unit    int
	// rescale, for a decimal, is the power of ten the file's unscaled values are multiplied
	// by: a table scale above the file's, after type widening (or an integer read as decimal).
	rescale  int
	repeated bool // leaf: the file column has a repetition level
	variant  bool // a variant: children metadata and value, decoded to JSON text
	first    int  // first present leaf below (for peeking levels)
	children []*rnode
	leaves   []int
	// probe, for a struct none of whose table fields is in the file, is a leaf of the file's
	// struct read only for its levels (a null struct vs a struct of nulls); -1 otherwise.
	// probeRep is the repetition level of the struct: the probe's values with a higher one
	// belong to the same struct value.
	probe    int
	probeRep int
}

func (n *rnode) fail(format string, args ...any) error {
	return fmt.Errorf("%w: column %s: %s", ErrBadDataFile, n.name, fmt.Sprintf(format, args...))
}

// planRead matches the Delta type t with the file column fc (nil when absent).
func planRead(t txlog.DataType, name string, fc *parquet.Column, parentDef, parentRep int) (*rnode, error) {
	k, err := KindOf(t)
	if err != nil {
		return nil, err
	}
	n := &rnode{name: name, kind: k, typ: t, first: -1, probe: -1}
	if fc == nil || k == KindNull {
		n.missing = true
		return n, nil
	}
	n.def = parentDef
	if fc.Optional() {
		n.def++
	}
	if t.TypeName() == txlog.TypeVariant {
		return n.planVariant(fc, parentRep)
	}
	switch v := t.(type) {
	case *txlog.StructType:
		if fc.Leaf() {
			return nil, n.fail("file has a primitive, the table a struct")
		}
		for i := range v.Fields {
			f := &v.Fields[i]
			ch, err := planRead(f.Type, name+"."+f.Name, ChildByName(fc, f), n.def, parentRep)
			if err != nil {
				return nil, err
			}
			n.children = append(n.children, ch)
		}
		n.setProbe(fc, parentRep)
	case txlog.ArrayType:
		if fc.Leaf() && !fc.Repeated() {
			return nil, n.fail("file has a primitive, the table an array")
		}
		var elem *parquet.Column
		var elemParentDef int
		if fc.Repeated() {
			// Legacy unannotated repeated field: the field itself is the element.
			n.def = parentDef
			n.elemDef = parentDef + 1
			n.rep = parentRep + 1
			ch, err := planElement(v.ElementType, name+".element", fc, n.elemDef, n.rep)
			if err != nil {
				return nil, err
			}
			n.children = []*rnode{ch}
			break
		}
		cols := fc.Columns()
		if len(cols) != 1 || !cols[0].Repeated() {
			return nil, n.fail("list group must have one repeated field")
		}
		r := cols[0]
		n.elemDef = n.def + 1
		n.rep = parentRep + 1
		elemParentDef = n.elemDef
		if r.Leaf() || len(r.Columns()) > 1 || r.Name() == "array" || r.Name() == fc.Name()+"_tuple" {
			ch, err := planElement(v.ElementType, name+".element", r, elemParentDef, n.rep) // 2-level
			if err != nil {
				return nil, err
			}
			n.children = []*rnode{ch}
		} else {
			elem = r.Columns()[0]
			ch, err := planRead(v.ElementType, name+".element", elem, elemParentDef, n.rep)
			if err != nil {
				return nil, err
			}
			n.children = []*rnode{ch}
		}
	case txlog.MapType:
		cols := fc.Columns()
		if fc.Leaf() || len(cols) != 1 || !cols[0].Repeated() || len(cols[0].Columns()) < 1 {
			return nil, n.fail("map group must have one repeated key_value group")
		}
		r := cols[0]
		n.elemDef = n.def + 1
		n.rep = parentRep + 1
		kv := r.Columns()
		kc, err := planRead(v.KeyType, name+".key", kv[0], n.elemDef, n.rep)
		if err != nil {
			return nil, err
		}
		var vcol *parquet.Column
		if len(kv) > 1 {
			vcol = kv[1]
		}
		vc, err := planRead(v.ValueType, name+".value", vcol, n.elemDef, n.rep)
		if err != nil {
			return nil, err
		}
		n.children = []*rnode{kc, vc}
	default:
		if !fc.Leaf() {
			return nil, n.fail("file has a group, the table %s", t.TypeName())
		}
		if err := n.planLeaf(fc); err != nil {
			return nil, err
		}
	}
	n.finish()
	return n, nil
}

// planVariant plans a variant: the group of its metadata and value binaries. A shredded
// variant (a typed_value column beside them, Delta's variantShredding feature) is refused.
func (n *rnode) planVariant(fc *parquet.Column, parentRep int) (*rnode, error) {
	if fc.Leaf() {
		return nil, n.fail("file stores %s, the table a variant (a group of metadata and value)", fc.Type())
	}
	if fc.Column("typed_value") != nil {
		return nil, n.fail("the variant is shredded (typed_value), which is not supported")
	}
	bin := txlog.PrimitiveType{Name: txlog.TypeBinary}
	for _, part := range []string{"metadata", "value"} {
		c := fc.Column(part)
		if c == nil || !c.Leaf() {
			return nil, n.fail("a variant group needs a binary %s column", part)
		}
		ch, err := planRead(bin, n.name+"."+part, c, n.def, parentRep)
		if err != nil {
			return nil, err
		}
		n.children = append(n.children, ch)
	}
	n.variant = true
	n.finish()
	return n, nil
}

// planElement plans a 2-level list element: the repeated field itself, whose repetition was
// already counted in def.
func planElement(t txlog.DataType, name string, r *parquet.Column, def, rep int) (*rnode, error) {
	k, err := KindOf(t)
	if err != nil {
		return nil, err
	}
	n := &rnode{name: name, kind: k, typ: t, def: def, first: -1, probe: -1}
	if st, ok := t.(*txlog.StructType); ok && !r.Leaf() {
		for i := range st.Fields {
			f := &st.Fields[i]
			ch, err := planRead(f.Type, name+"."+f.Name, ChildByName(r, f), def, rep)
			if err != nil {
				return nil, err
			}
			n.children = append(n.children, ch)
		}
		n.setProbe(r, rep)
	} else if r.Leaf() {
		if err := n.planLeaf(r); err != nil {
			return nil, err
		}
	} else {
		return nil, n.fail("unsupported list layout")
	}
	n.finish()
	return n, nil
}

// setProbe gives a struct whose table fields are all missing from the file the first leaf
// of the file's struct fc, so that its rows are null exactly where the file's are.
func (n *rnode) setProbe(fc *parquet.Column, rep int) {
	for _, ch := range n.children {
		if !ch.missing {
			return
		}
	}
	for !fc.Leaf() {
		cols := fc.Columns()
		if len(cols) == 0 {
			return
		}
		fc = cols[0]
	}
	n.probe, n.probeRep = fc.Index(), rep
}

func (n *rnode) finish() {
	if n.probe >= 0 {
		n.leaves = []int{n.probe}
		n.first = n.probe
		return
	}
	if len(n.children) == 0 {
		n.leaves = []int{n.leaf}
		n.first = n.leaf
		return
	}
	for _, ch := range n.children {
		n.leaves = append(n.leaves, ch.leaves...)
		if n.first < 0 && ch.first >= 0 {
			n.first = ch.first
		}
	}
	if n.first < 0 {
		n.missing = true
	}
}

func ChildByName(fc *parquet.Column, f *txlog.StructField) *parquet.Column {
	if fc == nil {
		return nil
	}
	// The field id first: in column mapping's id mode it is the only binding (Iceberg-compatible
	// tables and converted ones keep other engines' column names in their files), and in name
	// mode Delta writes the same id beside the physical name.
	if id := fieldID(f); id != 0 {
		for _, c := range fc.Columns() {
			if c.ID() == id {
				return c
			}
		}
	}
	name := f.PhysicalName()
	if c := fc.Column(name); c != nil {
		return c
	}
	for _, c := range fc.Columns() {
		if strings.EqualFold(c.Name(), name) {
			return c
		}
	}
	return nil
}

// planLeaf checks that the file's physical type can hold the Delta type. Besides the exact
// match it accepts the changes Delta's type widening makes (readerFeatures typeWidening): a
// file written before the change is read at the column's current type. byte, short and int
// are all INT32 in Parquet, so their widenings to int or long need nothing; int to double,
// date to timestamp_ntz and a decimal's larger precision or scale (or an integer read as a
// decimal) convert values.
func (n *rnode) planLeaf(fc *parquet.Column) error {
	n.leaf = fc.Index()
	n.repeated = fc.MaxRepetitionLevel() > 0
	ft := fc.Type()
	n.phys = ft.Kind()
	name := n.typ.TypeName()
	ok := false
	switch n.kind {
	case KindInt64:
		switch name {
		case txlog.TypeTimestamp, txlog.TypeTimestampNTZ:
			switch n.phys {
			case parquet.Int96:
				n.unit, ok = unitInt96, true
			case parquet.Int64:
				n.unit, ok = TimeUnit(ft), true
			case parquet.Int32:
				n.unit, ok = unitDays, name == txlog.TypeTimestampNTZ && isDate(ft)
			}
		default:
			ok = n.phys == parquet.Int64 || n.phys == parquet.Int32
		}
	case KindInt32:
		ok = n.phys == parquet.Int32
	case KindFloat64:
		ok = n.phys == parquet.Double || n.phys == parquet.Float || n.phys == parquet.Int32 && !isDate(ft)
	case KindFloat32:
		ok = n.phys == parquet.Float
	case KindBool:
		ok = n.phys == parquet.Boolean
	case KindBytes:
		ok = n.phys == parquet.ByteArray || n.phys == parquet.FixedLenByteArray
	case KindDecimal:
		ok = n.phys == parquet.Int32 || n.phys == parquet.Int64 || n.phys == parquet.ByteArray || n.phys == parquet.FixedLenByteArray
		if ok {
			want := n.typ.(txlog.DecimalType)
			fileScale, decimal := decimalScale(ft)
			ct := ft.ConvertedType()
			if !decimal && (n.phys == parquet.ByteArray || n.phys == parquet.FixedLenByteArray || ct != nil && *ct == deprecated.Decimal) {
				// Bytes, or a decimal known only by its legacy annotation: as before, trust
				// the table's scale. Only a plain integer is an integer widened to decimal.
				fileScale = want.Scale
			}
			if n.rescale = want.Scale - fileScale; n.rescale < 0 {
				return n.fail("file stores %s with scale %d, which the table's %s would cut", ft, fileScale, name)
			}
		}
	}
	if !ok {
		return n.fail("file stores %s, which cannot be read as %s", ft, name)
	}
	return nil
}

// isDate reports whether an INT32 column is annotated as a date.
func isDate(t parquet.Type) bool {
	if lt := t.LogicalType(); lt != nil {
		if _, ok := lt.Value.(*format.DateType); ok {
			return true
		}
	}
	ct := t.ConvertedType()
	return ct != nil && *ct == deprecated.Date
}

// decimalScale returns the scale of a column annotated as a decimal, and whether it is one.
func decimalScale(t parquet.Type) (int, bool) {
	if lt := t.LogicalType(); lt != nil {
		if d, ok := lt.Value.(*format.DecimalType); ok {
			return int(d.Scale), true
		}
	}
	return 0, false
}

func TimeUnit(t parquet.Type) int {
	if lt := t.LogicalType(); lt != nil {
		if ts, ok := lt.Value.(*format.TimestampType); ok {
			switch ts.Unit.Value.(type) {
			case *format.MilliSeconds:
				return unitMillis
			case *format.NanoSeconds:
				return unitNanos
			}
			return UnitMicros
		}
	}
	if ct := t.ConvertedType(); ct != nil && *ct == deprecated.TimestampMillis {
		return unitMillis
	}
	return UnitMicros
}

// int96Micros converts Spark's legacy INT96 (nanoseconds of the day, Julian day) to
// microseconds since the epoch.
func int96Micros(v deprecated.Int96) int64 {
	nanos := int64(uint64(v[1])<<32 | uint64(v[0]))
	days := int64(v[2]) - 2440588
	return days*86400_000_000 + FloorDiv(nanos, 1000)
}

// assembler rebuilds columns from the leaf values of one row group.
type assembler struct {
	vals [][]parquet.Value
	pos  []int
}

func (a *assembler) peek(leaf int) (parquet.Value, bool) {
	if a.pos[leaf] >= len(a.vals[leaf]) {
		return parquet.Value{}, false
	}
	return a.vals[leaf][a.pos[leaf]], true
}

// groupNull peeks at the first value below the group n (a struct, list or map). When the
// group is NULL in this row, it consumes the row's values below n, appends a null to col and
// reports null.
func (a *assembler) groupNull(n *rnode, col *Column) (first parquet.Value, null bool, err error) {
	v, ok := a.peek(n.first)
	if !ok {
		return v, false, n.fail("ran out of values")
	}
	if v.DefinitionLevel() < n.def {
		a.skipPresent(n)
		col.AppendNull()
		return v, true, nil
	}
	return v, false, nil
}

func (a *assembler) decode(n *rnode, col *Column) error {
	if n.missing {
		col.AppendNull()
		return nil
	}
	if n.variant {
		return a.decodeVariant(n, col)
	}
	switch n.kind {
	case KindStruct:
		_, null, err := a.groupNull(n, col)
		if null || err != nil {
			return err
		}
		for k, ch := range n.children {
			if err := a.decode(ch, col.Children[k]); err != nil {
				return err
			}
		}
		if n.probe >= 0 {
			a.skipPresent(n)
		}
		col.AppendStruct()
		return nil
	case KindList, KindMap:
		v, null, err := a.groupNull(n, col)
		if null || err != nil {
			return err
		}
		if v.DefinitionLevel() < n.elemDef {
			a.skipPresent(n)
			col.AppendList()
			return nil
		}
		for {
			for k, ch := range n.children {
				if err := a.decode(ch, col.Children[k]); err != nil {
					return err
				}
			}
			next, ok := a.peek(n.first)
			if !ok || next.RepetitionLevel() < n.rep {
				break
			}
		}
		col.AppendList()
		return nil
	}
	v, ok := a.peek(n.leaf)
	if !ok {
		return n.fail("ran out of values")
	}
	a.pos[n.leaf]++
	if v.DefinitionLevel() < n.def {
		col.AppendNull()
		return nil
	}
	return n.appendValue(col, v)
}

// skipPresent consumes one value of every leaf that exists in the file below n.
func (a *assembler) skipPresent(n *rnode) {
	if n.missing {
		return
	}
	if n.probe >= 0 {
		l := n.probe
		for a.pos[l]++; a.pos[l] < len(a.vals[l]) && a.vals[l][a.pos[l]].RepetitionLevel() > n.probeRep; a.pos[l]++ {
		}
		return
	}
	if len(n.children) == 0 {
		a.pos[n.leaf]++
		return
	}
	for _, ch := range n.children {
		a.skipPresent(ch)
	}
}

// decodeVariant appends a variant's JSON text (or null).
func (a *assembler) decodeVariant(n *rnode, col *Column) error {
	m, ok1 := a.peek(n.children[0].leaf)
	v, ok2 := a.peek(n.children[1].leaf)
	if !ok1 || !ok2 {
		return n.fail("ran out of values")
	}
	a.pos[n.children[0].leaf]++
	a.pos[n.children[1].leaf]++
	if m.DefinitionLevel() < n.def {
		col.AppendNull()
		return nil
	}
	if m.DefinitionLevel() < n.children[0].def || v.DefinitionLevel() < n.children[1].def {
		return n.fail("a variant without metadata or value")
	}
	text, err := variantJSON(nil, m.ByteArray(), v.ByteArray())
	if err != nil {
		return n.fail("variant: %v", err)
	}
	col.AppendBytes(text)
	return nil
}

func (n *rnode) appendValue(col *Column, v parquet.Value) error {
	switch n.kind {
	case KindInt64:
		switch {
		case n.phys == parquet.Int96:
			col.AppendInt64(int96Micros(v.Int96()))
		case n.unit == unitDays:
			col.AppendInt64(int64(v.Int32()) * 86400_000_000)
		case n.phys == parquet.Int32:
			col.AppendInt64(int64(v.Int32()))
		case n.unit == unitMillis:
			col.AppendInt64(v.Int64() * 1000)
		case n.unit == unitNanos:
			col.AppendInt64(FloorDiv(v.Int64(), 1000))
		default:
			col.AppendInt64(v.Int64())
		}
	case KindInt32:
		col.AppendInt32(v.Int32())
	case KindFloat64:
		if n.phys == parquet.Float {
			col.AppendFloat64(float64(v.Float()))
		} else if n.phys == parquet.Int32 {
			col.AppendFloat64(float64(v.Int32()))
		} else {
			col.AppendFloat64(v.Double())
		}
	case KindFloat32:
		col.AppendFloat32(v.Float())
	case KindBool:
		col.AppendBool(v.Boolean())
	case KindBytes:
		col.AppendBytes(v.ByteArray())
	case KindDecimal:
		var d Decimal128
		switch n.phys {
		case parquet.Int32:
			d = DecimalFromInt64(int64(v.Int32()))
		case parquet.Int64:
			d = DecimalFromInt64(v.Int64())
		default:
			var ok bool
			if d, ok = DecimalFromBytes(v.ByteArray()); !ok {
				return n.fail("decimal wider than 128 bits")
			}
		}
		if n.rescale > 0 {
			b := d.BigInt()
			b.Mul(b, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n.rescale)), nil))
			var ok bool
			if d, ok = DecimalFromBigInt(b); !ok {
				return n.fail("decimal wider than 128 bits at the table's scale")
			}
		}
		col.AppendDecimal(d)
	}
	return nil
}

// readColumnChunk reads every value of one column chunk. Byte-array values are copied into
// one arena per chunk (page buffers may be reused by parquet-go after the next page).
func ReadColumnChunk(cc parquet.ColumnChunk, buf []parquet.Value) ([]parquet.Value, error) {
	pages := cc.Pages()
	defer pages.Close()
	if n := cc.NumValues(); n > 0 && n < 1<<26 && cap(buf) < int(n) {
		buf = make([]parquet.Value, 0, n)
	}
	chunk := make([]parquet.Value, 1024)
	var arena []byte
	for {
		p, err := pages.ReadPage()
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
		vr := p.Values()
		for {
			n, err := vr.ReadValues(chunk)
			for _, v := range chunk[:n] {
				switch v.Kind() {
				case parquet.ByteArray, parquet.FixedLenByteArray:
					if !v.IsNull() {
						start := len(arena)
						arena = append(arena, v.ByteArray()...)
						b := arena[start:len(arena):len(arena)]
						if v.Kind() == parquet.ByteArray {
							v = parquet.ByteArrayValue(b).Level(v.RepetitionLevel(), v.DefinitionLevel(), v.Column())
						} else {
							v = parquet.FixedLenByteArrayValue(b).Level(v.RepetitionLevel(), v.DefinitionLevel(), v.Column())
						}
					}
				}
				buf = append(buf, v)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return buf, err
			}
			if n == 0 {
				break
			}
		}
	}
}

// fileReader decodes the row groups of one Parquet file into batches of a Delta schema.
type fileReader struct {
	file   *parquet.File
	schema *txlog.StructType
	plans  []*rnode
	used   []int
	leaves []int // every leaf any plan reads, in file order
	// flat[c] is set when plan c is read by readFlat, whose leaf no other plan reads.
	flat []bool
	// reuse, when set, holds the batch the last row group was decoded into, for the next.
	Reuse *ReadBuffer
}

// newFileReader plans the read of schema from f. A corrupt file schema may make parquet-go
// panic; that becomes ErrBadDataFile.
func NewFileReader(f *parquet.File, schema *txlog.StructType) (r *fileReader, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("%w: schema: %v", ErrBadDataFile, p)
		}
	}()
	for _, rg := range f.Metadata().RowGroups {
		for _, cc := range rg.Columns {
			// parquet-go's LZ4 decoder grows its buffer forever on corrupt input (v0.32.0), so
			// a damaged file could exhaust memory; Spark, delta-rs and we write snappy or zstd.
			if cc.MetaData.Codec == format.Lz4 || cc.MetaData.Codec == format.Lz4Raw {
				return nil, fmt.Errorf("%w: column %s uses LZ4 compression, which is not supported",
					ErrBadDataFile, strings.Join(cc.MetaData.PathInSchema, "."))
			}
		}
	}
	r = &fileReader{file: f, schema: schema}
	root := f.Root()
	seen := map[int]bool{}
	for i := range schema.Fields {
		fd := &schema.Fields[i]
		p, err := planRead(fd.Type, fd.Name, ChildByName(root, fd), 0, 0)
		if err != nil {
			return nil, err
		}
		r.plans = append(r.plans, p)
		if !p.missing {
			collectLeaves(p, seen)
		}
	}
	for l := range seen {
		r.leaves = append(r.leaves, l)
	}
	slices.Sort(r.leaves)
	// A leaf read straight into its column must not also be needed by another plan (two
	// table fields that match one file column, say by case).
	uses := map[int]int{}
	for _, p := range r.plans {
		for _, l := range p.leaves {
			if !p.missing {
				uses[l]++
			}
		}
	}
	r.flat = make([]bool, len(r.plans))
	for c, p := range r.plans {
		if p.flatReadable() && uses[p.leaf] == 1 {
			r.flat[c] = true
			delete(seen, p.leaf)
		}
		if p.flatStruct() && usedOnce(p.leaves, uses) {
			r.flat[c] = true
			for _, l := range p.leaves {
				delete(seen, l)
			}
		}
	}
	for l := range seen {
		r.used = append(r.used, l)
	}
	return r, nil
}

// Leaves returns the file's leaf columns the read takes, in file order: the column chunks of
// a row group a caller can fetch in one request before RowGroup decodes them.
func (r *fileReader) Leaves() []int { return r.leaves }

// usedOnce reports whether no other plan reads any of leaves.
func usedOnce(leaves []int, uses map[int]int) bool {
	for _, l := range leaves {
		if uses[l] != 1 {
			return false
		}
	}
	return true
}

func collectLeaves(n *rnode, seen map[int]bool) {
	if n.missing {
		return
	}
	if n.probe >= 0 {
		seen[n.probe] = true
		return
	}
	if len(n.children) == 0 {
		seen[n.leaf] = true
		return
	}
	for _, ch := range n.children {
		collectLeaves(ch, seen)
	}
}

// rowGroup decodes row group g into a new batch. parquet-go may panic on corrupt input; that
// becomes ErrBadDataFile.
func (r *fileReader) RowGroup(g int) (b *Batch, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("%w: row group %d: %v", ErrBadDataFile, g, p)
		}
	}()
	return r.decodeRowGroup(g)
}

func (r *fileReader) decodeRowGroup(g int) (*Batch, error) {
	rg := r.file.RowGroups()[g]
	nleaves := len(rg.ColumnChunks())
	a := &assembler{vals: make([][]parquet.Value, nleaves), pos: make([]int, nleaves)}
	for _, l := range r.used {
		vals, err := r.readLeaf(g, l, rg.ColumnChunks()[l])
		if err != nil {
			return nil, err
		}
		a.vals[l] = vals
	}
	rows := int(rg.NumRows())
	if rows < 0 || (len(r.used) == 0 && int64(rows) > r.file.NumRows()) {
		return nil, fmt.Errorf("%w: row group %d claims %d rows", ErrBadDataFile, g, rows)
	}
	for _, l := range r.used {
		starts := 0
		for _, v := range a.vals[l] {
			if v.RepetitionLevel() == 0 {
				starts++
			}
		}
		if starts != rows {
			return nil, fmt.Errorf("%w: row group %d claims %d rows, column %d has %d", ErrBadDataFile, g, rows, l, starts)
		}
	}
	b, err := r.newBatch()
	if err != nil {
		return nil, err
	}
	for c, p := range r.plans {
		col := b.Columns[c]
		if r.flat[c] && p.kind == KindStruct {
			if err := p.readFlatStruct(rg.ColumnChunks(), col, rows); err != nil {
				return nil, fmt.Errorf("row group %d: %w", g, err)
			}
			continue
		}
		if r.flat[c] {
			if err := p.readFlat(rg.ColumnChunks()[p.leaf], col, rows); err != nil {
				return nil, fmt.Errorf("row group %d: %w", g, err)
			}
			continue
		}
		if !p.missing && len(p.children) == 0 {
			// A top-level primitive: one value per row, no assembly needed.
			data := 0
			if p.kind == KindBytes {
				for _, v := range a.vals[p.leaf] {
					data += len(v.ByteArray())
				}
			}
			col.Grow(rows, data)
			for _, v := range a.vals[p.leaf] {
				if v.DefinitionLevel() < p.def {
					col.AppendNull()
					continue
				}
				if err := p.appendValue(col, v); err != nil {
					return nil, err
				}
			}
			continue
		}
		for i := 0; i < rows; i++ {
			if err := a.decode(p, col); err != nil {
				return nil, fmt.Errorf("row %d: %w", i, err)
			}
		}
	}
	return b, nil
}

// newBatch returns an empty batch of r.schema: the reuse buffer's when it has one of this
// schema, a new one (kept in the reuse buffer, if any) otherwise.
func (r *fileReader) newBatch() (*Batch, error) {
	if r.Reuse != nil && r.Reuse.batch != nil && reflect.DeepEqual(r.Reuse.batch.Schema.Fields, r.schema.Fields) {
		r.Reuse.batch.Reset()
		return r.Reuse.batch, nil
	}
	b, err := NewBatch(r.schema)
	if err != nil {
		return nil, err
	}
	if r.Reuse != nil {
		r.Reuse.batch = b
	}
	return b, nil
}

// DecodeFile reads a whole Parquet file (already in memory or behind a ReaderAt) into one
// batch per row group, as the given schema (logical names; physical names are looked up).
func DecodeFile(ra io.ReaderAt, size int64, schema *txlog.StructType) ([]*Batch, error) {
	f, err := OpenParquet(ra, size, parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadDataFile, err)
	}
	r, err := NewFileReader(f, schema)
	if err != nil {
		return nil, err
	}
	var out []*Batch
	for g := range f.RowGroups() {
		b, err := r.RowGroup(g)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// openParquet is parquet.OpenFile with panics on corrupt footers turned into errors.
func OpenParquet(ra io.ReaderAt, size int64, opts ...parquet.FileOption) (f *parquet.File, err error) {
	defer func() {
		if p := recover(); p != nil {
			f, err = nil, fmt.Errorf("%w: %v", ErrBadDataFile, p)
		}
	}()
	return parquet.OpenFile(ra, size, opts...)
}

// ReadBuffer lets successive reads share their decoding buffers. A caller that is done with
// each batch before it asks for the next passes the same ReadBuffer to every ReadWith: the
// columns of one row group are then decoded into the buffers of the last, instead of into
// memory allocated (and zeroed) afresh. The zero value is ready to use; a ReadBuffer is not
// safe for concurrent use.
type ReadBuffer struct {
	batch *Batch
}

package pq

import (
	"fmt"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"

	"github.com/medallion-lake/medallion/txlog"
)

// Compression names accepted by WriteOptions.
const (
	CompressionSnappy = "snappy"
	CompressionZstd   = "zstd"
)

// Defaults for WriteOptions.
const (
	DefaultRowGroupRows   = 1 << 20
	DefaultTargetFileSize = 128 << 20
	DefaultStatsColumns   = 32
)

// WriteOptions tune the data files a writer produces. The zero value is usable.
type WriteOptions struct {
	// Compression is CompressionSnappy (default) or CompressionZstd.
	Compression string
	// RowGroupRows bounds the rows of one row group (DefaultRowGroupRows).
	RowGroupRows int
	// TargetFileSize starts a new file once one reaches about this many bytes.
	TargetFileSize int64
	// StatsColumns is the number of leading leaf columns that get min/max stats
	// (delta.dataSkippingNumIndexedCols; DefaultStatsColumns, -1 for all).
	StatsColumns int
	// BloomFilterColumns names top-level primitive columns that get a Parquet split-block
	// bloom filter in every row group, which FileScan.MayContain reads to skip files that
	// cannot hold a key. Naming a nested, partition or unknown column fails the write.
	BloomFilterColumns []string
	// BloomFilterBitsPerValue sizes those filters (DefaultBloomFilterBitsPerValue).
	BloomFilterBitsPerValue uint
	// PageBufferSize is the bytes a column buffers before it cuts a data page (parquet-go's
	// default when zero): Spark's parquet.page.size. Small pages make readers skip finer.
	PageBufferSize int
}

func (o WriteOptions) WithDefaults() WriteOptions {
	if o.Compression == "" {
		o.Compression = CompressionSnappy
	}
	if o.RowGroupRows <= 0 {
		o.RowGroupRows = DefaultRowGroupRows
	}
	if o.TargetFileSize <= 0 {
		o.TargetFileSize = DefaultTargetFileSize
	}
	if o.StatsColumns == 0 {
		o.StatsColumns = DefaultStatsColumns
	}
	return o
}

func (o WriteOptions) codec() (compress.Codec, string, error) {
	switch o.Compression {
	case CompressionSnappy, "":
		return fastSnappy{}, "snappy", nil
	case CompressionZstd:
		return &parquet.Zstd, "zstd", nil
	}
	return nil, "", fmt.Errorf("table: unknown compression %q (want snappy or zstd)", o.Compression)
}

// wnode is the write plan of one field: its definition level when present and, for list and
// map elements, the repetition level of the enclosing repeated group.
type wnode struct {
	name     string
	kind     Kind
	optional bool
	def      int
	rep      int // repetition level of list/map entries (list/map nodes only)
	leaf     int
	flba     int
	children []*wnode
	leaves   []int
}

func buildPlan(t txlog.DataType, name string, nullable bool, parentDef, parentRep int, next *int) (*wnode, error) {
	k, err := KindOf(t)
	if err != nil {
		return nil, err
	}
	n := &wnode{name: name, kind: k, optional: nullable, def: parentDef}
	if nullable {
		n.def++
	}
	switch v := t.(type) {
	case *txlog.StructType:
		for _, f := range v.Fields {
			ch, err := buildPlan(f.Type, f.Name, f.Nullable, n.def, parentRep, next)
			if err != nil {
				return nil, err
			}
			n.children = append(n.children, ch)
		}
	case txlog.ArrayType:
		n.rep = parentRep + 1
		ch, err := buildPlan(v.ElementType, name+".element", v.ContainsNull, n.def+1, n.rep, next)
		if err != nil {
			return nil, err
		}
		n.children = []*wnode{ch}
	case txlog.MapType:
		n.rep = parentRep + 1
		kc, err := buildPlan(v.KeyType, name+".key", false, n.def+1, n.rep, next)
		if err != nil {
			return nil, err
		}
		vc, err := buildPlan(v.ValueType, name+".value", v.ValueContainsNull, n.def+1, n.rep, next)
		if err != nil {
			return nil, err
		}
		n.children = []*wnode{kc, vc}
	case txlog.DecimalType:
		n.flba = decimalBytes(v.Precision)
	}
	if len(n.children) == 0 {
		if k == KindNull {
			return nil, fmt.Errorf("type void cannot be written")
		}
		n.leaf = *next
		*next++
		n.leaves = []int{n.leaf}
	}
	for _, ch := range n.children {
		n.leaves = append(n.leaves, ch.leaves...)
	}
	return n, nil
}

// shredder turns columns into per-leaf Parquet values with repetition/definition levels.
type shredder struct {
	plans   []*wnode
	out     [][]parquet.Value
	scratch []byte
}

func newShredder(s *txlog.StructType) (*shredder, error) {
	sh := &shredder{}
	next := 0
	for _, f := range s.Fields {
		p, err := buildPlan(f.Type, f.Name, f.Nullable, 0, 0, &next)
		if err != nil {
			return nil, fmt.Errorf("table: column %s: %w", f.Name, err)
		}
		sh.plans = append(sh.plans, p)
	}
	sh.out = make([][]parquet.Value, next)
	return sh, nil
}

func (sh *shredder) reset() {
	for i := range sh.out {
		sh.out[i] = sh.out[i][:0]
	}
	sh.scratch = sh.scratch[:0]
}

// rows shreds the rows idx (or [lo,hi) when idx is nil) of cols.
func (sh *shredder) rows(cols []*Column, idx []int, lo, hi int) error {
	for c, n := range sh.plans {
		col := cols[c]
		if len(n.children) == 0 {
			if err := sh.flat(n, col, idx, lo, hi); err != nil {
				return err
			}
			continue
		}
		if ok, err := sh.flatStruct(n, col, idx, lo, hi); ok || err != nil {
			if err != nil {
				return err
			}
			continue
		}
		for k := lo; k < hi; k++ {
			i := k
			if idx != nil {
				i = idx[k]
			}
			if err := sh.value(n, col, i, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// flat is the hot loop for a top-level primitive column: one typed loop per kind over the
// selected rows, then the definition levels and nulls in passes of their own, so that no
// value pays for a kind switch or for Level (which does not inline).
func (sh *shredder) flat(n *wnode, col *Column, idx []int, lo, hi int) error {
	if n.kind == KindDecimal {
		return sh.flatDecimal(n, col, idx, lo, hi)
	}
	var rows []int // the selected rows, or nil for the run [first, first+hi-lo)
	first, ok := contiguous(idx, lo, hi)
	if !ok {
		rows = idx[lo:hi]
	}
	base := len(sh.out[n.leaf])
	out := slices.Grow(sh.out[n.leaf], hi-lo)[:base+hi-lo]
	dst := out[base:]
	switch n.kind {
	case KindInt64:
		fillValues(dst, col.Int64, rows, first, parquet.Int64Value)
	case KindInt32:
		fillValues(dst, col.Int32, rows, first, parquet.Int32Value)
	case KindFloat64:
		fillValues(dst, col.Float64, rows, first, parquet.DoubleValue)
	case KindFloat32:
		fillValues(dst, col.Float32, rows, first, parquet.FloatValue)
	case KindBool:
		fillValues(dst, col.Bool, rows, first, parquet.BooleanValue)
	case KindBytes:
		offs, data := col.Offsets, col.Data
		if rows == nil {
			offs = offs[first : first+len(dst)+1]
			for k := range dst {
				dst[k] = parquet.ByteArrayValue(data[offs[k]:offs[k+1]])
			}
		} else {
			for k, i := range rows {
				dst[k] = parquet.ByteArrayValue(data[offs[i]:offs[i+1]])
			}
		}
	}
	sh.out[n.leaf] = out
	// A required leaf's levels are the constructors' zeros, and the column writer ignores a
	// value's column index.
	if n.def > 0 {
		for k := range dst {
			dst[k].SetDefinitionLevel(n.def)
		}
	}
	if !col.hasNullsIn(idx, lo, hi) {
		return nil
	}
	null := nullAt(n) // once, not a call a null row: bronze's _rescued_data is all nulls
	for k := range dst {
		i := first + k
		if rows != nil {
			i = rows[k]
		}
		if col.Nulls[i] {
			if !n.optional {
				return fmt.Errorf("table: column %s is not nullable but row %d is null", n.name, i)
			}
			dst[k] = null
		}
	}
	return nil
}

// nullAt is a null value of leaf n: its definition level is that of n's parent, zero for a
// top-level column and the struct's for a field of a present struct.
func nullAt(n *wnode) parquet.Value {
	var v parquet.Value
	if n.def > 1 {
		v.SetDefinitionLevel(n.def - 1)
	}
	return v
}

// flatStruct shreds a top-level struct of primitive fields (gold's window) a field at a time
// through flat, when none of the rows' structs is null: each field's levels then depend on the
// field alone. It reports false, having done nothing, for other structs and for runs with a
// null struct, which take the general path a value at a time.
func (sh *shredder) flatStruct(n *wnode, col *Column, idx []int, lo, hi int) (bool, error) {
	if n.kind != KindStruct || col.hasNullsIn(idx, lo, hi) {
		return false, nil
	}
	for _, ch := range n.children {
		if len(ch.children) > 0 || ch.kind == KindStruct {
			return false, nil
		}
	}
	for k, ch := range n.children {
		if err := sh.flat(ch, col.Children[k], idx, lo, hi); err != nil {
			return true, err
		}
	}
	return true, nil
}

// fillValues sets dst[k] to the value of row rows[k] of src, or of row first+k when rows is
// nil. It is small enough to inline, and then so is mk.
func fillValues[T any](dst []parquet.Value, src []T, rows []int, first int, mk func(T) parquet.Value) {
	if rows == nil {
		for k, v := range src[first : first+len(dst)] {
			dst[k] = mk(v)
		}
		return
	}
	for k, i := range rows {
		dst[k] = mk(src[i])
	}
}

// flatDecimal is flat for decimals, whose values are encoded into the shredder's scratch.
func (sh *shredder) flatDecimal(n *wnode, col *Column, idx []int, lo, hi int) error {
	out := sh.out[n.leaf]
	for k := lo; k < hi; k++ {
		i := k
		if idx != nil {
			i = idx[k]
		}
		if col.IsNull(i) {
			if !n.optional {
				return fmt.Errorf("table: column %s is not nullable but row %d is null", n.name, i)
			}
			out = append(out, nullAt(n))
			continue
		}
		v := sh.leafValue(n, col, i)
		v.SetDefinitionLevel(n.def)
		out = append(out, v)
	}
	sh.out[n.leaf] = out
	return nil
}

// contiguous reports whether the rows idx[lo:hi] (or [lo,hi) when idx is nil) are one run of
// consecutive rows, and where it starts: the unpartitioned writer slices batches that way.
func contiguous(idx []int, lo, hi int) (int, bool) {
	if idx == nil || hi == lo {
		return lo, true
	}
	first := idx[lo]
	if idx[hi-1]-first != hi-lo-1 {
		return 0, false
	}
	for k := lo; k < hi; k++ {
		if idx[k] != first+k-lo {
			return 0, false
		}
	}
	return first, true
}

func (sh *shredder) leafValue(n *wnode, col *Column, i int) parquet.Value {
	switch n.kind {
	case KindInt64:
		return parquet.Int64Value(col.Int64[i])
	case KindInt32:
		return parquet.Int32Value(col.Int32[i])
	case KindFloat64:
		return parquet.DoubleValue(col.Float64[i])
	case KindFloat32:
		return parquet.FloatValue(col.Float32[i])
	case KindBool:
		return parquet.BooleanValue(col.Bool[i])
	case KindBytes:
		return parquet.ByteArrayValue(col.BytesAt(i))
	case KindDecimal:
		start := len(sh.scratch)
		sh.scratch = col.Decimal[i].Bytes(sh.scratch, n.flba)
		return parquet.FixedLenByteArrayValue(sh.scratch[start:len(sh.scratch):len(sh.scratch)])
	}
	return parquet.Value{}
}

func (sh *shredder) nulls(n *wnode, rep, def int) {
	for _, l := range n.leaves {
		sh.out[l] = append(sh.out[l], parquet.Value{}.Level(rep, def, l))
	}
}

func (sh *shredder) value(n *wnode, col *Column, i, rep int) error {
	if col.IsNull(i) {
		if !n.optional {
			return fmt.Errorf("table: column %s is not nullable but row %d is null", n.name, i)
		}
		sh.nulls(n, rep, n.def-1)
		return nil
	}
	switch n.kind {
	case KindStruct:
		for k, ch := range n.children {
			if err := sh.value(ch, col.Children[k], i, rep); err != nil {
				return err
			}
		}
	case KindList, KindMap:
		s, e := col.ListRange(i)
		if s == e {
			for _, ch := range n.children {
				sh.nulls(ch, rep, n.def)
			}
			return nil
		}
		for j := s; j < e; j++ {
			r := n.rep
			if j == s {
				r = rep
			}
			for k, ch := range n.children {
				if err := sh.value(ch, col.Children[k], j, r); err != nil {
					return err
				}
			}
		}
	default:
		sh.out[n.leaf] = append(sh.out[n.leaf], sh.leafValue(n, col, i).Level(rep, n.def, n.leaf))
	}
	return nil
}

// parquetWriter is parquet-go's Writer, which it deprecates for NewGenericWriter[any]; that one
// builds a Go-value write path for the schema up front and panics on MAP columns, while we write
// column by column (ColumnWriters), which Writer does as well as ever.
//
//lint:ignore SA1019 the replacement panics on our MAP columns (above)
type parquetWriter = parquet.Writer

// fileEncoder writes one Parquet data file into memory, with stats.
type FileEncoder struct {
	schema  *txlog.StructType // the file's (data) schema, logical names
	opts    WriteOptions
	buf     chunkBuffer
	w       *parquetWriter
	sh      *shredder
	stats   *statsCollector
	Rows    int64
	rgRows  int
	Ext     string
	codec   compress.Codec
	writers []*parquet.ColumnWriter
	blooms  *bloomPlan
}

const ShredChunk = 4096

func NewFileEncoder(schema *txlog.StructType, opts WriteOptions) (*FileEncoder, error) {
	opts = opts.WithDefaults()
	codec, ext, err := opts.codec()
	if err != nil {
		return nil, err
	}
	if _, err := ParquetSchema(schema); err != nil {
		return nil, err
	}
	sh, err := newShredder(schema)
	if err != nil {
		return nil, err
	}
	blooms, err := planBloomFilters(schema, opts.BloomFilterColumns, opts.BloomFilterBitsPerValue)
	if err != nil {
		return nil, err
	}
	stats := newStatsCollector(schema, opts.StatsColumns)
	stats.fromFooter(func(field int) int {
		if p := sh.plans[field]; len(p.children) == 0 {
			return p.leaf
		}
		return -1
	})
	return &FileEncoder{schema: schema, opts: opts, sh: sh, Ext: ext, codec: codec, blooms: blooms, stats: stats}, nil
}

// start opens the Parquet writer once the first rows are known: top-level string columns
// whose sample is nearly all distinct values (ids) are written PLAIN, the others with a
// dictionary, falling back to PLAIN when it outgrows 1 MiB; integer columns (and a struct's
// integer fields) whose sample has few distinct values get a dictionary too.
func (e *FileEncoder) start(cols []*Column, idx []int) error {
	plain, dict := e.chooseEncodings(cols, idx)
	e.blooms.forcePlain(plain)
	ps, err := parquetSchema(e.schema, plain, dict)
	if err != nil {
		return err
	}
	opts := []parquet.WriterOption{ps, e.blooms.option(),
		parquet.Compression(e.codec),
		parquet.DataPageVersion(1),
		// Min/max per page go to the column index, which readers prune pages with; the same
		// bounds in each page header (deprecated there) would be computed a second time.
		parquet.DataPageStatistics(false),
		// Dictionary strings with a fallback to PLAIN: parquet-go's default for byte arrays
		// (DELTA_LENGTH_BYTE_ARRAY) breaks older Spark vectorized readers (SPARK-40128).
		parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.RLEDictionary),
		parquet.DictionaryMaxBytes(1 << 20),
		parquet.CreatedBy("medallion", "0", ""),
		// Our dates and timestamps are proleptic Gregorian. Spark reads dates before 1582 and
		// timestamps before 1900 from files without this key as ambiguous and fails; with a
		// Spark >= 3 version and no "org.apache.spark.legacyDateTime" key it reads them as
		// they are (SPARK-31404).
		parquet.KeyValueMetadata("org.apache.spark.version", "3.5.0"),
	}
	if e.opts.PageBufferSize > 0 {
		opts = append(opts, parquet.PageBufferSize(e.opts.PageBufferSize))
	}
	e.w = parquet.NewWriter(&e.buf, opts...)
	e.writers = e.w.ColumnWriters()
	return nil
}

// write appends the rows idx (all rows when nil) of cols, which follow e.schema.
func (e *FileEncoder) Write(cols []*Column, idx []int) error {
	n := 0
	if idx != nil {
		n = len(idx)
	} else if len(cols) > 0 {
		n = cols[0].Len
	}
	if e.w == nil {
		if err := e.start(cols, idx); err != nil {
			return err
		}
	}
	for lo := 0; lo < n; {
		hi := min(lo+ShredChunk, n, lo+(e.opts.RowGroupRows-e.rgRows))
		e.sh.reset()
		if err := e.sh.rows(cols, idx, lo, hi); err != nil {
			return err
		}
		for l, vals := range e.sh.out {
			if _, err := e.writers[l].WriteRowValues(vals); err != nil {
				return fmt.Errorf("table: encode parquet: %w", err)
			}
		}
		e.stats.add(cols, idx, lo, hi)
		e.Rows += int64(hi - lo)
		e.rgRows += hi - lo
		if e.rgRows >= e.opts.RowGroupRows {
			if err := e.w.Flush(); err != nil {
				return fmt.Errorf("table: flush row group: %w", err)
			}
			e.rgRows = 0
		}
		lo = hi
	}
	return nil
}

// size estimates the file size so far.
func (e *FileEncoder) Size() int64 {
	if e.w == nil {
		return 0
	}
	return e.w.Size()
}

// finish closes the file and returns its bytes and the Delta stats JSON.
func (e *FileEncoder) Finish() (*chunkBuffer, string, error) {
	if e.w == nil {
		if err := e.start(nil, nil); err != nil {
			return nil, "", err
		}
	}
	if err := e.w.Close(); err != nil {
		return nil, "", fmt.Errorf("table: close parquet: %w", err)
	}
	e.stats.readFooter(e.w.File().Metadata().RowGroups)
	return &e.buf, e.stats.json(e.Rows), nil
}

// EncodeFile writes batches (all of schema) as one Parquet file and returns its bytes and its
// Delta stats JSON. It is the building block of the table writers, exported for tools and
// tests that need a single file.
func EncodeFile(schema *txlog.StructType, batches []*Batch, opts WriteOptions) ([]byte, string, error) {
	e, err := NewFileEncoder(schema, opts)
	if err != nil {
		return nil, "", err
	}
	for _, b := range batches {
		cols, err := Conform(schema, b)
		if err != nil {
			return nil, "", err
		}
		if err := e.Write(cols, nil); err != nil {
			return nil, "", err
		}
	}
	data, stats, err := e.Finish()
	if err != nil {
		return nil, "", err
	}
	return data.Bytes(), stats, nil
}

// conform returns b's columns in the order of schema, checking names and types (schema
// enforcement). Missing nullable columns become all-null columns.
func Conform(schema *txlog.StructType, b *Batch) ([]*Column, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	cols := make([]*Column, len(schema.Fields))
	used := 0
	for i, f := range schema.Fields {
		j := b.Schema.FieldIndex(f.Name)
		if j < 0 {
			for k := range b.Schema.Fields {
				if strings.EqualFold(b.Schema.Fields[k].Name, f.Name) {
					j = k
				}
			}
		}
		if j < 0 {
			if !f.Nullable {
				return nil, fmt.Errorf("%w: column %s (not nullable) is missing from the data", ErrSchemaMismatch, f.Name)
			}
			c, err := NewColumn(f.Type)
			if err != nil {
				return nil, err
			}
			for r := 0; r < b.Len(); r++ {
				c.AppendNull()
			}
			cols[i] = c
			continue
		}
		used++
		if err := SameType(f.Name, f.Type, b.Schema.Fields[j].Type); err != nil {
			return nil, err
		}
		cols[i] = b.Columns[j]
	}
	if used != len(b.Schema.Fields) {
		for _, f := range b.Schema.Fields {
			if schema.FieldIndex(f.Name) < 0 {
				return nil, fmt.Errorf("%w: column %s (%s) is not in the table schema", ErrSchemaMismatch, f.Name, f.Type.TypeName())
			}
		}
	}
	return cols, nil
}

func SameType(path string, want, got txlog.DataType) error {
	mismatch := func() error {
		return fmt.Errorf("%w: column %s has type %s, the table has %s", ErrSchemaMismatch, path, TypeString(got), TypeString(want))
	}
	switch w := want.(type) {
	case *txlog.StructType:
		g, ok := got.(*txlog.StructType)
		if !ok || len(g.Fields) != len(w.Fields) {
			return mismatch()
		}
		for i := range w.Fields {
			if !strings.EqualFold(w.Fields[i].Name, g.Fields[i].Name) {
				return mismatch()
			}
			if err := SameType(path+"."+w.Fields[i].Name, w.Fields[i].Type, g.Fields[i].Type); err != nil {
				return err
			}
		}
		return nil
	case txlog.ArrayType:
		g, ok := got.(txlog.ArrayType)
		if !ok {
			return mismatch()
		}
		return SameType(path+".element", w.ElementType, g.ElementType)
	case txlog.MapType:
		g, ok := got.(txlog.MapType)
		if !ok {
			return mismatch()
		}
		if err := SameType(path+".key", w.KeyType, g.KeyType); err != nil {
			return err
		}
		return SameType(path+".value", w.ValueType, g.ValueType)
	}
	if want.TypeName() != got.TypeName() {
		return mismatch()
	}
	return nil
}

// typeString renders a type as Spark's simpleString ("struct<start:timestamp,end:timestamp>").
func TypeString(t txlog.DataType) string {
	switch v := t.(type) {
	case *txlog.StructType:
		parts := make([]string, len(v.Fields))
		for i, f := range v.Fields {
			parts[i] = f.Name + ":" + TypeString(f.Type)
		}
		return "struct<" + strings.Join(parts, ",") + ">"
	case txlog.ArrayType:
		return "array<" + TypeString(v.ElementType) + ">"
	case txlog.MapType:
		return "map<" + TypeString(v.KeyType) + "," + TypeString(v.ValueType) + ">"
	}
	return t.TypeName()
}

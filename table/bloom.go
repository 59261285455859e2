package table

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// MayContain reports, for every row of keys, whether the data file add may hold a row whose
// values equal that key row's in every column of keys. The columns of keys name top-level
// primitive columns of s.Schema (as in the table, case-insensitive) and have their types.
//
// A false answer is certain: no row of the file (live or deleted) has that key. A true answer
// only means the file must be read to know. A column rules nothing out in a row group where it
// has no bloom filter (files written without WriteOptions.BloomFilterColumns, or by other
// engines), nor when it is a partition column, is missing from the file or is stored in a
// physical type the key cannot be hashed as (say INT96 or millisecond timestamps), nor for key
// values that are null or NaN; so such files answer true for every key. Each column has a
// filter of its own, so a key is ruled out only when one of its values is in no row of a row
// group, not when each value is but never in the same row: within a row group the columns'
// answers are and-ed, across row groups or-ed.
//
// With s.Groups set, only the row groups a scan would read answer: a key only in the others
// is ruled out; and when keys has s.Groups' column, a key row is ruled out in each row group
// whose statistics on it exclude its value there (data skipping key by key). It reads the file's footer and the bloom filters of the probed columns, never their pages:
// one ranged read for a one-row-group file whose filters sit near its end, as ours do.
// It is safe for concurrent use.
func (s *FileScan) MayContain(ctx context.Context, add *txlog.Add, keys *pq.Batch) ([]bool, error) {
	store := &storeReaderAt{} // tells a failing store from a bad file
	wrap := func(err error) error {
		return missingFile(add.Path, fmt.Errorf("table: bloom look-up %s: %w", add.Path, store.blame(err)))
	}
	if err := keys.Validate(); err != nil {
		return nil, wrap(err)
	}
	n := keys.Len()
	out := make([]bool, n)
	probes, ranged, err := s.bloomProbes(keys)
	if err != nil {
		return nil, wrap(err)
	}
	if n == 0 || len(probes) == 0 && ranged == nil {
		for i := range out {
			out[i] = true
		}
		return out, nil
	}
	size := add.Size
	if size <= 0 {
		info, err := s.Bucket.Stat(ctx, add.Path)
		if err != nil {
			return nil, wrap(err)
		}
		size = info.Size
	}
	store.base = objstore.NewReaderAt(ctx, s.Bucket, add.Path, size)
	ra, err := openTail(store, add.Path, size, s.Tails)
	if err != nil {
		return nil, wrap(err)
	}
	defer func() { s.Tails.put(add.Path, size, ra.spans) }()
	f, err := pq.OpenParquet(ra, size, parquet.SkipMagicBytes(true), parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true))
	if err != nil {
		return nil, wrap(fmt.Errorf("%w: %v", pq.ErrBadDataFile, err))
	}
	for _, p := range probes {
		p.bind(f)
	}
	alive := make([]bool, n)
	meta := f.Metadata()
	pruneLeaf := s.groupLeaf(f)
	for g, rg := range f.RowGroups() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		chunks := rg.ColumnChunks()
		if g >= len(meta.RowGroups) {
			return nil, wrap(fmt.Errorf("%w: row group %d has no metadata", pq.ErrBadDataFile, g))
		}
		if s.Groups != nil && !s.Groups.overlaps(&meta.RowGroups[g], pruneLeaf) {
			continue // a scan with the same Groups will not read it
		}
		if err := ra.loadFilters(meta.RowGroups[g].Columns, probes); err != nil {
			return nil, wrap(err)
		}
		for i := range alive {
			alive[i] = !out[i]
		}
		if ranged != nil {
			s.Groups.within(&meta.RowGroups[g], pruneLeaf, ranged, alive)
		}
		for _, p := range probes {
			if p.leaf < 0 || p.leaf >= len(chunks) {
				continue // not in the file: no filter, no narrowing
			}
			fc, ok := chunks[p.leaf].(*parquet.FileColumnChunk)
			if !ok {
				continue
			}
			bf, err := fc.BloomFilterFrom(ra)
			if errors.Is(err, parquet.ErrMissingBloomFilter) {
				continue
			}
			if err != nil {
				return nil, wrap(fmt.Errorf("%w: column %s: bloom filter of row group %d: %v", pq.ErrBadDataFile, p.field.Name, g, err))
			}
			// The header told where the bits are; load them so that each Check is in memory.
			if _, off, size := bf.Outer(); size > 0 {
				if err := ra.load(off, size); err != nil {
					return nil, wrap(err)
				}
			}
			for i := range alive {
				if !alive[i] {
					continue
				}
				if alive[i], err = p.check(bf, i); err != nil {
					return nil, wrap(fmt.Errorf("%w: column %s: bloom filter of row group %d: %v", pq.ErrBadDataFile, p.field.Name, g, err))
				}
			}
		}
		all := true
		for i, a := range alive {
			out[i] = out[i] || a
			all = all && out[i]
		}
		if all {
			break
		}
	}
	return out, nil
}

// bloomProbes matches the columns of a MayContain's keys with the table's: the bloom probes,
// and the column of s.Groups (nil: none), whose values the row groups' statistics rule out.
func (s *FileScan) bloomProbes(keys *pq.Batch) (probes []*bloomProbe, ranged *pq.Column, err error) {
	for j := range keys.Schema.Fields {
		kf := &keys.Schema.Fields[j]
		i := pq.FieldIndexFold(s.Schema, kf.Name)
		if i < 0 {
			return nil, nil, fmt.Errorf("%w: column %s does not exist", pq.ErrSchemaMismatch, kf.Name)
		}
		f := &s.Schema.Fields[i]
		if err := pq.SameType(f.Name, f.Type, kf.Type); err != nil {
			return nil, nil, err
		}
		switch keys.Columns[j].Kind {
		case pq.KindStruct, pq.KindList, pq.KindMap, pq.KindNull:
			return nil, nil, fmt.Errorf("column %s has type %s, which has no bloom filter", f.Name, pq.TypeString(f.Type))
		}
		if s.isPartition(f.Name) {
			continue
		}
		if s.Groups != nil && strings.EqualFold(f.Name, s.Groups.Column) && keys.Columns[j].Kind == pq.KindInt64 {
			ranged = keys.Columns[j]
			continue
		}
		probes = append(probes, &bloomProbe{field: f, col: keys.Columns[j]})
	}
	return probes, ranged, nil
}

// bloomProbe is one key column of a MayContain call, matched with the file's leaf.
type bloomProbe struct {
	field *txlog.StructField
	col   *pq.Column
	leaf  int // -1: not in the file, or not as a leaf the key can be hashed for
	phys  parquet.Kind
	flba  int // FIXED_LEN_BYTE_ARRAY length of a decimal leaf
}

// bind finds the probe's leaf in f and checks that its physical type is the one the key's
// values hash as; otherwise the probe says "may contain" for every key.
func (p *bloomProbe) bind(f *parquet.File) {
	p.leaf = -1
	fc := pq.ChildByName(f.Root(), p.field)
	if fc == nil || !fc.Leaf() || fc.MaxRepetitionLevel() > 0 {
		return
	}
	ft := fc.Type()
	p.phys = ft.Kind()
	ok := false
	switch p.col.Kind {
	case pq.KindInt64:
		switch p.field.Type.TypeName() {
		case txlog.TypeTimestamp, txlog.TypeTimestampNTZ:
			ok = p.phys == parquet.Int64 && pq.TimeUnit(ft) == pq.UnitMicros
		default:
			ok = p.phys == parquet.Int64 || p.phys == parquet.Int32
		}
	case pq.KindInt32:
		ok = p.phys == parquet.Int32
	case pq.KindFloat64:
		ok = p.phys == parquet.Double
	case pq.KindFloat32:
		ok = p.phys == parquet.Float
	case pq.KindBool:
		ok = p.phys == parquet.Boolean
	case pq.KindBytes:
		ok = p.phys == parquet.ByteArray || p.phys == parquet.FixedLenByteArray
	case pq.KindDecimal:
		p.flba = ft.Length()
		ok = p.phys == parquet.FixedLenByteArray || p.phys == parquet.Int32 || p.phys == parquet.Int64
	}
	if ok {
		p.leaf = fc.Index()
	}
}

// check asks the filter about key row i, in the physical type of the file's leaf.
func (p *bloomProbe) check(bf parquet.BloomFilter, i int) (bool, error) {
	c := p.col
	if c.IsNull(i) {
		return true, nil // nulls are not in bloom filters
	}
	var v parquet.Value
	switch c.Kind {
	case pq.KindInt64:
		x := c.Int64[i]
		if p.phys == parquet.Int32 {
			if x < math.MinInt32 || x > math.MaxInt32 {
				return false, nil // an INT32 leaf cannot hold it
			}
			v = parquet.Int32Value(int32(x))
		} else {
			v = parquet.Int64Value(x)
		}
	case pq.KindInt32:
		v = parquet.Int32Value(c.Int32[i])
	case pq.KindFloat64:
		x := c.Float64[i]
		if math.IsNaN(x) {
			return true, nil // NaNs have many bit patterns
		}
		if x == 0 {
			// 0 and -0 are equal keys with different bits.
			return orCheck(bf, parquet.DoubleValue(0), parquet.DoubleValue(math.Copysign(0, -1)))
		}
		v = parquet.DoubleValue(x)
	case pq.KindFloat32:
		x := c.Float32[i]
		if x != x {
			return true, nil
		}
		if x == 0 {
			return orCheck(bf, parquet.FloatValue(0), parquet.FloatValue(float32(math.Copysign(0, -1))))
		}
		v = parquet.FloatValue(x)
	case pq.KindBool:
		v = parquet.BooleanValue(c.Bool[i])
	case pq.KindBytes:
		v = parquet.ByteArrayValue(c.BytesAt(i))
	case pq.KindDecimal:
		d := c.Decimal[i]
		switch p.phys {
		case parquet.Int32, parquet.Int64:
			x := int64(d.Lo)
			if d.Hi != x>>63 || (p.phys == parquet.Int32 && (x < math.MinInt32 || x > math.MaxInt32)) {
				return false, nil // the leaf cannot hold it
			}
			if p.phys == parquet.Int32 {
				v = parquet.Int32Value(int32(x))
			} else {
				v = parquet.Int64Value(x)
			}
		default:
			if p.flba <= 0 || p.flba > 16 {
				return true, nil
			}
			v = parquet.FixedLenByteArrayValue(d.Bytes(nil, p.flba))
		}
	default:
		return true, nil
	}
	return bf.Check(v)
}

func orCheck(bf parquet.BloomFilter, a, b parquet.Value) (bool, error) {
	if ok, err := bf.Check(a); ok || err != nil {
		return ok, err
	}
	return bf.Check(b)
}

// loadFilters loads, in one request, the byte range that spans the bloom filters (header
// and bits) of the probed columns of one row group, when their writer recorded the lengths.
// parquet-go writes a row group's filters back to back, so the range holds little else.
func (r *spanReaderAt) loadFilters(cols []format.ColumnChunk, probes []*bloomProbe) error {
	lo, hi, sum := int64(-1), int64(-1), int64(0)
	for _, p := range probes {
		if md := filterMeta(cols, p); md != nil {
			if lo < 0 || md.BloomFilterOffset < lo {
				lo = md.BloomFilterOffset
			}
			hi = max(hi, md.BloomFilterOffset+int64(md.BloomFilterLength))
			sum += int64(md.BloomFilterLength)
		}
	}
	if lo < 0 {
		return nil
	}
	if hi-lo <= 2*sum+tailBytes {
		return r.loadFilter(lo, hi-lo)
	}
	// Far apart (another writer's layout): one read each rather than the pages between.
	for _, p := range probes {
		if md := filterMeta(cols, p); md != nil {
			if err := r.loadFilter(md.BloomFilterOffset, int64(md.BloomFilterLength)); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadFilter loads a filter's range, and at least the 1 KiB parquet-go reads its header with.
func (r *spanReaderAt) loadFilter(off, n int64) error {
	if off >= 0 && off < r.size {
		n = max(n, min(1<<10, r.size-off))
	}
	return r.load(off, n)
}

// filterMeta returns the metadata of p's column chunk when it records where its filter is.
func filterMeta(cols []format.ColumnChunk, p *bloomProbe) *format.ColumnMetaData {
	if p.leaf < 0 || p.leaf >= len(cols) {
		return nil
	}
	md := &cols[p.leaf].MetaData
	if md.BloomFilterOffset <= 0 || md.BloomFilterLength <= 0 {
		return nil
	}
	return md
}

package table

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// GroupRanges prunes row groups inside files: a scan with FileScan.Groups set reads only the
// row groups whose min/max statistics on one int64 column (a long, or a timestamp in
// microseconds) meet at least one of the ranges. It is the file-level data skipping of a
// predicate such as "t between a and b or t between c and d" carried into the files, for
// files whose rows are ordered (or clustered) on that column. A row group without usable
// statistics (none written, another physical type or unit, a column missing from the file)
// is read. It is safe for concurrent use by the scans that share it.
type GroupRanges struct {
	Column string     // the column, as named in the table's schema
	Ranges [][2]int64 // inclusive [lo, hi] ranges of its values, ascending and disjoint

	read, skipped           atomic.Int64
	pagesRead, pagesSkipped atomic.Int64
	counts                  *GroupRanges // where the counts go (nil: g itself); see Narrowed
}

// Counts reports the row groups the scans with g read and left out so far.
func (g *GroupRanges) Counts() (read, skipped int64) { return g.read.Load(), g.skipped.Load() }

// Narrowed returns ranges on g's column (ascending, disjoint) whose scans count into g: a
// scan of one file that knows which of g's values that file may hold (its bloom filters
// said) reads only the row groups and pages around those, while g's counts stay those of
// every file.
func (g *GroupRanges) Narrowed(ranges [][2]int64) *GroupRanges {
	return &GroupRanges{Column: g.Column, Ranges: ranges, counts: g.tally()}
}

// tally is the GroupRanges whose counters g's scans add to.
func (g *GroupRanges) tally() *GroupRanges {
	if g.counts != nil {
		return g.counts
	}
	return g
}

// leaf finds g's column among f's leaves: its index, or -1 when the file's statistics on it
// cannot be compared with int64 values in the table's unit.
func (g *GroupRanges) leaf(schema *txlog.StructType, f *parquet.File) int {
	i := pq.FieldIndexFold(schema, g.Column)
	if i < 0 {
		return -1
	}
	fd := &schema.Fields[i]
	fc := pq.ChildByName(f.Root(), fd)
	if fc == nil || !fc.Leaf() || fc.MaxRepetitionLevel() > 0 || fc.Type().Kind() != parquet.Int64 {
		return -1
	}
	switch fd.Type.TypeName() {
	case txlog.TypeTimestamp, txlog.TypeTimestampNTZ:
		if pq.TimeUnit(fc.Type()) != pq.UnitMicros {
			return -1
		}
	case txlog.TypeLong:
	default:
		return -1
	}
	return fc.Index()
}

// keep reports whether row group rg may hold a value in one of g's ranges, reading the
// statistics of leaf (-1: no usable statistics, so yes), and counts the answer.
func (g *GroupRanges) keep(rg *format.RowGroup, leaf int) bool {
	if !g.overlaps(rg, leaf) {
		g.tally().skipped.Add(1)
		return false
	}
	g.tally().read.Add(1)
	return true
}

func (g *GroupRanges) overlaps(rg *format.RowGroup, leaf int) bool {
	lo, hi, ok := int64Bounds(rg, leaf)
	return !ok || g.meets(lo, hi)
}

// groupLeaf is the leaf of f that s.Groups prunes on (-1: none).
func (s *FileScan) groupLeaf(f *parquet.File) int {
	if s.Groups == nil {
		return -1
	}
	return s.Groups.leaf(s.Schema, f)
}

// within clears alive[i] for each key row i whose value of col lies outside row group rg's
// statistics on leaf (none when they are not usable, nor for null values).
func (g *GroupRanges) within(rg *format.RowGroup, leaf int, col *pq.Column, alive []bool) {
	lo, hi, ok := int64Bounds(rg, leaf)
	if !ok {
		return
	}
	for i, a := range alive {
		if a && !col.IsNull(i) && (col.Int64[i] < lo || col.Int64[i] > hi) {
			alive[i] = false
		}
	}
}

// int64Bounds reads the min and max of row group rg's chunk of leaf, when usable.
func int64Bounds(rg *format.RowGroup, leaf int) (lo, hi int64, ok bool) {
	if leaf < 0 || leaf >= len(rg.Columns) {
		return 0, 0, false
	}
	md := &rg.Columns[leaf].MetaData
	st := &md.Statistics
	if md.Type != format.Int64 || len(st.MinValue) != 8 || len(st.MaxValue) != 8 {
		return 0, 0, false // no min/max (say an all-null chunk, or only the deprecated fields)
	}
	return int64(binary.LittleEndian.Uint64(st.MinValue)), int64(binary.LittleEndian.Uint64(st.MaxValue)), true
}

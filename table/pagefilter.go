package table

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/medallion-lake/medallion/pq"
)

// Pages inside a row group: a file whose GroupRanges column has a page index (a ColumnIndex
// with each page's min/max, an OffsetIndex with its first row and bytes) is pruned a page at
// a time as well. Silver keeps large row groups for its readers (few dictionaries, few
// requests) and writes small pages, so that the dedup look-up still decodes only the few
// thousand rows around its keys' times rather than a whole row group.

// pageIndexMax bounds the page index bytes loadPageIndex fetches in one read: beyond it the
// indexes are read one by one as parquet-go asks.
const pageIndexMax = 4 << 20

// loadPageIndex loads, in one read, the column and offset indexes of leaves in every row
// group (parquet-go writes them all together just before the footer, so the file's end often
// holds them already).
func (r *spanReaderAt) loadPageIndex(groups []format.RowGroup, leaves []int) error {
	lo, hi := int64(-1), int64(0)
	for g := range groups {
		for _, l := range leaves {
			if l < 0 || l >= len(groups[g].Columns) {
				continue
			}
			c := &groups[g].Columns[l]
			for _, sp := range [2][2]int64{{c.ColumnIndexOffset, int64(c.ColumnIndexLength)}, {c.OffsetIndexOffset, int64(c.OffsetIndexLength)}} {
				if sp[0] <= 0 || sp[1] <= 0 {
					continue
				}
				if lo < 0 || sp[0] < lo {
					lo = sp[0]
				}
				hi = max(hi, sp[0]+sp[1])
			}
		}
	}
	if lo < 0 || hi-lo > pageIndexMax {
		return nil
	}
	if hi > r.size {
		return fmt.Errorf("%w: page index %d+%d is outside the file (%d bytes)", pq.ErrBadDataFile, lo, hi-lo, r.size)
	}
	return r.load(lo, hi-lo)
}

// pageRows returns the row ranges ([lo, hi) within row group rg of f) of the pages of leaf
// whose min/max meet one of g's ranges, merged where pages follow each other, and counts the
// pages kept and left out; ok is false when the chunk has no usable page index (the caller
// reads the whole row group). A page of nulls only is kept, as a row group without statistics
// is.
func (g *GroupRanges) pageRows(f *parquet.File, rg, leaf int) (rows [][2]int64, ok bool) {
	groups := f.RowGroups()
	if leaf < 0 || rg >= len(groups) || leaf >= len(groups[rg].ColumnChunks()) {
		return nil, false
	}
	fc, isFile := groups[rg].ColumnChunks()[leaf].(*parquet.FileColumnChunk)
	if !isFile || fc.Type().Kind() != parquet.Int64 {
		return nil, false
	}
	ci, err := fc.ColumnIndex()
	if err != nil {
		return nil, false
	}
	oi, err := fc.OffsetIndex()
	if err != nil || oi.NumPages() != ci.NumPages() || oi.NumPages() == 0 {
		return nil, false
	}
	n := groups[rg].NumRows()
	var read, skipped int64
	for p := range oi.NumPages() {
		lo := oi.FirstRowIndex(p)
		hi := n
		if p+1 < oi.NumPages() {
			hi = oi.FirstRowIndex(p + 1)
		}
		if lo < 0 || hi > n || lo > hi || (len(rows) > 0 && lo < rows[len(rows)-1][1]) {
			return nil, false // a corrupt offset index: the whole group is read
		}
		if !ci.NullPage(p) && !g.meets(ci.MinValue(p).Int64(), ci.MaxValue(p).Int64()) {
			skipped++
			continue
		}
		read++
		if k := len(rows) - 1; k >= 0 && rows[k][1] == lo {
			rows[k][1] = hi
		} else if lo < hi {
			rows = append(rows, [2]int64{lo, hi})
		}
	}
	g.tally().pagesRead.Add(read)
	g.tally().pagesSkipped.Add(skipped)
	return rows, true
}

// fetchGroupPages selects the rows of row group g of f whose pages of leaf meet s.Groups'
// ranges and loads those pages of leaves (fetchPages): ok is false when the group has no
// usable page index (the caller fetches and reads it whole), and rows empty when no page
// meets the ranges.
func (s *FileScan) fetchGroupPages(tail *spanReaderAt, f *parquet.File, g, leaf int, leaves []int, readAhead int64) (rows [][2]int64, ok bool, err error) {
	rows, ok = s.Groups.pageRows(f, g, leaf)
	if !ok || len(rows) == 0 {
		return rows, ok, nil
	}
	if err := tail.fetchPages(f, g, rows, leaves, readAhead); err != nil {
		return nil, false, err
	}
	return rows, true, nil
}

// meets reports whether [lo, hi] meets one of g's ranges.
func (g *GroupRanges) meets(lo, hi int64) bool {
	// The first range that ends at or after lo is the only one that can start by hi.
	k, _ := slices.BinarySearchFunc(g.Ranges, lo, func(r [2]int64, v int64) int { return cmp.Compare(r[1], v) })
	return k < len(g.Ranges) && g.Ranges[k][0] <= hi
}

// PageCounts reports the pages of the pruning column the scans with g read and left out
// inside the row groups they read.
func (g *GroupRanges) PageCounts() (read, skipped int64) {
	return g.pagesRead.Load(), g.pagesSkipped.Load()
}

// pageGap is the most bytes of unwanted pages between two wanted ones that one request reads
// through: smaller than chunkGap, since here the bytes read through are the same chunk's
// pages, and on a local file each is copied for nothing.
const pageGap = 256 << 10

// fetchPages loads, in place of what was loaded before, the pages of leaves in row group g of
// f that hold rows (within the group) and each chunk's dictionary page, in as few requests as
// pageGap allows. A chunk without an offset index is loaded whole. Each range runs on by the
// page reader's buffer (readAhead bytes, to the chunk's end): parquet-go fills that buffer
// from wherever it stands, and a fill that left the loaded bytes would go to the store.
func (r *spanReaderAt) fetchPages(f *parquet.File, g int, rows [][2]int64, leaves []int, readAhead int64) error {
	r.chunks.Store(nil)
	meta := &f.Metadata().RowGroups[g]
	chunks := f.RowGroups()[g].ColumnChunks()
	var ranges [][2]int64
	for _, l := range leaves {
		if l < 0 || l >= len(meta.Columns) || l >= len(chunks) {
			continue
		}
		md := &meta.Columns[l].MetaData
		fc, isFile := chunks[l].(*parquet.FileColumnChunk)
		var oi parquet.OffsetIndex
		var err error
		if isFile {
			oi, err = fc.OffsetIndex()
		}
		if !isFile || err != nil || oi.NumPages() == 0 {
			rs, _, ok := r.chunkRanges(meta.Columns, []int{l})
			if !ok {
				return nil // the decoder reports it
			}
			ranges = append(ranges, rs...)
			continue
		}
		start := md.DataPageOffset
		if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
			start = md.DictionaryPageOffset
		}
		end := start + md.TotalCompressedSize
		want := func(lo, hi int64) { ranges = append(ranges, [2]int64{lo, min(end, hi+readAhead)}) }
		if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < oi.Offset(0) {
			want(md.DictionaryPageOffset, oi.Offset(0))
		}
		k := 0
		for p := range oi.NumPages() {
			lo, hi := oi.FirstRowIndex(p), meta.NumRows
			if p+1 < oi.NumPages() {
				hi = oi.FirstRowIndex(p + 1)
			}
			for k < len(rows) && rows[k][1] <= lo {
				k++
			}
			if k < len(rows) && rows[k][0] < hi {
				want(oi.Offset(p), oi.Offset(p)+oi.CompressedPageSize(p))
			}
		}
	}
	return r.loadRanges(ranges, pageGap)
}

package pq

import (
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// RowGroupRows decodes only the rows ranges of row group g into a batch, in order: ranges are
// [lo, hi) row numbers within the group, ascending and disjoint. A read whose columns are all
// top-level primitives (readFlat's) seeks each column to a range's first row through its
// offset index and decodes only the pages that hold the range's rows, so a look-up that the
// page index narrows to a few thousand rows of a large row group decodes about those; other
// reads decode the whole group and keep the ranges' rows. parquet-go may panic on corrupt
// input; that becomes ErrBadDataFile.
func (r *fileReader) RowGroupRows(g int, ranges [][2]int64) (b *Batch, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("%w: row group %d: %v", ErrBadDataFile, g, p)
		}
	}()
	rg := r.file.RowGroups()[g]
	rows := rg.NumRows()
	want := int64(0)
	for k, rr := range ranges {
		if rr[0] < 0 || rr[1] > rows || rr[0] >= rr[1] || (k > 0 && rr[0] < ranges[k-1][1]) {
			return nil, fmt.Errorf("pq: row group %d of %d rows: bad row range [%d, %d)", g, rows, rr[0], rr[1])
		}
		want += rr[1] - rr[0]
	}
	if !r.pageSeekable() {
		full, err := r.decodeRowGroup(g)
		if err != nil {
			return nil, err
		}
		keep := make([]bool, full.Len())
		for _, rr := range ranges {
			for i := rr[0]; i < rr[1] && int(i) < len(keep); i++ {
				keep[i] = true
			}
		}
		return full.Filter(keep), nil
	}
	b, err = r.newBatch()
	if err != nil {
		return nil, err
	}
	chunks := rg.ColumnChunks()
	for c, p := range r.plans {
		if err := p.readFlatRanges(chunks[p.leaf], b.Columns[c], ranges, int(want)); err != nil {
			return nil, fmt.Errorf("row group %d: %w", g, err)
		}
	}
	return b, nil
}

// pageSeekable reports whether every column of the read is a top-level primitive read by
// readFlat, which readFlatRanges can read page by page.
func (r *fileReader) pageSeekable() bool {
	for c, p := range r.plans {
		if !r.flat[c] || p.kind == KindStruct {
			return false
		}
	}
	return len(r.plans) > 0
}

// readFlatRanges appends to col the rows ranges of chunk cc (want of them in all): for each
// range it seeks to the range's first row (the page holding it, by the chunk's offset index
// when parquet-go has loaded it, else by reading from the chunk's start) and decodes pages
// until the range is covered, cutting the last one at the range's end. The pages are read
// without parquet-go's read-ahead goroutine, which would decode a page past each range.
func (n *rnode) readFlatRanges(cc parquet.ColumnChunk, col *Column, ranges [][2]int64, want int) error {
	var pages parquet.Pages
	if fc, ok := cc.(*parquet.FileColumnChunk); ok {
		pages = fc.PagesFrom(fc.File())
	} else {
		pages = cc.Pages()
	}
	defer pages.Close()
	col.Grow(min(want, maxPresizeRows), 0)
	for _, rr := range ranges {
		if err := pages.SeekToRow(rr[0]); err != nil {
			return n.fail("seek to row %d: %v", rr[0], err)
		}
		for need := rr[1] - rr[0]; need > 0; {
			pg, err := pages.ReadPage()
			if err == io.EOF {
				return n.fail("ends before row %d", rr[1])
			}
			if err != nil {
				return n.fail("read page: %v", err)
			}
			if pg.NumRows() > need {
				pg = pg.Slice(0, need)
			}
			if pg.NumRows() <= 0 {
				return n.fail("empty page before row %d", rr[1])
			}
			if err := n.appendPage(col, pg, want); err != nil {
				return err
			}
			need -= pg.NumRows()
		}
	}
	if col.Len != want {
		return n.fail("has %d values for %d rows", col.Len, want)
	}
	return nil
}

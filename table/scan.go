package table

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/txlog"
)

// FileScan reads live data files of one table version: projection, partition values,
// deletion vectors and an optional row filter.
type FileScan struct {
	Bucket        objstore.Bucket
	Schema        *txlog.StructType // the table's logical schema
	PartitionCols []string
	Columns       []string           // projected columns (nil: all), in the order wanted
	Filter        *sqlexpr.Predicate // optional; bound to Schema
	// OpenURL reaches files named by absolute paths outside the table root (nil: none).
	OpenURL OpenURL
	// Tails keeps the files' ends between scans that open the same files (nil: none).
	Tails *FileTails
	// Groups, when set, leaves out the row groups whose statistics rule out its ranges
	// (GroupRanges); it filters no rows.
	Groups *GroupRanges
}

// projection returns the projected schema and, when a filter reads columns outside it, the
// wider schema read before the filter runs.
func (s *FileScan) projection() (out, read *txlog.StructType, err error) {
	if s.Columns == nil {
		return s.Schema, s.Schema, nil
	}
	out = &txlog.StructType{}
	for _, c := range s.Columns {
		f := s.Schema.Field(c)
		if f == nil {
			for i := range s.Schema.Fields {
				if strings.EqualFold(s.Schema.Fields[i].Name, c) {
					f = &s.Schema.Fields[i]
				}
			}
		}
		if f == nil {
			return nil, nil, fmt.Errorf("table: column %s does not exist", c)
		}
		out.Fields = append(out.Fields, *f)
	}
	read = out
	if s.Filter != nil {
		read = &txlog.StructType{Fields: append([]txlog.StructField(nil), out.Fields...)}
		s.Filter.TopFields(func(i int) {
			top := s.Schema.Fields[i]
			if read.FieldIndex(top.Name) < 0 {
				read.Fields = append(read.Fields, top)
			}
		})
	}
	return out, read, nil
}

func (s *FileScan) isPartition(name string) bool {
	for _, p := range s.PartitionCols {
		if strings.EqualFold(p, name) {
			return true
		}
	}
	return false
}

// Files returns the adds that may hold matching rows (partition pruning and data skipping).
func (s *FileScan) Files(files []*txlog.Add) []*txlog.Add {
	if s.Filter == nil {
		return files
	}
	out := make([]*txlog.Add, 0, len(files))
	for _, f := range files {
		if s.Filter.MayMatch(f) {
			out = append(out, f)
		}
	}
	return out
}

// Read yields the batches of the given files, one per row group with at least one row left.
func (s *FileScan) Read(ctx context.Context, files []*txlog.Add) iter.Seq2[*pq.Batch, error] {
	return s.ReadWith(ctx, files, nil)
}

// ReadWith is Read, decoding into buf's buffers when buf is not nil: a yielded batch is then
// valid only until the next one is yielded or buf is used again.
func (s *FileScan) ReadWith(ctx context.Context, files []*txlog.Add, buf *pq.ReadBuffer) iter.Seq2[*pq.Batch, error] {
	return func(yield func(*pq.Batch, error) bool) {
		out, read, err := s.projection()
		if err != nil {
			yield(nil, err)
			return
		}
		for _, add := range s.Files(files) {
			stop := false
			err := s.readFile(ctx, add, out, read, buf, func(b *pq.Batch) bool {
				if !yield(b, nil) {
					stop = true
					return false
				}
				return true
			})
			if err != nil {
				yield(nil, err)
				return
			}
			if stop {
				return
			}
		}
	}
}

// ReadFile reads one file completely (every column, no filter), as rewrites need.
func (s *FileScan) ReadFile(ctx context.Context, add *txlog.Add) ([]*pq.Batch, error) {
	var out []*pq.Batch
	err := s.readFile(ctx, add, s.Schema, s.Schema, nil, func(b *pq.Batch) bool { out = append(out, b); return true })
	return out, err
}

func (s *FileScan) readFile(ctx context.Context, add *txlog.Add, out, read *txlog.StructType, buf *pq.ReadBuffer, yield func(*pq.Batch) bool) error {
	// Every read of the file goes through ra, which tells a failing store from a bad file.
	ra := &storeReaderAt{}
	wrap := func(err error) error {
		return missingFile(add.Path, fmt.Errorf("table: read %s: %w", add.Path, ra.blame(err)))
	}
	deleted, size, err := s.fileFacts(ctx, add)
	if err != nil {
		if errors.As(err, new(*deletionVectorError)) {
			// A deletion vector gone is not the data file gone.
			return fmt.Errorf("table: read %s: %w", add.Path, err)
		}
		return wrap(err)
	}
	dataSchema := s.dataSchema(read)
	ra.base = objstore.NewReaderAt(ctx, s.Bucket, add.Path, size)
	tail, err := openTail(ra, add.Path, size, s.Tails)
	if err != nil {
		return wrap(err)
	}
	s.Tails.put(add.Path, size, tail.spans)
	defer s.Tails.done(add.Path, size)
	bufSize := readBufferSize(size)
	if s.Groups != nil {
		// Pages are read a few at a time (pageRows); each buffer fill must stay within the
		// bytes fetchPages loaded around them.
		bufSize = pageReadBuffer
	}
	f, err := pq.OpenParquet(tail, size, parquet.FileReadMode(parquet.ReadModeAsync), parquet.ReadBufferSize(bufSize),
		parquet.SkipMagicBytes(true), parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true))
	if err != nil {
		return wrap(fmt.Errorf("%w: %v", pq.ErrBadDataFile, err))
	}
	fr, err := pq.NewFileReader(f, dataSchema)
	if err != nil {
		return wrap(err)
	}
	fr.Reuse = buf
	rowBase := uint64(0)
	groups := f.Metadata().RowGroups
	pruneLeaf := s.groupLeaf(f)
	pages := pruneLeaf >= 0 && len(dataSchema.Fields) > 0
	if pages {
		if err := tail.loadPageIndex(groups, append(slices.Clone(fr.Leaves()), pruneLeaf)); err != nil {
			return wrap(err)
		}
		s.Tails.put(add.Path, size, tail.spans)
	}
	keep := func(g int) bool { return s.Groups == nil || s.Groups.keep(&groups[g], pruneLeaf) }
	// ahead is keep uncounted, for the row groups whose chunks are fetched with an earlier one's.
	ahead := func(g int) bool { return s.Groups == nil || s.Groups.overlaps(&groups[g], pruneLeaf) }
	loaded := -1 // the last row group whose chunks tail holds
	for g := range f.RowGroups() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if g < len(groups) && !keep(g) {
			rowBase += uint64(groups[g].NumRows) // a deletion vector counts the rows skipped
			continue
		}
		// rows, when set, are the row ranges of the group whose pages the look-up reads.
		var rows [][2]int64
		if pages && g < len(groups) {
			pr, ok, err := s.fetchGroupPages(tail, f, g, pruneLeaf, fr.Leaves(), int64(bufSize))
			if err != nil {
				return wrap(err)
			}
			if ok && len(pr) == 0 {
				rowBase += uint64(groups[g].NumRows)
				continue
			}
			if ok {
				loaded = g
				if pr[0][0] > 0 || pr[0][1] < groups[g].NumRows {
					rows = pr
				}
			}
		}
		if g < len(groups) && g > loaded {
			last, err := tail.fetchChunks(groups, g, ahead, fr.Leaves())
			if err != nil {
				return wrap(err)
			}
			loaded = max(last, g)
		}
		var data *pq.Batch
		if rows != nil {
			data, err = fr.RowGroupRows(g, rows)
		} else {
			data, err = fr.RowGroup(g)
		}
		if err != nil {
			return wrap(err)
		}
		n := data.Len()
		if len(dataSchema.Fields) == 0 {
			// Only partition columns: no decoded column tells the row count.
			n = int(f.RowGroups()[g].NumRows())
		}
		full, err := s.withPartitions(add, read, dataSchema, data, n)
		if err != nil {
			return wrap(err)
		}
		keep := undeleted(deleted, rowBase, n)
		if rows != nil {
			keep = undeletedRows(deleted, rowBase, rows)
			n = int(groups[g].NumRows)
		}
		rowBase += uint64(n)
		result := s.filtered(full, keep, out)
		if result.Len() == 0 {
			continue
		}
		if !yield(result) {
			return nil
		}
	}
	return nil
}

// dataSchema is read without the partition columns, which the data files do not hold.
func (s *FileScan) dataSchema(read *txlog.StructType) *txlog.StructType {
	out := &txlog.StructType{}
	for _, f := range read.Fields {
		if !s.isPartition(f.Name) {
			out.Fields = append(out.Fields, f)
		}
	}
	return out
}

// filtered returns the rows of full (of the read schema) that keep (nil: all) and the
// filter keep, as out.
func (s *FileScan) filtered(full *pq.Batch, keep []bool, out *txlog.StructType) *pq.Batch {
	if s.Filter != nil {
		// The filter is bound to the table schema; evaluate it on a view with that layout.
		match := s.Filter.Eval(tableView(s.Schema, full))
		if keep == nil {
			keep = match
		} else {
			for r := range keep {
				keep[r] = keep[r] && match[r]
			}
		}
	}
	result := full
	if keep != nil {
		result = full.Filter(keep)
	}
	if len(out.Fields) != len(full.Schema.Fields) {
		result = &pq.Batch{Schema: out, Columns: result.Columns[:len(out.Fields)]}
	}
	return result
}

// fileFacts returns the rows add's deletion vector deletes and the file's size (its add's,
// or the store's when the add has none).
func (s *FileScan) fileFacts(ctx context.Context, add *txlog.Add) (deleted []uint64, size int64, err error) {
	if add.DeletionVector != nil {
		if deleted, err = LoadDeletionVectorFrom(ctx, s.Bucket, s.OpenURL, add.DeletionVector); err != nil {
			return nil, 0, &deletionVectorError{err}
		}
	}
	size = add.Size
	if size <= 0 {
		info, err := s.Bucket.Stat(ctx, add.Path)
		if err != nil {
			return nil, 0, err
		}
		size = info.Size
	}
	return deleted, size, nil
}

// withPartitions lays the n rows data decoded (of dataSchema) out as read, with the
// partition columns filled from add's partition values.
func (s *FileScan) withPartitions(add *txlog.Add, read, dataSchema *txlog.StructType, data *pq.Batch, n int) (*pq.Batch, error) {
	full := &pq.Batch{Schema: read, Columns: make([]*pq.Column, len(read.Fields))}
	for i, fd := range read.Fields {
		if !s.isPartition(fd.Name) {
			full.Columns[i] = data.Columns[dataSchema.FieldIndex(fd.Name)]
			continue
		}
		col, err := pq.NewColumn(fd.Type)
		if err != nil {
			return nil, err
		}
		one, err := pq.NewColumn(fd.Type)
		if err != nil {
			return nil, err
		}
		if err := pq.AppendPartitionValue(fd.Type, one, partitionValue(add.PartitionValues, &fd)); err != nil {
			return nil, err
		}
		for r := 0; r < n; r++ {
			col.AppendFrom(one, 0)
		}
		full.Columns[i] = col
	}
	return full, nil
}

// tableView lays the columns of b out in the order of the table schema, with empty
// placeholders for columns b lacks (the filter never touches those).
func tableView(schema *txlog.StructType, b *pq.Batch) *pq.Batch {
	v := &pq.Batch{Schema: schema, Columns: make([]*pq.Column, len(schema.Fields))}
	for i, f := range schema.Fields {
		if j := b.Schema.FieldIndex(f.Name); j >= 0 {
			v.Columns[i] = b.Columns[j]
		}
	}
	return v
}

// partitionValue finds a column's partition value by physical or logical name.
func partitionValue(values map[string]*string, f *txlog.StructField) *string {
	if v, ok := values[f.PhysicalName()]; ok {
		return v
	}
	if v, ok := values[f.Name]; ok {
		return v
	}
	for k, v := range values {
		if strings.EqualFold(k, f.Name) {
			return v
		}
	}
	return nil
}

// undeleted is which of the n rows from file row rowBase on a deletion vector's deleted rows
// leave (nil: all of them, no vector).
func undeleted(deleted []uint64, rowBase uint64, n int) []bool {
	if len(deleted) == 0 {
		return nil
	}
	keep := make([]bool, n)
	for r := range keep {
		keep[r] = true
	}
	for _, d := range deleted {
		if d >= rowBase && d < rowBase+uint64(n) {
			keep[d-rowBase] = false
		}
	}
	return keep
}

// undeletedRows is undeleted for the rows ranges (within the row group from file row rowBase
// on) of a batch read page by page.
func undeletedRows(deleted []uint64, rowBase uint64, rows [][2]int64) []bool {
	if len(deleted) == 0 {
		return nil
	}
	var keep []bool
	for _, r := range rows {
		keep = append(keep, undeleted(deleted, rowBase+uint64(r[0]), int(r[1]-r[0]))...)
	}
	return keep
}

// pageReadBuffer is the page reader's buffer in a scan that reads pages by the page index.
const pageReadBuffer = 64 << 10

// readBufferSize is the read buffer of each column chunk's page reader for a data file of
// size bytes. parquet-go gives every column chunk its own buffer of the configured size
// (pooled per size, and zeroed when the pool is empty), so a fixed 4 MiB cost a small
// file's scan 4 MiB per column: a small file gets a buffer its size, rounded up to a power
// of two so that the pools stay few; a large file the 4 MiB its sequential reads want.
func readBufferSize(size int64) int {
	const smallest, largest = 64 << 10, 4 << 20
	n := smallest
	for n < largest && int64(n) < size {
		n <<= 1
	}
	return n
}

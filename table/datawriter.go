package table

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// DataWriter turns batches of a table's rows into Parquet data files in the table's bucket:
// one open file per partition, rolled at the target size. The files it returns as add actions
// are not live until a commit references them.
type DataWriter struct {
	bucket     objstore.Bucket
	schema     *txlog.StructType
	partCols   []string
	partIdx    []int
	partFields []txlog.StructField
	dataSchema *txlog.StructType
	dataIdx    []int
	opts       pq.WriteOptions
	dataChange bool
	now        func() time.Time
	rules      []boundRule // row rules every written row must satisfy
	tagger     *RowHasher  // tags every file under RowTagKey when set (SetRowTags)
	// dir and name prefix every file's key and name ("" and "part": data files; a change
	// writer's are "_change_data/" and "cdc").
	dir, name string

	open     map[string]*openFile
	order    []string
	groupIdx map[string]int
	groups   [][]int
	adds     []*txlog.Add
	rows     int64
	bytes    int64
	keyBuf   []byte
}

type openFile struct {
	enc    *pq.FileEncoder
	tag    fileTag
	hint   *tagHint // the sums of the rows WriteTagged is writing, settled into tag at its end
	dir    string
	values map[string]*string
	idx    []int
}

// NewDataWriter prepares a writer for a table schema and its partition columns.
func NewDataWriter(b objstore.Bucket, schema *txlog.StructType, partitionCols []string, opts pq.WriteOptions) (*DataWriter, error) {
	w := &DataWriter{bucket: b, schema: schema, partCols: partitionCols, opts: opts.WithDefaults(),
		dataChange: true, now: time.Now, open: map[string]*openFile{}, dataSchema: &txlog.StructType{}, name: "part"}
	isPart := map[int]bool{}
	for _, p := range partitionCols {
		i := schema.FieldIndex(p)
		if i < 0 {
			return nil, fmt.Errorf("table: partition column %s is not in the schema", p)
		}
		switch schema.Fields[i].Type.(type) {
		case txlog.PrimitiveType, txlog.DecimalType:
		default:
			return nil, fmt.Errorf("table: partition column %s has type %s, which cannot partition", p, schema.Fields[i].Type.TypeName())
		}
		isPart[i] = true
		w.partIdx = append(w.partIdx, i)
		w.partFields = append(w.partFields, schema.Fields[i])
	}
	for i, f := range schema.Fields {
		if !isPart[i] {
			w.dataIdx = append(w.dataIdx, i)
			w.dataSchema.Fields = append(w.dataSchema.Fields, f)
		}
	}
	if len(w.dataSchema.Fields) == 0 {
		return nil, fmt.Errorf("table: every column is a partition column; at least one data column is needed")
	}
	return w, nil
}

// SetRowRules makes the writer refuse (ErrRowRuleViolated) any batch with a row that breaks
// one of the table's row rules (from CheckWritable), before the batch is encoded.
func (w *DataWriter) SetRowRules(r *RowRules) error {
	rules, err := r.bind(w.schema)
	if err != nil {
		return err
	}
	w.rules = rules
	return nil
}

// SetRowTags makes the writer tag every file it writes with its rows' hashes (RowTagKey).
func (w *DataWriter) SetRowTags(h *RowHasher) { w.tagger = h }

// Write adds the rows of b, whose schema must match the table's (schema enforcement).
func (w *DataWriter) Write(ctx context.Context, b *pq.Batch) error {
	return w.WriteRows(ctx, b, nil)
}

// WriteRows adds the rows of b listed in rows (ascending row indexes; nil: every row), so a
// caller that keeps a subset of a batch writes it without copying the batch first.
func (w *DataWriter) WriteRows(ctx context.Context, b *pq.Batch, rows []int) error {
	for k, r := range rows {
		if r < 0 || r >= b.Len() || k > 0 && r <= rows[k-1] {
			return fmt.Errorf("table: write rows: row %d at position %d is out of range or order (batch of %d rows)", r, k, b.Len())
		}
	}
	cols, err := pq.Conform(w.schema, b)
	if err != nil {
		return err
	}
	if len(w.rules) > 0 {
		if err := checkRows(w.rules, &pq.Batch{Schema: w.schema, Columns: cols}, rows, w.now()); err != nil {
			return err
		}
	}
	data := make([]*pq.Column, len(w.dataIdx))
	for k, i := range w.dataIdx {
		data[k] = cols[i]
	}
	n := b.Len()
	if rows != nil {
		n = len(rows)
	}
	if n == 0 {
		return nil
	}
	if len(w.partIdx) == 0 {
		f, err := w.file(ctx, "", nil)
		if err != nil {
			return err
		}
		return w.writeRows(ctx, "", f, cols, data, rows)
	}
	// Group rows by partition from the typed values: no per-row allocation; the values are
	// serialized once per group.
	if w.groupIdx == nil {
		w.groupIdx = map[string]int{}
	}
	clear(w.groupIdx)
	w.groups = w.groups[:0]
	for k := 0; k < n; k++ {
		r := k
		if rows != nil {
			r = rows[k]
		}
		w.keyBuf = w.keyBuf[:0]
		for _, i := range w.partIdx {
			w.keyBuf = appendRawKey(w.keyBuf, cols[i], r)
		}
		gi, ok := w.groupIdx[string(w.keyBuf)]
		if !ok {
			gi = len(w.groups)
			w.groupIdx[string(w.keyBuf)] = gi
			if gi < cap(w.groups) {
				w.groups = w.groups[:gi+1]
				w.groups[gi] = w.groups[gi][:0]
			} else {
				w.groups = append(w.groups, nil)
			}
		}
		w.groups[gi] = append(w.groups[gi], r)
	}
	for _, rows := range w.groups {
		values := map[string]*string{}
		for k, i := range w.partIdx {
			v, err := pq.SerializePartitionValue(w.partFields[k].Type, cols[i], rows[0])
			if err != nil {
				return err
			}
			values[w.partFields[k].PhysicalName()] = v
		}
		key := partitionKey(values, w.partFields)
		f, err := w.file(ctx, key, values)
		if err != nil {
			return err
		}
		if err := w.writeRows(ctx, key, f, cols, data, rows); err != nil {
			return err
		}
	}
	return nil
}

// partitionKey identifies an open file by its serialized partition values (two typed values,
// such as "" and null, can serialize alike and must share a file).
func partitionKey(values map[string]*string, fields []txlog.StructField) string {
	var b []byte
	for _, f := range fields {
		v := values[f.PhysicalName()]
		if v == nil {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = strconv.AppendInt(b, int64(len(*v)), 10)
		b = append(b, ':')
		b = append(b, *v...)
	}
	return string(b)
}

// appendRawKey appends an unambiguous binary form of row r of a primitive column.
func appendRawKey(dst []byte, c *pq.Column, r int) []byte {
	if c.IsNull(r) {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	switch c.Kind {
	case pq.KindInt64:
		return binary.LittleEndian.AppendUint64(dst, uint64(c.Int64[r]))
	case pq.KindInt32:
		return binary.LittleEndian.AppendUint32(dst, uint32(c.Int32[r]))
	case pq.KindFloat64:
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(c.Float64[r]))
	case pq.KindFloat32:
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(c.Float32[r]))
	case pq.KindBool:
		if c.Bool[r] {
			return append(dst, 1)
		}
		return append(dst, 0)
	case pq.KindDecimal:
		return c.Decimal[r].Bytes(dst, 16)
	case pq.KindBytes:
		b := c.BytesAt(r)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
		return append(dst, b...)
	}
	return dst
}

// writeRows writes rows in slices so that a file rolls over near the target size.
// cols are the rows' columns in the table schema's order (partition columns included), for
// the files' tags.
func (w *DataWriter) writeRows(ctx context.Context, key string, f *openFile, cols, data []*pq.Column, rows []int) error {
	n := len(rows)
	if rows == nil {
		n = data[0].Len
	}
	const step = pq.ShredChunk
	for lo := 0; lo < n; lo += step {
		hi := min(lo+step, n)
		var idx []int
		if rows != nil {
			idx = rows[lo:hi]
		} else if lo != 0 || hi != n {
			idx = f.idx[:0]
			for i := lo; i < hi; i++ {
				idx = append(idx, i)
			}
			f.idx = idx
		}
		if err := f.enc.Write(data, idx); err != nil {
			return err
		}
		switch {
		case f.hint != nil:
			f.tag.rows += int64(hi - lo)
			f.hint.scan(w.tagger, cols, idx, hi-lo)
		case w.tagger != nil:
			f.tag.add(w.tagger, cols, idx, hi-lo)
		}
		if f.enc.Size() >= w.opts.TargetFileSize {
			if f.hint != nil {
				if err := f.hint.split(w.tagger, &f.tag, w.schema, cols, rows, hi, n); err != nil {
					return err
				}
				f.hint = nil
			}
			if err := w.finish(ctx, key); err != nil {
				return err
			}
			var err error
			if f, err = w.file(ctx, key, f.values); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *DataWriter) file(ctx context.Context, key string, values map[string]*string) (*openFile, error) {
	if f, ok := w.open[key]; ok {
		return f, nil
	}
	enc, err := pq.NewFileEncoder(w.dataSchema, w.opts)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(w.partFields))
	for i := range w.partFields {
		names[i] = w.partFields[i].PhysicalName()
	}
	f := &openFile{enc: enc, values: values, dir: pq.PartitionDir(names, values)}
	w.open[key] = f
	w.order = append(w.order, key)
	return f, nil
}

// finish closes the open file of a partition and uploads it.
func (w *DataWriter) finish(ctx context.Context, key string) error {
	f := w.open[key]
	delete(w.open, key)
	if f.enc.Rows == 0 {
		return nil
	}
	data, stats, err := f.enc.Finish()
	if err != nil {
		return err
	}
	path := w.dir + f.dir + w.name + "-00000-" + uuid.NewString() + "-c000." + f.enc.Ext + ".parquet"
	if err := w.bucket.Put(ctx, path, data.Reader(), data.Len()); err != nil {
		return fmt.Errorf("table: write data file %s: %w", path, err)
	}
	values := f.values
	if values == nil {
		values = map[string]*string{}
	}
	add := &txlog.Add{Path: path, PartitionValues: values, Size: data.Len(),
		ModificationTime: w.now().UnixMilli(), DataChange: w.dataChange, Stats: stats}
	if w.tagger != nil {
		if v := f.tag.value(w.tagger); v != "" {
			add.Tags = map[string]string{RowTagKey: v}
		}
	}
	w.adds = append(w.adds, add)
	w.rows += f.enc.Rows
	w.bytes += data.Len()
	return nil
}

// Close finishes every open file and returns the add actions, in the order written.
func (w *DataWriter) Close(ctx context.Context) ([]*txlog.Add, error) {
	for _, key := range w.order {
		if _, ok := w.open[key]; !ok {
			continue
		}
		if err := w.finish(ctx, key); err != nil {
			return nil, err
		}
	}
	w.order = nil
	return w.adds, nil
}

// Rows and Bytes report what Close wrote.
func (w *DataWriter) Rows() int64 { return w.rows }

// Bytes is the total size of the files written.
func (w *DataWriter) Bytes() int64 { return w.bytes }

// statsColumns reads delta.dataSkippingNumIndexedCols.
func statsColumns(conf map[string]string) int {
	if v, ok := conf["delta.dataSkippingNumIndexedCols"]; ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			if n < 0 {
				return -1
			}
			if n > 0 {
				return n
			}
		}
	}
	return pq.DefaultStatsColumns
}

// Package merge owns MERGE INTO for any Delta table: a source of rows is joined with the
// target on equality keys, matched target rows are updated or deleted and unmatched source
// rows are inserted, in one atomic commit. It rewrites only the target files that hold a
// matched row (copy-on-write, through table.Rewrite with the table's write options), and
// reads only the files whose partition values or min/max stats can hold a source key.
//
// Crash guarantees: new files are written under unique names before the single commit that
// swaps them in, so a crash leaves the previous version intact plus unreferenced files that
// vacuum removes. With a Txn the whole merge is idempotent: a rerun after a crash, or after a
// commit whose outcome was unknown, is skipped when the table already records the txn.
//
// Isolation: the commit records the files and key ranges it read. Under Serializable (the
// default, as open-source Delta) a concurrent commit that removed a file we read, or added a
// file whose partition could hold one of our keys, makes the merge fail with txlog.ErrConflict
// (on an unpartitioned table any concurrent add conflicts). Under WriteSerializable a
// concurrent blind append does not conflict: the appended rows survive unmerged, as though the
// append had committed after the merge (so an appended row with a source key stays next to
// the merged one, exactly as in Delta).
package merge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrMultipleSourceRows is Delta's error when several source rows match one target row.
var ErrMultipleSourceRows = errors.New("merge: cannot perform MERGE as multiple source rows matched and attempted to modify the same target row in the Delta table in possibly conflicting ways")

// ErrBadMerge reports a merge specification that does not fit the tables.
var ErrBadMerge = errors.New("merge: bad MERGE specification")

// Row is one row of the target or the source, read by column name.
type Row struct {
	batch *pq.Batch
	i     int
}

// Get returns the named top-level column as Column.Value does (nil for null); nil too when
// the column does not exist.
func (r Row) Get(name string) any {
	c := r.batch.Column(name)
	if c == nil {
		return nil
	}
	return c.Value(r.i)
}

// Valid reports whether the row exists (false for the target side of an insert).
func (r Row) Valid() bool { return r.batch != nil }

// Value computes a column value from the target row and the source row.
type Value func(target, source Row) any

// FromSource copies a source column.
func FromSource(col string) Value { return func(_, s Row) any { return s.Get(col) } }

// Const is a constant value.
func Const(v any) Value { return func(_, _ Row) any { return v } }

// Matched is a WHEN MATCHED [AND Cond] THEN UPDATE SET ... | DELETE clause.
type Matched struct {
	// Desc is the clause's condition as text, for commitInfo ("" when unconditional).
	Desc string
	// Cond limits the clause (nil: always).
	Cond func(target, source Row) bool
	// Delete deletes the target row; otherwise Set updates it.
	Delete bool
	// Set assigns columns; unassigned columns keep the target value. A nil Set with
	// Delete false updates every column from the source column of the same name
	// (UPDATE SET *).
	Set map[string]Value
}

// NotMatched is a WHEN NOT MATCHED [AND Cond] THEN INSERT clause.
type NotMatched struct {
	Desc string
	Cond func(source Row) bool
	// Values gives the inserted columns; the others are null. Nil inserts the source
	// columns of the same names (INSERT *).
	Values map[string]Value
}

// Spec is a MERGE INTO target USING source ON target.k = source.k [...] statement.
type Spec struct {
	// Source holds the source rows.
	Source []*pq.Batch
	// Keys are the join columns, with the same name on both sides; rows whose key has a
	// null never match (SQL equality).
	Keys []string
	// TargetFilter optionally narrows the target rows considered (an extra ON condition on
	// the target only, e.g. a window range); rows outside it never match.
	TargetFilter sqlexpr.Expr
	// Matched and NotMatched clauses apply in order; the first whose condition holds wins.
	Matched    []Matched
	NotMatched []NotMatched
	// Txn makes the merge idempotent.
	Txn *table.AppTxn
	// Isolation is the commit's isolation level (default txlog's, Serializable).
	Isolation txlog.IsolationLevel
}

// Result reports what a merge did; the counters are also in commitInfo.operationMetrics.
type Result struct {
	Version      int64
	Skipped      bool
	SourceRows   int64
	Inserted     int64
	Updated      int64
	Deleted      int64
	Copied       int64
	FilesRead    int
	FilesAdded   int
	FilesRemoved int
	BytesAdded   int64
	BytesRemoved int64
}

// keyOf renders the join key of row i, or false when a key column is null.
func keyOf(dst []byte, cols []*pq.Column, i int) ([]byte, bool) {
	for _, c := range cols {
		if c.IsNull(i) {
			return dst, false
		}
		dst = pq.AppendJSONValue(dst, c, i)
		dst = append(dst, 0)
	}
	return dst, true
}

func keyColumns(b *pq.Batch, keys []string, side string) ([]*pq.Column, error) {
	out := make([]*pq.Column, len(keys))
	for k, name := range keys {
		c := b.Column(name)
		if c == nil {
			return nil, fmt.Errorf("%w: key column %s is missing from the %s", ErrBadMerge, name, side)
		}
		out[k] = c
	}
	return out, nil
}

type sourceRef struct {
	batch   int
	row     int
	matched bool
	count   int
}

type sourceRow struct {
	batch, row int
	key        string
	hasKey     bool
}

// Run executes the merge against t.
func Run(ctx context.Context, t *table.Table, spec Spec) (Result, error) {
	if len(spec.Keys) == 0 {
		return Result{}, fmt.Errorf("%w: no join keys", ErrBadMerge)
	}
	snap, err := t.Log().Snapshot(ctx)
	if err != nil {
		return Result{}, err
	}
	if spec.Txn != nil {
		if v, ok := snap.TxnVersion(spec.Txn.AppID); ok && v >= spec.Txn.Version {
			return Result{Version: snap.Version(), Skipped: true}, nil
		}
	}
	schema, err := snap.Schema()
	if err != nil {
		return Result{}, err
	}
	if _, err := table.CheckWritable(snap, schema, txlog.WriteChange); err != nil {
		return Result{}, err
	}
	for _, k := range spec.Keys {
		if schema.Field(k) == nil {
			return Result{}, fmt.Errorf("%w: key column %s is not in the target", ErrBadMerge, k)
		}
	}
	res := Result{Version: -1}

	index, order, err := indexSource(spec)
	if err != nil {
		return res, err
	}
	res.SourceRows = int64(len(order))

	// Which target files can hold a source key.
	pruning, err := keyRanges(schema, spec.Keys, spec.Source)
	if err != nil {
		return res, err
	}
	var filter sqlexpr.Expr = pruning
	if spec.TargetFilter != nil {
		filter = sqlexpr.And(pruning, spec.TargetFilter)
	}
	pred, err := sqlexpr.Bind(filter, schema, snap.PartitionColumns())
	if err != nil {
		return res, err
	}
	var targetOnly *sqlexpr.Predicate
	if spec.TargetFilter != nil {
		if targetOnly, err = sqlexpr.Bind(spec.TargetFilter, schema, snap.PartitionColumns()); err != nil {
			return res, err
		}
	}
	var candidates []*txlog.Add
	if len(index) > 0 {
		for _, a := range snap.Files() {
			if pred.MayMatch(a) {
				candidates = append(candidates, a)
			}
		}
	}
	// With the table's change data feed on, the merge says what it did as Spark does: a
	// pre- and post-image for each updated row, a delete for each deleted one, an insert for
	// each inserted one (nil: the feed is off).
	cw, err := t.NewChangeWriter(snap)
	if err != nil {
		return res, err
	}
	rw, err := t.Rewrite(ctx, table.Rewrite{Snapshot: snap, Read: pred, Candidates: candidates, Txn: spec.Txn, Isolation: spec.Isolation, Changes: cw,
		File: func(ctx context.Context, a *txlog.Add, read func() ([]*pq.Batch, error)) (bool, []*pq.Batch, error) {
			batches, err := read()
			if err != nil {
				return false, nil, err
			}
			out, touched, err := applyMatched(ctx, cw, spec, schema, batches, index, targetOnly, &res)
			if err != nil || !touched {
				return false, nil, err
			}
			return true, []*pq.Batch{out}, nil
		},
		Insert: func() ([]*pq.Batch, error) { return inserts(ctx, cw, spec, schema, order, index, &res) },
		Operation: func(rw table.RewriteResult) txlog.Operation {
			var added int64
			for _, a := range rw.Added {
				added += a.Size
			}
			return txlog.Operation{Name: "MERGE", Parameters: parameters(spec), Metrics: map[string]int64{
				"numSourceRows": res.SourceRows, "numTargetRowsInserted": res.Inserted, "numTargetRowsUpdated": res.Updated,
				"numTargetRowsDeleted": res.Deleted, "numTargetRowsMatchedUpdated": res.Updated, "numTargetRowsMatchedDeleted": res.Deleted,
				"numTargetRowsNotMatchedBySourceUpdated": 0, "numTargetRowsNotMatchedBySourceDeleted": 0,
				"numTargetRowsCopied": res.Copied, "numOutputRows": res.Inserted + res.Updated + res.Copied,
				"numTargetFilesAdded": int64(len(rw.Added)), "numTargetFilesRemoved": int64(len(rw.Removed)), "numTargetChangeFilesAdded": int64(len(rw.ChangeFiles)),
				"numTargetBytesAdded": added, "numTargetBytesRemoved": rw.BytesRemoved,
			}}
		},
	})
	res.FilesRead, res.FilesAdded, res.FilesRemoved, res.BytesRemoved = rw.FilesRead, len(rw.Added), len(rw.Removed), rw.BytesRemoved
	for _, a := range rw.Added {
		res.BytesAdded += a.Size
	}
	if err != nil {
		return res, err
	}
	res.Version = rw.Version
	return res, nil
}

// indexSource indexes the source by key: the first row of each key, and how many rows share
// it; order is every source row, in order, for the inserts.
func indexSource(spec Spec) (map[string]*sourceRef, []sourceRow, error) {
	index := map[string]*sourceRef{}
	var keyBuf []byte
	var order []sourceRow
	for bi, b := range spec.Source {
		cols, err := keyColumns(b, spec.Keys, "source")
		if err != nil {
			return nil, nil, err
		}
		for i := 0; i < b.Len(); i++ {
			var ok bool
			keyBuf, ok = keyOf(keyBuf[:0], cols, i)
			if !ok {
				order = append(order, sourceRow{batch: bi, row: i})
				continue
			}
			key := string(keyBuf)
			order = append(order, sourceRow{batch: bi, row: i, key: key, hasKey: true})
			if ref, dup := index[key]; dup {
				ref.count++
				continue
			}
			index[key] = &sourceRef{batch: bi, row: i, count: 1}
		}
	}
	return index, order, nil
}

// inserts renders the source rows that matched no target row, in source order, through the
// first not-matched clause whose condition holds.
func inserts(ctx context.Context, cw *table.ChangeWriter, spec Spec, schema *txlog.StructType, order []sourceRow, index map[string]*sourceRef, res *Result) ([]*pq.Batch, error) {
	if len(spec.NotMatched) == 0 || len(order) == 0 {
		return nil, nil
	}
	ins, err := pq.NewBatch(schema)
	if err != nil {
		return nil, err
	}
	for _, sr := range order {
		if sr.hasKey && index[sr.key].matched {
			continue
		}
		src := Row{spec.Source[sr.batch], sr.row}
		for _, cl := range spec.NotMatched {
			if cl.Cond != nil && !cl.Cond(src) {
				continue
			}
			if err := insertRow(ins, schema, cl, src); err != nil {
				return nil, err
			}
			if cw != nil {
				if err := cw.WriteRow(ctx, table.ChangeInsert, ins, ins.Len()-1); err != nil {
					return nil, err
				}
			}
			res.Inserted++
			break
		}
	}
	return []*pq.Batch{ins}, nil
}

// applyMatched runs the matched clauses over one target file's rows and returns the rows to
// write back, and whether any row matched (otherwise the file stays as it is). cw, when set,
// takes the change rows of the rows it updates and deletes.
func applyMatched(ctx context.Context, cw *table.ChangeWriter, spec Spec, schema *txlog.StructType, batches []*pq.Batch, index map[string]*sourceRef, targetOnly *sqlexpr.Predicate, res *Result) (*pq.Batch, bool, error) {
	out, err := pq.NewBatch(schema)
	if err != nil {
		return nil, false, err
	}
	touched := false
	var copied int64
	var keyBuf []byte
	for _, b := range batches {
		cols, err := keyColumns(b, spec.Keys, "target")
		if err != nil {
			return nil, false, err
		}
		var inScope []bool
		if targetOnly != nil {
			inScope = targetOnly.Eval(b)
		}
		for i := 0; i < b.Len(); i++ {
			var ref *sourceRef
			if inScope == nil || inScope[i] {
				var ok bool
				if keyBuf, ok = keyOf(keyBuf[:0], cols, i); ok {
					ref = index[string(keyBuf)]
				}
			}
			if ref == nil {
				out.AppendRow(b, i)
				copied++
				continue
			}
			ref.matched = true
			touched = true
			// Delta allows several source rows per target row only for an unconditional
			// delete, which cannot conflict.
			onlyDelete := len(spec.Matched) == 1 && spec.Matched[0].Delete && spec.Matched[0].Cond == nil
			if ref.count > 1 && len(spec.Matched) > 0 && !onlyDelete {
				return nil, false, ErrMultipleSourceRows
			}
			tgt, src := Row{b, i}, Row{spec.Source[ref.batch], ref.row}
			applied := false
			for _, cl := range spec.Matched {
				if cl.Cond != nil && !cl.Cond(tgt, src) {
					continue
				}
				applied = true
				if cl.Delete {
					res.Deleted++
					if cw != nil {
						if err := cw.WriteRow(ctx, table.ChangeDelete, b, i); err != nil {
							return nil, false, err
						}
					}
					break
				}
				if err := updateRow(out, schema, cl, tgt, src); err != nil {
					return nil, false, err
				}
				if cw != nil {
					if err := cw.WriteRow(ctx, table.ChangePreimage, b, i); err != nil {
						return nil, false, err
					}
					if err := cw.WriteRow(ctx, table.ChangePostimage, out, out.Len()-1); err != nil {
						return nil, false, err
					}
				}
				res.Updated++
				break
			}
			if !applied {
				out.AppendRow(b, i)
				copied++
			}
		}
	}
	if touched {
		res.Copied += copied
	}
	return out, touched, nil
}

func updateRow(out *pq.Batch, schema *txlog.StructType, cl Matched, tgt, src Row) error {
	for k, f := range schema.Fields {
		var v any
		if cl.Set == nil {
			if src.batch.Column(f.Name) == nil {
				return fmt.Errorf("%w: UPDATE SET *: column %s is missing from the source", ErrBadMerge, f.Name)
			}
			v = src.Get(f.Name)
		} else if fn, ok := cl.Set[f.Name]; ok {
			v = fn(tgt, src)
		} else {
			v = tgt.Get(f.Name)
		}
		if err := out.Columns[k].AppendValue(v); err != nil {
			return fmt.Errorf("merge: update column %s: %w", f.Name, err)
		}
	}
	return checkSet(schema, cl.Set)
}

func insertRow(out *pq.Batch, schema *txlog.StructType, cl NotMatched, src Row) error {
	for name := range cl.Values {
		if schema.Field(name) == nil {
			return fmt.Errorf("%w: INSERT column %s is not in the target", ErrBadMerge, name)
		}
	}
	for k, f := range schema.Fields {
		var v any
		if cl.Values == nil {
			v = src.Get(f.Name)
		} else if fn, ok := cl.Values[f.Name]; ok {
			v = fn(Row{}, src)
		}
		if err := out.Columns[k].AppendValue(v); err != nil {
			return fmt.Errorf("merge: insert column %s: %w", f.Name, err)
		}
	}
	return nil
}

func checkSet(schema *txlog.StructType, set map[string]Value) error {
	for name := range set {
		if schema.Field(name) == nil {
			return fmt.Errorf("%w: SET column %s is not in the target", ErrBadMerge, name)
		}
	}
	return nil
}

// keyRanges builds the pruning predicate: every key column (or, for struct keys, every
// primitive field) between the source's min and max. With no source key it is false.
func keyRanges(schema *txlog.StructType, keys []string, source []*pq.Batch) (sqlexpr.Expr, error) {
	var conj []sqlexpr.Expr
	for _, k := range keys {
		f := schema.Field(k)
		paths := leafPaths(k, f.Type)
		for _, p := range paths {
			lo, hi, any, err := minMax(source, p)
			if err != nil {
				return nil, err
			}
			if !any {
				return sqlexpr.Or(), nil // no source key can match
			}
			conj = append(conj, sqlexpr.Ge(p, lo), sqlexpr.Le(p, hi))
		}
	}
	return sqlexpr.And(conj...), nil
}

func leafPaths(prefix string, t txlog.DataType) []string {
	switch v := t.(type) {
	case *txlog.StructType:
		var out []string
		for _, f := range v.Fields {
			out = append(out, leafPaths(prefix+"."+f.Name, f.Type)...)
		}
		return out
	case txlog.ArrayType, txlog.MapType:
		return nil
	case txlog.PrimitiveType:
		if v.Name == txlog.TypeBinary || v.Name == txlog.TypeBoolean || v.Name == txlog.TypeVoid {
			return nil
		}
	}
	return []string{prefix}
}

// minMax finds the smallest and largest non-null source value of a (possibly nested) column.
func minMax(source []*pq.Batch, path string) (lo, hi any, found bool, err error) {
	parts := strings.Split(path, ".")
	for _, b := range source {
		col := b.Column(parts[0])
		if col == nil {
			return nil, nil, false, fmt.Errorf("%w: key %s is missing from the source", ErrBadMerge, path)
		}
		for _, part := range parts[1:] {
			st, ok := col.Type.(*txlog.StructType)
			if !ok || st.FieldIndex(part) < 0 {
				return nil, nil, false, fmt.Errorf("%w: key %s is missing from the source", ErrBadMerge, path)
			}
			col = col.Children[st.FieldIndex(part)]
		}
		for i := 0; i < col.Len; i++ {
			v := col.Value(i)
			if v == nil {
				continue
			}
			if !found {
				lo, hi, found = v, v, true
				continue
			}
			c1, ok1 := pq.CompareValues(v, lo)
			c2, ok2 := pq.CompareValues(v, hi)
			if !ok1 || !ok2 {
				return nil, nil, false, fmt.Errorf("%w: key %s has values of different types", ErrBadMerge, path)
			}
			if c1 < 0 {
				lo = v
			}
			if c2 > 0 {
				hi = v
			}
		}
	}
	return lo, hi, found, nil
}

func parameters(spec Spec) map[string]any {
	on := make([]string, len(spec.Keys))
	for i, k := range spec.Keys {
		on[i] = fmt.Sprintf("(target.%s = source.%s)", k, k)
	}
	if spec.TargetFilter != nil {
		on = append(on, spec.TargetFilter.String())
	}
	type clause struct {
		ActionType string `json:"actionType"`
		Predicate  string `json:"predicate,omitempty"`
	}
	var matched, notMatched []clause
	for _, m := range spec.Matched {
		a := "update"
		if m.Delete {
			a = "delete"
		}
		matched = append(matched, clause{a, m.Desc})
	}
	for _, n := range spec.NotMatched {
		notMatched = append(notMatched, clause{"insert", n.Desc})
	}
	js := func(v any) string {
		b, _ := json.Marshal(v)
		if string(b) == "null" {
			return "[]"
		}
		return string(b)
	}
	return map[string]any{"predicate": js(on), "matchedPredicates": js(matched),
		"notMatchedPredicates": js(notMatched), "notMatchedBySourcePredicates": "[]"}
}

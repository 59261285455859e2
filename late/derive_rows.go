package late

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// derivedGroup is one (downstream window, keys) row being folded from upstream rows.
type derivedGroup struct {
	win  int64
	row  int // its keys' row in the keys batch
	vals []gold.AggValue
	late int64
}

// recompute folds the upstream rows of the windows wins (sorted) into the derived table's
// rows, in window then first-seen key order; n counts the upstream rows read.
func (dp *derivePlan) recompute(ctx context.Context, up *table.Table, snap *txlog.Snapshot, wins []int64) (*pq.Batch, int64, error) {
	out, err := pq.NewBatch(dp.schema)
	if err != nil || len(wins) == 0 {
		return out, 0, err
	}
	inWins := make(map[int64]bool, len(wins))
	for _, w := range wins {
		inWins[w] = true
	}
	cols := append([]string{gold.ColWindow}, dp.upKeys...)
	for i, c := range dp.upAggs {
		cols = append(cols, c...)
		if dp.upExact[i] != "" {
			cols = append(cols, dp.upExact[i])
		}
	}
	cols = append(cols, gold.ColLateRows)
	fs, err := up.FileScan(snap, compactCols(cols), dp.windowRange(wins))
	if err != nil {
		return nil, 0, fmt.Errorf("upstream %s: %w", dp.d.Upstream, err)
	}
	keySchema := &txlog.StructType{Fields: dp.schema.Fields[1 : 1+len(dp.upKeys)]}
	keys, err := pq.NewBatch(keySchema)
	if err != nil {
		return nil, 0, err
	}
	groups := map[string]*derivedGroup{}
	var order []*derivedGroup
	var n int64
	var enc []byte
	kc := make([]*pq.Column, len(dp.upKeys))
	for b, err := range fs.Read(ctx, fs.Files(snap.Files())) {
		if err != nil {
			return nil, 0, fmt.Errorf("upstream %s: %w", dp.d.Upstream, err)
		}
		w := b.Column(gold.ColWindow)
		for k, name := range dp.upKeys {
			kc[k] = b.Column(name)
		}
		for i := range b.Len() {
			if w.IsNull(i) || w.Children[0].IsNull(i) {
				continue
			}
			win := dp.window(w.Children[0].Int64[i])
			if !inWins[win] {
				continue
			}
			n++
			enc = pq.EncodeRow(append(enc[:0], fmt.Sprint(win)...), kc, i)
			g := groups[string(enc)]
			if g == nil {
				g = &derivedGroup{win: win, row: keys.Len(), vals: make([]gold.AggValue, len(dp.specs))}
				for k, c := range kc {
					keys.Columns[k].AppendFrom(c, i)
				}
				for si := range dp.specs {
					g.vals[si].Fn, g.vals[si].Int = dp.specs[si].Fn, dp.specs[si].Int
				}
				groups[string(enc)] = g
				order = append(order, g)
			}
			if err := dp.fold(g, b, i); err != nil {
				return nil, 0, err
			}
		}
	}
	slices.SortStableFunc(order, func(x, y *derivedGroup) int { return int(sign(x.win - y.win)) })
	for _, g := range order {
		if err := dp.appendRow(out, keys, g); err != nil {
			return nil, 0, err
		}
	}
	return out, n, nil
}

func sign(x int64) int64 {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// compactCols drops repeated names (a key that is also an aggregate's input).
func compactCols(cols []string) []string {
	var out []string
	for _, c := range cols {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// fold merges upstream row i of b into g: each aggregate read back from the gold row
// contract (a count's value, a sum/min/max that is not null, an avg's _sum and _count, a
// float sum's exact column), then gold's own merge.
func (dp *derivePlan) fold(g *derivedGroup, b *pq.Batch, i int) error {
	for si := range dp.specs {
		s := &dp.specs[si]
		v := gold.AggValue{Fn: s.Fn, Int: s.Int}
		if s.Fn == gold.Avg {
			readContractAgg(&v, nil, b.Column(dp.upAggs[si][1]), b.Column(dp.upAggs[si][2]), i)
		} else {
			readContractAgg(&v, b.Column(dp.upAggs[si][0]), nil, nil, i)
		}
		if s.ExactSum() && v.N > 0 {
			var exact *pq.Column
			if x := dp.upExact[si]; x != "" {
				exact = b.Column(x)
			}
			if err := readExactSum(&v, exact, i); err != nil {
				return fmt.Errorf("upstream %s column %s: %w", dp.d.Upstream, gold.ExactColumn(dp.upAggs[si][0]), err)
			}
		}
		if err := g.vals[si].Merge(&v); err != nil {
			return err
		}
	}
	g.late += intAt(b.Column(gold.ColLateRows), i)
	return nil
}

// appendRow writes g as a row of the derived table, in the gold row contract.
func (dp *derivePlan) appendRow(out, keys *pq.Batch, g *derivedGroup) error {
	w := out.Columns[0]
	w.AppendStruct()
	w.Children[0].AppendInt64(g.win)
	w.Children[1].AppendInt64(g.win + dp.size)
	for k := range dp.upKeys {
		out.Columns[1+k].AppendFrom(keys.Columns[k], g.row)
	}
	var scratch []byte
	for si := range dp.specs {
		var err error
		if _, scratch, err = gold.AppendAggregate(out.Columns[dp.aggCol[si]:], &dp.specs[si], &g.vals[si], scratch); err != nil {
			return fmt.Errorf("derived table %s: %w", dp.d.Name, err)
		}
		if x := dp.exact[si]; x >= 0 {
			scratch = gold.AppendExact(out.Columns[x], &g.vals[si], scratch)
		}
	}
	out.Column(gold.ColLateRows).AppendInt64(g.late)
	return nil
}

// rewrite replaces the derived table's rows of the windows wins by rows, in one commit that
// records txns (the two positions), even when no row changed. With the table's change data
// feed on it describes the change itself (changeRows): a window and keys it recomputes is an
// update pair, as gold's merge-late writes, not a delete and an insert. whole replaces every
// row of the table (a refresh).
func (dp *derivePlan) rewrite(ctx context.Context, t *table.Table, snap *txlog.Snapshot, wins []int64, whole bool,
	rows *pq.Batch, txns []table.AppTxn) (table.RewriteResult, error) {
	var cands []*txlog.Add
	inWins := make(map[int64]bool, len(wins))
	for _, w := range wins {
		inWins[w] = true
	}
	if whole {
		cands = snap.Files()
	} else if len(wins) > 0 {
		schema, err := snap.Schema()
		if err != nil {
			return table.RewriteResult{}, err
		}
		pred, err := sqlexpr.Bind(dp.windowRange(wins), schema, snap.PartitionColumns())
		if err != nil {
			return table.RewriteResult{}, fmt.Errorf("derived table %s: %w", dp.d.Name, err)
		}
		for _, f := range snap.Files() {
			if pred.MayMatch(f) {
				cands = append(cands, f)
			}
		}
	}
	cw, err := t.NewChangeWriter(snap)
	if err != nil {
		return table.RewriteResult{}, fmt.Errorf("derived table %s: %w", dp.d.Name, err)
	}
	var dropped []*pq.Batch // the rows replaced, for the change rows
	file := func(_ context.Context, _ *txlog.Add, read func() ([]*pq.Batch, error)) (bool, []*pq.Batch, error) {
		old, err := read()
		if err != nil {
			return false, nil, err
		}
		var kept []*pq.Batch
		replace := false
		for _, b := range old {
			w := b.Column(gold.ColWindow)
			keep := make([]bool, b.Len())
			for i := range keep {
				keep[i] = !whole && (w.IsNull(i) || w.Children[0].IsNull(i) || !inWins[w.Children[0].Int64[i]])
				replace = replace || !keep[i]
			}
			kept = append(kept, b.Filter(keep))
			if cw != nil {
				drop := make([]bool, len(keep))
				for i := range keep {
					drop[i] = !keep[i]
				}
				dropped = append(dropped, b.Filter(drop))
			}
		}
		return replace, kept, nil
	}
	var insert []*pq.Batch
	if rows.Len() > 0 {
		insert = []*pq.Batch{rows}
	}
	res, err := t.Rewrite(ctx, table.Rewrite{Snapshot: snap, Candidates: cands, File: file,
		Insert: func() ([]*pq.Batch, error) {
			if cw != nil {
				if err := dp.changeRows(ctx, cw, dropped, rows); err != nil {
					return nil, err
				}
			}
			return insert, nil
		},
		Changes:   cw,
		ExtraTxns: txns, KeepEmpty: true,
		Operation: func(res table.RewriteResult) txlog.Operation {
			return txlog.Operation{Name: "MERGE", Parameters: map[string]any{"predicate": "derived from " + dp.d.Upstream},
				Metrics: map[string]int64{"numTargetFilesAdded": int64(len(res.Added)), "numTargetFilesRemoved": int64(len(res.Removed)),
					"numOutputRows": res.RowsWritten}}
		}})
	if err != nil {
		return res, fmt.Errorf("derived table %s: %w", dp.d.Name, err)
	}
	return res, nil
}

// changeRows writes the change rows of replacing the rows old by rows: a row whose window and
// keys are in both is an update_preimage/update_postimage pair when any column differs and
// nothing when none does (the row was only rewritten); a row only in old is a delete, one only
// in rows an insert. Both are in the table's schema (sameDefinition).
func (dp *derivePlan) changeRows(ctx context.Context, cw *table.ChangeWriter, old []*pq.Batch, rows *pq.Batch) error {
	cols := func(b *pq.Batch, names []string) []*pq.Column {
		out := make([]*pq.Column, len(names))
		for k, n := range names {
			out[k] = b.Column(n)
		}
		return out
	}
	keyNames := append([]string{gold.ColWindow}, dp.upKeys...)
	var all []string
	for _, f := range dp.schema.Fields {
		all = append(all, f.Name)
	}
	type ref struct{ b, i int }
	byKey := map[string][]ref{}
	for bi, b := range old {
		kc := cols(b, keyNames)
		for i := range b.Len() {
			k := string(pq.EncodeRow(nil, kc, i))
			byKey[k] = append(byKey[k], ref{bi, i})
		}
	}
	used := map[ref]bool{}
	kc, ac := cols(rows, keyNames), cols(rows, all)
	for i := range rows.Len() {
		k := string(pq.EncodeRow(nil, kc, i))
		refs := byKey[k]
		if len(refs) == 0 {
			if err := cw.WriteRow(ctx, table.ChangeInsert, rows, i); err != nil {
				return err
			}
			continue
		}
		r := refs[0]
		byKey[k], used[r] = refs[1:], true
		if bytes.Equal(pq.EncodeRow(nil, cols(old[r.b], all), r.i), pq.EncodeRow(nil, ac, i)) {
			continue
		}
		if err := cw.WriteRow(ctx, table.ChangePreimage, old[r.b], r.i); err != nil {
			return err
		}
		if err := cw.WriteRow(ctx, table.ChangePostimage, rows, i); err != nil {
			return err
		}
	}
	for bi, b := range old {
		for i := range b.Len() {
			if !used[ref{bi, i}] {
				if err := cw.WriteRow(ctx, table.ChangeDelete, b, i); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

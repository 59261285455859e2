package gold

import (
	"cmp"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// goldSchema is the gold-row contract for one string key and aggs over a double column.
func goldSchema(aggs []AggSpec) *txlog.StructType {
	dbl := txlog.PrimitiveType{Name: txlog.TypeDouble}
	fields := []txlog.StructField{WindowField(), {Name: "k", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true}}
	named := slices.Clone(aggs)
	for i, sp := range aggs {
		t := txlog.DataType(dbl)
		if sp.Int {
			t = txlog.PrimitiveType{Name: txlog.TypeLong}
		}
		fields = append(fields, AggregateFields(sp.Fn, "a"+strconv.Itoa(i), t, t)...)
		named[i].Name = "a" + strconv.Itoa(i)
	}
	fields = append(fields, LateRowsField())
	return &txlog.StructType{Fields: append(fields, ExactFields(named)...)}
}

// rowsBatch renders Result.Rows as gold columns the way the stream did before Input.Out: a
// key decoded into parts, each aggregate through AppendAggregate. It is the oracle.
func rowsBatch(t testing.TB, schema *txlog.StructType, aggs []AggSpec, rows []OutRow) *pq.Batch {
	gb, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	appendOracleRows(t, gb, aggs, rows, 1)
	return gb
}

func batchValues(b *pq.Batch) [][]any {
	var out [][]any
	for i := range b.Len() {
		var row []any
		for _, c := range b.Columns {
			row = append(row, c.Value(i))
		}
		out = append(out, row)
	}
	return out
}

// TestOutMatchesRows streams the same random batches through two operators, one emitting
// Result.Rows and one writing gold columns straight from its state (Input.Out): the columns
// must hold exactly the rows, in the same order, for every mode and window kind.
func TestOutMatchesRows(t *testing.T) {
	aggs := []AggSpec{{Fn: Count, Column: -1}, {Fn: Sum, Column: 0}, {Fn: Avg, Column: 0}, {Fn: Min, Column: 0},
		{Fn: ApproxCountDistinct, Column: 0}, {Fn: ApproxPercentile, Column: 0, Percentiles: []float64{0.5}},
		{Fn: Max, Column: 0}, {Fn: Sum, Column: 1, Int: true}, {Fn: Max, Column: 1, Int: true},
		{Fn: Sum, Column: 2}, {Fn: Max, Column: 2},
		{Fn: ApproxPercentile, Column: 2, Percentiles: []float64{0.5, 0.9}}}
	schema := goldSchema(aggs)
	tumbling, _ := Tumbling(5 * minute)
	sliding, _ := NewWindowSpec(10*minute, 5*minute, 0)
	for _, tc := range []struct {
		name string
		cfg  AggConfig
	}{
		{"append-tumbling", AggConfig{Window: tumbling, Mode: Append}},
		{"append-sliding", AggConfig{Window: sliding, Mode: Append}},
		{"update-sliding", AggConfig{Window: sliding, Mode: Update}},
		{"complete-tumbling", AggConfig{Window: tumbling, Mode: Complete}},
		{"append-session", AggConfig{Session: &SessionSpec{Gap: 2 * minute}, Mode: Append}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Aggs, tc.cfg.NumKeys = aggs, 1
			withRows, withOut := mustAgg(t, tc.cfg), mustAgg(t, tc.cfg)
			tr, _ := NewWatermarkTracker(PolicyMin, []int64{5 * 60 * 1000}, 0)
			rng := rand.New(rand.NewPCG(8, 9))
			emitted := 0
			for b := range 30 {
				// The long column is null in a third of the rows; keys k0-k2 have no second
				// double (their sums of it are null, their exact sums too, and their quantiles
				// a null list, as Spark's percentile_approx of no values).
				in := &Input{Columns: []Column{{Float64: []float64{}}, {Int64: []int64{}}, {Float64: []float64{}}}}
				for range 200 {
					in.EventTime = append(in.EventTime, int64(b)*minute+rng.Int64N(3*minute)-rng.Int64N(10*minute))
					k := rng.IntN(40)
					in.Keys.Append(pq.AppendKeyString(nil, "k"+strconv.Itoa(k)))
					in.Columns[0].Float64 = append(in.Columns[0].Float64, float64(rng.IntN(50)))
					in.Columns[2].Float64 = append(in.Columns[2].Float64, float64(rng.IntN(50))-0.25)
					in.Columns[2].Valid = append(in.Columns[2].Valid, k >= 3)
					in.Columns[1].Int64 = append(in.Columns[1].Int64, rng.Int64N(1000)-500)
					in.Columns[1].Valid = append(in.Columns[1].Valid, rng.IntN(3) > 0)
				}
				late, evict := tr.BatchWatermarks()
				tr.Observe(0, in.EventTime, nil)
				res, err := withRows.ProcessBatch(in, late, evict)
				if err != nil {
					t.Fatal(err)
				}
				// The order contract, checked on its own: window start, end, then key bytes.
				if !slices.IsSortedFunc(res.Rows, func(x, y OutRow) int {
					if x.Window.Start != y.Window.Start {
						return cmp.Compare(x.Window.Start, y.Window.Start)
					}
					if x.Window.End != y.Window.End {
						return cmp.Compare(x.Window.End, y.Window.End)
					}
					return strings.Compare(x.Key, y.Key)
				}) {
					t.Fatalf("batch %d: rows out of order", b)
				}
				want := batchValues(rowsBatch(t, schema, aggs, res.Rows))
				wantLate := append([]int32(nil), res.LateRows...)
				gb, _ := pq.NewBatch(schema)
				in.Out = gb
				res, err = withOut.ProcessBatch(in, late, evict)
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Rows) != 0 || res.NumRowsOutput != int64(len(want)) || !slices.Equal(res.LateRows, wantLate) {
					t.Fatalf("batch %d: %d rows, %d output, late %v; want 0, %d, %v", b, len(res.Rows), res.NumRowsOutput, res.LateRows, len(want), wantLate)
				}
				if got := batchValues(gb); !reflect.DeepEqual(got, want) {
					t.Fatalf("batch %d: columns\n%v\nwant rows\n%v", b, got, want)
				}
				emitted += len(want)
				tr.EndBatch(0)
			}
			if emitted == 0 {
				t.Fatal("nothing was emitted: the test compares nothing")
			}
		})
	}
}

// TestOutWrongShape: a gold batch without the aggregation's columns is a clear error.
func TestOutWrongShape(t *testing.T) {
	spec, _ := Tumbling(5 * minute)
	op := mustAgg(t, AggConfig{Window: spec, Mode: Complete, NumKeys: 1, Aggs: []AggSpec{{Fn: Count, Column: -1}, {Fn: Avg, Column: 0}}})
	gb, _ := pq.NewBatch(goldSchema([]AggSpec{{Fn: Count, Column: -1}}))
	in := &Input{EventTime: []int64{0}, Columns: []Column{{Float64: []float64{1}}}, Out: gb}
	in.Keys.Append(pq.AppendKeyString(nil, "a"))
	if _, err := op.ProcessBatch(in, 0, 0); err == nil || !errors.Is(err, ErrBadInput) {
		t.Fatalf("err %v, want ErrBadInput", err)
	}
}

// TestOutSlotOrderKeysAndReuse: gold's columns are written in slot order and permuted into
// output order (emitcols.go). With keys of two parts (a nullable string, a long), a thousand
// keys whose evicted slots are reused in scrambled order, and one gold batch that keeps the
// rows of earlier batches (the permutation touches only the new rows), the columns must hold
// exactly the rows Result.Rows lists, decoded part by part, batch after batch.
func TestOutSlotOrderKeysAndReuse(t *testing.T) {
	aggs := []AggSpec{{Fn: Count, Column: -1}, {Fn: Sum, Column: 0}, {Fn: Avg, Column: 0}}
	dbl := txlog.PrimitiveType{Name: txlog.TypeDouble}
	fields := []txlog.StructField{WindowField(),
		{Name: "k1", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
		{Name: "k2", Type: txlog.PrimitiveType{Name: txlog.TypeLong}}}
	named := slices.Clone(aggs)
	for i, sp := range aggs {
		t := txlog.DataType(dbl)
		if sp.Int {
			t = txlog.PrimitiveType{Name: txlog.TypeLong}
		}
		fields = append(fields, AggregateFields(sp.Fn, "a"+strconv.Itoa(i), t, t)...)
		named[i].Name = "a" + strconv.Itoa(i)
	}
	fields = append(fields, LateRowsField())
	schema := &txlog.StructType{Fields: append(fields, ExactFields(named)...)}
	sliding, _ := NewWindowSpec(10*minute, 5*minute, 0)
	for _, mode := range []Mode{Append, Update} {
		t.Run(mode.String(), func(t *testing.T) {
			cfg := AggConfig{Window: sliding, Mode: mode, NumKeys: 2, Aggs: aggs}
			withRows, withOut := mustAgg(t, cfg), mustAgg(t, cfg)
			tr, _ := NewWatermarkTracker(PolicyMin, []int64{5 * 60 * 1000}, 0)
			rng := rand.New(rand.NewPCG(11, 12))
			gb, _ := pq.NewBatch(schema)
			want, _ := pq.NewBatch(schema)
			from := 0
			for b := range 6 {
				in := &Input{Columns: []Column{{Float64: nil}}}
				for range 1000 {
					in.EventTime = append(in.EventTime, int64(b)*10*minute+rng.Int64N(10*minute))
					var k []byte
					if n := rng.IntN(1000); n%97 == 0 {
						k = pq.AppendKeyNull(k)
					} else {
						k = pq.AppendKeyString(k, "dev-"+strconv.Itoa(n))
					}
					in.Keys.Append(pq.AppendKeyInt64(k, int64(rng.IntN(3))-1))
					in.Columns[0].Float64 = append(in.Columns[0].Float64, float64(rng.IntN(1000))/10)
				}
				late, evict := tr.BatchWatermarks()
				tr.Observe(0, in.EventTime, nil)
				res, err := withRows.ProcessBatch(in, late, evict)
				if err != nil {
					t.Fatal(err)
				}
				appendOracleRows(t, want, aggs, res.Rows, 2)
				in.Out = gb
				if _, err := withOut.ProcessBatch(in, late, evict); err != nil {
					t.Fatal(err)
				}
				if err := gb.Validate(); err != nil {
					t.Fatalf("batch %d: %v", b, err)
				}
				if got, w := rowValues(gb, from), rowValues(want, from); !reflect.DeepEqual(got, w) {
					t.Fatalf("batch %d: %d rows in the columns, want %d (or they differ)", b, len(got), len(w))
				}
				from = want.Len()
				tr.EndBatch(0)
			}
			t.Logf("%d rows emitted", want.Len())
			if want.Len() < 3_000 {
				t.Fatalf("%d rows emitted: too few to scramble slots", want.Len())
			}
		})
	}
}

// appendOracleRows appends rows to gb as the stream rendered Result.Rows: each key decoded
// into its keyParts parts, each aggregate through AppendAggregate.
func appendOracleRows(t testing.TB, gb *pq.Batch, aggs []AggSpec, rows []OutRow, keyParts int) {
	for _, row := range rows {
		gb.Columns[0].AppendStruct()
		gb.Columns[0].Children[0].AppendInt64(row.Window.Start)
		gb.Columns[0].Children[1].AppendInt64(row.Window.End)
		parts, err := pq.DecodeKey(row.Key)
		if err != nil || len(parts) != keyParts {
			t.Fatalf("key %q: %v %v", row.Key, parts, err)
		}
		for k, part := range parts {
			pq.AppendKeyValue(gb.Columns[1+k], part)
		}
		ci := 1 + keyParts
		for i := range aggs {
			n, _, err := AppendAggregate(gb.Columns[ci:], &aggs[i], &row.Aggs[i], nil)
			if err != nil {
				t.Fatal(err)
			}
			ci += n
		}
		gb.Columns[ci].AppendInt64(0)
		for i := range aggs {
			if aggs[i].ExactSum() {
				ci++
				AppendExact(gb.Columns[ci], &row.Aggs[i], nil)
			}
		}
	}
}

// rowValues are the rows of b from row from on, boxed.
func rowValues(b *pq.Batch, from int) [][]any {
	var out [][]any
	for i := from; i < b.Len(); i++ {
		var row []any
		for _, c := range b.Columns {
			row = append(row, c.Value(i))
		}
		out = append(out, row)
	}
	return out
}

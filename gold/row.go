package gold

import (
	"fmt"
	"math"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// The gold-row contract: the columns of a gold table, which the stream writes, merge-late and
// replay rewrite and the reports read. In order: ColWindow (struct<start: timestamp, end:
// timestamp>), the group-by columns (their keys in table's key encoding while in state), each
// aggregate (avg followed by <as>SuffixSum and <as>SuffixCount, sketches followed by
// <as>SuffixSketch holding AggValue.AppendBinary), then ColLateRows, then for each float sum
// or avg in order its internal exact sum, ExactColumn(<as>) (Exact.AppendBinary; null where
// the public column is null). The exact columns come last so that a gold table created
// before them (or by Spark's export) gains them the way Delta adds columns: appended,
// nullable, null in its existing rows, which then stand for the exact value of their double.
const (
	// ColWindow is gold's window struct<start: timestamp, end: timestamp>.
	ColWindow = "window"
	// ColLateRows counts the late rows a gold row absorbed: 0 from the stream, raised by
	// merge-late.
	ColLateRows = "late_rows"
	// SuffixSum and SuffixCount name the columns that keep an avg mergeable (avg_x_sum,
	// avg_x_count); SuffixSketch names a sketch aggregate's binary state (AggValue.AppendBinary).
	SuffixSum    = "_sum"
	SuffixCount  = "_count"
	SuffixSketch = "_sketch"
	// SuffixExact with a leading "_" names a float sum's or avg's exact sum: _<as>_exact.
	SuffixExact = "_exact"
)

// ExactColumn is the internal gold column that keeps the exact sum of the float sum or avg
// named as: binary, Exact's canonical encoding. Not part of gold's public columns; the
// leading underscore keeps it apart from the names a config gives.
func ExactColumn(as string) string { return "_" + as + SuffixExact }

// ExactFields are the internal exact-sum columns of specs, in the order gold keeps them
// (after ColLateRows).
func ExactFields(specs []AggSpec) []txlog.StructField {
	var out []txlog.StructField
	for i := range specs {
		if specs[i].ExactSum() {
			out = append(out, txlog.StructField{Name: ExactColumn(specs[i].Name), Type: txlog.PrimitiveType{Name: txlog.TypeBinary}, Nullable: true})
		}
	}
	return out
}

// AppendExactSum appends a float sum of n inputs whose exact sum is x to its gold column c
// and its exact encoding to exact (both null when n is 0), as AppendAggregate and
// AppendExact write them, from one reading of x's limbs and with the encoding made in
// exact's bytes: rounding and encoding x apart, through a scratch, was most of what
// replay's emission of a 100k-key gold spent on its aggregates.
func AppendExactSum(c, exact *pq.Column, n int64, x *Exact) {
	if n == 0 {
		c.AppendNull()
		exact.AppendNull()
		return
	}
	var f float64
	f, exact.Data = x.appendRounded(exact.Data)
	c.AppendFloat64(f)
	exact.AppendBytes(nil)
}

// AppendExact appends v's exact sum to its gold column c (null without input) and returns
// scratch, reused and grown. Only for aggregates with ExactSum.
func AppendExact(c *pq.Column, v *AggValue, scratch []byte) []byte {
	if v.N == 0 {
		c.AppendNull()
		return scratch
	}
	scratch = v.X.AppendBinary(scratch[:0])
	c.AppendBytes(scratch)
	return scratch
}

// ReadExact is the exact sum a gold row holds for a float sum or avg: its exact column's
// value (exact; nil when the table has no such column, or it is null) or, without one, the
// exact value of the double the row holds (f), as for rows written before sums were exact or
// by another engine. The public double wins: an exact value that does not round to f (the
// double was rewritten by another engine, which left the internal column alone) is dropped
// for f's exact value.
func ReadExact(exact []byte, f float64) (Exact, error) {
	if exact == nil {
		return ExactOf(f), nil
	}
	x, rest, err := DecodeExact(exact)
	if err != nil {
		return x, err
	}
	if len(rest) != 0 {
		return x, fmt.Errorf("%w: %d bytes after the exact sum", ErrBadState, len(rest))
	}
	if r := x.Float64(); math.Float64bits(r) != math.Float64bits(f) && !(math.IsNaN(r) && math.IsNaN(f)) {
		return ExactOf(f), nil
	}
	return x, nil
}

// AppendAggregate appends aggregate spec's value v to the gold columns cols[0:n] it occupies
// (n is 1, or 3 for avg, 2 for sketches) and returns n. scratch is reused for sketches and
// returned grown. The stream's emitted rows and merge-late's and replay's rewritten rows
// encode their values here, so they cannot drift apart.
func AppendAggregate(cols []*pq.Column, spec *AggSpec, v *AggValue, scratch []byte) (n int, _ []byte, _ error) {
	c := cols[0]
	switch spec.Fn {
	case Count:
		c.AppendInt64(v.N)
		return 1, scratch, nil
	case Sum, Min, Max:
		appendNumber(c, v)
		return 1, scratch, nil
	case Avg:
		if v.N == 0 {
			c.AppendNull()
		} else {
			c.AppendFloat64(v.Result(spec).(float64))
		}
		appendNumber(cols[1], v)
		cols[2].AppendInt64(v.N)
		return 3, scratch, nil
	case ApproxCountDistinct, ApproxPercentile:
		switch x := v.Result(spec).(type) {
		case int64:
			c.AppendInt64(x)
		case []float64:
			for _, q := range x {
				c.Children[0].AppendFloat64(q)
			}
			c.AppendList()
		default:
			c.AppendNull()
		}
		var err error
		if scratch, err = v.AppendBinary(scratch[:0]); err != nil {
			return 0, scratch, err
		}
		cols[1].AppendBytes(scratch)
		return 2, scratch, nil
	}
	return 0, scratch, fmt.Errorf("gold: aggregate %s: unknown function %v", spec.Name, spec.Fn)
}

// aggregateWidth is the number of gold columns AppendAggregate fills for fn.
func aggregateWidth(fn Func) int {
	switch fn {
	case Avg:
		return 3
	case ApproxCountDistinct, ApproxPercentile:
		return 2
	}
	return 1
}

// appendNumber writes a sum, min or max (or avg's sum) in the column's type; no input: null.
func appendNumber(c *pq.Column, v *AggValue) {
	switch {
	case v.N == 0:
		c.AppendNull()
	case !v.Int:
		c.AppendFloat64(v.F)
	case c.Kind == pq.KindInt32:
		c.AppendInt32(int32(v.I))
	default:
		c.AppendInt64(v.I)
	}
}

// AggregateFields are the gold columns of aggregate fn named as, over an input of type in
// (num: the type of its sums), in the order AppendAggregate fills them.
func AggregateFields(fn Func, as string, in, num txlog.DataType) []txlog.StructField {
	switch fn {
	case Count:
		return []txlog.StructField{{Name: as, Type: txlog.PrimitiveType{Name: txlog.TypeLong}}}
	case Sum:
		return []txlog.StructField{{Name: as, Type: num, Nullable: true}}
	case Min, Max:
		return []txlog.StructField{{Name: as, Type: in, Nullable: true}}
	case Avg:
		return []txlog.StructField{{Name: as, Type: txlog.PrimitiveType{Name: txlog.TypeDouble}, Nullable: true},
			{Name: as + SuffixSum, Type: num, Nullable: true},
			{Name: as + SuffixCount, Type: txlog.PrimitiveType{Name: txlog.TypeLong}}}
	case ApproxCountDistinct:
		return []txlog.StructField{{Name: as, Type: txlog.PrimitiveType{Name: txlog.TypeLong}},
			{Name: as + SuffixSketch, Type: txlog.PrimitiveType{Name: txlog.TypeBinary}}}
	case ApproxPercentile:
		return []txlog.StructField{{Name: as, Nullable: true, Type: txlog.ArrayType{ElementType: txlog.PrimitiveType{Name: txlog.TypeDouble}, ContainsNull: false}},
			{Name: as + SuffixSketch, Type: txlog.PrimitiveType{Name: txlog.TypeBinary}}}
	}
	return nil
}

// WindowField is a gold table's first column: the window, struct<start, end> of timestamps.
func WindowField() txlog.StructField {
	ts := txlog.PrimitiveType{Name: txlog.TypeTimestamp}
	return txlog.StructField{Name: ColWindow, Nullable: true, Type: &txlog.StructType{Fields: []txlog.StructField{
		{Name: "start", Type: ts, Nullable: true}, {Name: "end", Type: ts, Nullable: true}}}}
}

// LateRowsField is a gold table's last column: the late rows merge-late folded into the row.
func LateRowsField() txlog.StructField {
	return txlog.StructField{Name: ColLateRows, Type: txlog.PrimitiveType{Name: txlog.TypeLong}}
}

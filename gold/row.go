package gold

import (
	"fmt"

	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// The gold-row contract: the columns of a gold table, which the stream writes, merge-late and
// replay rewrite and the reports read. In order: ColWindow (struct<start: timestamp, end:
// timestamp>), the group-by columns (their keys in table's key encoding while in state), each
// aggregate (avg followed by <as>SuffixSum and <as>SuffixCount, sketches followed by
// <as>SuffixSketch holding AggValue.AppendBinary), then ColLateRows.
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
)

// AppendAggregate appends aggregate spec's value v to the gold columns cols[0:n] it occupies
// (n is 1, or 3 for avg, 2 for sketches) and returns n. scratch is reused for sketches and
// returned grown. The stream's emitted rows and merge-late's and replay's rewritten rows
// encode their values here, so they cannot drift apart.
func AppendAggregate(cols []*table.Column, spec *AggSpec, v *AggValue, scratch []byte) (n int, _ []byte, _ error) {
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
func appendNumber(c *table.Column, v *AggValue) {
	switch {
	case v.N == 0:
		c.AppendNull()
	case !v.Int:
		c.AppendFloat64(v.F)
	case c.Kind == table.KindInt32:
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

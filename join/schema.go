package join

import (
	"fmt"

	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/txlog"
)

// ColSide is the join quarantine's column naming the side a late row came from ("left" or
// "right", Side.String).
const ColSide = "side"

// OutputColumns maps the two inputs' columns into the joined row (DESIGN.md §8): the left
// source's columns, then the right's, a right column whose name the left already uses renamed
// `<rightName>_<column>`. Left semi joins keep the left columns only. RightNames[i] is the
// joined name of right column i.
type OutputColumns struct {
	Schema     *txlog.StructType
	RightNames []string
}

// Output returns the joined table's schema for join type t over the left and right silver
// schemas. Every column is nullable: an outer join fills the missing side with nulls. It fails
// when a renamed right column collides again, naming it.
func Output(t Type, left, right *txlog.StructType, rightName string) (*OutputColumns, error) {
	pair, names, err := pairSchema(left, right, rightName)
	if err != nil {
		return nil, err
	}
	if t == LeftSemi {
		return &OutputColumns{Schema: &txlog.StructType{Fields: pair.Fields[:len(left.Fields)]}, RightNames: names}, nil
	}
	return &OutputColumns{Schema: pair, RightNames: names}, nil
}

func pairSchema(left, right *txlog.StructType, rightName string) (*txlog.StructType, []string, error) {
	taken := make(map[string]bool, len(left.Fields)+len(right.Fields))
	out := &txlog.StructType{}
	for _, f := range left.Fields {
		taken[f.Name] = true
		f.Nullable = true
		out.Fields = append(out.Fields, f)
	}
	names := make([]string, len(right.Fields))
	for i, f := range right.Fields {
		name := f.Name
		if taken[name] {
			name = rightName + "_" + f.Name
			if taken[name] {
				return nil, nil, fmt.Errorf("join: right column %q is renamed %q, which is taken too", f.Name, name)
			}
		}
		taken[name] = true
		names[i] = name
		f.Name = name
		f.Nullable = true
		out.Fields = append(out.Fields, f)
	}
	return out, names, nil
}

// QuarantineSchema is the join quarantine's schema: both sides' columns as in the joined
// table of an inner join (the side that was not late is null), then `side`, then the columns
// of every quarantine (late_watermark, batch_id, query_id; silver.QuarantineSchema). Left semi
// joins use it too, so that a late right row keeps its columns.
func QuarantineSchema(left, right *txlog.StructType, rightName string) (*txlog.StructType, error) {
	pair, _, err := pairSchema(left, right, rightName)
	if err != nil {
		return nil, err
	}
	pair.Fields = append(pair.Fields, txlog.StructField{Name: ColSide, Type: txlog.PrimitiveType{Name: txlog.TypeString}})
	return silver.QuarantineSchema(pair), nil
}

package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/medallion-lake/medallion/txlog"
)

// goldInput is what a gold aggregation may read: a source's columns, or a join's joined columns.
type goldInput struct {
	cols      *colSet
	eventTime string // a source's event-time column; a join's default time column
	watermark bool   // the input carries a watermark (a join: either side has one)
	join      bool
}

// sourceHeader checks what only a source of sources: has: its name, and no other stream name.
func (v *validator) sourceHeader(pre string, s Source) {
	path := strings.TrimSuffix(pre, ".")
	v.name(path+".name", s.Name, "a source name such as clicks")
	if s.Stream.Name != s.Name {
		v.fail(pre+"stream.name", "%q: a source's query is named by %s.name (%q); leave stream.name out", s.Stream.Name, path, s.Name)
	}
}

// sourceNames checks that every source and join has its own name: --source, gold[].source and
// joins[].left/right pick them by name.
func (v *validator) sourceNames() {
	seen := map[string]string{}
	check := func(path, name string) {
		if name == "" {
			return
		}
		if first, dup := seen[name]; dup {
			v.fail(path, "duplicate name %q (also %s): sources and joins need unique names", name, first)
			return
		}
		seen[name] = path
	}
	check("stream.name", v.p.Stream.Name)
	for i, s := range v.p.Sources {
		check(fmt.Sprintf("sources[%d].name", i), s.Name)
	}
	for i, j := range v.p.Joins {
		check(fmt.Sprintf("joins[%d].name", i), j.Name)
	}
}

// joins checks every join and adds its joined columns to inputs, for the gold aggregations
// over it.
func (v *validator) joins(inputs map[string]*goldInput) {
	for i, j := range v.p.Joins {
		path := fmt.Sprintf("joins[%d]", i)
		if v.name(path+".name", j.Name, "a join name such as impressions_clicks") {
			v.tablePath(path+".table", j.Table)
			v.tablePath(path+".quarantine", j.Quarantine)
			v.tablePath(path+".checkpoint", j.Checkpoint)
		}
		left := v.joinSide(path+".left", j.Left, inputs)
		right := v.joinSide(path+".right", j.Right, inputs)
		typeOK := v.enum(path+".type", j.Type, JoinInner, JoinLeftOuter, JoinRightOuter, JoinFullOuter, JoinLeftSemi, JoinLeftAnti, JoinCross)
		if len(j.On) == 0 {
			v.fail(path+".on", "required: Stream-stream join without equality predicate is not supported (expected e.g. [{left: ad_id, right: ad_id}])")
		}
		for k, on := range j.On {
			v.joinKey(fmt.Sprintf("%s.on[%d]", path, k), on, j, left, right)
		}
		lowerOK := v.joinOffset(path+".time.lower", j.Time.Lower)
		upperOK := v.joinOffset(path+".time.upper", j.Time.Upper)
		if lowerOK && upperOK && j.Time.Lower.Duration > j.Time.Upper.Duration {
			v.fail(path+".time.lower", "%s is greater than upper %s: no right row could ever match (right.time BETWEEN left.time + lower AND left.time + upper)", j.Time.Lower, j.Time.Upper)
		}
		if left != nil && j.Time.Left != left.eventTime {
			v.fail(path+".time.left", "%q is not the event-time column of source %q (%q): Spark evicts join state by the watermarked column, so the time condition must use it", j.Time.Left, j.Left, left.eventTime)
		}
		if right != nil && j.Time.Right != right.eventTime {
			v.fail(path+".time.right", "%q is not the event-time column of source %q (%q): Spark evicts join state by the watermarked column, so the time condition must use it", j.Time.Right, j.Right, right.eventTime)
		}
		// Spark's own rejections (type and watermark combinations) are checked with the join
		// operator's rules by jobs/specs.Check, which every command runs after Parse: config
		// sits below join in DESIGN.md §1.
		if left == nil || right == nil || !typeOK || j.Type == JoinLeftAnti || j.Type == JoinCross {
			continue
		}
		list, ok := v.p.JoinColumns(j)
		if !ok {
			v.fail(path+".right", "the joined columns of %q and %q collide: a right column renamed %s_<column> is taken too", j.Left, j.Right, j.Right)
			continue
		}
		cols := &colSet{byName: map[string]Column{}, list: list, what: fmt.Sprintf("the columns of join %q", j.Name)}
		for _, c := range list {
			cols.byName[c.Name] = c
		}
		if j.Name != "" {
			if _, dup := inputs[j.Name]; !dup {
				inputs[j.Name] = &goldInput{cols: cols, eventTime: left.eventTime, watermark: left.watermark || right.watermark, join: true}
			}
		}
	}
}

// joinSide checks that name is a source and returns it as an input, or nil.
func (v *validator) joinSide(path, name string, inputs map[string]*goldInput) *goldInput {
	if name == "" {
		v.fail(path, "required: expected a source name (%s)", strings.Join(v.sourceList(), ", "))
		return nil
	}
	if _, ok := v.p.JoinByName(name); ok {
		v.fail(path, "%q is a join: a join reads two sources (%s)", name, strings.Join(v.sourceList(), ", "))
		return nil
	}
	in, ok := inputs[name]
	if !ok || in.join {
		v.fail(path, "unknown source %q: expected one of %s", name, strings.Join(v.sourceList(), ", "))
		return nil
	}
	return in
}

func (v *validator) sourceList() []string {
	var out []string
	for _, s := range v.p.AllSources() {
		if s.Name != "" {
			out = append(out, s.Name)
		}
	}
	return out
}

// joinKey checks one on: pair: both columns exist, have the same type and are not the
// event-time columns.
func (v *validator) joinKey(path string, on JoinOn, j Join, left, right *goldInput) {
	lc, lok := v.joinKeyColumn(path+".left", on.Left, left, "left", j.Left)
	rc, rok := v.joinKeyColumn(path+".right", on.Right, right, "right", j.Right)
	if lok && rok && lc.Type.Err() == nil && rc.Type.Err() == nil && lc.Type.String() != rc.Type.String() {
		v.fail(path+".right", "column %q has type %s but the left key %q has type %s: join keys must have the same type", on.Right, rc.Type, on.Left, lc.Type)
	}
}

// joinKeyColumn checks one side's column of an on: pair: it exists in that side's input in
// (nil when the side itself is wrong, already reported) and is not its event-time column. side
// is left or right, source the side's source.
func (v *validator) joinKeyColumn(path, col string, in *goldInput, side, source string) (Column, bool) {
	if in == nil {
		if col == "" {
			v.fail(path, "required: expected a column of the %s source", side)
		}
		return Column{}, false
	}
	c, ok := v.column(path, col, in.cols)
	if ok && col == in.eventTime {
		v.fail(path, "%q is the event-time column of source %q: a join key on a watermarked column makes Spark evict by a state key watermark, which medallion does not support; join on other columns and bound the times with time.lower and time.upper", col, source)
		return c, false
	}
	return c, ok
}

// joinOffset checks time.lower or time.upper: required, any sign, no more than Spark's bound.
func (v *validator) joinOffset(path string, d Duration) bool {
	switch {
	case d.Err() != nil:
		v.fail(path, "%v", d.Err())
	case !d.IsSet():
		v.fail(path, "required: expected a duration such as 0s or 1h (negative allowed)")
	case d.Microseconds() > maxJoinOffsetUs || d.Microseconds() < -maxJoinOffsetUs:
		v.fail(path, "%s is out of range: expected at most 100 years either way", d)
	default:
		return true
	}
	return false
}

// maxJoinOffsetUs is the join operator's bound on a time offset (join.Spec.Validate).
const maxJoinOffsetUs = 100 * 366 * 86400 * 1_000_000

// metaColumnType is the config type of a bronze metadata column's Delta type.
func metaColumnType(delta txlog.DataType) ColumnType {
	if d, ok := delta.(txlog.DecimalType); ok { // a computed column's
		return columnTypeOf(d)
	}
	p, ok := delta.(txlog.PrimitiveType)
	if !ok {
		return ColumnType{Kind: KindString}
	}
	t, err := ParseColumnType(p.Name)
	if err != nil {
		return ColumnType{Kind: KindString}
	}
	return t
}

// goldInput resolves gold[i].source and checks time_column; nil when the input is unknown.
func (v *validator) goldInput(path string, g Gold, inputs map[string]*goldInput) *goldInput {
	name := v.p.GoldSource(g)
	in, ok := inputs[name]
	if !ok {
		if _, isJoin := v.p.JoinByName(g.Source); g.Source == "" || isJoin {
			return nil // the input's own errors are reported there
		}
		var names []string
		for n := range inputs {
			names = append(names, n)
		}
		sort.Strings(names)
		v.fail(path+".source", "unknown source or join %q: expected one of %s, or the name of another gold (a derived table, docs/derived-tables.md)", g.Source, strings.Join(names, ", "))
		return nil
	}
	tc := v.p.GoldTimeColumn(g)
	if !in.join {
		if g.TimeColumn != "" && g.TimeColumn != in.eventTime {
			v.fail(path+".time_column", "%q is not the event-time column of source %q (%q): windows over a source follow its watermark, so they are over its event time", g.TimeColumn, name, in.eventTime)
		}
		return in
	}
	if c, ok := v.column(path+".time_column", tc, in.cols); ok && c.Type.Err() == nil && !c.Type.IsTimestamp() {
		v.fail(path+".time_column", "column %q has type %s: expected a timestamp column of join %q", c.Name, c.Type, name)
	}
	if g.OutputMode == OutputAppend && !in.watermark {
		v.fail(path+".source", "join %q has no watermark on either source: Append output mode not supported when there are streaming aggregations on streaming DataFrames/DataSets without watermark", name)
	}
	return in
}

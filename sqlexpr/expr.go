package sqlexpr

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrBadPredicate reports a predicate that does not fit the table schema.
var ErrBadPredicate = errors.New("table: bad predicate")

// Expr is a boolean predicate over the columns of a table, with SQL three-valued logic: a
// comparison with null is unknown, and only rows where the predicate is true match. It is used
// for partition pruning, min/max data skipping and row filtering. Build it with Eq, Lt, Le,
// Gt, Ge, In, IsNull, IsNotNull, And, Or and Not. Columns are named by their logical names,
// nested fields with dots ("window.start").
type Expr interface {
	String() string
	bind(s *txlog.StructType) (bound, error)
}

// CmpOp is a comparison operator.
type CmpOp int

// Comparison operators.
const (
	OpEq CmpOp = iota
	OpLt
	OpLe
	OpGt
	OpGe
)

var opText = [...]string{"=", "<", "<=", ">", ">="}

type cmpExpr struct {
	col string
	op  CmpOp
	val any
}

type inExpr struct {
	col  string
	vals []any
}

type nullExpr struct {
	col string
	not bool
}

type logicExpr struct {
	and  bool
	args []Expr
}

type notExpr struct{ arg Expr }

// Eq is col = v. Literals are Go values: integers, floats, bool, string, []byte, time.Time,
// Decimal, or strings in the column's text form ("2024-03-01", "12.50").
func Eq(col string, v any) Expr { return &cmpExpr{col, OpEq, v} }

// Lt is col < v.
func Lt(col string, v any) Expr { return &cmpExpr{col, OpLt, v} }

// Le is col <= v.
func Le(col string, v any) Expr { return &cmpExpr{col, OpLe, v} }

// Gt is col > v.
func Gt(col string, v any) Expr { return &cmpExpr{col, OpGt, v} }

// Ge is col >= v.
func Ge(col string, v any) Expr { return &cmpExpr{col, OpGe, v} }

// Cmp is col <op> v.
func Cmp(col string, op CmpOp, v any) Expr { return &cmpExpr{col, op, v} }

// In is col IN (vs...).
func In(col string, vs ...any) Expr { return &inExpr{col, vs} }

// IsNull is col IS NULL.
func IsNull(col string) Expr { return &nullExpr{col, false} }

// IsNotNull is col IS NOT NULL.
func IsNotNull(col string) Expr { return &nullExpr{col, true} }

// And is the conjunction of its arguments (true when there are none).
func And(args ...Expr) Expr { return &logicExpr{true, args} }

// Or is the disjunction of its arguments (false when there are none).
func Or(args ...Expr) Expr { return &logicExpr{false, args} }

// Not negates e.
func Not(e Expr) Expr { return &notExpr{e} }

func litString(v any) string {
	switch x := v.(type) {
	case string:
		return "'" + strings.ReplaceAll(x, "'", "\\'") + "'"
	case time.Time:
		return "'" + x.UTC().Format("2006-01-02 15:04:05.999999") + "'"
	case []byte:
		return fmt.Sprintf("X'%X'", x)
	case nil:
		return "NULL"
	}
	return fmt.Sprint(v)
}

func (e *cmpExpr) String() string { return e.col + " " + opText[e.op] + " " + litString(e.val) }
func (e *inExpr) String() string {
	parts := make([]string, len(e.vals))
	for i, v := range e.vals {
		parts[i] = litString(v)
	}
	return e.col + " IN (" + strings.Join(parts, ", ") + ")"
}
func (e *nullExpr) String() string {
	if e.not {
		return e.col + " IS NOT NULL"
	}
	return e.col + " IS NULL"
}
func (e *logicExpr) String() string {
	if len(e.args) == 0 {
		if e.and {
			return "true"
		}
		return "false"
	}
	sep := " OR "
	if e.and {
		sep = " AND "
	}
	parts := make([]string, len(e.args))
	for i, a := range e.args {
		parts[i] = a.String()
		if l, ok := a.(*logicExpr); ok && l.and != e.and && len(l.args) > 1 {
			parts[i] = "(" + parts[i] + ")"
		}
	}
	return strings.Join(parts, sep)
}
func (e *notExpr) String() string { return "NOT (" + e.arg.String() + ")" }

// Outcome sets of three-valued logic.
const (
	outTrue  uint8 = 1
	outFalse uint8 = 2
	outNull  uint8 = 4
	outAll         = outTrue | outFalse | outNull
)

// scalar is a typed value ready for comparison with a column of one class.
type scalar struct {
	i int64
	f float64
	b []byte
	r *big.Rat
}

type class int

const (
	classInt class = iota
	classFloat
	classBytes
	classDecimal
	classBool
)

// colRef is a resolved column path.
type colRef struct {
	name  string
	path  []int
	phys  []string // physical names, for stats
	typ   txlog.DataType
	class class
	scale int
	ts    bool // timestamp: stats are truncated to milliseconds
}

// bound is a predicate bound to a schema.
type bound interface {
	// rows evaluates the predicate on every row of b, adding outcome bits to out.
	rows(b *pq.Batch, out []uint8)
	// file returns the outcomes that rows of a file may have, given what is known about it.
	file(fi *fileInfo) uint8
	cols(add func(*colRef))
}

func resolve(s *txlog.StructType, name string) (*colRef, error) {
	ref := &colRef{name: name}
	st := s
	parts := strings.Split(name, ".")
	for k, p := range parts {
		if st == nil {
			return nil, fmt.Errorf("%w: column %s: %s is not a struct", ErrBadPredicate, name, strings.Join(parts[:k], "."))
		}
		i := st.FieldIndex(p)
		if i < 0 {
			for j := range st.Fields {
				if strings.EqualFold(st.Fields[j].Name, p) {
					i = j
				}
			}
		}
		if i < 0 {
			return nil, fmt.Errorf("%w: column %s does not exist", ErrBadPredicate, name)
		}
		f := &st.Fields[i]
		ref.path = append(ref.path, i)
		ref.phys = append(ref.phys, f.PhysicalName())
		ref.typ = f.Type
		st, _ = f.Type.(*txlog.StructType)
	}
	switch t := ref.typ.(type) {
	case txlog.DecimalType:
		ref.class, ref.scale = classDecimal, t.Scale
	case txlog.PrimitiveType:
		switch t.Name {
		case txlog.TypeDouble, txlog.TypeFloat:
			ref.class = classFloat
		case txlog.TypeString, txlog.TypeBinary:
			ref.class = classBytes
		case txlog.TypeBoolean:
			ref.class = classBool
		case txlog.TypeTimestamp, txlog.TypeTimestampNTZ:
			ref.class, ref.ts = classInt, true
		case txlog.TypeVoid:
			return nil, fmt.Errorf("%w: column %s has type void", ErrBadPredicate, name)
		default:
			ref.class = classInt
		}
	default:
		return nil, fmt.Errorf("%w: column %s has type %s, which cannot be compared", ErrBadPredicate, name, ref.typ.TypeName())
	}
	return ref, nil
}

// literal converts a Go literal to a scalar of the column's class.
func (c *colRef) literal(v any) (scalar, error) {
	bad := func() (scalar, error) {
		return scalar{}, fmt.Errorf("%w: %s cannot be compared with %T %v", ErrBadPredicate, c.name, v, v)
	}
	if s, ok := v.(string); ok && c.class != classBytes {
		tmp, err := pq.NewColumn(c.typ)
		if err != nil {
			return bad()
		}
		if err := pq.AppendPartitionValue(c.typ, tmp, &s); err != nil || tmp.IsNull(0) {
			return bad()
		}
		return colScalar(c, tmp, 0), nil
	}
	switch c.class {
	case classInt:
		if x, ok := v.(time.Time); ok {
			if c.typ.TypeName() == txlog.TypeDate {
				return scalar{i: pq.FloorDiv(x.Unix(), 86400)}, nil
			}
			if c.ts {
				return scalar{i: x.UnixMicro()}, nil
			}
		} else if x, ok := pq.IntValue(v); ok {
			return scalar{i: x}, nil
		}
	case classFloat:
		switch x := v.(type) {
		case float64:
			return scalar{f: x}, nil
		case float32:
			return scalar{f: float64(x)}, nil
		case int:
			return scalar{f: float64(x)}, nil
		case int64:
			return scalar{f: float64(x)}, nil
		}
	case classBool:
		if x, ok := v.(bool); ok {
			if x {
				return scalar{i: 1}, nil
			}
			return scalar{}, nil
		}
	case classBytes:
		switch x := v.(type) {
		case string:
			return scalar{b: []byte(x)}, nil
		case []byte:
			return scalar{b: x}, nil
		}
	case classDecimal:
		switch x := v.(type) {
		case pq.Decimal:
			return scalar{r: pq.DecimalRat(x.Unscaled, x.Scale)}, nil
		case int:
			return scalar{r: new(big.Rat).SetInt64(int64(x))}, nil
		case int64:
			return scalar{r: new(big.Rat).SetInt64(x)}, nil
		case float64:
			r := new(big.Rat)
			if r.SetFloat64(x) != nil {
				return scalar{r: r}, nil
			}
		}
	}
	return bad()
}

// colScalar reads row i of a column of the ref's type.
func colScalar(c *colRef, col *pq.Column, i int) scalar {
	switch c.class {
	case classInt:
		if col.Kind == pq.KindInt64 {
			return scalar{i: col.Int64[i]}
		}
		return scalar{i: int64(col.Int32[i])}
	case classFloat:
		if col.Kind == pq.KindFloat64 {
			return scalar{f: col.Float64[i]}
		}
		return scalar{f: float64(col.Float32[i])}
	case classBool:
		if col.Bool[i] {
			return scalar{i: 1}
		}
		return scalar{}
	case classBytes:
		return scalar{b: col.BytesAt(i)}
	case classDecimal:
		return scalar{r: pq.DecimalRat(col.Decimal[i], c.scale)}
	}
	return scalar{}
}

func compare(cl class, a, b scalar) int {
	switch cl {
	case classInt, classBool:
		return cmp.Compare(a.i, b.i)
	case classFloat:
		// Not cmp.Compare, which orders NaN first: here a NaN is neither less nor greater than
		// anything, and the callers decide what a NaN means.
		switch {
		case a.f < b.f:
			return -1
		case a.f > b.f:
			return 1
		}
		return 0
	case classBytes:
		return bytes.Compare(a.b, b.b)
	case classDecimal:
		return a.r.Cmp(b.r)
	}
	return 0
}

func cmpHolds(op CmpOp, c int) bool {
	switch op {
	case OpEq:
		return c == 0
	case OpLt:
		return c < 0
	case OpLe:
		return c <= 0
	case OpGt:
		return c > 0
	}
	return c >= 0
}

// column finds the column of a ref in a batch of the bound schema.
func (c *colRef) column(b *pq.Batch) *pq.Column {
	col := b.Columns[c.path[0]]
	for _, p := range c.path[1:] {
		col = col.Children[p]
	}
	return col
}

type boundCmp struct {
	ref *colRef
	op  CmpOp
	lit scalar
	nan bool // comparison with NaN literal: never true
}

type boundIn struct {
	ref  *colRef
	lits []scalar
}

type boundNull struct {
	ref *colRef
	not bool
}

type boundLogic struct {
	and  bool
	args []bound
}

type boundNot struct{ arg bound }

func (e *cmpExpr) bind(s *txlog.StructType) (bound, error) {
	ref, err := resolve(s, e.col)
	if err != nil {
		return nil, err
	}
	if e.val == nil {
		return nil, fmt.Errorf("%w: %s compared with NULL (use IsNull)", ErrBadPredicate, e.col)
	}
	lit, err := ref.literal(e.val)
	if err != nil {
		return nil, err
	}
	return &boundCmp{ref: ref, op: e.op, lit: lit, nan: ref.class == classFloat && math.IsNaN(lit.f)}, nil
}

func (e *inExpr) bind(s *txlog.StructType) (bound, error) {
	ref, err := resolve(s, e.col)
	if err != nil {
		return nil, err
	}
	lits, err := mapErr(e.vals, ref.literal)
	if err != nil {
		return nil, err
	}
	if ref.class == classFloat {
		// A NaN literal equals no value (as for Eq), and compare, which calls a NaN neither
		// less nor greater, would call it equal to every value: leave it out.
		lits = slices.DeleteFunc(lits, func(l scalar) bool { return math.IsNaN(l.f) })
	}
	return &boundIn{ref: ref, lits: lits}, nil
}

func (e *nullExpr) bind(s *txlog.StructType) (bound, error) {
	ref, err := resolve(s, e.col)
	if err != nil {
		return nil, err
	}
	return &boundNull{ref, e.not}, nil
}

func (e *logicExpr) bind(s *txlog.StructType) (bound, error) {
	args, err := mapErr(e.args, func(a Expr) (bound, error) { return a.bind(s) })
	if err != nil {
		return nil, err
	}
	return &boundLogic{and: e.and, args: args}, nil
}

// mapErr returns f of each of xs (nil for none), or the first error.
func mapErr[T, U any](xs []T, f func(T) (U, error)) ([]U, error) {
	var out []U
	for _, x := range xs {
		y, err := f(x)
		if err != nil {
			return nil, err
		}
		out = append(out, y)
	}
	return out, nil
}

func (e *notExpr) bind(s *txlog.StructType) (bound, error) {
	x, err := e.arg.bind(s)
	if err != nil {
		return nil, err
	}
	return &boundNot{x}, nil
}

func (b *boundCmp) cols(add func(*colRef))  { add(b.ref) }
func (b *boundIn) cols(add func(*colRef))   { add(b.ref) }
func (b *boundNull) cols(add func(*colRef)) { add(b.ref) }
func (b *boundNot) cols(add func(*colRef))  { b.arg.cols(add) }
func (b *boundLogic) cols(add func(*colRef)) {
	for _, a := range b.args {
		a.cols(add)
	}
}

func (b *boundCmp) rows(bt *pq.Batch, out []uint8) {
	col := b.ref.column(bt)
	for i := range out {
		switch {
		case col.IsNull(i):
			out[i] = outNull
		case b.nan:
			out[i] = outFalse
		case b.ref.class == classFloat && math.IsNaN(colScalar(b.ref, col, i).f):
			// A NaN compares false with everything, as IEEE 754 and Arrow say (so `c != x`,
			// NOT(c = x), holds for it); compare alone would call it equal.
			out[i] = outFalse
		case cmpHolds(b.op, compare(b.ref.class, colScalar(b.ref, col, i), b.lit)):
			out[i] = outTrue
		default:
			out[i] = outFalse
		}
	}
}

func (b *boundIn) rows(bt *pq.Batch, out []uint8) {
	col := b.ref.column(bt)
	for i := range out {
		if col.IsNull(i) {
			out[i] = outNull
			continue
		}
		v := colScalar(b.ref, col, i)
		out[i] = outFalse
		if b.ref.class == classFloat && math.IsNaN(v.f) {
			continue // equal to no literal
		}
		for _, l := range b.lits {
			if compare(b.ref.class, v, l) == 0 {
				out[i] = outTrue
				break
			}
		}
	}
}

func (b *boundNull) rows(bt *pq.Batch, out []uint8) {
	col := b.ref.column(bt)
	for i := range out {
		if col.IsNull(i) != b.not {
			out[i] = outTrue
		} else {
			out[i] = outFalse
		}
	}
}

func (b *boundNot) rows(bt *pq.Batch, out []uint8) {
	b.arg.rows(bt, out)
	for i, v := range out {
		out[i] = not3(v)
	}
}

func (b *boundLogic) rows(bt *pq.Batch, out []uint8) {
	init := outFalse
	if b.and {
		init = outTrue
	}
	for i := range out {
		out[i] = init
	}
	tmp := make([]uint8, len(out))
	for _, a := range b.args {
		a.rows(bt, tmp)
		for i := range out {
			out[i] = combine(b.and, out[i], tmp[i])
		}
	}
}

func not3(set uint8) uint8 {
	var r uint8
	if set&outTrue != 0 {
		r |= outFalse
	}
	if set&outFalse != 0 {
		r |= outTrue
	}
	return r | set&outNull
}

// combine applies Kleene AND/OR to every pair of outcomes of two sets.
func combine(and bool, a, b uint8) uint8 {
	var r uint8
	for _, x := range []uint8{outTrue, outFalse, outNull} {
		if a&x == 0 {
			continue
		}
		for _, y := range []uint8{outTrue, outFalse, outNull} {
			if b&y == 0 {
				continue
			}
			r |= kleene(and, x, y)
		}
	}
	return r
}

// kleene is x AND y, or x OR y, in three-valued logic: the operator's deciding value (false
// for AND, true for OR) wins, then NULL, then the other value.
func kleene(and bool, x, y uint8) uint8 {
	decides, other := outTrue, outFalse
	if and {
		decides, other = outFalse, outTrue
	}
	switch {
	case x == decides || y == decides:
		return decides
	case x == outNull || y == outNull:
		return outNull
	}
	return other
}

// colInfo is what is known about one column across a file's rows.
type colInfo struct {
	min, max       scalar
	hasMin, hasMax bool
	nulls          int64 // -1: unknown
	rows           int64 // -1: unknown
}

// fileInfo answers colInfo questions from a file's partition values and stats.
type fileInfo struct {
	schema    *txlog.StructType
	partCols  map[string]bool
	partVals  map[string]*string
	stats     map[string]any
	numRecord int64
}

func newFileInfo(schema *txlog.StructType, partCols []string, add *txlog.Add) *fileInfo {
	fi := &fileInfo{schema: schema, partCols: map[string]bool{}, partVals: add.PartitionValues, numRecord: -1}
	for _, p := range partCols {
		fi.partCols[strings.ToLower(p)] = true
	}
	if add.Stats != "" {
		d := json.NewDecoder(strings.NewReader(add.Stats))
		d.UseNumber()
		var m map[string]any
		if d.Decode(&m) == nil {
			fi.stats = m
			if n, ok := m["numRecords"].(json.Number); ok {
				if v, err := n.Int64(); err == nil {
					fi.numRecord = v
				}
			}
			// With a deletion vector, bounds may be loose, but they remain bounds.
		}
	}
	return fi
}

func (fi *fileInfo) info(ref *colRef) colInfo {
	unknown := colInfo{nulls: -1, rows: fi.numRecord}
	if len(ref.path) == 1 && fi.partCols[strings.ToLower(ref.name)] {
		var v *string
		found := false
		for k, pv := range fi.partVals {
			if strings.EqualFold(k, ref.phys[0]) || strings.EqualFold(k, ref.name) {
				v, found = pv, true
			}
		}
		if !found {
			return unknown
		}
		tmp, err := pq.NewColumn(ref.typ)
		if err != nil || pq.AppendPartitionValue(ref.typ, tmp, v) != nil {
			return unknown
		}
		if tmp.IsNull(0) {
			n := max(fi.numRecord, 1) // every row is null, however many there are
			return colInfo{nulls: n, rows: n}
		}
		s := colScalar(ref, tmp, 0)
		return colInfo{min: s, max: s, hasMin: true, hasMax: true, nulls: 0, rows: fi.numRecord}
	}
	if fi.stats == nil {
		return unknown
	}
	out := unknown
	if n, ok := lookupStat(fi.stats, "nullCount", ref.phys).(json.Number); ok {
		if v, err := n.Int64(); err == nil {
			out.nulls = v
		}
	}
	if v, ok := ref.statScalar(lookupStat(fi.stats, "minValues", ref.phys), false); ok {
		out.min, out.hasMin = v, true
	}
	if v, ok := ref.statScalar(lookupStat(fi.stats, "maxValues", ref.phys), true); ok {
		out.max, out.hasMax = v, true
	}
	return out
}

func lookupStat(m map[string]any, section string, path []string) any {
	cur, _ := m[section].(map[string]any)
	for i, p := range path {
		if cur == nil {
			return nil
		}
		v, ok := cur[p]
		if !ok {
			return nil
		}
		if i == len(path)-1 {
			return v
		}
		cur, _ = v.(map[string]any)
	}
	return nil
}

// statScalar converts a stats JSON value; a timestamp max is widened by 999µs because stats
// are truncated to milliseconds.
func (c *colRef) statScalar(v any, isMax bool) (scalar, bool) {
	if v == nil {
		return scalar{}, false
	}
	switch c.class {
	case classInt:
		switch x := v.(type) {
		case json.Number:
			n, err := x.Int64()
			return scalar{i: n}, err == nil
		case string:
			if c.ts {
				us, err := pq.ParseTimestampMicros(x)
				if err != nil {
					return scalar{}, false
				}
				if isMax {
					us += 999
				}
				return scalar{i: us}, true
			}
			d, err := time.Parse("2006-01-02", x)
			if err != nil {
				return scalar{}, false
			}
			return scalar{i: pq.FloorDiv(d.Unix(), 86400)}, true
		}
	case classFloat:
		if x, ok := v.(json.Number); ok {
			f, err := strconv.ParseFloat(string(x), 64)
			return scalar{f: f}, err == nil
		}
	case classBytes:
		if x, ok := v.(string); ok {
			return scalar{b: []byte(x)}, true
		}
	case classDecimal:
		if x, ok := v.(json.Number); ok {
			r, ok := new(big.Rat).SetString(string(x))
			return scalar{r: r}, ok
		}
	}
	return scalar{}, false
}

// nullOutcomes adds the null outcome when some rows may be null, and reports whether every
// row is null.
func (ci colInfo) nullOutcomes() (uint8, bool) {
	if ci.nulls == 0 {
		return 0, false
	}
	if ci.nulls > 0 && ci.rows >= 0 && ci.nulls >= ci.rows {
		return outNull, true
	}
	return outNull, false
}

func (b *boundCmp) file(fi *fileInfo) uint8 {
	ci := fi.info(b.ref)
	set, allNull := ci.nullOutcomes()
	if allNull {
		return set
	}
	if b.nan {
		return set | outFalse
	}
	if !ci.hasMin || !ci.hasMax {
		return set | outTrue | outFalse
	}
	lo := compare(b.ref.class, ci.min, b.lit)
	hi := compare(b.ref.class, ci.max, b.lit)
	// A float column's statistics leave NaNs out, so min = max = lit does not make every row
	// equal to lit.
	exact := lo == 0 && hi == 0 && compare(b.ref.class, ci.min, ci.max) == 0 && b.ref.class != classFloat
	var canT, canF bool
	switch b.op {
	case OpEq:
		canT, canF = lo <= 0 && hi >= 0, !exact
	case OpLt:
		canT, canF = lo < 0, hi >= 0
	case OpLe:
		canT, canF = lo <= 0, hi > 0
	case OpGt:
		canT, canF = hi > 0, lo <= 0
	case OpGe:
		canT, canF = hi >= 0, lo < 0
	}
	if canT {
		set |= outTrue
	}
	if canF {
		set |= outFalse
	}
	return set
}

func (b *boundIn) file(fi *fileInfo) uint8 {
	ci := fi.info(b.ref)
	set, allNull := ci.nullOutcomes()
	if allNull {
		return set
	}
	if !ci.hasMin || !ci.hasMax {
		return set | outTrue | outFalse
	}
	// A float column's statistics leave NaNs out, so min = max does not make every row that
	// value.
	single := compare(b.ref.class, ci.min, ci.max) == 0 && b.ref.class != classFloat
	for _, l := range b.lits {
		if compare(b.ref.class, ci.min, l) <= 0 && compare(b.ref.class, ci.max, l) >= 0 {
			set |= outTrue
			if !single {
				set |= outFalse
			}
			return set
		}
	}
	return set | outFalse
}

func (b *boundNull) file(fi *fileInfo) uint8 {
	ci := fi.info(b.ref)
	var isNull, notNull bool
	switch {
	case ci.nulls < 0:
		isNull, notNull = true, true
	case ci.nulls == 0:
		notNull = true
	default:
		isNull = true
		notNull = ci.rows < 0 || ci.nulls < ci.rows
	}
	if b.not {
		isNull, notNull = notNull, isNull
	}
	var set uint8
	if isNull {
		set |= outTrue
	}
	if notNull {
		set |= outFalse
	}
	return set
}

func (b *boundNot) file(fi *fileInfo) uint8 { return not3(b.arg.file(fi)) }

func (b *boundLogic) file(fi *fileInfo) uint8 {
	set := outFalse
	if b.and {
		set = outTrue
	}
	for _, a := range b.args {
		set = combine(b.and, set, a.file(fi))
	}
	return set
}

// Predicate is an Expr bound to a table schema and its partition columns.
type Predicate struct {
	expr      Expr
	b         bound
	schema    *txlog.StructType
	partCols  []string
	onlyParts bool
}

// Bind checks e against the schema (column names, literal types).
func Bind(e Expr, schema *txlog.StructType, partitionCols []string) (*Predicate, error) {
	b, err := e.bind(schema)
	if err != nil {
		return nil, err
	}
	p := &Predicate{expr: e, b: b, schema: schema, partCols: partitionCols, onlyParts: true}
	parts := map[string]bool{}
	for _, c := range partitionCols {
		parts[strings.ToLower(c)] = true
	}
	b.cols(func(r *colRef) {
		if len(r.path) != 1 || !parts[strings.ToLower(r.name)] {
			p.onlyParts = false
		}
	})
	return p, nil
}

// String renders the predicate as SQL text.
func (p *Predicate) String() string { return p.expr.String() }

// TopFields calls f with the index, in the bound schema, of the top-level field of every
// column the predicate reads (once per column reference), so that a scan reads those fields too.
func (p *Predicate) TopFields(f func(i int)) { p.b.cols(func(r *colRef) { f(r.path[0]) }) }

// OnlyPartitionColumns reports whether the predicate reads partition columns only.
func (p *Predicate) OnlyPartitionColumns() bool { return p.onlyParts }

// MayMatch reports whether a file may hold a row for which the predicate is true, from its
// partition values and stats. False means the file can be skipped.
func (p *Predicate) MayMatch(add *txlog.Add) bool {
	return p.b.file(newFileInfo(p.schema, p.partCols, add))&outTrue != 0
}

// AllMatch reports whether every row of the file certainly satisfies the predicate.
func (p *Predicate) AllMatch(add *txlog.Add) bool {
	return p.b.file(newFileInfo(p.schema, p.partCols, add)) == outTrue
}

// MayMatchPartition evaluates the predicate on partition values alone (for txlog's read
// predicates and conflict checks): true unless the partition certainly holds no match.
func (p *Predicate) MayMatchPartition(values map[string]*string) bool {
	return p.MayMatch(&txlog.Add{PartitionValues: values})
}

// Eval returns, for every row of b (a batch of the bound schema), whether the predicate is
// true.
func (p *Predicate) Eval(b *pq.Batch) []bool {
	out := make([]uint8, b.Len())
	p.b.rows(b, out)
	keep := make([]bool, len(out))
	for i, v := range out {
		keep[i] = v == outTrue
	}
	return keep
}

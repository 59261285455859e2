package sqlexpr

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// This file holds the nodes ParseSQL builds (sql*), their Spark typing (bind) and the typed
// tree that evaluates them column by column (sqlexec.go).

// maxSQLDecimal is the widest decimal, as in Spark: unscaled values are 128-bit.
const maxSQLDecimal = 38

type sqlKind uint8

const (
	kNull sqlKind = iota
	kBool
	kInt // byte, short and int: 32-bit arithmetic that wraps, as Spark's
	kLong
	kDouble
	kDecimal
	kString
	kBinary
	kDate      // days since the epoch
	kTimestamp // microseconds since the epoch (timestamp and timestamp_ntz)
	kInterval  // a day-time interval in microseconds
)

type sqlType struct {
	k    sqlKind
	p, s int // decimal precision and scale
}

func (t sqlType) String() string {
	switch t.k {
	case kNull:
		return "void"
	case kBool:
		return "boolean"
	case kInt:
		return "int"
	case kLong:
		return "bigint"
	case kDouble:
		return "double"
	case kDecimal:
		return fmt.Sprintf("decimal(%d,%d)", t.p, t.s)
	case kString:
		return "string"
	case kBinary:
		return "binary"
	case kDate:
		return "date"
	case kTimestamp:
		return "timestamp"
	}
	return "interval day to second"
}

func (t sqlType) numeric() bool {
	return t.k == kInt || t.k == kLong || t.k == kDouble || t.k == kDecimal
}

// intDecimal is the decimal type an integral type widens to (Spark: int -> decimal(10,0),
// bigint -> decimal(20,0)).
func intDecimal(t sqlType) sqlType {
	switch t.k {
	case kInt:
		return sqlType{k: kDecimal, p: 10}
	case kLong:
		return sqlType{k: kDecimal, p: 20}
	}
	return t
}

// widerNumeric is the type both numeric operands are cast to (Spark's findTightestCommonType
// and DecimalPrecision for comparisons).
func widerNumeric(a, b sqlType) sqlType {
	switch {
	case a.k == kDouble || b.k == kDouble:
		return sqlType{k: kDouble}
	case a.k == kDecimal || b.k == kDecimal:
		a, b = intDecimal(a), intDecimal(b)
		s := max(a.s, b.s)
		return sqlType{k: kDecimal, p: min(max(a.p-a.s, b.p-b.s)+s, 38), s: s}
	case a.k == kLong || b.k == kLong:
		return sqlType{k: kLong}
	}
	return sqlType{k: kInt}
}

// commonEitherWay is where cmpCommon and widerCommon agree: NULL takes the other side's
// type, two numbers widen (two decimals too), a date meets a timestamp as a timestamp, and
// two of the same other type stay that type; ok is false for any other pair.
func commonEitherWay(a, b sqlType) (sqlType, bool) {
	switch {
	case a.k == kNull:
		return b, true
	case b.k == kNull:
		return a, true
	case a.numeric() && b.numeric():
		return widerNumeric(a, b), true
	case a.k == kDate && b.k == kTimestamp, a.k == kTimestamp && b.k == kDate:
		return sqlType{k: kTimestamp}, true
	case a.k == b.k:
		return a, true
	}
	return sqlType{}, false
}

// cmpCommon is the type both sides of a comparison are cast to (Spark's
// findCommonTypeForBinaryComparison): numbers widen, a string meets a date, timestamp or
// number as that type (as a double against a decimal), a date meets a timestamp as a
// timestamp.
func cmpCommon(a, b sqlType) (sqlType, bool) {
	if t, ok := commonEitherWay(a, b); ok {
		return t, true
	}
	switch {
	case a.k == kString && b.k == kDecimal, a.k == kDecimal && b.k == kString:
		return sqlType{k: kDouble}, true
	case a.k == kString && b.k != kBinary && b.k != kInterval:
		return b, true
	case b.k == kString && a.k != kBinary && a.k != kInterval:
		return a, true
	}
	return sqlType{}, false
}

// widerCommon is the type of IN lists and coalesce (Spark's findWiderCommonType): numbers
// widen, dates widen to timestamps, and a string meets any other atomic type as a string.
func widerCommon(a, b sqlType) (sqlType, bool) {
	if t, ok := commonEitherWay(a, b); ok {
		return t, true
	}
	switch {
	case a.k == kString && b.k != kBinary && b.k != kBool && b.k != kInterval,
		b.k == kString && a.k != kBinary && a.k != kBool && a.k != kInterval:
		return sqlType{k: kString}, true
	}
	return sqlType{}, false
}

// Parsed nodes.

type sqlNode interface {
	// writeSQL renders the node fully parenthesized into sb (see sqlPred.Canonical).
	writeSQL(sb *strings.Builder)
	pos() int
}

// sqlText renders n: one builder for the whole tree, so that a long chain (a OR b OR ...)
// costs time linear in its size.
func sqlText(n sqlNode) string {
	var sb strings.Builder
	n.writeSQL(&sb)
	return sb.String()
}

type nCol struct {
	path []string
	at   int
}

type nLit struct {
	t    sqlType
	i    int64         // int, bigint, date, timestamp, interval
	dec  pq.Decimal128 // decimal unscaled
	f    float64
	s    string
	b    bool
	null bool
	at   int
}

type nUnary struct {
	op string // "-" or "NOT"
	x  sqlNode
	at int
}

type nBin struct {
	op   string // + - * / % = <> < <= > >= AND OR
	l, r sqlNode
	at   int
}

type nIsNull struct {
	x   sqlNode
	not bool
	at  int
}

type nIn struct {
	x    sqlNode
	list []sqlNode
	not  bool
	at   int
}

type nBetween struct {
	x, lo, hi sqlNode
	not       bool
	at        int
}

type nLike struct {
	x, pat sqlNode
	not    bool
	at     int
}

type nCall struct {
	name string
	args []sqlNode
	at   int
}

func (n *nCol) pos() int     { return n.at }
func (n *nLit) pos() int     { return n.at }
func (n *nUnary) pos() int   { return n.at }
func (n *nBin) pos() int     { return n.l.pos() }
func (n *nIsNull) pos() int  { return n.x.pos() }
func (n *nIn) pos() int      { return n.x.pos() }
func (n *nBetween) pos() int { return n.x.pos() }
func (n *nLike) pos() int    { return n.x.pos() }
func (n *nCall) pos() int    { return n.at }

func quoteIdent(s string) string {
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) {
			return "`" + s + "`"
		}
	}
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return "`" + s + "`"
	}
	return s
}

func (n *nCol) writeSQL(sb *strings.Builder) {
	for i, p := range n.path {
		if i > 0 {
			sb.WriteByte('.')
		}
		sb.WriteString(quoteIdent(p))
	}
}

func (n *nLit) writeSQL(sb *strings.Builder) { sb.WriteString(n.literalSQL()) }

func (n *nLit) literalSQL() string {
	switch n.t.k {
	case kNull:
		return "NULL"
	case kBool:
		if n.b {
			return "TRUE"
		}
		return "FALSE"
	case kInt:
		return strconv.FormatInt(n.i, 10)
	case kLong:
		return strconv.FormatInt(n.i, 10) + "L"
	case kDouble:
		return strconv.FormatFloat(n.f, 'g', -1, 64) + "D"
	case kDecimal:
		return pq.FormatDecimal(n.dec, n.t.s) + "BD"
	case kString:
		return "'" + sqlStringEscaper.Replace(n.s) + "'"
	case kDate:
		return "DATE '" + formatDate(n.i) + "'"
	case kTimestamp:
		return "TIMESTAMP '" + formatTimestampSQL(n.i) + "'"
	}
	return "INTERVAL '" + pq.FormatDecimal(pq.Decimal128{Hi: n.i >> 63, Lo: uint64(n.i)}, 6) + "' SECOND"
}

var sqlStringEscaper = strings.NewReplacer(`\`, `\\`, `'`, `\'`)

func (n *nUnary) writeSQL(sb *strings.Builder) {
	if n.op == "NOT" {
		sb.WriteString("(NOT ")
	} else {
		sb.WriteString("(- ")
	}
	n.x.writeSQL(sb)
	sb.WriteByte(')')
}

func (n *nBin) writeSQL(sb *strings.Builder) {
	sb.WriteByte('(')
	n.l.writeSQL(sb)
	sb.WriteString(" " + n.op + " ")
	n.r.writeSQL(sb)
	sb.WriteByte(')')
}

func (n *nIsNull) writeSQL(sb *strings.Builder) {
	sb.WriteByte('(')
	n.x.writeSQL(sb)
	if n.not {
		sb.WriteString(" IS NOT NULL)")
	} else {
		sb.WriteString(" IS NULL)")
	}
}

func notWord(not bool) string {
	if not {
		return " NOT"
	}
	return ""
}

func (n *nIn) writeSQL(sb *strings.Builder) {
	sb.WriteByte('(')
	n.x.writeSQL(sb)
	sb.WriteString(notWord(n.not) + " IN (")
	for i, v := range n.list {
		if i > 0 {
			sb.WriteString(", ")
		}
		v.writeSQL(sb)
	}
	sb.WriteString("))")
}

func (n *nBetween) writeSQL(sb *strings.Builder) {
	sb.WriteByte('(')
	n.x.writeSQL(sb)
	sb.WriteString(notWord(n.not) + " BETWEEN ")
	n.lo.writeSQL(sb)
	sb.WriteString(" AND ")
	n.hi.writeSQL(sb)
	sb.WriteByte(')')
}

func (n *nLike) writeSQL(sb *strings.Builder) {
	sb.WriteByte('(')
	n.x.writeSQL(sb)
	sb.WriteString(notWord(n.not) + " LIKE ")
	n.pat.writeSQL(sb)
	sb.WriteByte(')')
}

func (n *nCall) writeSQL(sb *strings.Builder) {
	sb.WriteString(n.name + "(")
	for i, a := range n.args {
		if i > 0 {
			sb.WriteString(", ")
		}
		a.writeSQL(sb)
	}
	sb.WriteByte(')')
}

func formatDate(days int64) string { return time.Unix(days*86400, 0).UTC().Format("2006-01-02") }

// formatTimestampSQL is Spark's cast of a timestamp to a string: no zone, the fraction
// without trailing zeros.
func formatTimestampSQL(us int64) string {
	return time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.999999")
}

// sqlPred is a parsed SQL boolean expression: an Expr of the table tree.
type sqlPred struct {
	root sqlNode
	text string
}

func (e *sqlPred) String() string { return strings.TrimSpace(e.text) }

// Canonical renders the expression fully parenthesized, every literal typed: two texts with
// the same canonical form mean the same.
func (e *sqlPred) Canonical() string { return sqlText(e.root) }

func (e *sqlPred) bind(s *txlog.StructType) (bound, error) {
	return e.bindContext(context.Background(), s)
}

func (e *sqlPred) bindContext(ctx context.Context, s *txlog.StructType) (bound, error) {
	root, usesNow, err := e.bindChecked(ctx, s, wantBool)
	if err != nil {
		return nil, err
	}
	b := &boundSQL{root: root, refs: map[string]*colRef{}, usesNow: usesNow}
	collectCols(e.root, func(c *nCol) {
		name := strings.Join(c.path, ".")
		b.refs[name] = &colRef{name: name, path: make([]int, len(c.path))}
	})
	return b, nil
}

// SQLColumns lists the top-level columns a SQL expression from ParseSQL reads, as written
// (names match case-insensitively), each once; nil for other expressions.
func SQLColumns(e Expr) []string {
	sp, ok := e.(*sqlPred)
	if !ok {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	collectCols(sp.root, func(c *nCol) {
		if k := strings.ToLower(c.path[0]); !seen[k] {
			seen[k] = true
			out = append(out, c.path[0])
		}
	})
	return out
}

func collectCols(n sqlNode, f func(*nCol)) {
	switch x := n.(type) {
	case *nCol:
		f(x)
	case *nUnary:
		collectCols(x.x, f)
	case *nBin:
		collectCols(x.l, f)
		collectCols(x.r, f)
	case *nIsNull:
		collectCols(x.x, f)
	case *nIn:
		collectCols(x.x, f)
		for _, v := range x.list {
			collectCols(v, f)
		}
	case *nBetween:
		collectCols(x.x, f)
		collectCols(x.lo, f)
		collectCols(x.hi, f)
	case *nLike:
		collectCols(x.x, f)
		collectCols(x.pat, f)
	case *nCall:
		for _, a := range x.args {
			collectCols(a, f)
		}
	case *nCast:
		collectCols(x.x, f)
	case *nField:
		collectCols(x.x, f)
	case *nCase:
		for _, a := range append(append([]sqlNode{x.operand, x.els}, x.whens...), x.vals...) {
			if a != nil {
				collectCols(a, f)
			}
		}
	}
}

// boundSQL is a SQL expression bound to a schema. It knows nothing of files' stats: a file
// may always hold any outcome.
type boundSQL struct {
	root    enode
	refs    map[string]*colRef
	usesNow bool
}

func (b *boundSQL) rows(bt *pq.Batch, out []uint8) {
	ctx := &evalCtx{b: bt, n: bt.Len(), nowUs: time.Now().UnixMicro()}
	v := b.root.eval(ctx)
	for i := range out {
		switch {
		case v.isNull(i):
			out[i] |= outNull
		case v.b[i]:
			out[i] |= outTrue
		default:
			out[i] |= outFalse
		}
	}
}

func (b *boundSQL) file(*fileInfo) uint8 { return outAll }

func (b *boundSQL) cols(add func(*colRef)) {
	for _, r := range b.refs {
		add(r)
	}
}

// Program is a SQL expression (from ParseSQL) bound to a schema, for repeated evaluation
// over batches of that schema: each node computes a whole column of values and nulls, not
// one row at a time. A Program keeps its buffers between calls and is not safe for
// concurrent use.
type Program struct {
	text    string
	schema  *txlog.StructType
	root    enode
	usesNow bool
}

// CompileSQL binds a parsed SQL expression to schema: columns are resolved (case-insensitive,
// nested fields with dots), Spark's implicit casts are inserted, and a type mismatch is an
// error (ErrBadPredicate) naming its position.
func CompileSQL(e Expr, schema *txlog.StructType) (*Program, error) {
	return CompileSQLContext(context.Background(), e, schema)
}

// CompileSQLContext is CompileSQL that stops with ctx's error when ctx ends: it checks ctx
// every few thousand nodes.
func CompileSQLContext(ctx context.Context, e Expr, schema *txlog.StructType) (*Program, error) {
	return compileProgram(ctx, e, schema, wantBool)
}

// wantBool refuses an expression n of type t that is not a boolean (or an untyped NULL).
func wantBool(n sqlNode, t sqlType) error {
	if t.k != kBool && t.k != kNull {
		return typeErr(n, "a boolean expression, found %s", t)
	}
	return nil
}

// compileProgram binds e, a SQL expression from ParseSQL, to schema as a Program whose type
// check accepts (it returns the error for any other), stopping with ctx's error when ctx ends.
func compileProgram(ctx context.Context, e Expr, schema *txlog.StructType, check func(sqlNode, sqlType) error) (*Program, error) {
	sp, ok := e.(*sqlPred)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a SQL expression from ParseSQL", ErrBadPredicate, e)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	root, usesNow, err := sp.bindChecked(ctx, schema, check)
	if err != nil {
		return nil, err
	}
	return &Program{text: sp.String(), schema: schema, root: root, usesNow: usesNow}, nil
}

// bindChecked binds e's tree to s (stopping with ctx's error when ctx ends) and refuses a
// result whose type check does not accept: the one binding step of a predicate and of a
// Program. usesNow says whether the tree reads current_timestamp().
func (e *sqlPred) bindChecked(ctx context.Context, s *txlog.StructType, check func(sqlNode, sqlType) error) (root enode, usesNow bool, err error) {
	bd := &sqlBinder{ctx: ctx, s: s}
	if root, err = bd.bind(e.root); err != nil {
		return nil, false, err
	}
	if err := check(e.root, root.typ()); err != nil {
		return nil, false, err
	}
	return root, bd.usesNow, nil
}

// Schema is the schema the program was bound to.
func (p *Program) Schema() *txlog.StructType { return p.schema }

// Eval evaluates the program over every row of b (a batch of the bound schema), with
// current_timestamp() = now. value[i] is the result of row i and null[i] whether it is NULL
// (null is nil when no row is). The slices belong to the program until the next Eval.
func (p *Program) Eval(b *pq.Batch, now time.Time) (value, null []bool) {
	ctx := &evalCtx{b: b, n: b.Len(), nowUs: now.UnixMicro()}
	v := p.root.eval(ctx)
	return v.b[:ctx.n], v.nullSlice(ctx.n)
}

func typeErr(n sqlNode, format string, args ...any) error {
	return fmt.Errorf("%w: at position %d: %s: expected %s", ErrBadPredicate, n.pos(), errorSQL(n), fmt.Sprintf(format, args...))
}

// maxErrorSQL bounds the part of an expression an error quotes: the position says where
// the rest is.
const maxErrorSQL = 200

// errorSQL is n rendered for an error message, cut after maxErrorSQL bytes.
func errorSQL(n sqlNode) string { return shortenSQL(sqlText(n)) }

func shortenSQL(s string) string {
	if len(s) <= maxErrorSQL {
		return s
	}
	cut := maxErrorSQL
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// columnType maps a Delta type to the evaluator's.
func columnType(t txlog.DataType) (sqlType, bool) {
	switch x := t.(type) {
	case txlog.DecimalType:
		return sqlType{k: kDecimal, p: x.Precision, s: x.Scale}, true
	case txlog.PrimitiveType:
		switch x.Name {
		case txlog.TypeByte, txlog.TypeShort, txlog.TypeInteger:
			return sqlType{k: kInt}, true
		case txlog.TypeLong:
			return sqlType{k: kLong}, true
		case txlog.TypeFloat, txlog.TypeDouble:
			return sqlType{k: kDouble}, true
		case txlog.TypeBoolean:
			return sqlType{k: kBool}, true
		case txlog.TypeString:
			return sqlType{k: kString}, true
		case txlog.TypeBinary:
			return sqlType{k: kBinary}, true
		case txlog.TypeDate:
			return sqlType{k: kDate}, true
		case txlog.TypeTimestamp, txlog.TypeTimestampNTZ:
			return sqlType{k: kTimestamp}, true
		}
	}
	return sqlType{}, false
}

// sqlBinder binds parsed nodes to a schema (bind), checking its context as it goes.
type sqlBinder struct {
	ctx     context.Context
	s       *txlog.StructType
	steps   int
	usesNow bool // the expression reads current_timestamp()
}

func (bd *sqlBinder) bind(n sqlNode) (enode, error) {
	bd.steps++
	if bd.steps%ctxCheckEvery == 0 {
		if err := bd.ctx.Err(); err != nil {
			return nil, err
		}
	}
	switch x := n.(type) {
	case *nCol:
		return bindColumn(x, bd.s)
	case *nLit:
		return &litNode{lit: x}, nil
	case *nUnary:
		a, err := bd.bind(x.x)
		if err != nil {
			return nil, err
		}
		if x.op == "NOT" {
			if a.typ().k != kBool && a.typ().k != kNull {
				return nil, typeErr(x.x, "a boolean operand of NOT, found %s", a.typ())
			}
			return &notNode{x: castTo(a, sqlType{k: kBool})}, nil
		}
		if a.typ().k == kString {
			a = castTo(a, sqlType{k: kDouble})
		}
		if !a.typ().numeric() && a.typ().k != kInterval && a.typ().k != kNull {
			return nil, typeErr(x.x, "a number or an interval after unary minus, found %s", a.typ())
		}
		if a.typ().k == kNull {
			a = castTo(a, sqlType{k: kDouble})
		}
		return &signNode{unaryNode: unaryNode{x: a}}, nil
	case *nBin:
		l, err := bd.bind(x.l)
		if err != nil {
			return nil, err
		}
		r, err := bd.bind(x.r)
		if err != nil {
			return nil, err
		}
		return bindBinary(x, l, r)
	case *nIsNull:
		a, err := bd.bind(x.x)
		if err != nil {
			return nil, err
		}
		return &isNullNode{x: a, not: x.not}, nil
	case *nIn:
		return bd.bindIn(x)
	case *nBetween:
		return bd.bindBetween(x)
	case *nLike:
		a, err := bd.bind(x.x)
		if err != nil {
			return nil, err
		}
		p, err := bd.bind(x.pat)
		if err != nil {
			return nil, err
		}
		for _, side := range []struct {
			e enode
			n sqlNode
		}{{a, x.x}, {p, x.pat}} {
			if k := side.e.typ().k; k == kBinary || k == kInterval || k == kBool {
				return nil, typeErr(side.n, "a string in LIKE, found %s", side.e.typ())
			}
		}
		var e enode = newLikeNode(castTo(a, sqlType{k: kString}), castTo(p, sqlType{k: kString}))
		if x.not {
			e = &notNode{x: e}
		}
		return e, nil
	case *nCall:
		return bd.bindCall(x)
	case *nCase:
		return bd.bindCase(x)
	case *nCast:
		return bd.bindCast(x)
	case *nField:
		return bd.bindField(x)
	}
	return nil, fmt.Errorf("%w: unknown node %T", ErrBadPredicate, n)
}

func bindColumn(c *nCol, s *txlog.StructType) (enode, error) {
	name := shortenSQL(sqlText(c))
	st := s
	var path []int
	var typ txlog.DataType
	for k, p := range c.path {
		if st == nil {
			return nil, fmt.Errorf("%w: at position %d: column %s: %s is not a struct", ErrBadPredicate, c.at, name, strings.Join(c.path[:k], "."))
		}
		i := st.FieldIndex(p)
		if i < 0 {
			for j := range st.Fields {
				if strings.EqualFold(st.Fields[j].Name, p) {
					i = j
					break
				}
			}
		}
		if i < 0 {
			names := make([]string, len(st.Fields))
			for j, f := range st.Fields {
				names[j] = f.Name
			}
			return nil, fmt.Errorf("%w: at position %d: column %s does not exist (expected one of: %s)", ErrBadPredicate, c.at, name, strings.Join(names, ", "))
		}
		path = append(path, i)
		typ = st.Fields[i].Type
		st, _ = typ.(*txlog.StructType)
	}
	t, ok := columnType(typ)
	if !ok {
		return nil, fmt.Errorf("%w: at position %d: column %s has type %s, which expressions cannot use (expected a number, string, binary, boolean, date or timestamp)",
			ErrBadPredicate, c.at, name, typ.TypeName())
	}
	return &colNode{path: path, t: t}, nil
}

var arithNames = map[string]string{"+": "addition", "-": "subtraction", "*": "multiplication", "/": "division", "%": "remainder"}

func bindBinary(x *nBin, l, r enode) (enode, error) {
	lt, rt := l.typ(), r.typ()
	switch x.op {
	case "AND", "OR":
		for _, side := range []struct {
			e enode
			n sqlNode
		}{{l, x.l}, {r, x.r}} {
			if k := side.e.typ().k; k != kBool && k != kNull {
				return nil, typeErr(side.n, "a boolean operand of %s, found %s", x.op, side.e.typ())
			}
		}
		return &logicNode{and: x.op == "AND", l: castTo(l, sqlType{k: kBool}), r: castTo(r, sqlType{k: kBool})}, nil
	case "=", "<>", "<", "<=", ">", ">=":
		t, ok := cmpCommon(lt, rt)
		if !ok {
			return nil, typeErr(x, "comparable operands, found %s %s %s", lt, x.op, rt)
		}
		if t.k == kNull {
			t = sqlType{k: kBool}
		}
		return newCmpNode(x.op, castTo(l, t), castTo(r, t)), nil
	}
	// Arithmetic.
	if lt.k == kString {
		lt, l = sqlType{k: kDouble}, castTo(l, sqlType{k: kDouble})
	}
	if rt.k == kString {
		rt, r = sqlType{k: kDouble}, castTo(r, sqlType{k: kDouble})
	}
	if lt.k == kNull {
		lt = rt
		if lt.k == kNull || lt.k == kTimestamp || lt.k == kDate {
			lt = sqlType{k: kDouble}
		}
		l = castTo(l, lt)
	}
	if rt.k == kNull {
		rt = lt
		if x.op == "-" && (lt.k == kTimestamp || lt.k == kDate) {
			rt = sqlType{k: kInterval}
		}
		r = castTo(r, rt)
	}
	name := arithNames[x.op]
	bad := func() (enode, error) {
		return nil, typeErr(x, "operands of %s that are numbers (or a timestamp and an interval), found %s %s %s", name, lt, x.op, rt)
	}
	isTime := func(t sqlType) bool { return t.k == kTimestamp || t.k == kDate }
	switch {
	case lt.numeric() && rt.numeric():
		return bindArith(x.op, l, r)
	case (x.op == "+" || x.op == "-") && isTime(lt) && rt.k == kInterval:
		return &arithNode{op: x.op, l: castTo(l, sqlType{k: kTimestamp}), r: r, t: sqlType{k: kTimestamp}}, nil
	case x.op == "+" && lt.k == kInterval && isTime(rt):
		return &arithNode{op: x.op, l: l, r: castTo(r, sqlType{k: kTimestamp}), t: sqlType{k: kTimestamp}}, nil
	case x.op == "-" && isTime(lt) && isTime(rt):
		return &arithNode{op: x.op, l: castTo(l, sqlType{k: kTimestamp}), r: castTo(r, sqlType{k: kTimestamp}), t: sqlType{k: kInterval}}, nil
	case (x.op == "+" || x.op == "-") && lt.k == kInterval && rt.k == kInterval:
		return &arithNode{op: x.op, l: l, r: r, t: sqlType{k: kInterval}}, nil
	}
	return bad()
}

// bindArith types numeric arithmetic as Spark does without ANSI mode: integral operands of /
// become doubles; int and bigint wrap on overflow; decimals follow DecimalPrecision; a zero
// divisor gives NULL.
func bindArith(op string, l, r enode) (enode, error) {
	lt, rt := l.typ(), r.typ()
	if op == "/" && lt.k != kDecimal && rt.k != kDecimal {
		d := sqlType{k: kDouble}
		return &arithNode{op: op, l: castTo(l, d), r: castTo(r, d), t: d}, nil
	}
	w := widerNumeric(lt, rt)
	if w.k != kDecimal {
		return &arithNode{op: op, l: castTo(l, w), r: castTo(r, w), t: w}, nil
	}
	a, b := literalDecimal(l, lt), literalDecimal(r, rt)
	var t sqlType
	switch op {
	case "+", "-":
		s := max(a.s, b.s)
		t = sqlType{k: kDecimal, p: max(a.p-a.s, b.p-b.s) + s + 1, s: s}
	case "*":
		t = sqlType{k: kDecimal, p: a.p + b.p + 1, s: a.s + b.s}
	case "/":
		s := max(6, a.s+b.p+1)
		t = sqlType{k: kDecimal, p: a.p - a.s + b.s + s, s: s}
	case "%":
		s := max(a.s, b.s)
		t = sqlType{k: kDecimal, p: min(a.p-a.s, b.p-b.s) + s, s: s}
	}
	t = adjustPrecision(t)
	// Operands keep their own scales; the kernel rescales.
	return &arithNode{op: op, l: castTo(l, a), r: castTo(r, b), t: t}, nil
}

// literalDecimal is the decimal type an operand of decimal arithmetic widens to: an integer
// literal takes the fewest digits that hold it (Spark's DecimalType.fromLiteral, as
// spark.sql.legacy.literal.pickMinimumPrecision defaults), another integer its type's
// (intDecimal).
func literalDecimal(e enode, t sqlType) sqlType {
	if l, ok := e.(*litNode); ok && (t.k == kInt || t.k == kLong) && !l.lit.null && l.typ() == l.lit.t {
		v := l.lit.i
		digits := 1
		for v >= 10 || v <= -10 {
			v /= 10
			digits++
		}
		return sqlType{k: kDecimal, p: digits}
	}
	return intDecimal(t)
}

// adjustPrecision is Spark's DecimalType.adjustPrecisionScale (allowPrecisionLoss = true):
// a result wider than 38 digits keeps its integral digits and at least 6 fraction digits.
func adjustPrecision(t sqlType) sqlType {
	if t.p <= 38 {
		return t
	}
	intDigits := t.p - t.s
	minScale := min(t.s, 6)
	return sqlType{k: kDecimal, p: 38, s: max(38-intDigits, minScale)}
}

// bindBetween follows Spark, which rewrites BETWEEN to x >= lo AND x <= hi, each comparison
// typed on its own. x is bound once and evaluated once for both: binding the rewritten tree
// bound x twice, and a chain (x BETWEEN a AND b BETWEEN c AND d ...) took time exponential
// in its length.
func (bd *sqlBinder) bindBetween(x *nBetween) (enode, error) {
	xe, err := bd.bind(x.x)
	if err != nil {
		return nil, err
	}
	xe = shareNode(xe)
	ge := &nBin{op: ">=", l: x.x, r: x.lo, at: x.at}
	le := &nBin{op: "<=", l: x.x, r: x.hi, at: x.at}
	bounds := [2]enode{}
	for i, cmp := range []*nBin{ge, le} {
		r, err := bd.bind(cmp.r)
		if err != nil {
			return nil, err
		}
		if bounds[i], err = bindBinary(cmp, xe, r); err != nil {
			return nil, err
		}
	}
	e, err := bindBinary(&nBin{op: "AND", l: ge, r: le, at: x.at}, bounds[0], bounds[1])
	if err != nil {
		return nil, err
	}
	if x.not {
		e = &notNode{x: e}
	}
	return e, nil
}

func (bd *sqlBinder) bindIn(x *nIn) (enode, error) {
	a, err := bd.bind(x.x)
	if err != nil {
		return nil, err
	}
	t := a.typ()
	list := make([]enode, len(x.list))
	for i, v := range x.list {
		if list[i], err = bd.bind(v); err != nil {
			return nil, err
		}
		w, ok := widerCommon(t, list[i].typ())
		if !ok {
			return nil, typeErr(v, "a value of a type comparable with %s in IN, found %s", a.typ(), list[i].typ())
		}
		t = w
	}
	if t.k == kNull {
		t = sqlType{k: kBool}
	}
	n := &inNode{x: castTo(a, t), not: x.not}
	for _, v := range list {
		n.list = append(n.list, castTo(v, t))
	}
	return n, nil
}

// castTo inserts Spark's implicit cast of e to t (none when e already has type t).
func castTo(e enode, t sqlType) enode {
	if e.typ() == t {
		return e
	}
	if lit, ok := e.(*litNode); ok {
		// Literals are cast once, at bind time.
		return &litNode{lit: lit.lit, t: t}
	}
	return &castNode{x: e, t: t}
}

// javaDoubleString is Spark's cast of a double to a string.
func javaDoubleString(f float64) string { return pq.JavaDouble(f, 64) }

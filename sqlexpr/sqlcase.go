package sqlexpr

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/medallion-lake/medallion/pq"
)

// CASE WHEN and CAST(x AS type): their parsing, canonical text and binding.

type nCase struct {
	operand     sqlNode // CASE operand WHEN value ...; nil for CASE WHEN cond ...
	whens, vals []sqlNode
	els         sqlNode
	at          int
}

type nCast struct {
	x  sqlNode
	t  sqlType
	at int
}

func (n *nCase) pos() int { return n.at }
func (n *nCast) pos() int { return n.at }

func (n *nCase) writeSQL(sb *strings.Builder) {
	sb.WriteString("CASE")
	if n.operand != nil {
		sb.WriteByte(' ')
		n.operand.writeSQL(sb)
	}
	for i, w := range n.whens {
		sb.WriteString(" WHEN ")
		w.writeSQL(sb)
		sb.WriteString(" THEN ")
		n.vals[i].writeSQL(sb)
	}
	if n.els != nil {
		sb.WriteString(" ELSE ")
		n.els.writeSQL(sb)
	}
	sb.WriteString(" END")
}

func (n *nCast) writeSQL(sb *strings.Builder) {
	sb.WriteString("CAST(")
	n.x.writeSQL(sb)
	sb.WriteString(" AS " + n.t.String() + ")")
}

func (p *sqlParser) caseExpr(t token) (sqlNode, error) {
	if err := p.enter(t); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	n := &nCase{at: t.pos}
	if !p.peek().is("when") {
		op, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		n.operand = op
	}
	for p.accept("when") {
		w, v, err := p.parseJoined(p.parseOr, "then", "THEN after the WHEN of CASE")
		if err != nil {
			return nil, err
		}
		n.whens, n.vals = append(n.whens, w), append(n.vals, v)
	}
	if len(n.whens) == 0 {
		return nil, p.errAt(p.peek(), "WHEN in CASE")
	}
	if p.accept("else") {
		e, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		n.els = e
	}
	if !p.accept("end") {
		return nil, p.errAt(p.peek(), "WHEN, ELSE or END in CASE")
	}
	return n, nil
}

// castTypes are the type names CAST accepts.
var castTypes = map[string]sqlType{"int": {k: kInt}, "integer": {k: kInt}, "bigint": {k: kLong}, "long": {k: kLong},
	"double": {k: kDouble}, "string": {k: kString}, "boolean": {k: kBool}, "date": {k: kDate},
	"timestamp": {k: kTimestamp}, "decimal": {k: kDecimal, p: 10}, "dec": {k: kDecimal, p: 10}, "numeric": {k: kDecimal, p: 10}}

const castTypesWanted = "a type: int, bigint, double, decimal(p,s), string, boolean, date or timestamp"

func (p *sqlParser) castExpr(t token) (sqlNode, error) {
	if err := p.enter(p.next()); err != nil { // (
		return nil, err
	}
	defer func() { p.depth-- }()
	x, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if !p.accept("as") {
		return nil, p.errAt(p.peek(), "AS in CAST(... AS type)")
	}
	tt := p.next()
	typ, ok := castTypes[strings.ToLower(tt.text)]
	if tt.kind != tkIdent || !ok {
		return nil, p.errAt(tt, castTypesWanted)
	}
	if typ.k == kDecimal && p.acceptOp("(") {
		ps := p.next()
		prec, err := strconv.Atoi(ps.text)
		if ps.kind != tkNumber || err != nil || prec < 1 || prec > maxSQLDecimal {
			return nil, p.errAt(ps, "a decimal precision from 1 to 38")
		}
		typ.p = prec
		if p.acceptOp(",") {
			ss := p.next()
			sc, err := strconv.Atoi(ss.text)
			if ss.kind != tkNumber || err != nil || sc > prec {
				return nil, p.errAt(ss, "a decimal scale from 0 to the precision")
			}
			typ.s = sc
		}
		if err := p.expectOp(")", ") after the decimal's precision and scale"); err != nil {
			return nil, err
		}
	}
	if err := p.expectOp(")", ") after CAST(... AS type"); err != nil {
		return nil, err
	}
	return &nCast{x: x, t: typ, at: t.pos}, nil
}

func (bd *sqlBinder) bindCase(c *nCase) (enode, error) {
	var op enode
	var err error
	if c.operand != nil {
		if op, err = bd.bind(c.operand); err != nil {
			return nil, err
		}
		op = shareNode(op)
	}
	var conds, vals []enode
	var t sqlType
	for i, w := range c.whens {
		we, err := bd.bind(w)
		if err != nil {
			return nil, err
		}
		if op != nil {
			if we, err = bindBinary(&nBin{op: "=", l: c.operand, r: w, at: w.pos()}, op, we); err != nil {
				return nil, err
			}
		} else if k := we.typ().k; k != kBool && k != kNull {
			return nil, typeErr(w, "a boolean WHEN condition, found %s", we.typ())
		}
		conds = append(conds, castTo(we, sqlType{k: kBool}))
		v, err := bd.bind(c.vals[i])
		if err != nil {
			return nil, err
		}
		vals = append(vals, v)
		if i == 0 {
			t = v.typ()
		} else if t, err = caseWider(t, v, c.vals[i]); err != nil {
			return nil, err
		}
	}
	var els enode = &litNode{lit: &nLit{t: sqlType{k: kNull}, null: true}}
	if c.els != nil {
		if els, err = bd.bind(c.els); err != nil {
			return nil, err
		}
		if t, err = caseWider(t, els, c.els); err != nil {
			return nil, err
		}
	}
	args := make([]enode, 0, 2*len(conds)+1)
	args = append(args, conds...)
	for _, v := range vals {
		args = append(args, castTo(v, t))
	}
	args = append(args, castTo(els, t))
	k := len(conds)
	return &pickNode{t: t, args: args, choose: func(r int, v []*vec) *vec {
		w := v[2*k]
		for i := range k {
			if isTrue(v[i], r) {
				w = v[k+i]
				break
			}
		}
		if w.isNull(r) {
			return nil
		}
		return w
	}}, nil
}

func caseWider(t sqlType, v enode, n sqlNode) (sqlType, error) {
	w, ok := widerCommon(t, v.typ())
	if !ok {
		return t, typeErr(n, "a value of a type that mixes with %s in CASE, found %s", t, v.typ())
	}
	return w, nil
}

// bindCast is CAST(x AS t) as Spark casts without ANSI mode: a value that does not convert
// is NULL; a pair of types Spark cannot cast between, or the engine does not, is refused.
func (bd *sqlBinder) bindCast(c *nCast) (enode, error) {
	x, err := bd.bind(c.x)
	if err != nil {
		return nil, err
	}
	from, to := x.typ(), c.t
	if from == to || from.k == kNull {
		return castTo(x, to), nil
	}
	bad := func() (enode, error) {
		return nil, typeErr(c, "a cast the engine supports, found %s to %s", from, to)
	}
	switch to.k {
	case kString:
		if from.k == kInterval {
			return bad()
		}
		return castTo(x, to), nil
	case kInt, kLong:
		return castToInteger(x, from, to, bad)
	case kDouble:
		switch {
		case from.numeric(), from.k == kString:
			return castTo(x, to), nil
		case from.k == kBool:
			return floatFn([]enode{x}, func(r int, v []*vec) (float64, bool) { return float64(b2i(v[0].b[r])), true }), nil
		}
	case kDecimal:
		return castToDecimalType(x, from, to, bad)
	case kBool:
		switch {
		case from.k == kString:
			return castTo(x, to), nil
		case from.k == kDouble:
			return boolFn([]enode{x}, func(r int, v []*vec) (bool, bool) { return v[0].f[r] != 0, true }), nil
		case from.k == kDecimal:
			return boolFn([]enode{x}, func(r int, v []*vec) (bool, bool) { return v[0].d[r] != pq.Decimal128{}, true }), nil
		case from.k == kInt, from.k == kLong:
			return boolFn([]enode{x}, func(r int, v []*vec) (bool, bool) { return v[0].i[r] != 0, true }), nil
		}
	case kDate:
		switch from.k {
		case kString, kTimestamp:
			return (&callArgs{c: &nCall{name: "cast", args: []sqlNode{c.x}, at: c.at}, args: []enode{x}}).date(0)
		}
	case kTimestamp:
		if from.k == kString || from.k == kDate {
			return castTo(x, to), nil
		}
	}
	return bad()
}

func castToInteger(x enode, from, to sqlType, bad func() (enode, error)) (enode, error) {
	bits := uint(64)
	if to.k == kInt {
		bits = 32
	}
	wrap := func(v int64) int64 {
		if bits == 32 {
			return int64(int32(v))
		}
		return v
	}
	switch from.k {
	case kInt, kLong:
		return intFn(to, []enode{x}, func(r int, v []*vec) (int64, bool) { return wrap(v[0].i[r]), true }), nil
	case kString:
		return castTo(x, to), nil
	case kBool:
		return intFn(to, []enode{x}, func(r int, v []*vec) (int64, bool) { return int64(b2i(v[0].b[r])), true }), nil
	case kDouble:
		// Java's (int) and (long): toward zero, saturating, NaN is 0.
		return intFn(to, []enode{x}, func(r int, v []*vec) (int64, bool) {
			f := v[0].f[r]
			if bits == 32 {
				switch {
				case math.IsNaN(f):
					return 0, true
				case f >= math.MaxInt32:
					return math.MaxInt32, true
				case f <= math.MinInt32:
					return math.MinInt32, true
				}
				return int64(int32(f)), true
			}
			return doubleToLong(f), true
		}), nil
	case kDecimal:
		// Spark: the integral part, its low bits (no NULL on overflow).
		return intFn(to, []enode{x}, func(r int, v []*vec) (int64, bool) {
			b := v[0].d[r].BigInt()
			b.Quo(b, pow10big(from.s))
			return wrapBits(b, bits), true
		}), nil
	case kTimestamp:
		return intFn(to, []enode{x}, func(r int, v []*vec) (int64, bool) { return wrap(floorDiv(v[0].i[r], usPerSec)), true }), nil
	}
	return bad()
}

func castToDecimalType(x enode, from, to sqlType, bad func() (enode, error)) (enode, error) {
	switch from.k {
	case kInt, kLong, kDecimal:
		return castTo(x, to), nil
	case kDouble:
		return decFn(to, []enode{x}, func(r int, v []*vec) (pq.Decimal128, bool) {
			f := v[0].f[r]
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return pq.Decimal128{}, false
			}
			d, s := javaDecimal(f)
			return decOf(roundToScale(d, s, to.s, to.s, halfUp), to.p)
		}), nil
	case kString:
		return decFn(to, []enode{x}, func(r int, v []*vec) (pq.Decimal128, bool) {
			d, s, ok := parseDecimalText(string(v[0].str(r)))
			if !ok {
				return pq.Decimal128{}, false
			}
			return decOf(roundToScale(d, s, to.s, to.s, halfUp), to.p)
		}), nil
	case kBool:
		return decFn(to, []enode{x}, func(r int, v []*vec) (pq.Decimal128, bool) {
			return decOf(new(big.Int).Mul(big.NewInt(int64(b2i(v[0].b[r]))), pow10big(to.s)), to.p)
		}), nil
	}
	return bad()
}

// parseDecimalText reads a decimal string as Spark's cast does: surrounding whitespace
// ignored, an optional sign, digits with an optional point, an optional exponent.
func parseDecimalText(s string) (*big.Int, int, bool) {
	s = strings.TrimFunc(s, isSQLSpace)
	mant, exp := s, 0
	if k := strings.IndexAny(s, "eE"); k >= 0 {
		e, err := strconv.Atoi(s[k+1:])
		if err != nil || e > 1000 || e < -1000 {
			return nil, 0, false
		}
		mant, exp = s[:k], e
	}
	sign := ""
	if mant != "" && (mant[0] == '+' || mant[0] == '-') {
		sign, mant = mant[:1], mant[1:]
	}
	whole, frac, _ := strings.Cut(mant, ".")
	if whole+frac == "" || strings.Trim(whole+frac, "0123456789") != "" {
		return nil, 0, false
	}
	v, ok := new(big.Int).SetString(strings.TrimPrefix(sign, "+")+whole+frac, 10)
	if !ok {
		return nil, 0, false
	}
	scale := len(frac) - exp
	if scale < 0 {
		v.Mul(v, pow10big(-scale))
		scale = 0
	}
	return v, scale, true
}

package sqlexpr

import (
	"fmt"
	"strings"

	"github.com/medallion-lake/medallion/pq"
)

// Binding of function calls: each function's argument types (Spark's implicit casts for its
// input types) and result type, and the node that computes it.

// callArgs is a call being bound: its parsed and bound arguments.
type callArgs struct {
	c    *nCall
	args []enode
}

// errf is a type error at argument i: "expected <what> of <function>[, found ...]".
func (ca *callArgs) errf(i int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	at := len(msg)
	if k := strings.Index(msg, ", found"); k >= 0 {
		at = k
	}
	return typeErr(ca.c.args[i], "%s", msg[:at]+" of "+ca.c.name+msg[at:])
}

// str is argument i as a string: Spark casts any atomic value to a string for a string
// parameter. Binary (which Spark's string functions also take, byte-wise) is refused.
func (ca *callArgs) str(i int) (enode, error) {
	a := ca.args[i]
	switch a.typ().k {
	case kInterval, kBinary:
		return nil, ca.errf(i, "a string argument, found %s", a.typ())
	}
	return castTo(a, sqlType{k: kString}), nil
}

// integer is argument i as an int (Spark's IntegerType parameter: a bigint is cast and wraps,
// a string is parsed, a fraction is refused here).
func (ca *callArgs) integer(i int) (enode, error) {
	a := ca.args[i]
	switch a.typ().k {
	case kInt:
		return a, nil
	case kLong:
		if l, ok := a.(*litNode); ok && l.typ() == l.lit.t && !l.lit.null {
			return &litNode{lit: &nLit{t: sqlType{k: kInt}, i: int64(int32(l.lit.i)), at: l.lit.at}}, nil
		}
		return intFn(sqlType{k: kInt}, []enode{a}, func(r int, v []*vec) (int64, bool) { return int64(int32(v[0].i[r])), true }), nil
	case kString, kNull:
		return castTo(a, sqlType{k: kInt}), nil
	}
	return nil, ca.errf(i, "an integer argument, found %s", a.typ())
}

// double is argument i as a double (numbers, strings and NULL cast).
func (ca *callArgs) double(i int) (enode, error) {
	a := ca.args[i]
	if !a.typ().numeric() && a.typ().k != kString && a.typ().k != kNull {
		return nil, ca.errf(i, "a numeric argument, found %s", a.typ())
	}
	return castTo(a, sqlType{k: kDouble}), nil
}

// numeric is argument i as a number: a string becomes a double, NULL a double.
func (ca *callArgs) numeric(i int) (enode, error) {
	a := ca.args[i]
	switch {
	case a.typ().k == kString, a.typ().k == kNull:
		return castTo(a, sqlType{k: kDouble}), nil
	case !a.typ().numeric():
		return nil, ca.errf(i, "a numeric argument, found %s", a.typ())
	}
	return a, nil
}

// litInt is argument i as an int literal (NULL: null); Spark requires a constant there.
func (ca *callArgs) litInt(i int, what string) (v int64, null bool, err error) {
	a, err := ca.integer(i)
	if err != nil {
		return 0, false, err
	}
	l := literalScalar(a)
	if l == nil {
		return 0, false, ca.errf(i, "a constant %s", what)
	}
	if l.isNull(0) {
		return 0, true, nil
	}
	return l.i[0], false, nil
}

// optLitInt is litInt of an optional argument i: def when the call does not pass it.
func (ca *callArgs) optLitInt(i int, what string, def int64) (v int64, null bool, err error) {
	if len(ca.args) <= i {
		return def, false, nil
	}
	return ca.litInt(i, what)
}

// litStr is argument i as a string literal (NULL: null).
func (ca *callArgs) litStr(i int, what string) (s string, null bool, err error) {
	a, err := ca.str(i)
	if err != nil {
		return "", false, err
	}
	l := literalScalar(a)
	if l == nil {
		return "", false, ca.errf(i, "a constant %s", what)
	}
	if l.isNull(0) {
		return "", true, nil
	}
	return string(l.str(0)), false, nil
}

// strs is every argument from i on as a string.
func (ca *callArgs) strs(from int) ([]enode, error) {
	var out []enode
	for i := from; i < len(ca.args); i++ {
		a, err := ca.str(i)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// Kernel builders: a node of type t over args whose row r is f(r, argument vectors).

func strFn(args []enode, f func(r int, a []*vec, dst []byte) ([]byte, bool)) *fnNode {
	return &fnNode{t: sqlType{k: kString}, args: args, kernel: func(n int, a []*vec, o *vec) {
		strOut(n, o, func(r int, dst []byte) ([]byte, bool) { return f(r, a, dst) })
	}}
}

func intFn(t sqlType, args []enode, f func(r int, a []*vec) (int64, bool)) *fnNode {
	return &fnNode{t: t, args: args, kernel: func(n int, a []*vec, o *vec) {
		intOut(n, o, func(r int) (int64, bool) { return f(r, a) })
	}}
}

func floatFn(args []enode, f func(r int, a []*vec) (float64, bool)) *fnNode {
	return &fnNode{t: sqlType{k: kDouble}, args: args, kernel: func(n int, a []*vec, o *vec) {
		floatOut(n, o, func(r int) (float64, bool) { return f(r, a) })
	}}
}

func boolFn(args []enode, f func(r int, a []*vec) (bool, bool)) *fnNode {
	return &fnNode{t: sqlType{k: kBool}, args: args, kernel: func(n int, a []*vec, o *vec) {
		boolOut(n, o, func(r int) (bool, bool) { return f(r, a) })
	}}
}

func decFn(t sqlType, args []enode, f func(r int, a []*vec) (pq.Decimal128, bool)) *fnNode {
	return &fnNode{t: t, args: args, kernel: func(n int, a []*vec, o *vec) {
		decOut(n, o, func(r int) (pq.Decimal128, bool) { return f(r, a) })
	}}
}

func (bd *sqlBinder) bindCall(c *nCall) (enode, error) {
	args := make([]enode, len(c.args))
	for i, a := range c.args {
		var err error
		if args[i], err = bd.bind(a); err != nil {
			return nil, err
		}
	}
	if c.name == "current_timestamp" {
		bd.usesNow = true
	}
	ca := &callArgs{c: c, args: args}
	for _, group := range []func(*callArgs) (enode, bool, error){bindStringCall, bindChoiceCall, bindMathCall, bindTimeCall, bindJSONCall} {
		if e, ok, err := group(ca); ok || err != nil {
			return e, err
		}
	}
	return nil, fmt.Errorf("%w: at position %d: unknown function %s", ErrBadPredicate, c.at, c.name)
}

package sqlexpr

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/medallion-lake/medallion/pq"
)

// from_json(json, schema) gives a struct, and the engine has no struct values: what it
// evaluates is a field of the result, from_json(j, 'a INT, b STRING').a or
// from_json(j, 'STRUCT<b: STRUCT<c: INT>>')['b'].c, compiled to a typed extraction with the
// semantics of Spark 3.5's from_json in its PERMISSIVE mode (checked against PySpark by
// tests/interop/test_sql_functions.py):
//
//   - the first JSON value of the text is read with Spark's JSON options (single-quoted
//     strings and names allowed, NaN and Infinity as numbers, no raw control characters in
//     strings, no leading zeros); text after it is ignored;
//   - a syntax error anywhere in it, or a value that is not an object, makes every field NULL
//     (an empty text or NULL gives a NULL struct: the same for a field);
//   - keys match the schema's field names exactly (the access path matches them
//     case-insensitively, as Spark resolves struct fields); a key given twice: the last
//     occurrence that converts wins;
//   - a value that does not convert to its field's type leaves that field NULL (or the value of
//     an earlier occurrence), and only that field: Spark keeps the partial results;
//   - conversions: int and bigint from integral JSON numbers in range; double from any number,
//     NaN and Infinity, and the strings "NaN", "Infinity", "+Infinity", "+INF", "-Infinity",
//     "-INF"; decimal from a number or a string in Java's BigDecimal syntax (grouping commas
//     dropped: "1,5" is 15), rounded half up to the scale, NULL beyond the precision; string from a string, or any other value as
//     compact JSON; boolean from true and false; timestamp from a string as CAST does, or
//     from an integral number of seconds (wrapping on overflow, as Spark's multiplication);
//     date from a string as CAST does, or else from a string of an int (days since the epoch).

// fjType is a type of a from_json schema.
type fjType struct {
	t      sqlType   // a type the engine evaluates; k == kNull for a struct or an unsupported type
	fields []fjField // a struct's fields
	struc  bool
	name   string // as Spark names it, for errors
}

type fjField struct {
	name string
	typ  *fjType
}

// fjTypes are the from_json field types the engine reads; fjOther are the Spark types it does
// not (a field of such a type may be in the schema, but not accessed).
var fjTypes = map[string]sqlType{"int": {k: kInt}, "integer": {k: kInt}, "bigint": {k: kLong}, "long": {k: kLong},
	"double": {k: kDouble}, "string": {k: kString}, "boolean": {k: kBool}, "bool": {k: kBool}, "date": {k: kDate},
	"timestamp": {k: kTimestamp}, "timestamp_ltz": {k: kTimestamp}}

var fjOther = map[string]string{"smallint": "smallint", "short": "smallint", "tinyint": "tinyint", "byte": "tinyint",
	"float": "float", "real": "float", "binary": "binary", "timestamp_ntz": "timestamp_ntz", "void": "void"}

const fjTypesWanted = "int, bigint, double, decimal(p,s), string, boolean, date, timestamp or a struct of them"

// fjLexer cuts a schema's DDL text into names, backquoted names, numbers and punctuation.
type fjLexer struct {
	s   string
	i   int
	tok string
	bq  bool // tok was backquoted
}

// number reads the token as a whole number from lo to hi (what names it in the error) and
// moves past it.
func (l *fjLexer) number(lo, hi int, what string) (int, error) {
	n, err := strconv.Atoi(l.tok)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("expected %s, found %q", what, l.tok)
	}
	l.next()
	return n, nil
}

func (l *fjLexer) next() bool {
	for l.i < len(l.s) && (l.s[l.i] == ' ' || l.s[l.i] == '\t' || l.s[l.i] == '\n' || l.s[l.i] == '\r') {
		l.i++
	}
	l.bq = false
	if l.i >= len(l.s) {
		l.tok = ""
		return false
	}
	start := l.i
	switch c := l.s[l.i]; {
	case c == '`':
		end := strings.IndexByte(l.s[l.i+1:], '`')
		if end < 0 {
			l.tok, l.i = l.s[l.i:], len(l.s)
			return true
		}
		l.tok, l.bq = l.s[l.i+1:l.i+1+end], true
		l.i += end + 2
		return true
	case isIdentByte(c):
		for l.i < len(l.s) && isIdentByte(l.s[l.i]) {
			l.i++
		}
	default:
		l.i++
	}
	l.tok = l.s[start:l.i]
	return true
}

func (l *fjLexer) is(s string) bool { return !l.bq && strings.EqualFold(l.tok, s) }

// parseFromJSONSchema reads from_json's schema: 'a INT, b STRING' or 'STRUCT<a: INT, ...>'.
func parseFromJSONSchema(s string) (*fjType, error) {
	l := &fjLexer{s: s}
	l.next()
	if l.is("struct") {
		save := *l
		t, err := l.typ()
		if err == nil && l.tok == "" {
			return t, nil
		}
		*l = save // a field named struct
	}
	fields, err := l.fields("")
	if err != nil {
		return nil, err
	}
	if l.tok != "" {
		return nil, fmt.Errorf("unexpected %q at offset %d", l.tok, l.i-len(l.tok))
	}
	if len(fields) == 0 {
		return nil, fmt.Errorf("no field")
	}
	return &fjType{struc: true, fields: fields, name: structName(fields)}, nil
}

// fields reads name type pairs separated by commas, up to end ("" for the end of the text,
// ">" in STRUCT<...>).
func (l *fjLexer) fields(end string) ([]fjField, error) {
	var out []fjField
	for more := l.tok != end; more; {
		if l.tok == "" || !l.bq && !isIdentByte(l.tok[0]) {
			return nil, fmt.Errorf("expected a field name, found %q", l.tok)
		}
		name := l.tok
		l.next()
		if l.tok == ":" {
			l.next()
		}
		t, err := l.typ()
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", name, err)
		}
		if l.is("not") || l.is("comment") {
			return nil, fmt.Errorf("field %s: %s is not supported in from_json's schema", name, strings.ToUpper(l.tok))
		}
		out = append(out, fjField{name: name, typ: t})
		if more = l.tok == ","; more {
			l.next() // a field must follow
		}
	}
	if l.tok != end {
		return nil, fmt.Errorf("expected , or %s, found %q", map[string]string{"": "the end", ">": ">"}[end], l.tok)
	}
	return out, nil
}

// typ reads a type; l.tok is its first token, and after it the token that follows.
func (l *fjLexer) typ() (*fjType, error) {
	name := strings.ToLower(l.tok)
	if l.bq || name == "" {
		return nil, fmt.Errorf("expected a type, found %q", l.tok)
	}
	l.next()
	switch name {
	case "struct":
		if l.tok != "<" {
			return nil, fmt.Errorf("expected < after STRUCT")
		}
		l.next()
		fields, err := l.fields(">")
		if err != nil {
			return nil, err
		}
		l.next()
		return &fjType{struc: true, fields: fields, name: structName(fields)}, nil
	case "array", "map":
		if l.tok != "<" {
			return nil, fmt.Errorf("expected < after %s", strings.ToUpper(name))
		}
		start := l.i - 1
		for depth := 0; ; {
			switch l.tok {
			case "<":
				depth++
			case ">":
				depth--
			case "":
				return nil, fmt.Errorf("unclosed %s<", strings.ToUpper(name))
			}
			l.next()
			if depth == 0 {
				break
			}
		}
		return &fjType{name: name + strings.ToLower(strings.Join(strings.Fields(l.s[start:l.i-len(l.tok)]), ""))}, nil
	case "decimal", "dec", "numeric":
		t := sqlType{k: kDecimal, p: 10}
		if l.tok == "(" {
			l.next()
			var err error
			if t.p, err = l.number(1, maxSQLDecimal, "a decimal precision from 1 to 38"); err != nil {
				return nil, err
			}
			if l.tok == "," {
				l.next()
				if t.s, err = l.number(0, t.p, "a decimal scale from 0 to the precision"); err != nil {
					return nil, err
				}
			}
			if l.tok != ")" {
				return nil, fmt.Errorf("expected ) after the decimal's precision and scale, found %q", l.tok)
			}
			l.next()
		}
		return &fjType{t: t, name: t.String()}, nil
	case "varchar", "char", "character":
		if l.tok == "(" {
			for l.tok != ")" && l.tok != "" {
				l.next()
			}
			l.next()
		}
		return &fjType{name: name + "(n)"}, nil
	}
	if t, ok := fjTypes[name]; ok {
		return &fjType{t: t, name: t.String()}, nil
	}
	if n, ok := fjOther[name]; ok {
		return &fjType{name: n}, nil
	}
	return nil, fmt.Errorf("unknown type %q (from_json reads %s)", name, fjTypesWanted)
}

func structName(fields []fjField) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f.name + ":" + f.typ.name
	}
	return "struct<" + strings.Join(parts, ",") + ">"
}

// nField is a field access on a value: x.name, x['name'] (the engine evaluates it on
// from_json(...) only).
type nField struct {
	x    sqlNode
	path []string
}

func (n *nField) pos() int { return n.x.pos() }
func (n *nField) writeSQL(sb *strings.Builder) {
	n.x.writeSQL(sb)
	for _, p := range n.path {
		sb.WriteByte('.')
		sb.WriteString(quoteIdent(p))
	}
}

// fieldAccess reads the accessors after x: .name, .`name` or ['name'], any number of them.
func (p *sqlParser) fieldAccess(x sqlNode) (sqlNode, error) {
	var path []string
	for {
		switch {
		case p.acceptOp("."):
			f := p.next()
			if f.kind != tkIdent && f.kind != tkQuoted {
				return nil, p.errAt(f, "a field name after .")
			}
			path = append(path, f.text)
		case p.acceptOp("["):
			f := p.next()
			if f.kind != tkString {
				return nil, p.errAt(f, "a field name as a string literal in [...], e.g. ['a']")
			}
			if err := p.expectOp("]", "] after the field name"); err != nil {
				return nil, err
			}
			path = append(path, f.text)
		default:
			if path == nil {
				return x, nil
			}
			return &nField{x: x, path: path}, nil
		}
	}
}

// bareFromJSON is the error of a from_json whose struct result is used as a value.
func bareFromJSON(c *nCall) error {
	eg := "from_json(j, 'a INT, b STRING').a"
	if len(c.args) == 2 {
		if l, ok := c.args[1].(*nLit); ok && l.t.k == kString {
			if t, err := parseFromJSONSchema(l.s); err == nil && len(t.fields) > 0 {
				eg = sqlText(&nField{x: c, path: []string{t.fields[0].name}})
			}
		}
	}
	return typeErr(c, "a field of it: from_json gives a struct, which the engine has no values for; access a field, e.g. %s", shortenSQL(eg))
}

// bindField binds a field access; only from_json(...) has fields.
func (bd *sqlBinder) bindField(x *nField) (enode, error) {
	c, ok := x.x.(*nCall)
	if !ok || c.name != "from_json" {
		return nil, typeErr(x, "a struct before .%s (only from_json(...) has fields in the engine)", quoteIdent(x.path[0]))
	}
	js, err := bd.bind(c.args[0])
	if err != nil {
		return nil, err
	}
	ca := &callArgs{c: c, args: []enode{js, nil}}
	if js, err = ca.str(0); err != nil {
		return nil, err
	}
	lit, ok := c.args[1].(*nLit)
	if !ok || lit.t.k != kString {
		return nil, typeErr(c.args[1], "a schema as a string literal, e.g. 'a INT, b STRING', as the second argument of from_json")
	}
	schema, err := parseFromJSONSchema(lit.s)
	if err != nil {
		return nil, typeErr(c.args[1], "a schema of from_json such as 'a INT, b STRING' or 'STRUCT<a: INT>' (%v)", err)
	}
	var names []string // the schema's names along the path
	t := schema
	for _, want := range x.path {
		if !t.struc {
			return nil, typeErr(x, "a struct before .%s, found %s", quoteIdent(want), t.name)
		}
		var found *fjField
		for i, f := range t.fields {
			if strings.EqualFold(f.name, want) {
				if found != nil {
					return nil, typeErr(x, "one field named %s, found %s and %s (ambiguous)", want, found.name, f.name)
				}
				found = &t.fields[i]
			}
		}
		if found == nil {
			var have []string
			for _, f := range t.fields {
				have = append(have, f.name)
			}
			return nil, typeErr(x, "a field of %s, found no %s (fields: %s)", t.name, want, strings.Join(have, ", "))
		}
		names = append(names, found.name)
		t = found.typ
	}
	switch {
	case t.struc:
		return nil, typeErr(x, "a field of the struct %s: the engine has no struct values; access one of its fields, e.g. %s.%s",
			t.name, shortenSQL(sqlText(x)), quoteIdent(t.fields[0].name))
	case t.t.k == kNull:
		return nil, typeErr(x, "a field of a type from_json reads in the engine (%s), found %s", fjTypesWanted, t.name)
	}
	return fromJSONNode(js, names, t.t), nil
}

// fromJSONNode extracts the field at names from each row's JSON text, as type t.
func fromJSONNode(js enode, names []string, t sqlType) enode {
	args := []enode{js}
	switch t.k {
	case kInt, kLong, kTimestamp, kDate:
		return intFn(t, args, func(r int, v []*vec) (int64, bool) {
			var out int64
			found := fromJSONField(v[0].str(r), names, func(j *jval) (ok bool) {
				switch t.k {
				case kTimestamp:
					out, ok = j.timestamp()
				case kDate:
					out, ok = j.date()
				default:
					out, ok = j.integral(t.k == kInt)
				}
				return ok
			})
			return out, found
		})
	case kDouble:
		return floatFn(args, func(r int, v []*vec) (float64, bool) {
			var out float64
			found := fromJSONField(v[0].str(r), names, func(j *jval) (ok bool) { out, ok = j.double(); return ok })
			return out, found
		})
	case kDecimal:
		return decFn(t, args, func(r int, v []*vec) (pq.Decimal128, bool) {
			var out pq.Decimal128
			found := fromJSONField(v[0].str(r), names, func(j *jval) (ok bool) { out, ok = j.decimal(t); return ok })
			return out, found
		})
	case kBool:
		return boolFn(args, func(r int, v []*vec) (bool, bool) {
			var out bool
			found := fromJSONField(v[0].str(r), names, func(j *jval) bool {
				out = j.kind == 't'
				return j.kind == 't' || j.kind == 'f'
			})
			return out, found
		})
	}
	return strFn(args, func(r int, v []*vec, dst []byte) ([]byte, bool) {
		out := dst
		found := fromJSONField(v[0].str(r), names, func(j *jval) bool {
			if j.kind == 's' {
				out = appendJavaUTF8(dst, j.text)
			} else {
				out = j.appendJSON(dst)
			}
			return true
		})
		if !found {
			return dst, false
		}
		return out, true
	})
}

// fromJSONField finds the field at path in text as from_json keeps it and hands its value to
// conv, which converts it to the field's type (false: it does not convert). It reports
// whether the field has a value (false: NULL).
func fromJSONField(text []byte, path []string, conv func(*jval) bool) bool {
	r := &jreader{s: text}
	r.ws()
	if r.i >= len(r.s) {
		return false // no JSON value: a NULL struct
	}
	root := r.value(0)
	if r.bad || root.kind != 'o' {
		return false // malformed, or not an object: every field NULL
	}
	return lastOf(root, path, conv)
}

// lastOf is fromJSONField in the object o, as Spark fills a struct with partial results: each
// key in order, its value converted to the field's type, a later occurrence replacing an
// earlier one unless it does not convert. So the answer is the last occurrence that converts:
// to a struct, an object (whatever its fields give) or null; to the leaf type, as conv says.
func lastOf(o *jval, path []string, conv func(*jval) bool) bool {
	for k := len(o.kids) - 1; k >= 0; k-- {
		m := o.kids[k]
		if m.key != path[0] {
			continue
		}
		v := m.val
		switch {
		case v.kind == 'z':
			return false
		case len(path) == 1:
			if conv(v) {
				return true
			}
		case v.kind == 'o':
			return lastOf(v, path[1:], conv)
		}
		// this occurrence does not convert: the previous one stands
	}
	return false
}

// jval is a parsed JSON value: kind 'o' object (kids), 'a' array (kids), 's' string (text
// unescaped), 'n' number (text as written), 'N' NaN or an infinity (text), 't', 'f', 'z' null.
type jval struct {
	kind byte
	text []byte
	key  string // a member's key (kids of an object)
	val  *jval  // a member's value
	kids []*jval
}

// jreader reads JSON with Spark's from_json options (Jackson with single quotes and
// non-numeric numbers allowed).
type jreader struct {
	s   []byte
	i   int
	bad bool
}

// maxJSONDepth is Jackson's default nesting limit: deeper input is malformed.
const maxJSONDepth = 1000

func (r *jreader) ws() {
	for r.i < len(r.s) && (r.s[r.i] == ' ' || r.s[r.i] == '\t' || r.s[r.i] == '\n' || r.s[r.i] == '\r') {
		r.i++
	}
}

func (r *jreader) fail() *jval {
	r.bad = true
	return &jval{kind: 'z'}
}

func (r *jreader) value(depth int) *jval {
	r.ws()
	if r.i >= len(r.s) || depth > maxJSONDepth {
		return r.fail()
	}
	switch c := r.s[r.i]; c {
	case '{', '[':
		r.i++
		v := &jval{kind: 'o'}
		closer := byte('}')
		if c == '[' {
			v.kind, closer = 'a', ']'
		}
		r.ws()
		if r.i < len(r.s) && r.s[r.i] == closer {
			r.i++
			return v
		}
		for {
			var kid *jval
			if c == '{' {
				r.ws()
				key, ok := r.str()
				r.ws()
				if !ok || r.i >= len(r.s) || r.s[r.i] != ':' {
					return r.fail()
				}
				r.i++
				kid = &jval{key: string(key), val: r.value(depth + 1)}
			} else {
				kid = r.value(depth + 1)
			}
			if r.bad {
				return kid
			}
			v.kids = append(v.kids, kid)
			r.ws()
			if r.i < len(r.s) && r.s[r.i] == ',' {
				r.i++
				continue
			}
			if r.i < len(r.s) && r.s[r.i] == closer {
				r.i++
				return v
			}
			return r.fail()
		}
	case '"', '\'':
		s, ok := r.str()
		if !ok {
			return r.fail()
		}
		return &jval{kind: 's', text: s}
	}
	for _, w := range []struct {
		word string
		kind byte
	}{{"true", 't'}, {"false", 'f'}, {"null", 'z'}, {"NaN", 'N'}, {"Infinity", 'N'}, {"-Infinity", 'N'}} {
		if strings.HasPrefix(string(r.s[r.i:min(r.i+len(w.word), len(r.s))]), w.word) {
			r.i += len(w.word)
			return &jval{kind: w.kind, text: []byte(w.word)}
		}
	}
	j := &jsonScan{s: r.s, i: r.i}
	start := r.i
	if !j.scalar() || j.i == start {
		return r.fail()
	}
	r.i = j.i
	return &jval{kind: 'n', text: r.s[start:r.i]}
}

// str reads a string in double or single quotes, unescaped; raw control characters are
// refused (Jackson's default), \' is an escape (single quotes are allowed). A lone surrogate
// is kept as get_json_object keeps it (see jsonScan.lone): a string field writes it as ?, a
// string field of an object or array escaped.
func (r *jreader) str() ([]byte, bool) {
	j := jsonScan{s: r.s, i: r.i}
	out, ok := j.quoted([]byte{}, false)
	r.i = j.i
	return out, ok
}

// appendJSON writes v as Jackson's generator copies it (from_json's string fields of
// non-string values): compact, strings re-escaped, numbers normalized, NaN and the infinities
// quoted.
func (v *jval) appendJSON(dst []byte) []byte {
	switch v.kind {
	case 'o', 'a':
		open, closer := byte('{'), byte('}')
		if v.kind == 'a' {
			open, closer = '[', ']'
		}
		dst = append(dst, open)
		for k, kid := range v.kids {
			if k > 0 {
				dst = append(dst, ',')
			}
			if v.kind == 'o' {
				dst = appendJacksonString(dst, []byte(kid.key))
				dst = append(dst, ':')
				kid = kid.val
			}
			dst = kid.appendJSON(dst)
		}
		return append(dst, closer)
	case 's':
		return appendJacksonString(dst, v.text)
	case 'n':
		return appendJacksonNumber(dst, v.text)
	case 'N':
		return appendJacksonString(dst, v.text)
	case 't':
		return append(dst, "true"...)
	case 'f':
		return append(dst, "false"...)
	}
	return append(dst, "null"...)
}

// integral is an int (int32) or bigint from an integral JSON number in range.
func (v *jval) integral(int32Range bool) (int64, bool) {
	if v.kind != 'n' || strings.ContainsAny(string(v.text), ".eE") {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v.text), 10, 64)
	if err != nil || int32Range && (n < math.MinInt32 || n > math.MaxInt32) {
		return 0, false
	}
	return n, true
}

func (v *jval) double() (float64, bool) {
	switch v.kind {
	case 'n':
		if n, ok := v.integral(false); ok {
			return float64(n), true // Jackson reads an integral number as a long first: -0 is 0
		}
		f, err := strconv.ParseFloat(string(v.text), 64)
		if err != nil && !math.IsInf(f, 0) {
			return 0, false
		}
		return f, true
	case 'N', 's':
		switch string(v.text) {
		case "NaN":
			return math.NaN(), true
		case "Infinity", "+Infinity", "+INF":
			return math.Inf(1), true
		case "-Infinity", "-INF":
			return math.Inf(-1), true
		}
	}
	return 0, false
}

func (v *jval) decimal(t sqlType) (pq.Decimal128, bool) {
	if v.kind != 'n' && v.kind != 's' || len(v.text) == 0 || isSQLSpace(rune(v.text[0])) || isSQLSpace(rune(v.text[len(v.text)-1])) {
		return pq.Decimal128{}, false
	}
	text := string(v.text)
	if v.kind == 's' {
		// Spark's decimal parser for the en-US locale (its default) drops the grouping commas.
		text = strings.ReplaceAll(text, ",", "")
	}
	d, s, ok := parseDecimalText(text)
	if !ok {
		return pq.Decimal128{}, false
	}
	return decOf(roundToScale(d, s, t.s, t.s, halfUp), t.p)
}

func (v *jval) timestamp() (int64, bool) {
	switch v.kind {
	case 's':
		if len(v.text) == 0 {
			return 0, false
		}
		return parseTimestampString(string(v.text))
	case 'n':
		n, ok := v.integral(false)
		return n * 1e6, ok // seconds; Spark's multiplication wraps
	}
	return 0, false
}

func (v *jval) date() (int64, bool) {
	if v.kind != 's' || len(v.text) == 0 {
		return 0, false
	}
	if d, ok := parseDateString(string(v.text)); ok {
		return d, true
	}
	// Spark 1.5 wrote dates as a number of days in a string: Java's Integer.parseInt.
	s := string(v.text)
	digits := strings.TrimLeft(s, "+-")
	if len(s)-len(digits) > 1 || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < -141427 { // before 1582-10-15 Spark rebases Julian days: refused here
		return 0, false
	}
	return n, true
}

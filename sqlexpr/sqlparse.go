package sqlexpr

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/medallion-lake/medallion/pq"
)

// ErrSQLSyntax reports SQL text that does not parse; the error is a *SQLError.
var ErrSQLSyntax = errors.New("table: SQL syntax error")

// SQLError is a parse error in a SQL expression: where it happened (Pos is the 1-based
// character column in the text), what the parser found there and what it expected instead.
type SQLError struct {
	Pos      int
	Found    string
	Expected string
}

func (e *SQLError) Error() string {
	return fmt.Sprintf("at position %d: expected %s, found %s", e.Pos, e.Expected, e.Found)
}

// Unwrap makes errors.Is(err, ErrSQLSyntax) true.
func (e *SQLError) Unwrap() error { return ErrSQLSyntax }

// Limits on one SQL expression. They keep a config load short and its memory small whatever
// the text (parsing is linear in it): a longer list belongs in a table, a deeper nesting is a
// generated text that can be written flat.
const (
	// MaxSQLBytes bounds the text: 4 MiB, room for 100,000 ids of 30 characters.
	MaxSQLBytes = 4 << 20
	// MaxSQLTokens bounds the column names, literals, operators, commas and parentheses: a
	// 100,000-item IN list has about 200,000.
	MaxSQLTokens = 250_000
	// MaxSQLDepth bounds the nesting: parentheses, NOT, unary signs, function calls and IN
	// lists inside one another.
	MaxSQLDepth = 1000
)

// ErrSQLLimit reports SQL text over one of the limits above; the error is a *SQLLimitError.
var ErrSQLLimit = errors.New("table: SQL expression over a limit")

// SQLLimitError says which limit a SQL expression passed, the limit and the value found.
type SQLLimitError struct {
	Limit string // "length", "tokens" or "depth"
	Max   int
	// Found is the value in the text; 0 when the parser stopped at the limit without
	// measuring the whole text (nesting by NOT or signs rather than parentheses).
	Found int
	Pos   int // 1-based character column where the limit was passed; 0: the whole text
}

func (e *SQLLimitError) Error() string {
	at := ""
	if e.Pos > 0 {
		at = fmt.Sprintf("at position %d: ", e.Pos)
	}
	switch e.Limit {
	case "length":
		return fmt.Sprintf("the expression is %d bytes long: expected at most %d (the limit on an expression's text; a list that long belongs in a table, or split the expectation)", e.Found, e.Max)
	case "tokens":
		return fmt.Sprintf("the expression has %d tokens (names, literals, operators, commas, parentheses): expected at most %d (split the expectation)", e.Found, e.Max)
	}
	found := fmt.Sprintf("parentheses nested %d deep", e.Found)
	if e.Found == 0 {
		found = fmt.Sprintf("nesting deeper than %d", e.Max)
	}
	return fmt.Sprintf("%s%s (parentheses, NOT, signs and function calls inside one another): expected at most %d levels (write it flat: a OR b OR c needs no parentheses)", at, found, e.Max)
}

// Unwrap makes errors.Is(err, ErrSQLLimit) true.
func (e *SQLLimitError) Unwrap() error { return ErrSQLLimit }

// ParseSQL parses a boolean SQL expression in the subset of Spark SQL that data-quality
// expectations use (DESIGN.md §4): column references (nested fields with dots, `quoted`
// names with backticks), literals (numbers, strings, TRUE, FALSE, NULL, TIMESTAMP '...',
// DATE '...', INTERVAL '10' MINUTE), = == <> != < <= > >= <=>-free comparisons, AND OR NOT,
// IS [NOT] NULL, [NOT] IN (...), [NOT] BETWEEN, [NOT] LIKE, + - * / %, parentheses and the
// functions length, lower, upper, trim, abs, coalesce and current_timestamp(). The result is
// an Expr: Bind it to a schema to check names and types (Spark's implicit casts) and to
// evaluate it, column by column, with Spark's null rules. Parsing takes time linear in the
// text; a text over MaxSQLBytes, MaxSQLTokens or MaxSQLDepth is an *SQLLimitError.
func ParseSQL(text string) (Expr, error) {
	return ParseSQLContext(context.Background(), text)
}

// ParseSQLContext is ParseSQL that stops with ctx's error (errors.Is(err, context.Canceled))
// when ctx ends: it checks ctx every few thousand tokens, so a long text does not hold up a
// signal.
func ParseSQLContext(ctx context.Context, text string) (Expr, error) {
	if len(text) > MaxSQLBytes {
		return nil, &SQLLimitError{Limit: "length", Max: MaxSQLBytes, Found: len(text)}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := &sqlParser{src: text, ctx: ctx}
	if err := p.lex(); err != nil {
		return nil, err
	}
	n, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tkEOF {
		return nil, p.errAt(t, "an operator (AND, OR, =, <, IN, ...) or the end of the expression")
	}
	return &sqlPred{root: n, text: text}, nil
}

// ctxCheckEvery is how many tokens (lexing) or nodes (parsing, binding) pass between two
// checks of the context: a few hundred microseconds of work.
const ctxCheckEvery = 4096

type tokKind int

const (
	tkEOF tokKind = iota
	tkIdent
	tkQuoted // `name`
	tkNumber
	tkString
	tkOp
)

type token struct {
	kind tokKind
	text string // identifiers as written; strings unescaped; operators as written
	pos  int    // 1-based character column
}

func (t token) describe() string {
	switch t.kind {
	case tkEOF:
		return "the end of the expression"
	case tkString:
		return "string '" + shortenSQL(t.text) + "'"
	case tkQuoted:
		return "`" + shortenSQL(t.text) + "`"
	}
	return strconv.Quote(shortenSQL(t.text))
}

func (t token) is(kw string) bool { return t.kind == tkIdent && strings.EqualFold(t.text, kw) }

type sqlParser struct {
	src   string
	toks  []token
	i     int
	ctx   context.Context
	depth int // current nesting (parentheses, NOT, signs, calls)
	steps int // operands and nesting levels so far, to check ctx every ctxCheckEvery
}

// enter counts one more level of nesting at t; the caller leaves it with p.depth--.
func (p *sqlParser) enter(t token) error {
	p.depth++
	if p.depth > MaxSQLDepth {
		return &SQLLimitError{Limit: "depth", Max: MaxSQLDepth, Pos: t.pos}
	}
	return p.tick()
}

// tick checks the context every ctxCheckEvery calls (operands and nesting levels).
func (p *sqlParser) tick() error {
	p.steps++
	if p.steps%ctxCheckEvery == 0 {
		return p.ctx.Err()
	}
	return nil
}

func (p *sqlParser) errAt(t token, expected string) error {
	return &SQLError{Pos: t.pos, Found: t.describe(), Expected: expected}
}

// lex splits the text into tokens. Strings follow Spark: single or double quotes, backslash
// escapes, and adjacent string literals concatenated.
func (p *sqlParser) lex() error {
	s := p.src
	// col is the 1-based character column of byte offset off. Offsets only grow, so the runes
	// are counted once, from the previous offset: counting from the start each time made the
	// lexer quadratic (a 20,000-item IN list took seconds).
	colOff, colRunes := 0, 0
	col := func(off int) int {
		colRunes += utf8.RuneCountInString(s[colOff:off])
		colOff = off
		return colRunes + 1
	}
	// str collects a string literal and the ones adjacent to it ('a' 'b' is 'ab'): one
	// builder for the run, so that many adjacent literals are not copied again each time.
	var sb strings.Builder
	// Parentheses nesting, measured whole here so that the error says how deep the text goes.
	parens, maxParens, overAt := 0, 0, 0
	nextCheck := ctxCheckEvery
	for i := 0; i < len(s); {
		if len(p.toks) >= nextCheck {
			nextCheck += ctxCheckEvery
			if err := p.ctx.Err(); err != nil {
				return err
			}
		}
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'' || c == '"':
			start := i
			adjacent := len(p.toks) > 0 && p.toks[len(p.toks)-1].kind == tkString
			if !adjacent {
				sb.Reset() // drops the buffer: the previous token keeps its text
			}
			var closed bool
			i, closed = scanStringBody(s, i+1, c, &sb)
			if !closed {
				return &SQLError{Pos: col(start), Found: "an unterminated string", Expected: "a closing " + string(c)}
			}
			if adjacent {
				p.toks[len(p.toks)-1].text = sb.String() // no copy: the builder's bytes so far
			} else {
				p.toks = append(p.toks, token{tkString, sb.String(), col(start)})
			}
		case c == '`':
			start := i
			j := strings.IndexByte(s[i+1:], '`')
			if j < 0 {
				return &SQLError{Pos: col(start), Found: "an unterminated `name`", Expected: "a closing `"}
			}
			p.toks = append(p.toks, token{tkQuoted, s[i+1 : i+1+j], col(start)})
			i += j + 2
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			start := i
			i = scanNumber(s, i)
			if i < len(s) && isIdentByte(s[i]) {
				return &SQLError{Pos: col(start), Found: strconv.Quote(shortenSQL(s[start : i+1])), Expected: "a number (digits, a fraction, an exponent, or a suffix L, S, Y, D, F, BD)"}
			}
			p.toks = append(p.toks, token{tkNumber, s[start:i], col(start)})
		case isIdentByte(c) && !(c >= '0' && c <= '9'):
			start := i
			for i < len(s) && isIdentByte(s[i]) {
				i++
			}
			p.toks = append(p.toks, token{tkIdent, s[start:i], col(start)})
		default:
			start := i
			for _, op := range []string{"<=>", "<>", "!=", "<=", ">=", "==", "||", "=", "<", ">", "+", "-", "*", "/", "%", "(", ")", ",", ".", "[", "]"} {
				if strings.HasPrefix(s[i:], op) {
					p.toks = append(p.toks, token{tkOp, op, col(start)})
					i += len(op)
					switch op {
					case "(":
						parens++
						if parens > maxParens {
							maxParens = parens
							if parens == MaxSQLDepth+1 {
								overAt = p.toks[len(p.toks)-1].pos
							}
						}
					case ")":
						parens--
					}
					break
				}
			}
			if i == start {
				r, _ := utf8.DecodeRuneInString(s[i:])
				return &SQLError{Pos: col(start), Found: strconv.QuoteRune(r), Expected: "a column, a literal, an operator or a parenthesis"}
			}
		}
	}
	p.toks = append(p.toks, token{tkEOF, "", col(len(s))})
	if n := len(p.toks) - 1; n > MaxSQLTokens {
		return &SQLLimitError{Limit: "tokens", Max: MaxSQLTokens, Found: n}
	}
	if maxParens > MaxSQLDepth {
		return &SQLLimitError{Limit: "depth", Max: MaxSQLDepth, Found: maxParens, Pos: overAt}
	}
	return nil
}

// scanStringBody reads a string literal's body from s[i:], just after its opening quote,
// into sb with Spark's backslash escapes, and returns the offset just after the closing
// quote, or len(s) and false when the literal is not closed.
func scanStringBody(s string, i int, quote byte, sb *strings.Builder) (int, bool) {
	for i < len(s) {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'n':
				sb.WriteByte('\n')
			case 't':
				sb.WriteByte('\t')
			case 'r':
				sb.WriteByte('\r')
			case '0':
				sb.WriteByte(0)
			case '%', '_':
				// Spark keeps the backslash before LIKE wildcards.
				sb.WriteByte('\\')
				sb.WriteByte(s[i])
			default:
				sb.WriteByte(s[i])
			}
			i++
			continue
		}
		if s[i] == quote {
			return i + 1, true
		}
		sb.WriteByte(s[i])
		i++
	}
	return i, false
}

// scanNumber returns the end of the numeric literal that starts at s[i]: digits and dots,
// an optional exponent, and an optional type suffix. The caller rejects a letter right after.
func scanNumber(s string, i int) int {
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && s[j] >= '0' && s[j] <= '9' {
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			i = j
		}
	}
	// Type suffixes: 10L, 1S, 1Y, 1.5D, 1.5F, 1.5BD.
	if i+1 < len(s) && strings.EqualFold(s[i:i+2], "bd") {
		i += 2
	} else if i < len(s) && strings.ContainsRune("lLsSyYdDfF", rune(s[i])) {
		i++
	}
	return i
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func (p *sqlParser) peek() token { return p.toks[p.i] }
func (p *sqlParser) next() token { t := p.toks[p.i]; p.i++; return t }

func (p *sqlParser) accept(kw string) bool {
	if p.peek().is(kw) {
		p.i++
		return true
	}
	return false
}

func (p *sqlParser) acceptOp(op string) bool {
	if t := p.peek(); t.kind == tkOp && t.text == op {
		p.i++
		return true
	}
	return false
}

func (p *sqlParser) expectOp(op, what string) error {
	if !p.acceptOp(op) {
		return p.errAt(p.peek(), what)
	}
	return nil
}

// Precedence, loosest first (Spark's grammar): OR, AND, NOT, predicates (comparison, IS,
// IN, BETWEEN, LIKE), + and -, * / and %, unary minus, primaries.

// parseChain parses operand (OP operand)*, folding left into binary nodes: the operators of
// one precedence level associate to the left. op names the node's operator for the token that
// continues the chain, "" for one that ends it (left where it is), or refuses the token.
func (p *sqlParser) parseChain(operand func() (sqlNode, error), op func(t token) (string, error)) (sqlNode, error) {
	l, err := operand()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		name, err := op(t)
		if err != nil {
			return nil, err
		}
		if name == "" {
			return l, nil
		}
		p.i++
		r, err := operand()
		if err != nil {
			return nil, err
		}
		l = &nBin{op: name, l: l, r: r, at: t.pos}
	}
}

// keywordOp is name when t is the keyword kw, else "".
func keywordOp(t token, kw, name string) string {
	if t.is(kw) {
		return name
	}
	return ""
}

// nested parses the operand of the prefix operator t, one level deeper (enter refuses a chain
// of them too deep to parse without overflowing the stack).
func (p *sqlParser) nested(t token, operand func() (sqlNode, error)) (sqlNode, error) {
	if err := p.enter(t); err != nil {
		return nil, err
	}
	x, err := operand()
	p.depth--
	return x, err
}

// parseJoined parses "a KW b", both sides with parse (CASE's WHEN a THEN b, BETWEEN a AND b);
// a missing kw is an error at the token found instead, expecting what.
func (p *sqlParser) parseJoined(parse func() (sqlNode, error), kw, what string) (a, b sqlNode, err error) {
	if a, err = parse(); err != nil {
		return nil, nil, err
	}
	if !p.accept(kw) {
		return nil, nil, p.errAt(p.peek(), what)
	}
	if b, err = parse(); err != nil {
		return nil, nil, err
	}
	return a, b, nil
}

// parseList parses item (, item)* and the ) that closes the list; where names the list in the
// error for anything else after an item.
func (p *sqlParser) parseList(item func() (sqlNode, error), where string) ([]sqlNode, error) {
	var list []sqlNode
	for {
		v, err := item()
		if err != nil {
			return nil, err
		}
		list = append(list, v)
		if p.acceptOp(",") {
			continue
		}
		if err := p.expectOp(")", ", or ) in "+where); err != nil {
			return nil, err
		}
		return list, nil
	}
}

func (p *sqlParser) parseOr() (sqlNode, error) {
	return p.parseChain(p.parseAnd, func(t token) (string, error) { return keywordOp(t, "or", "OR"), nil })
}

func (p *sqlParser) parseAnd() (sqlNode, error) {
	return p.parseChain(p.parseNot, func(t token) (string, error) { return keywordOp(t, "and", "AND"), nil })
}

func (p *sqlParser) parseNot() (sqlNode, error) {
	if t := p.peek(); t.is("not") {
		p.i++
		x, err := p.nested(t, p.parseNot)
		if err != nil {
			return nil, err
		}
		return &nUnary{op: "NOT", x: x, at: t.pos}, nil
	}
	return p.parsePredicate()
}

var cmpOps = map[string]string{"=": "=", "==": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

func (p *sqlParser) parsePredicate() (sqlNode, error) {
	l, err := p.parseAdd()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind == tkOp {
			if t.text == "<=>" {
				return nil, p.errAt(t, "a comparison other than <=> (not supported; write a = b OR (a IS NULL AND b IS NULL))")
			}
			op, ok := cmpOps[t.text]
			if !ok {
				return l, nil
			}
			p.i++
			r, err := p.parseAdd()
			if err != nil {
				return nil, err
			}
			l = &nBin{op: op, l: l, r: r, at: t.pos}
			continue
		}
		if t.is("is") {
			p.i++
			not := p.accept("not")
			if !p.accept("null") {
				return nil, p.errAt(p.peek(), "NULL after IS [NOT]")
			}
			l = &nIsNull{x: l, not: not, at: t.pos}
			continue
		}
		not := false
		if t.is("not") {
			nt := p.toks[p.i+1]
			if !nt.is("in") && !nt.is("between") && !nt.is("like") {
				return nil, p.errAt(nt, "IN, BETWEEN or LIKE after NOT")
			}
			p.i++
			not = true
		}
		switch t2 := p.peek(); {
		case t2.is("in"):
			p.i++
			open := p.peek()
			if err := p.expectOp("(", "( after IN"); err != nil {
				return nil, err
			}
			if err := p.enter(open); err != nil {
				return nil, err
			}
			list, err := p.parseList(p.parseAdd, "the IN list")
			if err != nil {
				return nil, err
			}
			p.depth--
			l = &nIn{x: l, list: list, not: not, at: t.pos}
		case t2.is("between"):
			p.i++
			lo, hi, err := p.parseJoined(p.parseAdd, "and", "AND in BETWEEN ... AND ...")
			if err != nil {
				return nil, err
			}
			l = &nBetween{x: l, lo: lo, hi: hi, not: not, at: t.pos}
		case t2.is("like"):
			p.i++
			pat, err := p.parseAdd()
			if err != nil {
				return nil, err
			}
			l = &nLike{x: l, pat: pat, not: not, at: t.pos}
		default:
			return l, nil
		}
	}
}

func (p *sqlParser) parseAdd() (sqlNode, error) {
	return p.parseChain(p.parseMul, func(t token) (string, error) {
		switch {
		case t.kind == tkOp && (t.text == "+" || t.text == "-"):
			return t.text, nil
		case t.kind == tkOp && t.text == "||":
			return "", p.errAt(t, "an operator other than || (string concatenation is not supported)")
		}
		return "", nil
	})
}

func (p *sqlParser) parseMul() (sqlNode, error) {
	return p.parseChain(p.parseUnary, func(t token) (string, error) {
		if t.kind == tkOp && (t.text == "*" || t.text == "/" || t.text == "%") {
			return t.text, nil
		}
		return "", nil
	})
}

func (p *sqlParser) parseUnary() (sqlNode, error) {
	t := p.peek()
	if t.kind == tkOp && (t.text == "-" || t.text == "+") {
		p.i++
		// A minus directly before a number is part of the literal, so that -2147483648 is an
		// int as in Spark.
		if n := p.peek(); t.text == "-" && n.kind == tkNumber && n.pos == t.pos+1 {
			p.i++
			return p.number(n, "-")
		}
		x, err := p.nested(t, p.parseUnary)
		if err != nil {
			return nil, err
		}
		if t.text == "+" {
			return x, nil
		}
		return &nUnary{op: "-", x: x, at: t.pos}, nil
	}
	return p.parsePrimary()
}

const primaryWanted = "a column, a literal, a function call, ( or NOT"

func (p *sqlParser) parsePrimary() (sqlNode, error) {
	// Every operand passes here: the context is checked as the parse goes, whatever its shape.
	if err := p.tick(); err != nil {
		return nil, err
	}
	t := p.next()
	switch t.kind {
	case tkNumber:
		return p.number(t, "")
	case tkString:
		return &nLit{t: sqlType{k: kString}, s: t.text, at: t.pos}, nil
	case tkOp:
		if t.text == "(" {
			if err := p.enter(t); err != nil {
				return nil, err
			}
			x, err := p.parseOr()
			p.depth--
			if err != nil {
				return nil, err
			}
			if err := p.expectOp(")", "an operator or )"); err != nil {
				return nil, err
			}
			return x, nil
		}
		return nil, p.errAt(t, primaryWanted)
	case tkQuoted:
		return p.column(t)
	case tkIdent:
		switch {
		case t.is("null"):
			return &nLit{t: sqlType{k: kNull}, null: true, at: t.pos}, nil
		case t.is("true"), t.is("false"):
			return &nLit{t: sqlType{k: kBool}, b: t.is("true"), at: t.pos}, nil
		case t.is("timestamp"), t.is("date"):
			if s := p.peek(); s.kind == tkString {
				p.i++
				return typedLiteral(t, s)
			}
		case t.is("interval"):
			return p.interval(t)
		case t.is("current_timestamp") || t.is("now"):
			if p.acceptOp("(") {
				if err := p.expectOp(")", ") (current_timestamp takes no argument)"); err != nil {
					return nil, err
				}
			} else if t.is("now") {
				return p.column(t)
			}
			return &nCall{name: "current_timestamp", at: t.pos}, nil
		case t.is("case"):
			return p.caseExpr(t)
		case t.is("cast") && p.peek().kind == tkOp && p.peek().text == "(":
			return p.castExpr(t)
		case t.is("and"), t.is("or"), t.is("in"), t.is("between"), t.is("like"), t.is("is"), t.is("not"):
			return nil, p.errAt(t, primaryWanted)
		}
		if p.peek().kind == tkOp && p.peek().text == "(" {
			x, err := p.call(t)
			if err != nil {
				return nil, err
			}
			return p.fieldAccess(x) // from_json(...).a
		}
		return p.column(t)
	}
	return nil, p.errAt(t, primaryWanted)
}

func (p *sqlParser) column(t token) (sqlNode, error) {
	path := []string{t.text}
	for p.acceptOp(".") {
		f := p.next()
		if f.kind != tkIdent && f.kind != tkQuoted {
			return nil, p.errAt(f, "a field name after .")
		}
		path = append(path, f.text)
	}
	return &nCol{path: path, at: t.pos}, nil
}

func (p *sqlParser) call(t token) (sqlNode, error) {
	name := strings.ToLower(t.text)
	ar, ok := sqlFuncs[name]
	if !ok {
		return nil, unknownFunction(t)
	}
	if err := p.enter(p.next()); err != nil { // (
		return nil, err
	}
	defer func() { p.depth-- }()
	var args []sqlNode
	if !p.acceptOp(")") {
		var err error
		if args, err = p.parseList(p.parseOr, "the arguments of "+name); err != nil {
			return nil, err
		}
	}
	if len(args) < ar.min || ar.max >= 0 && len(args) > ar.max {
		n := strconv.Itoa(ar.min)
		switch {
		case ar.max < 0:
			n = "at least " + n
		case ar.max > ar.min:
			n += " to " + strconv.Itoa(ar.max)
		}
		return nil, &SQLError{Pos: t.pos, Found: fmt.Sprintf("%s with %d arguments", name, len(args)), Expected: fmt.Sprintf("%s argument(s) for %s", n, name)}
	}
	if ar.canon != "" {
		name = ar.canon
	}
	return &nCall{name: name, args: args, at: t.pos}, nil
}

// number types a numeric literal as Spark does: an integer is an int when it fits, else a
// bigint, else a decimal; a fraction is a decimal; an exponent makes a double; suffixes L, S,
// Y, D, F and BD force bigint, smallint, tinyint, double, float and decimal.
func (p *sqlParser) number(t token, sign string) (sqlNode, error) {
	txt := t.text
	bad := func(what string) error {
		return &SQLError{Pos: t.pos, Found: strconv.Quote(shortenSQL(sign + txt)), Expected: what}
	}
	lit := &nLit{at: t.pos}
	suffix := ""
	switch up := strings.ToUpper(txt); {
	case strings.HasSuffix(up, "BD"):
		suffix, txt = "BD", txt[:len(txt)-2]
	case strings.HasSuffix(up, "L") || strings.HasSuffix(up, "S") || strings.HasSuffix(up, "Y") ||
		strings.HasSuffix(up, "D") || strings.HasSuffix(up, "F"):
		suffix, txt = up[len(up)-1:], txt[:len(txt)-1]
	}
	if strings.Count(txt, ".") > 1 {
		return nil, bad("a number with at most one decimal point")
	}
	exp := strings.ContainsAny(txt, "eE")
	frac := strings.Contains(txt, ".")
	switch {
	case suffix == "D" || suffix == "F" || exp && suffix != "BD":
		f, err := strconv.ParseFloat(sign+txt, 64)
		if err != nil {
			return nil, bad("a double within range")
		}
		if suffix == "F" {
			f = float64(float32(f))
		}
		lit.t, lit.f = sqlType{k: kDouble}, f
	case suffix == "L" || suffix == "S" || suffix == "Y" || suffix == "" && !frac:
		if frac {
			return nil, bad("an integer before the suffix " + suffix)
		}
		v, err := strconv.ParseInt(sign+txt, 10, 64)
		if err != nil {
			if suffix != "" {
				return nil, bad("an integer within the range of its suffix")
			}
			// Spark types a larger integer literal as a decimal.
			return decimalLiteral(lit, sign+txt, bad)
		}
		lit.i = v
		switch {
		case suffix == "L":
			lit.t = sqlType{k: kLong}
		case suffix == "S" && v >= -32768 && v <= 32767, suffix == "Y" && v >= -128 && v <= 127:
			lit.t = sqlType{k: kInt}
		case suffix != "":
			return nil, bad("an integer within the range of its suffix")
		case v >= -1<<31 && v < 1<<31:
			lit.t = sqlType{k: kInt}
		default:
			lit.t = sqlType{k: kLong}
		}
	default:
		return decimalLiteral(lit, sign+txt, bad)
	}
	return lit, nil
}

// decimalLiteral types s ("12.50", "-.5", "1e3" with BD) as decimal(p,s) with the digits
// written, as Spark does.
func decimalLiteral(lit *nLit, s string, bad func(string) error) (sqlNode, error) {
	// A decimal's precision is at least its significant digits: a longer one is refused
	// before big.Rat, whose conversion of a million digits takes seconds.
	if mant, _, _ := strings.Cut(strings.ToLower(strings.TrimLeft(s, "+-")), "e"); len(strings.TrimLeft(strings.Replace(mant, ".", "", 1), "0")) > maxSQLDecimal {
		return nil, bad(fmt.Sprintf("a decimal of at most %d digits (write a double with an exponent, e.g. 1e40)", maxSQLDecimal))
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, bad("a decimal number")
	}
	mant, expPart, _ := strings.Cut(strings.ToLower(strings.TrimLeft(s, "+-")), "e")
	intPart, fracPart, _ := strings.Cut(mant, ".")
	scale := len(fracPart)
	if expPart != "" {
		e, err := strconv.Atoi(expPart)
		if err != nil {
			return nil, bad("a decimal number")
		}
		scale -= e
		if scale < 0 {
			scale = 0
		}
	}
	digits := strings.TrimLeft(intPart+fracPart, "0")
	prec := max(len(digits), scale, 1)
	if expPart != "" {
		prec = max(len(strings.TrimLeft(r.FloatString(scale), "-0.")), scale, 1)
	}
	if prec > maxSQLDecimal {
		return nil, bad(fmt.Sprintf("a decimal of at most %d digits (write a double with an exponent, e.g. 1e40)", maxSQLDecimal))
	}
	unscaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(pow10big(scale)))
	d, ok := pq.DecimalFromBigInt(unscaled.Num())
	if !ok {
		return nil, bad(fmt.Sprintf("a decimal of at most %d digits", maxSQLDecimal))
	}
	lit.t = sqlType{k: kDecimal, p: prec, s: scale}
	lit.dec = d
	return lit, nil
}

func pow10big(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

func typedLiteral(kw, s token) (sqlNode, error) {
	if kw.is("date") {
		d, ok := parseDateString(s.text)
		if !ok {
			return nil, &SQLError{Pos: s.pos, Found: s.describe(), Expected: "a date 'yyyy-mm-dd'"}
		}
		return &nLit{t: sqlType{k: kDate}, i: d, at: kw.pos}, nil
	}
	us, ok := parseTimestampString(s.text)
	if !ok {
		return nil, &SQLError{Pos: s.pos, Found: s.describe(), Expected: "a timestamp 'yyyy-mm-dd[ hh:mm:ss[.ffffff]]' (UTC unless an offset is given)"}
	}
	return &nLit{t: sqlType{k: kTimestamp}, i: us, at: kw.pos}, nil
}

// maxIntervalText bounds an interval's quantity: microseconds fit in 19 digits; the rest is
// room for a fraction with trailing zeros.
const maxIntervalText = 64

var intervalUnits = map[string]int64{"day": 86400e6, "days": 86400e6, "hour": 3600e6, "hours": 3600e6,
	"minute": 60e6, "minutes": 60e6, "second": 1e6, "seconds": 1e6}

// interval parses INTERVAL '10' MINUTE (or INTERVAL 10 MINUTES): a day-time interval, kept in
// microseconds.
func (p *sqlParser) interval(kw token) (sqlNode, error) {
	v := p.next()
	sign := ""
	if v.kind == tkOp && v.text == "-" {
		sign = "-"
		v = p.next()
	}
	if v.kind != tkString && v.kind != tkNumber {
		return nil, p.errAt(v, "a quantity after INTERVAL, e.g. INTERVAL '10' MINUTE")
	}
	u := p.next()
	unit, ok := intervalUnits[strings.ToLower(u.text)]
	if u.kind != tkIdent || !ok {
		return nil, p.errAt(u, "an interval unit: DAY, HOUR, MINUTE or SECOND")
	}
	q := new(big.Rat)
	txt := strings.TrimSpace(v.text)
	if len(txt) > maxIntervalText {
		return nil, &SQLError{Pos: v.pos, Found: v.describe(), Expected: "a whole number of microseconds within range"}
	}
	if _, ok := q.SetString(sign + txt); !ok || strings.ContainsAny(txt, "eE/") {
		return nil, &SQLError{Pos: v.pos, Found: v.describe(), Expected: "a number of " + strings.ToLower(u.text)}
	}
	q.Mul(q, new(big.Rat).SetInt64(unit))
	if !q.IsInt() || !q.Num().IsInt64() {
		return nil, &SQLError{Pos: v.pos, Found: v.describe(), Expected: "a whole number of microseconds within range"}
	}
	return &nLit{t: sqlType{k: kInterval}, i: q.Num().Int64(), at: kw.pos}, nil
}

// parseDateString reads 'yyyy-mm-dd' (Spark also accepts 'yyyy' and 'yyyy-mm') into days
// since the epoch.
func parseDateString(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, " T"); i >= 0 {
		s = s[:i]
	}
	var y, m, d int
	parts := strings.Split(s, "-")
	if len(parts) == 0 || len(parts) > 3 || len(parts[0]) != 4 {
		return 0, false
	}
	vals := []*int{&y, &m, &d}
	m, d = 1, 1
	for i, p := range parts {
		if len(p) == 0 || len(p) > 2 && i > 0 {
			return 0, false
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return 0, false
		}
		*vals[i] = n
	}
	if m < 1 || m > 12 || d < 1 || d > pq.DaysInMonth(y, m) {
		return 0, false
	}
	return pq.DaysFromCivil(y, m, d), true
}

// parseTimestampString reads the timestamp forms Spark casts from strings: a date alone, or
// a date and time separated by a space or T, with an optional fraction and zone (Z or
// ±hh:mm); without a zone it is UTC (the session time zone medallion runs in).
func parseTimestampString(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if d, ok := parseDateString(s); ok && !strings.ContainsAny(s, " T") {
		return d * 86400e6, true
	}
	if us, err := pq.ParseTimestampMicros(s); err == nil {
		return us, true
	}
	if i := strings.IndexByte(s, ' '); i > 0 {
		if us, err := pq.ParseTimestampMicros(s[:i] + "T" + s[i+1:]); err == nil {
			return us, true
		}
	}
	return 0, false
}

// isSQLSpace is Spark's notion of the whitespace that casts from strings trim.
func isSQLSpace(r rune) bool { return r <= ' ' || unicode.IsSpace(r) }

package join

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseCondition reads a time-range condition in the forms Spark's algebra accepts between the
// two event-time columns, written `l.t` and `r.t` (case-insensitive), and returns its conjuncts
// in canonical form:
//
//	r.t BETWEEN l.t AND l.t + 1h
//	r.t >= l.t - 5s AND r.t <= l.t + 10s
//	l.t < r.t - 5s                       (Spark's "one side condition")
//	l.t + 2m > r.t AND r.t > l.t
//
// A term is a time column plus or minus durations (Go's syntax, plus a `d` suffix for days:
// `3650d`). Each comparison must relate the two sides; anything else is an ErrBadSpec naming
// the offending position.
func ParseCondition(s string) ([]Bound, error) {
	p := condParser{src: s}
	p.next()
	var out []Bound
	for {
		var err error
		if out, err = p.conjunct(out); err != nil {
			return nil, err
		}
		if p.tok == "" {
			return out, nil
		}
		if !p.isWord("and") {
			return nil, p.errorf("want AND between conjuncts")
		}
		p.next()
	}
}

// conjunct reads one conjunct, `a op c` or `a BETWEEN lo AND hi`, and appends its bounds to
// dst.
func (p *condParser) conjunct(dst []Bound) ([]Bound, error) {
	a, err := p.term()
	if err != nil {
		return nil, err
	}
	if op, ok := p.op(); ok {
		c, err := p.nextTerm()
		if err != nil {
			return nil, err
		}
		return p.appendBound(dst, a, op, c)
	}
	if !p.isWord("between") {
		return nil, p.errorf("want a comparison (<, <=, >, >=) or BETWEEN")
	}
	lo, err := p.nextTerm()
	if err != nil {
		return nil, err
	}
	if !p.isWord("and") {
		return nil, p.errorf("want AND after BETWEEN's lower bound")
	}
	hi, err := p.nextTerm()
	if err != nil {
		return nil, err
	}
	// a BETWEEN lo AND hi  <=>  lo <= a AND a <= hi
	if dst, err = p.appendBound(dst, lo, LE, a); err != nil {
		return nil, err
	}
	return p.appendBound(dst, a, LE, hi)
}

type condTerm struct {
	side   Side
	offset int64
	pos    int
}

type condParser struct {
	src      string
	pos      int // offset of the next unread byte
	tok      string
	tokStart int
}

func (p *condParser) errorf(format string, args ...any) error {
	tok := p.tok
	if tok == "" {
		tok = "end of input"
	} else {
		tok = strconv.Quote(tok)
	}
	return fmt.Errorf("%w: condition %q at column %d (%s): %s", ErrBadSpec, p.src, p.tokStart+1, tok, fmt.Sprintf(format, args...))
}

// next reads the next token: a word (letters, digits, '.', '_', 'µ'), an operator or a sign.
func (p *condParser) next() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t' || p.src[p.pos] == '\n') {
		p.pos++
	}
	p.tokStart = p.pos
	if p.pos >= len(p.src) {
		p.tok = ""
		return
	}
	c := p.src[p.pos]
	switch {
	case c == '<' || c == '>':
		p.pos++
		if p.pos < len(p.src) && p.src[p.pos] == '=' {
			p.pos++
		}
	case c == '+' || c == '-':
		p.pos++
	case isWordByte(c):
		for p.pos < len(p.src) && isWordByte(p.src[p.pos]) {
			p.pos++
		}
	default:
		p.pos++ // a byte of no token: the caller reports it
	}
	p.tok = p.src[p.tokStart:p.pos]
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c >= 0x80
}

func (p *condParser) isWord(w string) bool { return strings.EqualFold(p.tok, w) }

func (p *condParser) op() (Op, bool) {
	switch p.tok {
	case "<":
		return LT, true
	case "<=":
		return LE, true
	case ">":
		return GT, true
	case ">=":
		return GE, true
	}
	return 0, false
}

// nextTerm reads the term after the current token (a comparison, BETWEEN or its AND).
func (p *condParser) nextTerm() (condTerm, error) {
	p.next()
	return p.term()
}

// term reads `l.t|r.t (+|- duration)*`.
func (p *condParser) term() (condTerm, error) {
	t := condTerm{pos: p.tokStart}
	switch {
	case p.isWord("l.t"):
		t.side = Left
	case p.isWord("r.t"):
		t.side = Right
	default:
		return t, p.errorf("want l.t or r.t")
	}
	p.next()
	for p.tok == "+" || p.tok == "-" {
		neg := p.tok == "-"
		p.next()
		d, err := parseDuration(p.tok)
		if err != nil {
			return t, p.errorf("%v", err)
		}
		if neg {
			d = -d
		}
		if (d > 0 && t.offset > maxOffset-d) || (d < 0 && t.offset < -maxOffset-d) {
			return t, p.errorf("offset out of range (±100 years)")
		}
		t.offset += d
		p.next()
	}
	return t, nil
}

// appendBound appends `a op c` to dst in the canonical form `r.t op' l.t + offset`.
func (p *condParser) appendBound(dst []Bound, a condTerm, op Op, c condTerm) ([]Bound, error) {
	if a.side == c.side {
		return nil, fmt.Errorf("%w: condition %q at column %d: a conjunct must compare l.t with r.t, this one uses %s.t on both sides", ErrBadSpec, p.src, a.pos+1, a.side.String()[:1])
	}
	if a.side == Right { // r.t + a op l.t + c  <=>  r.t op l.t + (c - a)
		return append(dst, Bound{Op: op, Offset: c.offset - a.offset}), nil
	}
	// l.t + a op r.t + c  <=>  r.t flip(op) l.t + (a - c)
	return append(dst, Bound{Op: op.flip(), Offset: a.offset - c.offset}), nil
}

// parseDuration reads a Go duration, or a whole number of days (`3650d`), in µs.
func parseDuration(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("want a duration")
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n < 0 || n > maxOffset/86_400_000_000 {
			return 0, fmt.Errorf("bad duration %q", s)
		}
		return n * 86_400_000_000, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad duration %q", s)
	}
	if d%time.Microsecond != 0 {
		return 0, fmt.Errorf("duration %q is finer than a microsecond", s)
	}
	if d.Microseconds() > maxOffset {
		return 0, fmt.Errorf("duration %q is out of range (±100 years)", s)
	}
	return d.Microseconds(), nil
}

// fmtMicros prints µs as a Go duration when it fits one, else in days and µs.
func fmtMicros(us int64) string {
	if us%86_400_000_000 == 0 && us >= 86_400_000_000 {
		return strconv.FormatInt(us/86_400_000_000, 10) + "d"
	}
	return (time.Duration(us) * time.Microsecond).String()
}

package main

import (
	"fmt"
	"strings"

	"github.com/medallion-lake/medallion/sqlexpr"
)

// parseWhere parses the --where language (package comment) into a sqlexpr.Expr:
//
//	expr   = and {OR and}
//	and    = unary {AND unary}
//	unary  = NOT unary | '(' expr ')' | atom
//	atom   = col IS [NOT] NULL | col IN '(' lit {',' lit} ')' | col op lit
//	op     = '=' | '!=' | '<' | '<=' | '>' | '>='      ('a != b' is NOT (a = b))
//	lit    = word | 'single-quoted, '' for a quote'
//
// Keywords are case-insensitive. Literals reach sqlexpr.Cmp / sqlexpr.In as Go strings.
func parseWhere(s string) (sqlexpr.Expr, error) {
	toks, err := tokenize(s)
	if err != nil {
		return nil, fmt.Errorf("%w: --where %q: %v", errUsage, s, err)
	}
	p := &parser{toks: toks}
	e, err := p.expr()
	if err == nil && p.i < len(p.toks) {
		err = fmt.Errorf("unexpected %q", p.toks[p.i].text)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: --where %q: %v", errUsage, s, err)
	}
	return e, nil
}

type token struct {
	text   string
	quoted bool // a quoted literal, never a keyword or operator
}

func tokenize(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case c == '(' || c == ')' || c == ',':
			out = append(out, token{text: string(c)})
			i++
		case c == '<' || c == '>' || c == '=' || c == '!':
			j := i + 1
			if j < len(s) && s[j] == '=' {
				j++
			}
			op := s[i:j]
			if op == "!" {
				return nil, fmt.Errorf("'!' without '='")
			}
			out = append(out, token{text: op})
			i = j
		case c == '\'':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, fmt.Errorf("unterminated quote")
				}
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						b.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			out = append(out, token{text: b.String(), quoted: true})
			i = j + 1
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n(),<>=!'", rune(s[j])) {
				j++
			}
			out = append(out, token{text: s[i:j]})
			i = j
		}
	}
	return out, nil
}

type parser struct {
	toks []token
	i    int
}

func (p *parser) peekKeyword(kw string) bool {
	return p.i < len(p.toks) && !p.toks[p.i].quoted && strings.EqualFold(p.toks[p.i].text, kw)
}

func (p *parser) next() (token, error) {
	if p.i >= len(p.toks) {
		return token{}, fmt.Errorf("unexpected end")
	}
	p.i++
	return p.toks[p.i-1], nil
}

func (p *parser) expect(kw string) error {
	if !p.peekKeyword(kw) {
		if p.i < len(p.toks) {
			return fmt.Errorf("want %s, got %q", kw, p.toks[p.i].text)
		}
		return fmt.Errorf("want %s at the end", kw)
	}
	p.i++
	return nil
}

func (p *parser) expr() (sqlexpr.Expr, error) {
	terms := []sqlexpr.Expr{}
	for {
		e, err := p.and()
		if err != nil {
			return nil, err
		}
		terms = append(terms, e)
		if !p.peekKeyword("or") {
			break
		}
		p.i++
	}
	if len(terms) == 1 {
		return terms[0], nil
	}
	return sqlexpr.Or(terms...), nil
}

func (p *parser) and() (sqlexpr.Expr, error) {
	terms := []sqlexpr.Expr{}
	for {
		e, err := p.unary()
		if err != nil {
			return nil, err
		}
		terms = append(terms, e)
		if !p.peekKeyword("and") {
			break
		}
		p.i++
	}
	if len(terms) == 1 {
		return terms[0], nil
	}
	return sqlexpr.And(terms...), nil
}

func (p *parser) unary() (sqlexpr.Expr, error) {
	if p.peekKeyword("not") {
		p.i++
		e, err := p.unary()
		if err != nil {
			return nil, err
		}
		return sqlexpr.Not(e), nil
	}
	if p.peekKeyword("(") {
		p.i++
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		return e, p.expect(")")
	}
	return p.atom()
}

func (p *parser) atom() (sqlexpr.Expr, error) {
	col, err := p.next()
	if err != nil {
		return nil, err
	}
	if col.quoted || strings.ContainsAny(col.text, "(),<>=!") {
		return nil, fmt.Errorf("want a column, got %q", col.text)
	}
	switch {
	case p.peekKeyword("is"):
		p.i++
		not := p.peekKeyword("not")
		if not {
			p.i++
		}
		if err := p.expect("null"); err != nil {
			return nil, err
		}
		if not {
			return sqlexpr.IsNotNull(col.text), nil
		}
		return sqlexpr.IsNull(col.text), nil
	case p.peekKeyword("in"):
		p.i++
		if err := p.expect("("); err != nil {
			return nil, err
		}
		var lits []any
		for {
			lit, err := p.next()
			if err != nil {
				return nil, err
			}
			lits = append(lits, lit.text)
			if p.peekKeyword(")") {
				p.i++
				return sqlexpr.In(col.text, lits...), nil
			}
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
	}
	op, err := p.next()
	if err != nil {
		return nil, err
	}
	lit, err := p.next()
	if err != nil {
		return nil, err
	}
	ops := map[string]sqlexpr.CmpOp{"=": sqlexpr.OpEq, "<": sqlexpr.OpLt, "<=": sqlexpr.OpLe, ">": sqlexpr.OpGt, ">=": sqlexpr.OpGe}
	if op.quoted {
		return nil, fmt.Errorf("want an operator after %s, got '%s'", col.text, op.text)
	}
	if op.text == "!=" {
		return sqlexpr.Not(sqlexpr.Cmp(col.text, sqlexpr.OpEq, lit.text)), nil
	}
	cmp, ok := ops[op.text]
	if !ok {
		return nil, fmt.Errorf("want an operator after %s, got %q", col.text, op.text)
	}
	return sqlexpr.Cmp(col.text, cmp, lit.text), nil
}

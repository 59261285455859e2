package sqlexpr

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// Regular expressions: rlike, regexp_extract and regexp_replace. Spark uses java.util.regex;
// the engine compiles the pattern with Go's RE2 syntax, which agrees on the common subset
// (classes, groups, alternation, greedy and lazy quantifiers, \d \w \s, anchors) and refuses,
// at bind time, what RE2 lacks (backreferences, lookaround, possessive quantifiers). Known
// differences on accepted patterns: Java's $ also matches before a final line terminator and
// its . excludes \r, U+0085, U+2028 and U+2029 besides \n; and where a pattern matches the
// empty string, Java steps one UTF-16 unit past an empty match, which splits a character past
// U+FFFF in two (the engine steps whole characters).

// regexpArg compiles argument i, which must be a constant pattern (Spark compiles a
// non-constant one per row; the engine asks for a constant so that a bad pattern is an error
// when the expression is checked, not a failed batch).
func regexpArg(ca *callArgs, i int) (*regexp.Regexp, bool, error) {
	p, null, err := ca.litStr(i, "regular expression (a string literal)")
	if err != nil || null {
		return nil, null, err
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, false, ca.errf(i, "a regular expression the engine supports (RE2 syntax; %v)", err)
	}
	return re, false, nil
}

// needsContext reports whether the pattern looks behind its start (^, \A, \b, \B), so
// that matching from an offset of a slice would not be matching inside the whole text.
func needsContext(re *regexp.Regexp) bool {
	t, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return true
	}
	var walk func(*syntax.Regexp) bool
	walk = func(x *syntax.Regexp) bool {
		switch x.Op {
		case syntax.OpBeginLine, syntax.OpBeginText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
			return true
		}
		for _, s := range x.Sub {
			if walk(s) {
				return true
			}
		}
		return false
	}
	return walk(t)
}

// replPart is a piece of a replacement: literal bytes, or group (>= 0) of the match.
type replPart struct {
	lit   []byte
	group int
}

// parseReplacement reads a java.util.regex replacement: \x is x, $n a group (digits taken
// while the group exists), ${name} a named group; anything else in it is an error.
func parseReplacement(s string, re *regexp.Regexp) ([]replPart, error) {
	var parts []replPart
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			parts = append(parts, replPart{lit: lit, group: -1})
			lit = nil
		}
	}
	groups := re.NumSubexp()
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			i++
			if i == len(s) {
				return nil, fmt.Errorf("the character to be escaped is missing at the end")
			}
			lit = append(lit, s[i])
		case '$':
			i++
			if i == len(s) {
				return nil, fmt.Errorf("a group number or {name} after $ at the end")
			}
			if s[i] == '{' {
				end := i + 1
				for end < len(s) && s[end] != '}' {
					end++
				}
				if end == len(s) {
					return nil, fmt.Errorf("} after ${ in %q", s)
				}
				g := re.SubexpIndex(s[i+1 : end])
				if g < 0 {
					return nil, fmt.Errorf("no group named %q", s[i+1:end])
				}
				flush()
				parts = append(parts, replPart{group: g})
				i = end
				continue
			}
			if s[i] < '0' || s[i] > '9' {
				return nil, fmt.Errorf("a group number after $, found %q (write \\$ for a dollar sign)", s[i])
			}
			g := int(s[i] - '0')
			if g > groups {
				return nil, fmt.Errorf("no group %d (the pattern has %d)", g, groups)
			}
			for i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' {
				ng := g*10 + int(s[i+1]-'0')
				if ng > groups {
					break
				}
				g = ng
				i++
			}
			flush()
			parts = append(parts, replPart{group: g})
		default:
			lit = append(lit, c)
		}
	}
	flush()
	return parts, nil
}

// javaMatches returns the matches java.util.regex's find() loop visits in t: after an empty
// match the search moves on one character, after a non-empty one it resumes at its end (Go's
// FindAll also skips an empty match right after a non-empty one; Java does not). Patterns
// that look behind their start keep Go's loop, which sees the whole text.
func javaMatches(re *regexp.Regexp, t []byte, ctx bool) [][]int {
	if ctx {
		return re.FindAllSubmatchIndex(t, -1)
	}
	var out [][]int
	prevStart, next := -1, 0
	for next <= len(t) {
		if next == prevStart {
			if next == len(t) {
				break
			}
			_, w := decodeRuneAt(t, next)
			next += w
			if next > len(t) {
				break
			}
		}
		loc := re.FindSubmatchIndex(t[next:])
		if loc == nil {
			break
		}
		for k := range loc {
			if loc[k] >= 0 {
				loc[k] += next
			}
		}
		out = append(out, loc)
		prevStart, next = loc[0], loc[1]
		if loc[0] != loc[1] {
			prevStart = -1
		}
	}
	return out
}

// utf16Offset is the byte offset in s of UTF-16 unit k (Java's String index, which
// regexp_replace's position counts): characters past U+FFFF count two.
func utf16Offset(s []byte, k int64) int {
	i := 0
	for k > 0 && i < len(s) {
		r, w := utf8.DecodeRune(s[i:])
		k--
		if r > 0xFFFF {
			k--
		}
		i += w
	}
	return i
}

func decodeRuneAt(t []byte, i int) (rune, int) { return utf8.DecodeRune(t[i:]) }

func bindRegexp(ca *callArgs) (enode, error) {
	s, err := ca.str(0)
	if err != nil {
		return nil, err
	}
	re, null, err := regexpArg(ca, 1)
	if err != nil {
		return nil, err
	}
	args := []enode{s, castTo(ca.args[1], sqlType{k: kString})}
	nullNode := func(t sqlType) enode { return &litNode{lit: &nLit{t: sqlType{k: kNull}, null: true}, t: t} }
	switch ca.c.name {
	case "rlike":
		if null {
			return nullNode(sqlType{k: kBool}), nil
		}
		return boolFn(args, func(r int, v []*vec) (bool, bool) { return re.Match(v[0].str(r)), true }), nil
	case "regexp_extract":
		idx, inull, err := ca.optLitInt(2, "group index", 1)
		if err != nil {
			return nil, err
		}
		if null || inull {
			return nullNode(sqlType{k: kString}), nil
		}
		if idx < 0 || idx > int64(re.NumSubexp()) {
			return nil, ca.errf(min(2, len(ca.args)-1), "a group index from 0 to %d (the pattern's groups), found %d", re.NumSubexp(), idx)
		}
		return strFn(args, func(r int, v []*vec, dst []byte) ([]byte, bool) {
			t := v[0].str(r)
			loc := re.FindSubmatchIndex(t)
			if loc == nil || loc[2*idx] < 0 {
				return dst, true
			}
			return append(dst, t[loc[2*idx]:loc[2*idx+1]]...), true
		}), nil
	}
	return bindRegexpReplace(ca, s, re, null)
}

func bindRegexpReplace(ca *callArgs, s enode, re *regexp.Regexp, null bool) (enode, error) {
	rep, rnull, err := ca.litStr(2, "replacement (a string literal)")
	if err != nil {
		return nil, err
	}
	pos, pnull, err := ca.optLitInt(3, "position", 1)
	if err != nil {
		return nil, err
	}
	if !pnull && pos < 1 {
		return nil, ca.errf(3, "a position of 1 or more, found %d", pos)
	}
	if null || rnull || pnull {
		return &litNode{lit: &nLit{t: sqlType{k: kNull}, null: true}, t: sqlType{k: kString}}, nil
	}
	parts, err := parseReplacement(rep, re)
	if err != nil {
		return nil, ca.errf(2, "a replacement string: %v", err)
	}
	ctx := needsContext(re)
	return strFn([]enode{s}, func(r int, v []*vec, dst []byte) ([]byte, bool) {
		t := v[0].str(r)
		from := utf16Offset(t, pos-1)
		if pos > 1 && from == len(t) {
			return append(dst, t...), true // Spark leaves the text whole when pos is past its end
		}
		dst = append(dst, t[:from]...)
		t = t[from:]
		last := 0
		for _, m := range javaMatches(re, t, ctx) {
			dst = append(dst, t[last:m[0]]...)
			for _, p := range parts {
				if p.group < 0 {
					dst = append(dst, p.lit...)
				} else if m[2*p.group] >= 0 {
					dst = append(dst, t[m[2*p.group]:m[2*p.group+1]]...)
				}
			}
			last = m[1]
		}
		return append(dst, t[last:]...), true
	}), nil
}

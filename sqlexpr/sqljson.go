package sqlexpr

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/medallion-lake/medallion/pq"
)

// get_json_object(json, path): the value at a JSONPath ($, .name, ['name'], [n]) of the
// first JSON value in the text, as Spark returns it: a string unquoted, anything else as
// compact JSON (numbers as Jackson writes them: integers as written, fractions as Java's
// Double.toString), NULL for a JSON null, a missing path, invalid JSON or an invalid path.
// Wildcards ([*], .*) are refused when the path is a constant.

type jsonStep struct {
	name  string
	index int // -1: a name step
}

// parseJSONPath reads a Spark JSON path; ok is false for a path Spark does not accept
// (wild says it uses a wildcard, which the engine does not evaluate).
func parseJSONPath(p string) (steps []jsonStep, ok, wild bool) {
	if !strings.HasPrefix(p, "$") {
		return nil, false, false
	}
	i := 1
	for i < len(p) {
		switch p[i] {
		case '.':
			j := i + 1
			for j < len(p) && p[j] != '.' && p[j] != '[' {
				j++
			}
			name := p[i+1 : j]
			if name == "" {
				return nil, false, false
			}
			if name == "*" {
				return nil, false, true
			}
			steps = append(steps, jsonStep{name: name, index: -1})
			i = j
		case '[':
			end := strings.IndexByte(p[i:], ']')
			if end < 0 {
				return nil, false, false
			}
			in := p[i+1 : i+end]
			switch {
			case in == "*":
				return nil, false, true
			case len(in) >= 2 && in[0] == '\'' && in[len(in)-1] == '\'':
				steps = append(steps, jsonStep{name: in[1 : len(in)-1], index: -1})
			default:
				n, err := strconv.Atoi(in)
				if err != nil || n < 0 || in[0] == '+' {
					return nil, false, false
				}
				steps = append(steps, jsonStep{index: n})
			}
			i += end + 1
		default:
			return nil, false, false
		}
	}
	return steps, true, false
}

// jsonScan is a small strict JSON reader over one text, value by value.
type jsonScan struct {
	s   []byte
	i   int
	bad bool
	// lone is set when str decodes a \u escape of a surrogate that is not half of a pair: Java
	// keeps such a character in its String (Jackson's generator writes it back as the escape),
	// and Spark's get_json_object returns NULL for a string value that holds one.
	lone bool
}

func (j *jsonScan) ws() {
	for j.i < len(j.s) && (j.s[j.i] == ' ' || j.s[j.i] == '\t' || j.s[j.i] == '\n' || j.s[j.i] == '\r') {
		j.i++
	}
}

// value reads one value; when want and the value is the target of the remaining steps (none
// left), it appends its result to dst (found reports it).
func (j *jsonScan) value(steps []jsonStep, want bool, dst []byte) (out []byte, found, isNull bool) {
	j.ws()
	if j.i >= len(j.s) {
		j.bad = true
		return dst, false, false
	}
	start := j.i
	switch c := j.s[j.i]; {
	case c == '{' || c == '[':
		// An object and an array are read by one loop: an object's member has its key first.
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		j.i++
		for k := 0; ; k++ {
			j.ws()
			if k == 0 && j.i < len(j.s) && j.s[j.i] == closer {
				j.i++
				break
			}
			onPath := len(steps) > 0 && steps[0].index == k
			if c == '{' {
				key, ok := j.str(nil)
				j.ws()
				if !ok || j.i >= len(j.s) || j.s[j.i] != ':' {
					j.bad = true
					return dst, false, false
				}
				j.i++
				onPath = len(steps) > 0 && steps[0].index < 0 && !found && string(key) == steps[0].name
			}
			if onPath {
				dst, found, isNull = j.value(steps[1:], want, dst)
			} else {
				j.value(nil, false, nil)
			}
			if j.bad {
				return dst, false, false
			}
			if !j.endOfMember(closer) {
				if j.bad {
					return dst, false, false
				}
				break
			}
		}
	case c == '"' || c == '\'':
		j.lone = false
		s, ok := j.str(nil)
		if !ok {
			j.bad = true
			return dst, false, false
		}
		if len(steps) == 0 && want {
			return append(dst, s...), true, j.lone
		}
		return dst, found, false
	default:
		if !j.scalar() {
			j.bad = true
			return dst, false, false
		}
	}
	if len(steps) == 0 && want {
		if string(j.s[start:j.i]) == "null" {
			return dst, true, true
		}
		return appendCompactJSON(dst, j.s[start:j.i]), true, false
	}
	return dst, found, isNull
}

// str reads a JSON string, unescaped, appended to dst. Spark's parser takes strings and names
// in single quotes too (where \' is an escape), and raw control characters in them.
func (j *jsonScan) str(dst []byte) ([]byte, bool) { return j.quoted(dst, true) }

// quoted reads a string in double or single quotes, unescaped, appended to dst; a raw control
// character in it is refused unless rawControl (get_json_object's parser allows them,
// from_json's Jackson default does not).
func (j *jsonScan) quoted(dst []byte, rawControl bool) ([]byte, bool) {
	if j.i >= len(j.s) || j.s[j.i] != '"' && j.s[j.i] != '\'' {
		return nil, false
	}
	q := j.s[j.i]
	j.i++
	for j.i < len(j.s) {
		c := j.s[j.i]
		switch {
		case c == q:
			j.i++
			if dst == nil {
				dst = []byte{}
			}
			return dst, true
		case c < 0x20 && !rawControl:
			return nil, false
		case c == '\\':
			if j.i+1 >= len(j.s) {
				return nil, false
			}
			e := j.s[j.i+1]
			j.i += 2
			if b, ok := jsonEscape(e); ok {
				dst = append(dst, b)
				continue
			}
			if e != 'u' {
				return nil, false
			}
			r, ok := j.hex4()
			if !ok {
				return nil, false
			}
			if r >= 0xD800 && r < 0xDC00 && j.i+1 < len(j.s) && j.s[j.i] == '\\' && j.s[j.i+1] == 'u' {
				next := j.i
				j.i += 2
				lo, ok := j.hex4()
				if !ok {
					return nil, false
				}
				if lo >= 0xDC00 && lo < 0xE000 {
					r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				} else {
					j.i = next // not a pair: the next escape is a character of its own
				}
			}
			if r >= 0xD800 && r < 0xE000 {
				// A lone surrogate, kept as its three-byte (WTF-8) form, which no valid UTF-8
				// holds, so that appendJacksonString can write it back as Jackson does.
				dst = appendLoneSurrogate(dst, r)
				j.lone = true
				continue
			}
			dst = utf8.AppendRune(dst, r)
		default:
			dst = append(dst, c)
			j.i++
		}
	}
	return nil, false
}

// appendLoneSurrogate writes a surrogate (U+D800 to U+DFFF) in its three-byte (WTF-8) form,
// which no valid UTF-8 holds: the JSON readers keep a lone surrogate so, as Java's String
// does, until it is written out (appendJacksonString, appendJavaUTF8).
func appendLoneSurrogate(dst []byte, r rune) []byte {
	return append(dst, 0xE0|byte(r>>12), 0x80|byte(r>>6&0x3F), 0x80|byte(r&0x3F))
}

// isLoneSurrogate reports whether s[i:] starts with appendLoneSurrogate's form.
func isLoneSurrogate(s []byte, i int) bool {
	return s[i] == 0xED && i+2 < len(s) && s[i+1] >= 0xA0
}

// appendJavaUTF8 copies s as Java's String writes itself to UTF-8: a lone surrogate as ?.
func appendJavaUTF8(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		if isLoneSurrogate(s, i) {
			dst = append(dst, '?')
			i += 2
			continue
		}
		dst = append(dst, s[i])
	}
	return dst
}

// jsonEscape is the byte a one-character escape stands for (\n, \", and \' since single
// quotes are allowed); false for \u and anything else.
func jsonEscape(e byte) (byte, bool) {
	switch e {
	case '"', '\\', '/', '\'':
		return e, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

func (j *jsonScan) hex4() (rune, bool) {
	if j.i+4 > len(j.s) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(j.s[j.i:j.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	j.i += 4
	return rune(v), true
}

// scalar reads true, false, null or a number (JSON's strict syntax).
func (j *jsonScan) scalar() bool {
	for _, w := range []string{"true", "false", "null"} {
		if strings.HasPrefix(string(j.s[j.i:min(j.i+5, len(j.s))]), w) {
			j.i += len(w)
			return true
		}
	}
	start := j.i
	if j.i < len(j.s) && j.s[j.i] == '-' {
		j.i++
	}
	d := j.i
	if n := j.digits(); n == 0 || j.s[d] == '0' && n > 1 {
		return false
	}
	if j.i < len(j.s) && j.s[j.i] == '.' {
		j.i++
		if j.digits() == 0 {
			return false
		}
	}
	if j.i < len(j.s) && (j.s[j.i] == 'e' || j.s[j.i] == 'E') {
		j.i++
		if j.i < len(j.s) && (j.s[j.i] == '+' || j.s[j.i] == '-') {
			j.i++
		}
		if j.digits() == 0 {
			return false
		}
	}
	return j.i > start
}

// digits reads a run of decimal digits and returns how many it read.
func (j *jsonScan) digits() int {
	f := j.i
	for j.i < len(j.s) && j.s[j.i] >= '0' && j.s[j.i] <= '9' {
		j.i++
	}
	return j.i - f
}

// appendCompactJSON writes a valid JSON value as Spark's get_json_object writes it back
// (Jackson's generator): no whitespace, strings re-escaped, numbers normalized.
func appendCompactJSON(dst, v []byte) []byte {
	j := &jsonScan{s: v}
	return j.compact(dst)
}

func (j *jsonScan) compact(dst []byte) []byte {
	for j.i < len(j.s) {
		c := j.s[j.i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			j.i++
		case c == '"' || c == '\'':
			s, _ := j.str(nil)
			dst = appendJacksonString(dst, s)
		case c == '-' || c >= '0' && c <= '9':
			start := j.i
			j.scalar()
			dst = appendJacksonNumber(dst, j.s[start:j.i])
		default:
			dst = append(dst, c)
			j.i++
		}
	}
	return dst
}

func appendJacksonNumber(dst, num []byte) []byte {
	if !strings.ContainsAny(string(num), ".eE") {
		v, ok := pq.ParseDecimal(string(num), 0)
		if ok != nil {
			return append(dst, num...)
		}
		return append(dst, pq.FormatDecimal(v, 0)...)
	}
	f, _ := strconv.ParseFloat(string(num), 64)
	return append(dst, pq.JavaDouble(f, 64)...)
}

// endOfMember reads what follows a member of an object or an element of an array: ',' (more
// follow: true), the closing byte close (false), or anything else (j.bad, false).
func (j *jsonScan) endOfMember(close byte) bool {
	j.ws()
	if j.i < len(j.s) && j.s[j.i] == ',' {
		j.i++
		return true
	}
	if j.i < len(j.s) && j.s[j.i] == close {
		j.i++
	} else {
		j.bad = true
	}
	return false
}

// appendJacksonString quotes s as Jackson 2.15's UTF-8 generator (Spark 3.5's) does: " and \
// escaped, control characters as \n \t \r \b \f or \u00XX, a character beyond the Basic
// Multilingual Plane as its UTF-16 surrogate pair (\uD83D\uDE00), a lone surrogate as its
// escape (\uD800), everything else as itself.
func appendJacksonString(dst, s []byte) []byte {
	const hex = "0123456789ABCDEF"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isLoneSurrogate(s, i) {
			u := rune(c&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)
			dst = append(dst, '\\', 'u', hex[u>>12&15], hex[u>>8&15], hex[u>>4&15], hex[u&15])
			i += 2
			continue
		}
		if c >= 0xF0 {
			if r, n := utf8.DecodeRune(s[i:]); r > 0xFFFF {
				hi, lo := utf16.EncodeRune(r)
				for _, u := range []rune{hi, lo} {
					dst = append(dst, '\\', 'u', hex[u>>12&15], hex[u>>8&15], hex[u>>4&15], hex[u&15])
				}
				i += n - 1
				continue
			}
		}
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// getJSONObject evaluates one row.
func getJSONObject(dst, text []byte, steps []jsonStep) ([]byte, bool) {
	j := &jsonScan{s: text}
	start := len(dst)
	out, found, isNull := j.value(steps, true, dst)
	if j.bad || !found || isNull {
		return dst[:start], false
	}
	return out, true
}

func bindJSONCall(ca *callArgs) (enode, bool, error) {
	if ca.c.name == "from_json" {
		return nil, true, bareFromJSON(ca.c) // a field of it binds in bindField
	}
	if ca.c.name != "get_json_object" {
		return nil, false, nil
	}
	js, err := ca.str(0)
	if err != nil {
		return nil, true, err
	}
	p, err := ca.str(1)
	if err != nil {
		return nil, true, err
	}
	var fixed []jsonStep
	haveFixed := false
	if l := literalScalar(p); l != nil && !l.isNull(0) {
		steps, ok, wild := parseJSONPath(string(l.str(0)))
		if wild {
			return nil, true, ca.errf(1, "a JSON path without wildcards ([*] and .* are not supported by the engine)")
		}
		if !ok {
			return nullOf(sqlType{k: kString}), true, nil // Spark: an invalid path gives NULL
		}
		fixed, haveFixed = steps, true
	}
	return strFn([]enode{js, p}, func(r int, v []*vec, dst []byte) ([]byte, bool) {
		steps := fixed
		if !haveFixed {
			var ok bool
			if steps, ok, _ = parseJSONPath(string(v[1].str(r))); !ok {
				return dst, false
			}
		}
		return getJSONObject(dst, v[0].str(r), steps)
	}), true, nil
}

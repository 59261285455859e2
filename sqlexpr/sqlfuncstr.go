package sqlexpr

import (
	"bytes"
	"math"
	"unicode"
	"unicode/utf8"
)

// String functions with Spark's semantics (UTF8String's): positions and lengths count
// characters (code points), positions are 1-based, a negative position counts from the end.

// maxFuncString bounds what lpad, rpad and repeat build for one row: a longer result is NULL
// rather than a memory blow-up (Spark would fail the query).
const maxFuncString = 16 << 20

// runeOffset is the byte offset of the k-th code point of s (len(s) when s has fewer).
func runeOffset(s []byte, k int64) int {
	i := 0
	for ; k > 0 && i < len(s); k-- {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, w := utf8.DecodeRune(s[i:])
		i += w
	}
	return i
}

// substrSQL is Spark's substring(s, pos, length) (UTF8String.substringSQL): pos 0 is the
// first character, a negative pos counts from the end, and what falls outside is cut off.
func substrSQL(s []byte, pos, length int64) []byte {
	n := int64(utf8.RuneCount(s))
	start := int64(0)
	switch {
	case pos > 0:
		start = pos - 1
	case pos < 0:
		start = n + pos
	}
	end := min(start+length, n)
	start = max(start, 0)
	if start >= end {
		return nil
	}
	b := runeOffset(s, start)
	return s[b : b+runeOffset(s[b:], end-start)]
}

// padSQL is Spark's lpad/rpad: s cut or padded with p (repeated, cut) to length characters;
// an empty pad only cuts.
func padSQL(dst, s []byte, length int64, p []byte, left bool) ([]byte, bool) {
	n := int64(utf8.RuneCount(s))
	spaces := length - n
	if spaces <= 0 || len(p) == 0 {
		return append(dst, s[:runeOffset(s, max(length, 0))]...), true
	}
	if int64(len(s))+spaces*int64(utf8.UTFMax) > maxFuncString {
		return dst, false
	}
	pn := int64(utf8.RuneCount(p))
	fill := func(dst []byte) []byte {
		for k := spaces; k > 0; k -= pn {
			dst = append(dst, p[:runeOffset(p, min(k, pn))]...)
		}
		return dst
	}
	if left {
		return append(fill(dst), s...), true
	}
	return fill(append(dst, s...)), true
}

// indexSQL is UTF8String.indexOf(v, start) + 1: the 1-based character position of the first
// v in s at or after character start, 0 when there is none; an empty v is at 1.
func indexSQL(s, v []byte, start int64) int64 {
	if len(v) == 0 {
		return 1
	}
	b := runeOffset(s, start)
	if start > 0 && b == len(s) {
		return 0
	}
	k := bytes.Index(s[b:], v)
	if k < 0 {
		return 0
	}
	return start + int64(utf8.RuneCount(s[b:b+k])) + 1
}

// initcapSQL is Spark's initcap: lower case, then title case the first character and each
// one after a space (0x20; no other separator).
func initcapSQL(dst, s []byte) []byte {
	lo := appendCase(nil, s, false)
	prevSpace := true
	for len(lo) > 0 {
		r, w := utf8.DecodeRune(lo)
		if prevSpace && r != utf8.RuneError {
			dst = utf8.AppendRune(dst, unicode.ToTitle(r))
		} else {
			dst = append(dst, lo[:w]...)
		}
		prevSpace = r == ' '
		lo = lo[w:]
	}
	return dst
}

func reverseSQL(dst, s []byte) []byte {
	for len(s) > 0 {
		_, w := utf8.DecodeLastRune(s)
		dst = append(dst, s[len(s)-w:]...)
		s = s[:len(s)-w]
	}
	return dst
}

// translateMap is Spark's translate dictionary: each character of from maps to the
// character of to at its position, or is deleted when to is shorter; the first mapping of
// a character wins.
func translateMap(from, to []byte) map[rune]rune {
	m := map[rune]rune{}
	tr := []rune(string(to))
	for i, r := range []rune(string(from)) {
		if _, ok := m[r]; ok {
			continue
		}
		m[r] = -1
		if i < len(tr) {
			m[r] = tr[i]
		}
	}
	return m
}

func translateSQL(dst, s []byte, m map[rune]rune) []byte {
	for _, r := range string(s) {
		t, ok := m[r]
		switch {
		case !ok:
			dst = utf8.AppendRune(dst, r)
		case t >= 0 && t != 0: // Spark marks deletion with U+0000, so a mapping to it deletes too
			dst = utf8.AppendRune(dst, t)
		}
	}
	return dst
}

// splitPartSQL is Spark's split_part: the part-th piece of s split at every delim (counted
// from the end when negative), "" when there is no such piece; an empty delim leaves s whole.
func splitPartSQL(s, delim []byte, part int64) []byte {
	var parts [][]byte
	if len(delim) == 0 {
		parts = [][]byte{s}
	} else {
		parts = bytes.Split(s, delim)
	}
	if part < 0 {
		part += int64(len(parts)) + 1
	}
	if part < 1 || part > int64(len(parts)) {
		return nil
	}
	return parts[part-1]
}

func repeatSQL(dst, s []byte, times int64) ([]byte, bool) {
	if times <= 0 || len(s) == 0 {
		return dst, true
	}
	if times > math.MaxInt32 || int64(len(s))*times > maxFuncString {
		return dst, false
	}
	for range times {
		dst = append(dst, s...)
	}
	return dst, true
}

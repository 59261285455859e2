// Package dtpattern holds what Spark's datetime patterns (DateTimeFormatter's syntax) say the
// same way wherever they are read: bronze's timestamp formats (bronze/timefmt) and the SQL
// engine's to_date, to_timestamp and from_unixtime (sqlexpr). It keeps no state.
package dtpattern

import "strings"

// Quoted reads the quoted text that starts at p[start] (a quote): the text up to the next
// lone quote, two quotes in a row inside it standing for one. end is the index after the
// closing quote; ok is false when the pattern ends before it. Two quotes right at start give
// "" and start+2: the callers read that as one literal quote.
func Quoted(p string, start int) (text string, end int, ok bool) {
	var sb strings.Builder
	for j := start + 1; j < len(p); j++ {
		if p[j] != '\'' {
			sb.WriteByte(p[j])
			continue
		}
		if j+1 < len(p) && p[j+1] == '\'' {
			sb.WriteByte('\'')
			j++
			continue
		}
		return sb.String(), j + 1, true
	}
	return "", len(p), false
}

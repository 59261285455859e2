package bronze

import (
	"bufio"
	"bytes"
	"io"
)

// csvRecordInfo describes one record found by readCSVRecord.
type csvRecordInfo struct {
	size         int64 // bytes of the record in the object, its line end included
	content      int64 // size without the final "\n" or "\r\n"
	lines        int64 // physical lines it spans
	blank        bool  // an empty line, which encoding/csv skips
	unterminated bool  // a quoted field still open at the end of the object
}

// States of the record splitter.
const (
	csvFieldStart = iota
	csvUnquoted
	csvQuoted
	csvQuoteSeen   // a '"' inside a quoted field: closing, or the first of `""`
	csvQuoteCR     // `"\r`: the record ends if '\n' follows
	csvBadLineRest // encoding/csv reports an error and drops the rest of this line
)

// readCSVRecord reads the next CSV record from br, cutting exactly where encoding/csv (with
// LazyQuotes off) ends a record, so that parsing the record alone gives what parsing the object
// gives. Why not just csv.Reader: it holds a whole record, however long, and an unterminated
// quote makes the rest of the object one record (a 400 MB field cost 4.1 GB of RSS). Here at
// most keep bytes of the record are appended to buf; the rest is only scanned and counted.
// info.size is 0 at the end of the input. err is io.EOF when the input ended (the record, if
// any, is still returned) or the reader's own error.
func readCSVRecord(br *bufio.Reader, buf []byte, keep int) ([]byte, csvRecordInfo, error) {
	var info csvRecordInfo
	state := csvFieldStart
	var last byte // of the previous piece: a "\r\n" can straddle two
	for {
		chunk, err := br.ReadSlice('\n')
		info.size += int64(len(chunk))
		if n := keep - len(buf); n > 0 {
			buf = append(buf, chunk[:min(n, len(chunk))]...)
		}
		var ended bool
		state, ended = csvScan(state, chunk)
		if ended {
			info.lines++
			crlf := len(chunk) >= 2 && chunk[len(chunk)-2] == '\r' || len(chunk) == 1 && last == '\r'
			info.content = info.size - 1 - int64(btoi(crlf))
			info.blank = info.content == 0 // encoding/csv skips empty lines
			return buf, info, nil
		}
		if len(chunk) > 0 {
			last = chunk[len(chunk)-1]
			if last == '\n' {
				info.lines++ // a line end inside a quoted field
			}
		}
		switch err {
		case nil, bufio.ErrBufferFull:
			continue
		case io.EOF:
			if info.size == 0 {
				return buf, info, io.EOF
			}
			info.content = info.size
			switch last {
			case '\n': // only inside an unterminated quoted field
				info.content--
			case '\r':
				info.content-- // encoding/csv drops a "\r" before the end of the input
				info.lines++
			default:
				info.lines++ // the last line, without its '\n'
			}
			info.unterminated = state == csvQuoted
			info.blank = info.content == 0
			return buf, info, io.EOF
		default:
			return buf, info, err
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// csvScan runs the splitter over b, a piece of one line (ReadSlice gives at most one '\n', at
// the end). ended: the record ends with b's last byte.
func csvScan(state int, b []byte) (int, bool) {
	for i := 0; i < len(b); i++ {
		if state == csvFieldStart || state == csvUnquoted {
			// Outside quotes only a '"' needs a look (a '\n' can only be b's last byte):
			// jump to it with memchr, or to the end.
			q := bytes.IndexByte(b[i:], '"')
			if q < 0 {
				if b[len(b)-1] == '\n' {
					return csvFieldStart, true
				}
				if b[len(b)-1] != ',' {
					state = csvUnquoted
				} else {
					state = csvFieldStart
				}
				return state, false
			}
			if q > 0 {
				state = csvUnquoted
				if b[i+q-1] == ',' {
					state = csvFieldStart
				}
				i += q
			}
		}
		c := b[i]
		switch state {
		case csvFieldStart, csvUnquoted:
			switch c {
			case '"':
				if state == csvFieldStart {
					state = csvQuoted
				} else {
					state = csvBadLineRest // a bare quote
				}
			case ',':
				state = csvFieldStart
			case '\n':
				return csvFieldStart, true
			default:
				state = csvUnquoted
			}
		case csvQuoted:
			j := bytes.IndexByte(b[i:], '"')
			if j < 0 {
				return state, false // newlines inside quotes do not end the record
			}
			i += j
			state = csvQuoteSeen
		case csvQuoteSeen:
			switch c {
			case '"':
				state = csvQuoted
			case ',':
				state = csvFieldStart
			case '\n':
				return csvFieldStart, true
			case '\r':
				state = csvQuoteCR
			default:
				state = csvBadLineRest // `"x`: extraneous quote
			}
		case csvQuoteCR:
			if c == '\n' {
				return csvFieldStart, true
			}
			state = csvBadLineRest
		case csvBadLineRest:
			if j := bytes.IndexByte(b[i:], '\n'); j >= 0 {
				return csvFieldStart, true
			}
			return state, false
		}
	}
	return state, false
}

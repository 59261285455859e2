package pq

import (
	"hash/maphash"

	"github.com/medallion-lake/medallion/txlog"
)

// dictionarySample is how many rows decide whether a column gets a dictionary.
const dictionarySample = 1024

// chooseEncodings picks, from a sample of the first rows, the top-level string columns written
// PLAIN (plain) and the integer columns written with a dictionary (dict: a top-level integer
// column, or a top-level struct all of whose integer fields qualify).
//
// Integers: parquet-go writes them PLAIN unless told, and snappy then compresses 8 bytes a
// row. A column of few distinct values (gold's window bounds, its counts, late_rows: rows come
// by window) is a few bits a row as dictionary indexes instead, which costs less to write than
// to compress, and every reader decodes it. A column with a bloom filter never gets one: a
// dictionary that outgrows DictionaryMaxBytes would leave its PLAIN pages' values out of the
// filter (see bloomPlan.forcePlain).
func (e *FileEncoder) chooseEncodings(cols []*Column, idx []int) (plain, dict map[int]bool) {
	plain, dict = map[int]bool{}, map[int]bool{}
	seen := map[uint64]struct{}{}
	seed := maphash.MakeSeed()
	filtered := map[int]bool{}
	for _, name := range e.opts.BloomFilterColumns {
		filtered[FieldIndexFold(e.schema, name)] = true
	}
	for c, col := range cols {
		switch col.Kind {
		case KindBytes:
			plain[c] = mostlyDistinctBytes(col, idx, seen, seed)
		case KindInt64, KindInt32:
			dict[c] = !filtered[c] && fewDistinctInts(col, idx, seen)
		case KindStruct:
			dict[c] = !filtered[c] && fewDistinctFields(col, idx, seen)
		}
	}
	return plain, dict
}

// sampleRows calls f with up to dictionarySample rows of col, spread over the rows, not their
// head: gold's rows come by window, and the head of a file that starts with a window of few
// groups repeats its keys in the next windows while the file as a whole has a hundred
// thousand of them. It returns the number of rows sampled.
func sampleRows(col *Column, idx []int, f func(i int)) int {
	rows := col.Len
	if idx != nil {
		rows = len(idx)
	}
	n := min(rows, dictionarySample)
	step := max(rows/dictionarySample, 1)
	for k := 0; k < n; k++ {
		i := k * step
		if idx != nil {
			i = idx[i]
		}
		if !col.IsNull(i) {
			f(i)
		}
	}
	return n
}

// mostlyDistinctBytes reports whether a string or binary column's sample is mostly distinct
// values. Strings: PLAIN for ids, nearly every sampled value distinct. A key column drawn from
// 1k values repeats in a 1024-row sample (about 640 distinct) yet has at most 1k entries for a
// file's tens of thousands of rows: it gets a dictionary, which readers aggregate by
// (Column.Dictionary). From about 4k distinct values on, a sample of 1024 is more than 7/8
// distinct. Binary columns keep the older rule, PLAIN once half the sample is distinct: gold's
// exact sums at 100k keys (a group's one or two amounts, in cents) repeat in a sample, but a
// file holds tens of thousands of them, and a dictionary of those cost 9% of a replay's CPU in
// parquet-go's dictionary inserts.
func mostlyDistinctBytes(col *Column, idx []int, seen map[uint64]struct{}, seed maphash.Seed) bool {
	clear(seen)
	n := sampleRows(col, idx, func(i int) { seen[maphash.Bytes(seed, col.BytesAt(i))] = struct{}{} })
	limit := n / 2
	if p, ok := col.Type.(txlog.PrimitiveType); ok && p.Name == txlog.TypeString {
		limit = n * 7 / 8
	}
	return n >= 64 && len(seen) > limit
}

// intDictMax is the most distinct values an integer column's sample may hold for a dictionary:
// one in sixteen of a full sample, so that a dictionary index takes at most 6 bits where PLAIN
// takes 32 or 64, and a file's dictionary stays far below DictionaryMaxBytes.
const intDictMax = dictionarySample / 16

// fewDistinctInts reports whether an integer column's sample of at least 64 rows has at most
// intDictMax distinct values.
func fewDistinctInts(col *Column, idx []int, seen map[uint64]struct{}) bool {
	clear(seen)
	var n int
	if col.Kind == KindInt64 {
		n = sampleRows(col, idx, func(i int) { seen[uint64(col.Int64[i])] = struct{}{} })
	} else {
		n = sampleRows(col, idx, func(i int) { seen[uint64(uint32(col.Int32[i]))] = struct{}{} })
	}
	return n >= 64 && len(seen) <= intDictMax
}

// fewDistinctFields reports whether a struct has integer fields and only primitive ones, each
// integer field of few distinct values (its rows sampled where the struct is present).
func fewDistinctFields(col *Column, idx []int, seen map[uint64]struct{}) bool {
	ints := 0
	for _, ch := range col.Children {
		switch ch.Kind {
		case KindInt64, KindInt32:
			if !fewDistinctInts(ch, idx, seen) {
				return false
			}
			ints++
		case KindStruct, KindList, KindMap:
			return false
		}
	}
	return ints > 0
}

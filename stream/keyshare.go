package stream

import (
	"fmt"
	"slices"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/silver"
)

// The source query's time-window aggregations over the same group-by columns share one key
// table (gold.ShareKeys): before the aggregations of a batch start, the selected rows' keys are
// encoded once and interned once for all of them, and after they are done the table frees the
// keys none of them refers to. The state files are unchanged: each aggregation still encodes
// its own groups' key bytes.

// keyShare is one shared key table: the aggregations (by index) that use it and the batch's
// encoded keys, ids and hashes, which their inputs alias (read-only while they run).
type keyShare struct {
	aggs   []int
	ks     *gold.KeyShare
	keys   gold.Binary
	ids    []int32
	hashes []uint32
}

// shareKeys groups the aggregations that can share a key table (time windows, the same
// non-empty group-by columns) and makes each group of two or more share one. It returns the
// shares and, for each aggregation, its share's index or -1.
func shareKeys(aps []*aggPlan, aggs []*gold.Aggregation) ([]*keyShare, []int, error) {
	of := make([]int, len(aps))
	var shares []*keyShare
	for i, ap := range aps {
		of[i] = -1
		if ap.agg.Session != nil || len(ap.keyCols) == 0 {
			continue
		}
		for si, s := range shares {
			if slices.Equal(aps[s.aggs[0]].keyCols, ap.keyCols) {
				s.aggs, of[i] = append(s.aggs, i), si
				break
			}
		}
		if of[i] < 0 {
			of[i] = len(shares)
			shares = append(shares, &keyShare{aggs: []int{i}})
		}
	}
	kept := shares[:0]
	for _, s := range shares {
		if len(s.aggs) < 2 {
			of[s.aggs[0]] = -1 // alone: a table of its own, as before
			continue
		}
		ops := make([]*gold.Aggregation, len(s.aggs))
		for j, ai := range s.aggs {
			ops[j] = aggs[ai]
			of[ai] = len(kept)
		}
		var err error
		if s.ks, err = gold.ShareKeys(ops); err != nil {
			return nil, nil, fmt.Errorf("stream: gold %s: %w", aps[s.aggs[0]].cfg.Name, err)
		}
		kept = append(kept, s)
	}
	return kept, of, nil
}

// intern encodes the selected rows' keys once and interns them in the shared table.
func (s *keyShare) intern(aps []*aggPlan, rows *silver.Rows, sel []int32, scratch *[]byte) {
	encodeKeys(&s.keys, rows, sel, aps[s.aggs[0]].keyCols, scratch)
	s.ids, s.hashes = s.ks.Intern(&s.keys)
}

// encodeKeys encodes the group keys (columns keyCols) of the selected rows into keys.
func encodeKeys(keys *gold.Binary, rows *silver.Rows, sel []int32, keyCols []int, scratch *[]byte) {
	keys.Reset()
	if len(keyCols) == 0 {
		return
	}
	keys.Data = slices.Grow(keys.Data, keyBytes(rows, sel, keyCols, scratch))
	keys.Offsets = slices.Grow(keys.Offsets, len(sel)+1)
	for _, j := range sel {
		b := rows.Batches[rows.Batch[j]]
		for _, c := range keyCols {
			keys.Data = pq.AppendKeyPart(keys.Data, b.Columns[c], int(rows.Row[j]))
		}
		keys.EndValue()
	}
}

// keyBytes is the encoded size of the selected rows' keys, measured by encoding each part:
// the buffer then holds exactly the batch's keys. silver.KeyBytesEstimate's 40 bytes a part
// was about 2.7 times a 100k-key device id's 15, some 20 MB an aggregation that stayed
// allocated (the buffer is reused) and counted in the live heap the collector's goal doubles.
func keyBytes(rows *silver.Rows, sel []int32, keyCols []int, scratch *[]byte) int {
	n := 0
	for _, j := range sel {
		b := rows.Batches[rows.Batch[j]]
		for _, c := range keyCols {
			*scratch = pq.AppendKeyPart((*scratch)[:0], b.Columns[c], int(rows.Row[j]))
			n += len(*scratch)
		}
	}
	return n
}

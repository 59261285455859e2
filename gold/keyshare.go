package gold

import (
	"bytes"
	"fmt"
	"slices"
)

// One key table for the time-window aggregations of a query that group by the same columns
// (a tumbling and a sliding gold over device_id, say). Each of them interning the batch's keys
// in a table of its own paid a hash and a probe a row, mostly a cache miss at 100k keys, once
// per aggregation; sharing the table pays them once a batch. The state stays each
// aggregation's own: its groups, its references to keys (keyRefs, by the shared id: a slice
// index, no probe) and its snapshots and deltas, which encode key bytes, not ids, so a state
// written with a shared table restores into a table of its own and the other way round.
//
// The aggregations of a batch run concurrently, so the shared table must not change while
// they run: KeyShare.Intern adds the batch's keys before they start, the aggregations only
// read the table (an evicted key's last reference only notes the id, keyDropped), and
// KeyShare.Settle frees, after they are done, the keys no aggregation refers to any more.

// KeyShare is a key table shared by aggregations (ShareKeys). Intern and Settle must not run
// while any of its aggregations is in use.
type KeyShare struct {
	t    *keyTable
	aggs []*Aggregation
	// fresh are the ids Intern added since the last Settle: a key only late rows used has no
	// reference when the batch is done, and is freed then.
	fresh  []int32
	ids    []int32
	hashes []uint32
}

// ShareKeys makes aggs share one key table: the first one's, into which the others' keys are
// moved (their groups then name the shared ids). Each must be a time-window aggregation (not
// a session window: its state is not keyed by window start alone) with the same number of key
// columns, not already sharing, and be fed the same rows' keys: from then on every batch's
// Input carries the ids KeyShare.Intern returns, and KeyShare.Settle runs after each batch.
// The aggregations' results and state bytes are what they were with tables of their own.
func ShareKeys(aggs []*Aggregation) (*KeyShare, error) {
	if len(aggs) == 0 {
		return nil, fmt.Errorf("gold: share keys among no aggregations")
	}
	for _, a := range aggs {
		switch {
		case a.cfg.Session != nil:
			return nil, fmt.Errorf("gold: a session-window aggregation cannot share its key table")
		case a.cfg.NumKeys != aggs[0].cfg.NumKeys:
			return nil, fmt.Errorf("gold: aggregations with %d and %d key columns cannot share a key table", aggs[0].cfg.NumKeys, a.cfg.NumKeys)
		case a.share != nil:
			return nil, fmt.Errorf("gold: an aggregation already shares a key table")
		}
	}
	ks := &KeyShare{t: aggs[0].keyTable, aggs: slices.Clone(aggs)}
	for _, a := range aggs[1:] {
		ks.adopt(a)
	}
	for _, a := range aggs {
		a.share = ks
		a.keyDropped = a.keyDropped[:0]
	}
	ks.growRefs()
	// A key no group refers to (interned by rows that were all late) is freed now, as a
	// batch's Settle would free it.
	for id := range ks.t.keyLocs {
		ks.settle(int32(id))
	}
	return ks, nil
}

// adopt moves a's keys into the shared table and renames them in a's groups and references;
// its group index, hashed by key hash, is rebuilt under the shared table's hashes.
func (ks *KeyShare) adopt(a *Aggregation) {
	t, old := ks.t, a.keyTable
	remap := make([]int32, len(old.keyLocs))
	for id, l := range old.keyLocs {
		remap[id] = -1
		if l == freeLoc || id >= len(a.keyRefs) || a.keyRefs[id] == 0 {
			continue
		}
		k := old.keyArena[l.off : l.off+l.n]
		nid, h := t.findKey(k)
		if nid < 0 {
			nid = t.addKey(k, h)
		}
		remap[id] = nid
	}
	refs := make([]int32, len(t.keyLocs))
	for id, r := range a.keyRefs {
		if r != 0 && remap[id] >= 0 {
			refs[remap[id]] = r
		}
	}
	a.keyTable, a.keyRefs = t, refs
	a.gtab = newGroupIndex()
	a.gtab.Reserve(int(a.live))
	for s := range a.groups {
		g := &a.groups[s]
		if !g.live() {
			continue
		}
		g.key = remap[g.key]
		a.gtab.Insert(groupHash(t.keyHash[g.key], g.start, a.cfg.Window.Slide), int32(s))
	}
}

// growRefs sizes every aggregation's references to the table's ids.
func (ks *KeyShare) growRefs() {
	n := len(ks.t.keyLocs)
	for _, a := range ks.aggs {
		if len(a.keyRefs) < n {
			a.keyRefs = append(a.keyRefs, make([]int32, n-len(a.keyRefs))...)
		}
	}
}

// Intern adds the keys of a batch's rows to the table and returns each row's key id and hash,
// for the Input of every aggregation of the share. The slices are the share's, valid until the
// next Intern.
func (ks *KeyShare) Intern(keys *Binary) (ids []int32, hashes []uint32) {
	n := keys.Len()
	ids, hashes = slices.Grow(ks.ids[:0], n)[:n], slices.Grow(ks.hashes[:0], n)[:n]
	t := ks.t
	var last []byte
	lastID, lastHash := int32(-1), uint32(0)
	ahead := t.keyIDs.Size() >= loadAheadEntries
	for from := 0; from < n; from += internAhead {
		to := min(from+internAhead, n)
		if ahead {
			t.loadAhead(keys, from, to, hashes[from:to])
		}
		for i := from; i < to; i++ {
			k := keys.Value(i)
			// Runs of one key are common (sorted or single-key inputs); skip the look-up then.
			if lastID < 0 || !bytes.Equal(k, last) {
				var h uint32
				if ahead {
					h = hashes[i]
				} else {
					h = t.hashKey(k)
				}
				id := t.findKeyHashed(k, h)
				if id < 0 {
					id = t.addKey(k, h)
					ks.fresh = append(ks.fresh, id)
				}
				last, lastID, lastHash = k, id, h
			}
			ids[i], hashes[i] = lastID, lastHash
		}
	}
	ks.growRefs()
	ks.ids, ks.hashes = ids, hashes
	return ids, hashes
}

// internAhead is how many rows' keys Intern loads ahead of their look-ups, once the index has
// loadAheadEntries entries (below that it stays in cache and loading ahead only costs).
const internAhead = 32

// loadAhead hashes the keys of rows from..to-1 into hs and reads, in loops of independent
// loads whose cache misses overlap, the index entries they start at, then the location and
// first byte of the key each first candidate names: at 100k keys each of those was a miss in
// turn, the look-up's cost. The index is grown first so that no insert of these keys moves
// its entries.
func (t *keyTable) loadAhead(keys *Binary, from, to int, hs []uint32) {
	for i := from; i < to; i++ {
		hs[i-from] = t.hashKey(keys.Value(i))
	}
	t.keyIDs.Reserve(to - from)
	sink := t.keyIDs.Touch(hs)
	for _, h := range hs {
		if _, id, ok := t.keyIDs.Find(h, h); ok {
			if l := t.keyLocs[id]; l.n > 0 {
				sink += uint32(t.keyArena[l.off])
			}
		}
	}
	t.touchSink += sink
}

// Settle frees the keys that no aggregation of the share refers to any more: those one of them
// dropped in the batch, and those Intern added that no group took. Run it after every batch,
// once all the aggregations are done with it.
func (ks *KeyShare) Settle() {
	for _, id := range ks.fresh {
		ks.settle(id)
	}
	ks.fresh = ks.fresh[:0]
	for _, a := range ks.aggs {
		for _, id := range a.keyDropped {
			ks.settle(id)
		}
		a.keyDropped = a.keyDropped[:0]
	}
}

// settle frees key id when it is live and no aggregation refers to it.
func (ks *KeyShare) settle(id int32) {
	if !ks.t.live(id) {
		return
	}
	for _, a := range ks.aggs {
		if a.keyRefs[id] != 0 {
			return
		}
	}
	ks.t.freeKey(id)
}

// checkKeyIDs checks that in carries key ids exactly when the aggregation shares its key
// table, one a row.
func (a *Aggregation) checkKeyIDs(in *Input) error {
	switch n := len(in.EventTime); {
	case a.share == nil && (in.KeyIDs != nil || in.KeyHashes != nil):
		return fmt.Errorf("%w: the input carries key ids, and the aggregation has a key table of its own", ErrBadInput)
	case a.share == nil:
		return nil
	case len(in.KeyIDs) != n || len(in.KeyHashes) != n:
		return fmt.Errorf("%w: the aggregation shares its key table and the input has %d key ids for %d rows (KeyShare.Intern)", ErrBadInput, len(in.KeyIDs), n)
	case len(a.keyRefs) < len(a.keyLocs):
		return fmt.Errorf("%w: key ids interned into the shared key table by another share", ErrBadInput)
	}
	return nil
}

// keyBytes is the key table's footprint, split evenly among the aggregations that share it.
func (a *Aggregation) keyBytes() int64 {
	if a.share != nil {
		return a.keyTable.bytes() / int64(len(a.share.aggs))
	}
	return a.keyTable.bytes()
}

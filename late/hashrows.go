package late

import (
	"encoding/binary"
	"slices"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
)

// Where a hashed gold column's value comes from, for hashSums.
const (
	fromNull   = iota // a column nothing fills: null
	fromWindow        // the group's window (start, end)
	fromKey           // group-by column idx, from the key's encoding
	fromAgg           // an aggregate's column idx of the chunk's scratch batch
	fromZero          // late_rows, 0 in a plan's first pass (were it hashed)
)

type hashSource struct{ from, idx int }

// hashPlan returns where each column table.RowHasher hashes (every gold column but
// goldRowTags' excluded ones, in schema order) comes from, and false when a gold row's
// encoding cannot be built from the table's state as emit would write it (a window column
// that is not a struct of two int64 fields): the caller then emits rows and hashes them.
func (h *hashAgg) hashPlan(out *pq.Batch) ([]hashSource, bool) {
	a := h.a
	win := out.Columns[a.winCol]
	if win.Kind != pq.KindStruct || len(win.Children) != 2 ||
		win.Children[0].Kind != pq.KindInt64 || win.Children[1].Kind != pq.KindInt64 {
		return nil, false
	}
	from := make([]hashSource, len(a.gold.Fields)) // fromNull unless set below
	from[a.winCol] = hashSource{fromWindow, 0}
	from[a.lateCol] = hashSource{fromZero, 0}
	for k, ci := range a.keyCols {
		from[ci] = hashSource{fromKey, k}
	}
	for si := range a.specs {
		n := 1
		if a.specs[si].Fn == gold.Avg {
			n = 3
		}
		for k := range n {
			from[a.aggCol[si]+k] = hashSource{fromAgg, a.aggCol[si] + k}
		}
		if ci := a.exactCol[si]; ci >= 0 {
			from[ci] = hashSource{fromAgg, ci}
		}
	}
	excl := goldRowTags().Exclude
	var plan []hashSource
	for i, f := range a.gold.Fields {
		if !slices.Contains(excl, f.Name) {
			plan = append(plan, from[i])
		}
	}
	return plan, true
}

// hashSums adds to sums, by window start, the hash rh gives each group's gold row with
// late_rows 0 (what hashRange's emitted rows hash to), without building the row: the window
// is encoded from the group's start, each key's encoding is made once (not once per window
// of it) and only the aggregates are appended to columns, by the emitter's own code, so
// that their values are what emit writes. It reports false, having done nothing, when the
// gold schema's window is not one it encodes (see hashPlan).
func (h *hashAgg) hashSums(rh *table.RowHasher, sums table.GroupSums) (bool, error) {
	return h.hashGroups(rh, sums, nil)
}

// hashGroups is hashSums for groups only (nil: every group of h).
func (h *hashAgg) hashGroups(rh *table.RowHasher, sums table.GroupSums, groups []int32) (bool, error) {
	a := h.a
	out, err := pq.NewBatch(a.gold)
	if err != nil {
		return false, err
	}
	plan, ok := h.hashPlan(out)
	if !ok {
		return false, nil
	}
	ord, byKey, rank := h.tableOrder()
	defer func() {
		for _, s := range [][]int32{ord, byKey, rank} {
			poolPut(h.pool, (*aggPool).int32s, s)
		}
	}()
	// keys[k][koffs[k][kid]:koffs[k][kid+1]]: key id kid's encoding of group-by column k.
	kcols, err := h.keyColumns(out, byKey)
	if err != nil {
		return false, err
	}
	keys, koffs := make([][]byte, len(kcols)), make([][]int, len(kcols))
	for k, c := range kcols {
		koffs[k] = make([]int, 1, c.Len+1)
		keys[k] = make([]byte, 0, len(c.Data)+c.Len*(1+binary.MaxVarintLen64))
		for r := range c.Len {
			keys[k] = pq.EncodeRow(keys[k], kcols[k:k+1], r)
			koffs[k] = append(koffs[k], len(keys[k]))
		}
	}
	ks := &keySpans{keys: keys, offs: koffs, at: make([][][2]int, len(keys))}
	e := &emitter{h: h, out: out}
	var buf []byte
	// The hashes summed by window in a slice indexed by the window's place among the
	// table's (starts are slide apart), added to sums once a window: a map update per
	// group was a tenth of hashSums at 100k keys.
	var lo int64
	var acc [][2]uint64
	var seen []bool
	if len(h.gstart) > 0 {
		lo = slices.Min(h.gstart)
		nw := (slices.Max(h.gstart)-lo)/a.window.Slide + 1
		acc, seen = make([][2]uint64, nw), make([]bool, nw)
	}
	if groups == nil {
		groups = ord
	}
	for c0 := 0; c0 < len(groups); c0 += emitChunk {
		chunk := groups[c0:min(c0+emitChunk, len(groups))]
		out.Reset()
		for si := range h.st {
			if err := e.aggregate(chunk, &h.st[si], si); err != nil {
				return false, err
			}
		}
		for i, g := range chunk {
			j := i % keyStep
			if j == 0 {
				h.touchSink += ks.locate(h, chunk[i:min(i+keyStep, len(chunk))])
			}
			start := h.gstart[g]
			buf = buf[:0]
			for _, s := range plan {
				switch s.from {
				case fromNull:
					buf = append(buf, 0)
				case fromWindow:
					buf = append(buf, 1, 1)
					buf = binary.AppendVarint(buf, start)
					buf = append(buf, 1)
					buf = binary.AppendVarint(buf, start+a.window.Size)
				case fromKey:
					sp := ks.at[s.idx][j]
					buf = append(buf, ks.keys[s.idx][sp[0]:sp[1]]...)
				case fromAgg:
					buf = pq.EncodeRow(buf, out.Columns[s.idx:s.idx+1], i)
				case fromZero:
					buf = append(buf, 1)
					buf = binary.AppendVarint(buf, 0)
				}
			}
			w, hv := (start-lo)/a.window.Slide, rh.Hash(buf)
			acc[w], seen[w] = [2]uint64{acc[w][0] + hv[0], acc[w][1] + hv[1]}, true
		}
	}
	for w, ok := range seen {
		if ok {
			sums.Add(lo+int64(w)*a.window.Slide, acc[w])
		}
	}
	return true, nil
}

// keyStep is how many groups' key encodings keySpans locates at a time: their cache lines
// (a few hundred kB at 100k keys) stay in cache until the groups' rows are encoded.
const keyStep = 4096

// keySpans locates the key encodings of groups for hashSums, a step of groups at a time:
// in table order a group's key id is anywhere in the key arrays, and the encoding's offsets
// and first bytes loaded inside the loop that builds each row were a miss it waited on, one
// group after another (a sixth of a replay at 100k keys). Loaded in loops of their own, the
// misses of a step overlap.
type keySpans struct {
	keys [][]byte // keys[k][offs[k][kid]:offs[k][kid+1]]: key id kid's encoding of column k
	offs [][]int
	at   [][][2]int // at[k][i]: the step's group i's encoding of column k, in keys[k]
}

// locate sets at to the encodings of groups; the sum of their first bytes is returned only
// so that the loads are not optimized away.
func (ks *keySpans) locate(h *hashAgg, groups []int32) int32 {
	var sink int32
	for k, keys := range ks.keys {
		at, offs := ks.at[k][:0], ks.offs[k]
		for _, g := range groups {
			kid := h.gkey[g]
			at = append(at, [2]int{offs[kid], offs[kid+1]})
		}
		for _, sp := range at {
			if sp[1] > sp[0] {
				sink += int32(keys[sp[0]])
			}
		}
		ks.at[k] = at
	}
	return sink
}

// tableOrder is order's counterpart for a caller to whom the rows' order is nothing (hashes
// summed by window): the groups in id order and the keys in id order, so that no key is
// compared and no group placed (order's sort of the keys' bytes and its two counting passes
// were a sixth of the emission that planByTags only hashes, at 100k keys).
func (h *hashAgg) tableOrder() (ord, byKey, rank []int32) {
	p := h.pool
	ord = poolMake(p, (*aggPool).int32s, len(h.gkey))
	for i := range ord {
		ord[i] = int32(i)
	}
	byKey = poolMake(p, (*aggPool).int32s, len(h.khash))
	rank = poolMake(p, (*aggPool).int32s, len(h.khash))
	for i := range byKey {
		byKey[i], rank[i] = int32(i), int32(i)
	}
	return ord, byKey, rank
}

package join

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"unsafe"
)

// ErrStateTooLarge is returned when one side's buffered payloads or keys would pass 4 GiB,
// the reach of the state's 32-bit arena offsets.
var ErrStateTooLarge = errors.New("join: state too large")

const (
	flagMatched = 1 << iota
	flagLive
)

// stRow is one buffered row. Nothing in it points into the heap, so the collector never walks
// the state: the payload lives in the side's arena, the key in the key arena.
type stRow struct {
	t     int64  // event time, µs
	seq   uint64 // insertion order within the side: chain order, eviction tie-break, snapshot order
	off   uint32 // payload: uvarint length, then the bytes, at arena[off:]
	key   int32  // key entry, -1 for a null key (never probed, never probes)
	next  int32  // the key's next row in insertion order, -1 at the end
	flags uint8
}

// keyEnt is one distinct key in state with its chain of rows.
type keyEnt struct {
	hash       uint64
	off        uint32 // uvarint length, then the bytes, at karena[off:]
	head, tail int32  // -1: the entry is free
}

// heapEnt orders rows for eviction by (event time, seq).
type heapEnt struct {
	t   int64
	row int32
}

// sideState is one side's buffered rows: an arena of payloads, a chain of rows per key found
// through an open-addressing index (linear probing, backward-shift deletion), and a min-heap
// by event time so that eviction visits only the rows it removes.
type sideState struct {
	seed     maphash.Seed
	rows     []stRow
	freeRows []int32
	live     int
	nextSeq  uint64

	arena     []byte
	deadBytes int

	keys      []keyEnt
	freeKeys  []int32
	karena    []byte
	deadKeys  int
	index     []int32 // power-of-two size; -1 empty, else a key entry
	liveKeys  int
	heap      []heapEnt
	payloadSz int // live payload bytes (without length prefixes)
}

func newSideState(seed maphash.Seed) *sideState {
	s := &sideState{seed: seed}
	s.index = make([]int32, 16)
	for i := range s.index {
		s.index[i] = -1
	}
	return s
}

func (s *sideState) keyBytes(id int32) []byte {
	p := s.karena[s.keys[id].off:]
	n, w := binary.Uvarint(p)
	return p[w : w+int(n)]
}

func (s *sideState) payload(row int32) []byte {
	p := s.arena[s.rows[row].off:]
	n, w := binary.Uvarint(p)
	return p[w : w+int(n)]
}

// find returns the key entry of k, or -1, and k's hash.
func (s *sideState) find(k []byte) (int32, uint64) {
	h := maphash.Bytes(s.seed, k)
	mask := uint64(len(s.index) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		id := s.index[i]
		if id < 0 {
			return -1, h
		}
		if s.keys[id].hash == h && string(s.keyBytes(id)) == string(k) {
			return id, h
		}
	}
}

func (s *sideState) growIndex() {
	old := s.index
	s.index = make([]int32, len(old)*2)
	for i := range s.index {
		s.index[i] = -1
	}
	mask := uint64(len(s.index) - 1)
	for _, id := range old {
		if id < 0 {
			continue
		}
		i := s.keys[id].hash & mask
		for s.index[i] >= 0 {
			i = (i + 1) & mask
		}
		s.index[i] = id
	}
}

func appendSized(dst []byte, v []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(v)))
	return append(dst, v...)
}

func sizedLen(n int) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], uint64(n)) + n
}

// addKey creates the entry of a key not in state.
func (s *sideState) addKey(k []byte, h uint64) (int32, error) {
	if len(s.karena)+sizedLen(len(k)) > math.MaxUint32 {
		s.compactKeys()
		if len(s.karena)+sizedLen(len(k)) > math.MaxUint32 {
			return -1, fmt.Errorf("%w: join keys pass 4 GiB", ErrStateTooLarge)
		}
	}
	if (s.liveKeys+1)*4 > len(s.index)*3 {
		s.growIndex()
	}
	var id int32
	if n := len(s.freeKeys); n > 0 {
		id = s.freeKeys[n-1]
		s.freeKeys = s.freeKeys[:n-1]
	} else {
		id = int32(len(s.keys))
		s.keys = append(s.keys, keyEnt{})
	}
	s.keys[id] = keyEnt{hash: h, off: uint32(len(s.karena)), head: -1, tail: -1}
	s.karena = appendSized(s.karena, k)
	mask := uint64(len(s.index) - 1)
	i := h & mask
	for s.index[i] >= 0 {
		i = (i + 1) & mask
	}
	s.index[i] = id
	s.liveKeys++
	return id, nil
}

// removeKey frees an entry whose chain became empty.
func (s *sideState) removeKey(id int32) {
	mask := uint64(len(s.index) - 1)
	i := s.keys[id].hash & mask
	for s.index[i] != id {
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; s.index[j] >= 0; j = (j + 1) & mask {
		home := s.keys[s.index[j]].hash & mask
		// Move j into the hole at i unless its home lies cyclically in (i, j].
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			s.index[i] = s.index[j]
			i = j
		}
	}
	s.index[i] = -1
	s.deadKeys += sizedLen(len(s.keyBytes(id)))
	s.keys[id] = keyEnt{head: -1, tail: -1}
	s.freeKeys = append(s.freeKeys, id)
	s.liveKeys--
}

// insert buffers a row with the next seq; key nil with null set stores a null-key row.
func (s *sideState) insert(t int64, k []byte, null bool, payload []byte, matched bool) (int32, error) {
	return s.insertSeq(t, k, null, payload, matched, s.nextSeq)
}

func (s *sideState) insertSeq(t int64, k []byte, null bool, payload []byte, matched bool, seq uint64) (int32, error) {
	if len(s.arena)+sizedLen(len(payload)) > math.MaxUint32 {
		s.compactRows()
		if len(s.arena)+sizedLen(len(payload)) > math.MaxUint32 {
			return -1, fmt.Errorf("%w: buffered rows pass 4 GiB", ErrStateTooLarge)
		}
	}
	keyID := int32(-1)
	if !null {
		id, h := s.find(k)
		if id < 0 {
			var err error
			if id, err = s.addKey(k, h); err != nil {
				return -1, err
			}
		}
		keyID = id
	}
	var row int32
	if n := len(s.freeRows); n > 0 {
		row = s.freeRows[n-1]
		s.freeRows = s.freeRows[:n-1]
	} else {
		row = int32(len(s.rows))
		s.rows = append(s.rows, stRow{})
	}
	flags := uint8(flagLive)
	if matched {
		flags |= flagMatched
	}
	s.rows[row] = stRow{t: t, seq: seq, off: uint32(len(s.arena)), key: keyID, next: -1, flags: flags}
	s.arena = appendSized(s.arena, payload)
	s.payloadSz += len(payload)
	if keyID >= 0 {
		e := &s.keys[keyID]
		if e.tail < 0 {
			e.head = row
		} else {
			s.rows[e.tail].next = row
		}
		e.tail = row
	}
	s.heapPush(heapEnt{t: t, row: row})
	s.live++
	if seq >= s.nextSeq {
		s.nextSeq = seq + 1
	}
	return row, nil
}

func (s *sideState) less(a, b heapEnt) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	return s.rows[a.row].seq < s.rows[b.row].seq
}

func (s *sideState) heapPush(e heapEnt) {
	s.heap = append(s.heap, e)
	i := len(s.heap) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(s.heap[i], s.heap[p]) {
			break
		}
		s.heap[i], s.heap[p] = s.heap[p], s.heap[i]
		i = p
	}
}

func (s *sideState) heapPop() heapEnt {
	h := s.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && s.less(h[r], h[l]) {
			m = r
		}
		if !s.less(h[m], h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	s.heap = h
	return top
}

// evict removes every row with t <= upToUs in (t, seq) order, calling visit on each before it
// goes. It returns how many it removed.
func (s *sideState) evict(upToUs int64, visit func(row int32)) int {
	n := 0
	for len(s.heap) > 0 && s.heap[0].t <= upToUs {
		row := s.heapPop().row
		if visit != nil {
			visit(row)
		}
		s.remove(row)
		n++
	}
	if n > 0 {
		s.maybeCompact()
	}
	return n
}

// remove unlinks a row from its key's chain (evictions come mostly from the chain's head, the
// oldest rows) and frees it.
func (s *sideState) remove(row int32) {
	r := &s.rows[row]
	if id := r.key; id >= 0 {
		e := &s.keys[id]
		prev := int32(-1)
		for cur := e.head; cur != row; cur = s.rows[cur].next {
			prev = cur
		}
		if prev < 0 {
			e.head = r.next
		} else {
			s.rows[prev].next = r.next
		}
		if e.tail == row {
			e.tail = prev
		}
		if e.head < 0 {
			s.removeKey(id)
		}
	}
	n := len(s.payload(row))
	s.payloadSz -= n
	s.deadBytes += sizedLen(n)
	*r = stRow{key: -1, next: -1}
	s.freeRows = append(s.freeRows, row)
	s.live--
}

// maybeCompact rewrites an arena once most of it is dead, so that memory follows the live
// state. Offsets change; nothing else does.
func (s *sideState) maybeCompact() {
	if s.deadBytes > 1<<16 && s.deadBytes*2 > len(s.arena) {
		s.compactRows()
	}
	if s.deadKeys > 1<<16 && s.deadKeys*2 > len(s.karena) {
		s.compactKeys()
	}
}

func (s *sideState) compactRows() {
	next := make([]byte, 0, len(s.arena)-s.deadBytes+len(s.arena)/8)
	for i := range s.rows {
		r := &s.rows[i]
		if r.flags&flagLive == 0 {
			continue
		}
		p := s.payload(int32(i))
		r.off = uint32(len(next))
		next = appendSized(next, p)
	}
	s.arena, s.deadBytes = next, 0
}

func (s *sideState) compactKeys() {
	next := make([]byte, 0, len(s.karena)-s.deadKeys+len(s.karena)/8)
	for i := range s.keys {
		e := &s.keys[i]
		if e.head < 0 {
			continue
		}
		k := s.keyBytes(int32(i))
		e.off = uint32(len(next))
		next = appendSized(next, k)
	}
	s.karena, s.deadKeys = next, 0
}

// memoryBytes is the state's footprint: every buffer at its capacity.
func (s *sideState) memoryBytes() int64 {
	return int64(cap(s.rows))*int64(unsafe.Sizeof(stRow{})) +
		int64(cap(s.freeRows)+cap(s.freeKeys)+cap(s.index))*4 +
		int64(cap(s.arena)+cap(s.karena)) +
		int64(cap(s.keys))*int64(unsafe.Sizeof(keyEnt{})) +
		int64(cap(s.heap))*int64(unsafe.Sizeof(heapEnt{}))
}

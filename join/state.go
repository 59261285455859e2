package join

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"unsafe"

	"github.com/medallion-lake/medallion/internal/hashtab"
)

// ErrStateTooLarge is returned when one side's buffered payloads or keys would pass 4 GiB,
// the reach of the state's 32-bit arena offsets.
var ErrStateTooLarge = errors.New("join: state too large")

const (
	flagMatched = 1 << iota
	flagLive
	flagBits = 2
)

// stRow is one buffered row, 32 bytes. Nothing in it points into the heap, so the collector
// never walks the state: the payload lives in the side's arena, the key in the key arena.
type stRow struct {
	t          int64  // event time, µs
	sf         uint64 // seq<<flagBits | flags; seq is the insertion order within the side
	off        uint32 // payload: uvarint length, then the bytes, at arena[off:]
	key        int32  // key entry, -1 for a null key (never probed, never probes)
	next, prev int32  // the key's chain, newest first; -1 at the ends
}

func (r *stRow) seq() uint64     { return r.sf >> flagBits }
func (r *stRow) matched() bool   { return r.sf&flagMatched != 0 }
func (r *stRow) live() bool      { return r.sf&flagLive != 0 }
func (r *stRow) setMatched()     { r.sf |= flagMatched }
func (r *stRow) flagByte() uint8 { return uint8(r.sf & flagMatched) }

// keyEnt is one distinct key in state and the head of its chain of rows.
type keyEnt struct {
	off  uint32 // uvarint length, then the bytes, at karena[off:]
	head int32  // newest row; -1: the entry is free
	h    uint32 // the key's hash: removal finds the index slot without reading the key
}

// bucketUs is the width of the eviction buckets: eviction visits only the buckets the state
// watermark has reached (and splits the last one), never the whole state.
const bucketUs = 1_000_000

// sideState is one side's buffered rows: an arena of payloads, a chain of rows per key found
// through an index from the key's hash to its entry (internal/hashtab), and buckets of rows by
// event time so that eviction visits only the rows it removes.
type sideState struct {
	seed     maphash.Seed
	rows     []stRow
	freeRows []int32
	live     int
	nextSeq  uint64

	arena    []byte
	deadRows int // rows freed since the arena was last compacted

	keys     []keyEnt
	freeKeys []int32
	karena   []byte
	deadKeys int                  // keys freed since the key arena was last compacted
	index    hashtab.Table[int32] // key hash -> key entry, one per live key

	buckets   map[int64][]int32 // event-time bucket -> its rows, in no particular order
	bucketIDs []int64           // ascending
	lastID    int64             // the bucket of the last row added: rows mostly come in order
	lastRows  bool              // lastID is set
	evicting  []int32
	emitting  []int32
}

func newSideState(seed maphash.Seed) *sideState {
	return &sideState{seed: seed, index: hashtab.New[int32](16), buckets: map[int64][]int32{}}
}

// sized reads a value appendSized wrote at the start of p; short values (one length byte)
// skip the general varint decoder, which shows in profiles.
func sized(p []byte) []byte {
	if p[0] < 0x80 {
		return p[1 : 1+int(p[0])]
	}
	n, w := binary.Uvarint(p)
	return p[w : w+int(n)]
}

func (s *sideState) keyBytes(id int32) []byte { return sized(s.karena[s.keys[id].off:]) }

func (s *sideState) payload(row int32) []byte { return sized(s.arena[s.rows[row].off:]) }

// hash is k's 32-bit hash; both sides share the seed, so one hash serves a probe of one side
// and an insert into the other.
func (s *sideState) hash(k []byte) uint32 {
	h := maphash.Bytes(s.seed, k)
	return uint32(h) ^ uint32(h>>32)
}

// find returns the key entry of k (hash h), or -1. The index holds the hash beside the id, so
// a probe reads only the index until a hash matches: a key not in state (most probes) costs
// one cache line.
func (s *sideState) find(k []byte, h uint32) int32 {
	for at, id, ok := s.index.Find(h, h); ok; at, id, ok = s.index.Find(h, at+1) {
		if string(s.keyBytes(id)) == string(k) {
			return id
		}
	}
	return -1
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
func (s *sideState) addKey(k []byte, h uint32) (int32, error) {
	if len(s.karena)+sizedLen(len(k)) > math.MaxUint32 {
		s.compactKeys()
		if len(s.karena)+sizedLen(len(k)) > math.MaxUint32 {
			return -1, fmt.Errorf("%w: join keys pass 4 GiB", ErrStateTooLarge)
		}
	}
	id := take(&s.keys, &s.freeKeys)
	s.keys[id] = keyEnt{off: uint32(len(s.karena)), head: -1, h: h}
	s.karena = appendSized(s.karena, k)
	s.index.Insert(h, id)
	return id, nil
}

// removeKey frees an entry whose chain became empty.
func (s *sideState) removeKey(id int32) {
	s.index.Delete(s.keys[id].h, id)
	s.deadKeys++ // counted, not measured: reading the key would cost a cache miss
	s.keys[id] = keyEnt{head: -1}
	s.freeKeys = append(s.freeKeys, id)
}

// take returns the last index of items that free holds, or the index of a new zero item.
func take[T any](items *[]T, free *[]int32) int32 {
	if n := len(*free); n > 0 {
		i := (*free)[n-1]
		*free = (*free)[:n-1]
		return i
	}
	var zero T
	*items = append(*items, zero)
	return int32(len(*items) - 1)
}

// insert buffers a row with the next seq: key k with hash h, or a null key when null.
func (s *sideState) insert(t int64, k []byte, h uint32, null bool, payload []byte, matched bool) (int32, error) {
	return s.insertSeq(t, k, h, null, payload, matched, s.nextSeq)
}

func (s *sideState) insertSeq(t int64, k []byte, h uint32, null bool, payload []byte, matched bool, seq uint64) (int32, error) {
	if len(s.arena)+sizedLen(len(payload)) > math.MaxUint32 {
		s.compactRows()
		if len(s.arena)+sizedLen(len(payload)) > math.MaxUint32 {
			return -1, fmt.Errorf("%w: buffered rows pass 4 GiB", ErrStateTooLarge)
		}
	}
	keyID := int32(-1)
	if !null {
		id := s.find(k, h)
		if id < 0 {
			var err error
			if id, err = s.addKey(k, h); err != nil {
				return -1, err
			}
		}
		keyID = id
	}
	row := take(&s.rows, &s.freeRows)
	sf := seq<<flagBits | flagLive
	if matched {
		sf |= flagMatched
	}
	s.rows[row] = stRow{t: t, sf: sf, off: uint32(len(s.arena)), key: keyID, next: -1, prev: -1}
	s.arena = appendSized(s.arena, payload)
	if keyID >= 0 {
		e := &s.keys[keyID]
		if e.head >= 0 {
			s.rows[row].next = e.head
			s.rows[e.head].prev = row
		}
		e.head = row
	}
	s.addToBucket(t, row)
	s.live++
	if seq >= s.nextSeq {
		s.nextSeq = seq + 1
	}
	return row, nil
}

func bucketOf(t int64) int64 {
	b := t / bucketUs
	if t%bucketUs != 0 && t < 0 {
		b--
	}
	return b
}

func (s *sideState) addToBucket(t int64, row int32) {
	id := bucketOf(t)
	if !s.lastRows || id != s.lastID {
		if _, ok := s.buckets[id]; !ok {
			i, _ := slices.BinarySearch(s.bucketIDs, id)
			s.bucketIDs = slices.Insert(s.bucketIDs, i, id)
		}
		s.lastID, s.lastRows = id, true
	}
	s.buckets[id] = append(s.buckets[id], row)
}

// evict removes every row with t <= upToUs. Before any goes, visitUnmatched (if set) sees
// each unmatched one in (event time, seq) order, whatever the buckets' layout, so that a
// restored state emits in the same order. It returns how many it removed.
func (s *sideState) evict(upToUs int64, visitUnmatched func(row int32)) int {
	ev := s.evicting[:0]
	n := 0
	for _, id := range s.bucketIDs {
		if id*bucketUs > upToUs {
			break
		}
		rows := s.buckets[id]
		if (id+1)*bucketUs-1 <= upToUs {
			ev = append(ev, rows...)
			delete(s.buckets, id)
			n++
			continue
		}
		// The bucket the watermark falls in: split it.
		keep := rows[:0]
		for _, r := range rows {
			if s.rows[r].t <= upToUs {
				ev = append(ev, r)
			} else {
				keep = append(keep, r)
			}
		}
		s.buckets[id] = keep
		break
	}
	s.bucketIDs = s.bucketIDs[:copy(s.bucketIDs, s.bucketIDs[n:])]
	if n > 0 {
		s.lastRows = false
	}
	if visitUnmatched != nil {
		// Only the rows that come out need an order; a silent eviction needs none.
		em := s.emitting[:0]
		for _, r := range ev {
			if !s.rows[r].matched() {
				em = append(em, r)
			}
		}
		slices.SortFunc(em, func(a, b int32) int {
			ra, rb := &s.rows[a], &s.rows[b]
			if ra.t != rb.t {
				return cmp.Compare(ra.t, rb.t)
			}
			return cmp.Compare(ra.sf, rb.sf)
		})
		for _, r := range em {
			visitUnmatched(r)
		}
		s.emitting = em[:0]
	}
	for _, r := range ev {
		s.remove(r)
	}
	s.evicting = ev[:0]
	if len(ev) > 0 {
		s.maybeCompact()
	}
	return len(ev)
}

// remove unlinks a row from its key's chain and frees it.
func (s *sideState) remove(row int32) {
	r := &s.rows[row]
	if id := r.key; id >= 0 {
		if r.prev >= 0 {
			s.rows[r.prev].next = r.next
		} else {
			s.keys[id].head = r.next
		}
		if r.next >= 0 {
			s.rows[r.next].prev = r.prev
		}
		if s.keys[id].head < 0 {
			s.removeKey(id)
		}
	}
	s.deadRows++
	*r = stRow{key: -1, next: -1, prev: -1}
	s.freeRows = append(s.freeRows, row)
	s.live--
}

// maybeCompact rewrites an arena once most of its values are dead, so that memory follows
// the live state. Offsets change; nothing else does.
func (s *sideState) maybeCompact() {
	if s.deadRows > 4096 && s.deadRows > s.live {
		s.compactRows()
	}
	if s.deadKeys > 4096 && s.deadKeys > s.index.Len() {
		s.compactKeys()
	}
}

// liveShare is the part of an arena of n bytes the live values take, estimated from the
// counts, plus an eighth to grow into.
func liveShare(n, live, dead int) int {
	if live+dead == 0 {
		return 0
	}
	return int(int64(n)*int64(live)/int64(live+dead)) + n/8
}

func (s *sideState) compactRows() {
	next := make([]byte, 0, liveShare(len(s.arena), s.live, s.deadRows))
	for i := range s.rows {
		r := &s.rows[i]
		if !r.live() {
			continue
		}
		p := s.payload(int32(i))
		r.off = uint32(len(next))
		next = appendSized(next, p)
	}
	s.arena, s.deadRows = next, 0
}

func (s *sideState) compactKeys() {
	next := make([]byte, 0, liveShare(len(s.karena), s.index.Len(), s.deadKeys))
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

// memoryBytes is the state's footprint: every buffer at its capacity (a bucket's map entry
// and slice header counted as 48 bytes).
func (s *sideState) memoryBytes() int64 {
	n := int64(cap(s.rows))*int64(unsafe.Sizeof(stRow{})) +
		int64(cap(s.freeRows)+cap(s.freeKeys)+cap(s.evicting)+cap(s.emitting))*4 + s.index.Bytes() +
		int64(cap(s.arena)+cap(s.karena)) +
		int64(cap(s.keys))*int64(unsafe.Sizeof(keyEnt{})) +
		int64(cap(s.bucketIDs))*8
	for _, rows := range s.buckets {
		n += 48 + int64(cap(rows))*4
	}
	return n
}

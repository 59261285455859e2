// Package silver owns the streaming source over bronze, validation, exact deduplication,
// watermark tracking input and the silver table.
//
// This file holds the storage-free dedup state logic (Spark's dropDuplicates and
// dropDuplicatesWithinWatermark, spec §7). After a crash the runner restores the state
// snapshot of the last committed batch and re-runs the uncommitted one; the logic is
// deterministic, so the rerun makes the same decisions.
package silver

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// ErrBadDedupState is returned when a dedup snapshot cannot be decoded.
var ErrBadDedupState = errors.New("silver: bad dedup state")

// DedupMode selects Spark's dedup operator.
type DedupMode uint8

// The dedup operators.
const (
	// DropDuplicates keeps a key until its event time (which must then be one of the key
	// columns, EventTimeIsKey) is at or below the eviction watermark; otherwise forever.
	DropDuplicates DedupMode = iota + 1
	// WithinWatermark keeps a key until the eviction watermark reaches first-seen time + delay.
	WithinWatermark
)

// DedupConfig configures a Dedup.
type DedupConfig struct {
	Mode DedupMode
	// EventTimeIsKey says the event-time column is part of the DropDuplicates key, which is
	// what lets Spark evict its state.
	EventTimeIsKey bool
	// DelayMs is the watermark delay, used by WithinWatermark for expiresAt.
	DelayMs int64
}

// DedupResult is one batch's outcome; the slices are row indexes in ascending order, owned by
// the Dedup and valid until the next ProcessBatch.
type DedupResult struct {
	// Emit are the first arrivals of keys not in state.
	Emit []int32
	// Late rows had eventTime <= the late-row watermark; Spark drops them before the key check.
	Late []int32
	// Duplicates repeat a key in state (or earlier in the batch).
	Duplicates []int32
	// Operator metrics (progress stateOperators): numRowsDroppedByWatermark is per row here.
	NumRowsDroppedByWatermark, NumDroppedDuplicateRows int64
	NumRowsTotal, NumRowsUpdated, NumRowsRemoved       int64
}

// expiryBucketUs is the width of the expiry buckets: eviction visits only the buckets the
// watermark has reached, never the whole state.
const expiryBucketUs = 1_000_000

// Dedup is the dedup operator's state: key -> eviction time (µs), indexed by expiry bucket.
type Dedup struct {
	cfg       DedupConfig
	state     map[string]int64
	buckets   map[int64]*bucket // expiry bucket -> keys expiring in it
	bucketIDs []int64           // ascending
	forever   bucket            // keys that never expire
	res       DedupResult
}

// bucket owns the bytes of its keys in arena chunks, so adding a key costs no allocation of
// its own and evicting a whole bucket frees its keys at once.
type bucket struct {
	keys  []string
	chunk []byte
}

const arenaChunk = 16 << 10

func (b *bucket) intern(k []byte) string {
	if len(k) == 0 {
		return ""
	}
	if cap(b.chunk)-len(b.chunk) < len(k) {
		// A fresh chunk, never a grown one: strings already handed out keep pointing into
		// the old chunk, which must not be copied or reused.
		b.chunk = make([]byte, 0, max(arenaChunk, len(k)))
	}
	start := len(b.chunk)
	b.chunk = append(b.chunk, k...)
	return unsafe.String(&b.chunk[start], len(k))
}

// NewDedup validates cfg.
func NewDedup(cfg DedupConfig) (*Dedup, error) {
	switch {
	case cfg.Mode != DropDuplicates && cfg.Mode != WithinWatermark:
		return nil, fmt.Errorf("silver: unknown dedup mode %d", cfg.Mode)
	case cfg.DelayMs < 0:
		return nil, fmt.Errorf("silver: dedup watermark delay %d ms is negative", cfg.DelayMs)
	}
	return &Dedup{cfg: cfg, state: map[string]int64{}, buckets: map[int64]*bucket{}}, nil
}

// Len is the number of keys in state.
func (d *Dedup) Len() int { return len(d.state) }

// ProcessBatch checks each row's encoded key (keys[i]) and event time (µs; valid nil = no
// nulls) against state with the late-row watermark lateWM, then evicts with evictWM (ms).
func (d *Dedup) ProcessBatch(keys [][]byte, eventTime []int64, valid []bool, lateWM, evictWM int64) (*DedupResult, error) {
	if len(keys) != len(eventTime) || valid != nil && len(valid) != len(eventTime) {
		return nil, fmt.Errorf("silver: dedup batch has %d keys, %d event times, %d valid flags", len(keys), len(eventTime), len(valid))
	}
	r := &d.res
	*r = DedupResult{Emit: r.Emit[:0], Late: r.Late[:0], Duplicates: r.Duplicates[:0]}
	lateUs, evictUs := lateWM*1000, evictWM*1000
	for i, k := range keys {
		hasTime := valid == nil || valid[i]
		t := eventTime[i]
		if hasTime && t <= lateUs {
			r.Late = append(r.Late, int32(i))
			continue
		}
		if _, dup := d.state[string(k)]; dup {
			r.Duplicates = append(r.Duplicates, int32(i))
			continue
		}
		d.add(k, d.evictAt(t, hasTime))
		r.Emit = append(r.Emit, int32(i))
	}
	r.NumRowsDroppedByWatermark = int64(len(r.Late))
	r.NumDroppedDuplicateRows = int64(len(r.Duplicates))
	r.NumRowsUpdated = int64(len(r.Emit))
	r.NumRowsRemoved = d.evict(evictUs)
	r.NumRowsTotal = int64(len(d.state))
	return r, nil
}

func (d *Dedup) evictAt(t int64, hasTime bool) int64 {
	switch {
	case !hasTime:
		return math.MaxInt64 // a null event time never expires (Spark keeps it forever too)
	case d.cfg.Mode == WithinWatermark:
		return t + d.cfg.DelayMs*1000
	case d.cfg.EventTimeIsKey:
		return t
	}
	return math.MaxInt64
}

func (d *Dedup) add(k []byte, at int64) {
	b := &d.forever
	if at != math.MaxInt64 {
		id := floorDiv(at, expiryBucketUs)
		if b = d.buckets[id]; b == nil {
			b = &bucket{}
			d.buckets[id] = b
			// Event time mostly moves forward, so a new bucket usually goes last.
			i, _ := slices.BinarySearch(d.bucketIDs, id)
			d.bucketIDs = slices.Insert(d.bucketIDs, i, id)
		}
	}
	ks := b.intern(k)
	b.keys = append(b.keys, ks)
	d.state[ks] = at
}

// evict removes every key whose eviction time is <= evictUs: dropDuplicates' `eventTime <= W`
// and dropDuplicatesWithinWatermark's `W >= expiresAt` are the same test.
func (d *Dedup) evict(evictUs int64) int64 {
	var n int64
	for len(d.bucketIDs) > 0 {
		id := d.bucketIDs[0]
		if id*expiryBucketUs > evictUs {
			break
		}
		b := d.buckets[id]
		if id*expiryBucketUs+(expiryBucketUs-1) <= evictUs {
			for _, k := range b.keys {
				delete(d.state, k)
			}
			n += int64(len(b.keys))
			delete(d.buckets, id)
			d.bucketIDs = d.bucketIDs[1:]
			continue
		}
		kept := b.keys[:0]
		for _, k := range b.keys {
			if d.state[k] <= evictUs {
				delete(d.state, k)
				n++
			} else {
				kept = append(kept, k)
			}
		}
		b.keys = kept
		break
	}
	return n
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// KeyHash is a 64-bit hash of an encoded dedup key, for sharding keys across cores and for
// pre-filters (e.g. a Bloom filter over silver's keys). Never use it as the key's identity:
// state and the silver look-up compare the full key bytes, so a collision cannot drop a row.
func KeyHash(key []byte) uint64 { return xxhash.Sum64(key) }

// AppendSnapshot appends the state as deterministic bytes (keys sorted) with a version byte
// and a CRC-32.
func (d *Dedup) AppendSnapshot(dst []byte) []byte {
	start := len(dst)
	dst = append(dst, "MDLDEDUP"...)
	dst = append(dst, 1, byte(d.cfg.Mode))
	keys := make([]string, 0, len(d.state))
	for k := range d.state {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = binary.AppendUvarint(dst, uint64(len(keys)))
	for _, k := range keys {
		dst = binary.AppendUvarint(dst, uint64(len(k)))
		dst = append(dst, k...)
		dst = binary.AppendVarint(dst, d.state[k])
	}
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:]))
}

// RestoreDedup rebuilds a Dedup from AppendSnapshot bytes.
func RestoreDedup(cfg DedupConfig, b []byte) (*Dedup, error) {
	d, err := NewDedup(cfg)
	if err != nil {
		return nil, err
	}
	const hdr = len("MDLDEDUP") + 2
	if len(b) < hdr+4 || !bytes.HasPrefix(b, []byte("MDLDEDUP")) {
		return nil, fmt.Errorf("%w: not a dedup snapshot", ErrBadDedupState)
	}
	body := b[:len(b)-4]
	if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrBadDedupState)
	}
	if body[hdr-2] != 1 || DedupMode(body[hdr-1]) != cfg.Mode {
		return nil, fmt.Errorf("%w: version %d mode %d, want version 1 mode %d", ErrBadDedupState, body[hdr-2], body[hdr-1], cfg.Mode)
	}
	p := body[hdr:]
	n, w := binary.Uvarint(p)
	if w <= 0 || n > uint64(len(p)) {
		return nil, fmt.Errorf("%w: key count", ErrBadDedupState)
	}
	p = p[w:]
	for i := uint64(0); i < n; i++ {
		kl, w := binary.Uvarint(p)
		if w <= 0 || kl > uint64(len(p)-w) {
			return nil, fmt.Errorf("%w: key %d", ErrBadDedupState, i)
		}
		k := p[w : w+int(kl)]
		p = p[w+int(kl):]
		at, w2 := binary.Varint(p)
		if w2 <= 0 {
			return nil, fmt.Errorf("%w: key %d time", ErrBadDedupState, i)
		}
		p = p[w2:]
		if _, dup := d.state[string(k)]; dup {
			return nil, fmt.Errorf("%w: key %d repeated", ErrBadDedupState, i)
		}
		d.add(k, at)
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrBadDedupState, len(p))
	}
	return d, nil
}

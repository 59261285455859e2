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

// Dedup is the dedup operator's state: key -> eviction time (µs).
type Dedup struct {
	cfg   DedupConfig
	state map[string]int64
	res   DedupResult
}

// NewDedup validates cfg.
func NewDedup(cfg DedupConfig) (*Dedup, error) {
	switch {
	case cfg.Mode != DropDuplicates && cfg.Mode != WithinWatermark:
		return nil, fmt.Errorf("silver: unknown dedup mode %d", cfg.Mode)
	case cfg.DelayMs < 0:
		return nil, fmt.Errorf("silver: dedup watermark delay %d ms is negative", cfg.DelayMs)
	}
	return &Dedup{cfg: cfg, state: map[string]int64{}}, nil
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
		d.state[string(k)] = d.evictAt(t, hasTime)
		r.Emit = append(r.Emit, int32(i))
	}
	r.NumRowsDroppedByWatermark = int64(len(r.Late))
	r.NumDroppedDuplicateRows = int64(len(r.Duplicates))
	r.NumRowsUpdated = int64(len(r.Emit))
	for k, at := range d.state {
		if d.expired(at, evictUs) {
			delete(d.state, k)
			r.NumRowsRemoved++
		}
	}
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

func (d *Dedup) expired(at, evictUs int64) bool {
	if at == math.MaxInt64 {
		return false
	}
	if d.cfg.Mode == WithinWatermark {
		return evictUs >= at
	}
	return at <= evictUs
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
		k := string(p[w : w+int(kl)])
		p = p[w+int(kl):]
		at, w2 := binary.Varint(p)
		if w2 <= 0 {
			return nil, fmt.Errorf("%w: key %d time", ErrBadDedupState, i)
		}
		p = p[w2:]
		d.state[k] = at
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrBadDedupState, len(p))
	}
	return d, nil
}

package gold

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
	"slices"
	"strings"
)

// snapshotMagic starts every operator snapshot; the byte after it is the format version.
const (
	snapshotMagic   = "MDLGOLD\x00"
	snapshotVersion = 2
)

// readableVersion says whether this build reads state format version v: version 1 (before
// float sums were exact) decodes a float sum's exact value from its double, version 2 carries
// it.
func readableVersion(v byte) bool { return v == 1 || v == 2 }

// AppendSnapshot appends the operator's full state: deterministic bytes (groups sorted by
// window and key), a versioned header, a fingerprint of the configuration and a CRC-32, so the
// runner can store state version N+1 and a restore fails loudly on corruption or on a changed
// aggregation.
func (a *Aggregation) AppendSnapshot(dst []byte) ([]byte, error) {
	slots := a.snapshotOrder()
	size := 0
	for _, s := range slots {
		size += a.groupSize(s, true)
	}
	var fp [64]byte
	header := a.cfg.appendFingerprint(fp[:0])
	// One buffer of the snapshot's size (see groupSize).
	dst = slices.Grow(dst, len(snapshotMagic)+1+len(header)+binary.MaxVarintLen64+size+4)
	start := len(dst)
	dst = append(dst, snapshotMagic...)
	dst = append(dst, snapshotVersion)
	dst = append(dst, header...)
	dst = binary.AppendUvarint(dst, uint64(len(slots)))
	for _, s := range slots {
		var err error
		if dst, err = a.appendGroup(dst, s, true); err != nil {
			return nil, err
		}
	}
	if a.tracksSettled() {
		dst = a.appendSettled(dst)
	}
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:])), nil
}

// snapshotOrder returns the live groups' slots in the order a snapshot stores them: by
// window, then key. The keys are ranked first, each distinct key once, and the groups sorted
// by window and rank: comparing two groups then reads two integers from a contiguous slice
// where it read both keys' bytes, at random in the key arena, for most comparisons (at 100k
// keys a million groups share a few windows: the sort was 0.65 s of a 10M-event backlog).
func (a *Aggregation) snapshotOrder() []int32 {
	type entry struct {
		start, end int64
		rank, slot int32
	}
	rank := a.keyRanks()
	entries := make([]entry, 0, a.live)
	for s := range a.groups {
		if g := &a.groups[s]; g.live() {
			w := a.window(int32(s))
			entries = append(entries, entry{w.Start, w.End, rank[g.key], int32(s)})
		}
	}
	slices.SortFunc(entries, func(x, y entry) int {
		if c := cmp.Compare(x.start, y.start); c != 0 {
			return c
		}
		if c := cmp.Compare(x.end, y.end); c != 0 {
			return c
		}
		return cmp.Compare(x.rank, y.rank)
	})
	slots := make([]int32, len(entries))
	for i, e := range entries {
		slots[i] = e.slot
	}
	return slots
}

// keyRanks returns, indexed by key id, the rank of every key a live group holds among those
// keys in byte order (interned keys are distinct, so no two ids share a rank).
func (a *Aggregation) keyRanks() []int32 {
	rank := make([]int32, len(a.keyLocs))
	ids := make([]int32, 0, min(int(a.live), len(a.keyLocs)))
	for s := range a.groups {
		if k := a.groups[s].key; k >= 0 && rank[k] == 0 {
			rank[k] = 1
			ids = append(ids, k)
		}
	}
	slices.SortFunc(ids, func(x, y int32) int { return strings.Compare(a.key(x), a.key(y)) })
	for i, k := range ids {
		rank[k] = int32(i)
	}
	return rank
}

// groupSize is the number of bytes appendGroup appends for group s (for a sketch, its last
// measured footprint: a guess, append grows the buffer if it falls short). A snapshot or delta
// of a million groups is written into one buffer of its size, sized first: grown by doubling
// it was copied over and over, and the stream, which reuses the buffer batch after batch, kept
// up to twice the state's encoded size alive for good (170 MB of a 650 MB live heap at 100k
// keys, 1M events).
func (a *Aggregation) groupSize(s int32, withEnd bool) int {
	w := a.window(s)
	n := varintLen(w.Start)
	if withEnd {
		n += varintLen(w.End)
	}
	kl := int(a.keyLocs[a.groups[s].key].n)
	n += uvarintLen(uint64(kl)) + kl
	for _, ac := range a.accs {
		// AppendBinary: function and flags, N, the float's 8 bytes, I, and a sketch.
		var cn, ci int64
		switch {
		case ac.wide:
			c := ac.cells.at(s)
			cn = c.n
			if ac.spec.Int {
				ci = int64(c.v)
			}
		default:
			cn = *ac.ns.at(s)
		}
		n += 2 + varintLen(cn) + 8 + varintLen(ci)
		if ac.exact {
			n += ac.xs.at(s).encodedLen()
		}
		if ac.sketchBytes != nil {
			n += 8 + int(ac.sketchBytes[s])
		}
	}
	return n
}

// uvarintLen is the length of binary.AppendUvarint(nil, x).
// sizedBytes reads what a uvarint length and that many bytes at the start of p hold, and the
// bytes after them; ok is false when p is too short for either.
func sizedBytes(p []byte) (v, rest []byte, ok bool) {
	n, w := binary.Uvarint(p)
	if w <= 0 || n > uint64(len(p)-w) {
		return nil, p, false
	}
	return p[w : w+int(n)], p[w+int(n):], true
}

func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// varintLen is the length of binary.AppendVarint(nil, v) (zig-zag, then a uvarint).
func varintLen(v int64) int { return uvarintLen(uint64(v<<1) ^ uint64(v>>63)) }

// appendGroup appends group s as snapshots and deltas store it: its window's start, its end
// (snapshots only: a delta's groups are time windows, whose end the size gives), its key and
// its aggregate values.
func (a *Aggregation) appendGroup(dst []byte, s int32, withEnd bool) ([]byte, error) {
	g := &a.groups[s]
	w := a.window(s)
	dst = binary.AppendVarint(dst, w.Start)
	if withEnd {
		dst = binary.AppendVarint(dst, w.End)
	}
	k := a.key(g.key)
	dst = binary.AppendUvarint(dst, uint64(len(k)))
	dst = append(dst, k...)
	return a.appendValues(dst, s)
}

// appendValues appends the aggregate values of group s, as snapshots and deltas store them.
func (a *Aggregation) appendValues(dst []byte, s int32) ([]byte, error) {
	for _, ac := range a.accs {
		var err error
		if dst, err = ac.appendBinary(dst, s); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

func (c *AggConfig) appendFingerprint(dst []byte) []byte {
	dst = append(dst, byte(c.Mode))
	if c.Session != nil {
		dst = append(dst, 1)
		dst = binary.AppendVarint(dst, c.Session.Gap)
	} else {
		dst = append(dst, 0)
		dst = binary.AppendVarint(dst, c.Window.Size)
		dst = binary.AppendVarint(dst, c.Window.Slide)
		dst = binary.AppendVarint(dst, c.Window.StartTime)
	}
	dst = binary.AppendUvarint(dst, uint64(len(c.Aggs)))
	for _, s := range c.Aggs {
		flags := byte(0)
		if s.Int {
			flags = 1
		}
		dst = append(dst, byte(s.Fn), flags)
		dst = binary.AppendVarint(dst, int64(s.Column))
	}
	return dst
}

// RestoreAggregation rebuilds an operator from AppendSnapshot bytes. cfg must be the
// configuration the snapshot was written with (checked through the fingerprint).
func RestoreAggregation(cfg AggConfig, b []byte) (*Aggregation, error) {
	a, err := NewAggregation(cfg)
	if err != nil {
		return nil, err
	}
	if len(b) < len(snapshotMagic)+1+4 || string(b[:len(snapshotMagic)]) != snapshotMagic {
		return nil, fmt.Errorf("%w: not an aggregation snapshot", ErrBadState)
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, fmt.Errorf("%w: snapshot checksum mismatch", ErrBadState)
	}
	if v := body[len(snapshotMagic)]; !readableVersion(v) {
		return nil, fmt.Errorf("%w: snapshot format version %d, this build reads 1 and %d", ErrBadState, v, snapshotVersion)
	}
	p := body[len(snapshotMagic)+1:]
	fp := a.cfg.appendFingerprint(nil)
	if !bytes.HasPrefix(p, fp) {
		return nil, fmt.Errorf("%w: snapshot was written by a different aggregation (window, mode or aggregates changed)", ErrBadState)
	}
	p = p[len(fp):]
	n, w := binary.Uvarint(p)
	if w <= 0 || n > uint64(len(p)) {
		return nil, fmt.Errorf("%w: group count", ErrBadState)
	}
	p = p[w:]
	for i := uint64(0); i < n; i++ {
		var win Window
		if win.Start, w = binary.Varint(p); w <= 0 {
			return nil, fmt.Errorf("%w: group %d start", ErrBadState, i)
		}
		p = p[w:]
		if win.End, w = binary.Varint(p); w <= 0 {
			return nil, fmt.Errorf("%w: group %d end", ErrBadState, i)
		}
		p = p[w:]
		key, rest, ok := sizedBytes(p)
		if !ok {
			return nil, fmt.Errorf("%w: group %d key", ErrBadState, i)
		}
		p = rest
		keyID, kh := a.internKey(key)
		var s int32
		if a.cfg.Session == nil {
			if a.findWindow(win.Start, keyID, kh) >= 0 {
				return nil, fmt.Errorf("%w: group %d repeats window %v", ErrBadState, i, win)
			}
			if win.End-win.Start != a.cfg.Window.Size {
				return nil, fmt.Errorf("%w: group %d window %v is not %d long", ErrBadState, i, win, a.cfg.Window.Size)
			}
			s = a.windowSlot(win.Start, keyID, kh)
		} else {
			s = a.newSlot(win, keyID)
			a.sessions[keyID] = append(a.sessions[keyID], s)
		}
		for j, ac := range a.accs {
			v, rest, err := DecodeAggValue(p)
			if err != nil {
				return nil, fmt.Errorf("group %d aggregate %d: %w", i, j, err)
			}
			if v.Fn != ac.spec.Fn || v.Int != ac.spec.Int {
				return nil, fmt.Errorf("%w: group %d aggregate %d is %s, want %s", ErrBadState, i, j, v.Fn, ac.spec.Fn)
			}
			ac.set(s, v)
			p = rest
		}
	}
	if len(p) > 0 && p[0] == settledTag && a.tracksSettled() {
		if p, err = a.restoreSettled(p[1:]); err != nil {
			return nil, err
		}
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrBadState, len(p))
	}
	return a, nil
}

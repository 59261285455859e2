package gold

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// deltaMagic starts every state delta; the byte after it is the format version.
const (
	deltaMagic   = "MDLGDLT\x00"
	deltaVersion = 2
)

// SupportsDelta reports whether AppendDelta can describe a batch's change: time windows can
// (a group leaves state only when the watermark passes its end), session windows cannot
// (merging sessions removes groups by other rules) and always need a full snapshot.
func (a *Aggregation) SupportsDelta() bool { return a.cfg.Session == nil }

// AppendDelta appends what the last ProcessBatch changed: the groups it updated that are still
// in state, with their values, and the eviction watermark it ran with. ApplyDelta on the
// state before that batch gives the state after it, so the runner can store a large state
// once and a batch's change after each batch (the touched groups, not all of them).
func (a *Aggregation) AppendDelta(dst []byte) ([]byte, error) {
	if !a.SupportsDelta() {
		return nil, fmt.Errorf("gold: session windows keep no state deltas")
	}
	n, size := 0, 0
	for _, s := range a.touched {
		if a.groups[s].live() {
			n++
			size += a.groupSize(s, false)
		}
	}
	// One buffer of the delta's size (see groupSize): magic, version, fingerprint, two varints,
	// the groups and the checksum.
	dst = slices.Grow(dst, deltaHeaderMax+size+4)
	start := len(dst)
	dst = a.appendDeltaHeader(dst, n)
	ahead := a.readsAhead()
	for i, s := range a.touched {
		if ahead && i%groupsAhead == 0 {
			a.loadGroupsAhead(a.touched[i:min(i+groupsAhead, len(a.touched))], true)
		}
		if !a.groups[s].live() {
			continue // evicted by this very batch: the replayed eviction removes it too
		}
		var err error
		if dst, err = a.appendGroup(dst, s, false); err != nil {
			return nil, err
		}
	}
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:])), nil
}

// deltaHeaderMax bounds a delta's header: magic, version, fingerprint, two varints.
const deltaHeaderMax = len(deltaMagic) + 1 + 64 + 2*binary.MaxVarintLen64

// appendDeltaHeader appends a delta's header for n groups.
func (a *Aggregation) appendDeltaHeader(dst []byte, n int) []byte {
	var fp [64]byte
	dst = append(dst, deltaMagic...)
	dst = append(dst, deltaVersion)
	dst = append(dst, a.cfg.appendFingerprint(fp[:0])...)
	dst = binary.AppendVarint(dst, a.evictedAt)
	return binary.AppendUvarint(dst, uint64(n))
}

// DeltaSize is the length of the bytes AppendDelta would append, when it is known without
// encoding them: ok is false for session windows and for an aggregation that keeps a sketch
// (a sketch's encoded size is known only once it is encoded).
func (a *Aggregation) DeltaSize() (size int, ok bool) {
	if !a.deltaSized() {
		return 0, false
	}
	n := 0
	ahead := a.readsAhead()
	for i, s := range a.touched {
		if ahead && i%groupsAhead == 0 {
			a.loadGroupsAhead(a.touched[i:min(i+groupsAhead, len(a.touched))], false)
		}
		if a.groups[s].live() {
			n++
			size += a.groupSize(s, false)
		}
	}
	var h [deltaHeaderMax]byte
	return len(a.appendDeltaHeader(h[:0], n)) + size + 4, true
}

// deltaSized says whether DeltaSize knows the delta's size before it is encoded: a time
// window's, without a sketch.
func (a *Aggregation) deltaSized() bool {
	if !a.SupportsDelta() {
		return false
	}
	for _, ac := range a.accs {
		if ac.seen != nil { // a sketch
			return false
		}
	}
	return true
}

// deltaChunk is how much of a streamed delta is encoded before it is written out.
const deltaChunk = 256 << 10

// WriteDelta writes to w the bytes AppendDelta would append, size of them (DeltaSize), a
// chunk at a time: a batch that opens every group (a backlog's first) has a delta as big as
// the state, and held whole it sat on the stream's memory peak beside the state itself. It
// only reads the operator (the aggregation holds no sketch: DeltaSize said so), so it may run
// beside the batch's table writes, but not beside the next ProcessBatch. A size that is not
// what it wrote is an error: the state file announced it.
func (a *Aggregation) WriteDelta(w io.Writer, size int) error {
	// Not DeltaSize itself: that sizes every group again, a pass as long as the encoding's
	// reads (the caller already sized it; a wrong size is caught below).
	if !a.deltaSized() {
		return fmt.Errorf("gold: this aggregation's delta is not streamed (session windows or sketches)")
	}
	n := 0
	for _, s := range a.touched {
		if a.groups[s].live() {
			n++
		}
	}
	buf := make([]byte, 0, min(size, deltaChunk)+deltaHeaderMax+1024)
	buf = a.appendDeltaHeader(buf, n)
	var crc uint32
	written := 0
	flush := func() error {
		crc = crc32.Update(crc, crc32.IEEETable, buf)
		written += len(buf)
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	ahead := a.readsAhead()
	for i, s := range a.touched {
		if ahead && i%groupsAhead == 0 {
			a.loadGroupsAhead(a.touched[i:min(i+groupsAhead, len(a.touched))], true)
		}
		if !a.groups[s].live() {
			continue
		}
		var err error
		if buf, err = a.appendGroup(buf, s, false); err != nil {
			return err
		}
		if len(buf) >= deltaChunk {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	buf = binary.BigEndian.AppendUint32(buf, crc32.Update(crc, crc32.IEEETable, buf))
	if err := flush(); err != nil {
		return err
	}
	if written != size {
		return fmt.Errorf("gold: the state delta is %d bytes, sized %d", written, size)
	}
	return nil
}

// ApplyDelta replays one AppendDelta on the state of the batch before it: the groups take
// their new values (created when new), then every group the batch's watermark closed leaves.
func (a *Aggregation) ApplyDelta(b []byte) error {
	if !a.SupportsDelta() {
		return fmt.Errorf("%w: a state delta for session windows", ErrBadState)
	}
	if a.share != nil {
		// It would intern keys into the shared table behind the other aggregations' backs:
		// restore each with a table of its own, then share (ShareKeys).
		return fmt.Errorf("gold: a state delta applied to an aggregation that shares its key table")
	}
	if len(b) < len(deltaMagic)+1+4 || string(b[:len(deltaMagic)]) != deltaMagic {
		return fmt.Errorf("%w: not an aggregation state delta", ErrBadState)
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return fmt.Errorf("%w: delta checksum mismatch", ErrBadState)
	}
	if v := body[len(deltaMagic)]; !readableVersion(v) {
		return fmt.Errorf("%w: delta format version %d, this build reads 1 and %d", ErrBadState, v, deltaVersion)
	}
	p := body[len(deltaMagic)+1:]
	fp := a.cfg.appendFingerprint(nil)
	if !bytes.HasPrefix(p, fp) {
		return fmt.Errorf("%w: delta was written by a different aggregation (window, mode or aggregates changed)", ErrBadState)
	}
	p = p[len(fp):]
	evictUs, w := binary.Varint(p)
	if w <= 0 {
		return fmt.Errorf("%w: delta watermark", ErrBadState)
	}
	p = p[w:]
	n, w := binary.Uvarint(p)
	if w <= 0 || n > uint64(len(p)) {
		return fmt.Errorf("%w: delta group count", ErrBadState)
	}
	p = p[w:]
	for i := uint64(0); i < n; i++ {
		start, w := binary.Varint(p)
		if w <= 0 {
			return fmt.Errorf("%w: delta group %d start", ErrBadState, i)
		}
		p = p[w:]
		kl, w := binary.Uvarint(p)
		if w <= 0 || kl > uint64(len(p)-w) {
			return fmt.Errorf("%w: delta group %d key", ErrBadState, i)
		}
		key := p[w : w+int(kl)]
		p = p[w+int(kl):]
		id, kh := a.internKey(key)
		s := a.windowSlot(start, id, kh)
		for j, ac := range a.accs {
			v, rest, err := DecodeAggValue(p)
			if err != nil {
				return fmt.Errorf("delta group %d aggregate %d: %w", i, j, err)
			}
			if v.Fn != ac.spec.Fn || v.Int != ac.spec.Int {
				return fmt.Errorf("%w: delta group %d aggregate %d is %s, want %s", ErrBadState, i, j, v.Fn, ac.spec.Fn)
			}
			ac.set(s, v)
			p = rest
		}
	}
	if len(p) != 0 {
		return fmt.Errorf("%w: %d trailing bytes in a delta", ErrBadState, len(p))
	}
	// The batch's eviction: what ProcessBatch's emit removes, without emitting it.
	a.touched = a.touched[:0]
	if a.cfg.Mode == Complete {
		return nil
	}
	a.collectEvictions(evictUs)
	a.freeEvicted()
	return nil
}

// groupsAhead is how many groups a state delta or snapshot reads ahead of encoding them.
const groupsAhead = 32

// readsAhead says whether the key table is large enough for encoding the state to read its
// groups' keys ahead (below loadAheadEntries they stay in cache and loading ahead only costs).
func (a *Aggregation) readsAhead() bool { return a.keyIDs.Size() >= loadAheadEntries }

// loadGroupsAhead reads, in loops of independent loads whose cache misses overlap, what
// encoding the groups slots reads at random: at 100k keys a group's key location and then the
// key's bytes were each a miss, one after the other, and they were most of what a delta's
// group cost to size and to write (appendGroup waited on them one group at a time). Then each
// aggregate's values of the groups, which a snapshot's order (by window and key) and a delta's
// updated groups also visit out of slot order. keyBytes: the keys' bytes too (sizing a group
// needs only their lengths). What it loads is summed into deltaSink so that the loads stay.
func (a *Aggregation) loadGroupsAhead(slots []int32, keyBytes bool) {
	var locs [groupsAhead]keyLoc
	n := 0
	for _, s := range slots {
		if k := a.groups[s].key; k >= 0 {
			locs[n] = a.keyLocs[k]
			n++
		}
	}
	var sink uint32
	for _, l := range locs[:n] {
		if keyBytes && l.n > 0 {
			sink += uint32(a.keyArena[l.off])
		} else {
			sink += l.n
		}
	}
	for _, ac := range a.accs {
		for _, s := range slots {
			switch {
			case ac.exact:
				sink += uint32(ac.xs.at(s).fast[0])
			case ac.wide:
				sink += uint32(ac.cells.at(s).n)
			default:
				sink += uint32(*ac.ns.at(s))
			}
		}
	}
	a.deltaSink += sink
}

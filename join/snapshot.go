package join

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
)

// ErrBadState is returned when a snapshot or delta cannot be decoded, is corrupt, or was
// written for another join.
var ErrBadState = errors.New("join: bad state")

const (
	snapshotMagic = "MDLJOIN\x00"
	deltaMagic    = "MDLJDLT\x00"
	formatVersion = 1
)

// appendRow appends one buffered row as snapshots and deltas store it: seq, event time,
// matched flag, key (0 for a null key, else length+1 and the bytes), payload.
func (s *sideState) appendRow(dst []byte, row int32) []byte {
	r := &s.rows[row]
	dst = binary.AppendUvarint(dst, r.seq())
	dst = binary.AppendVarint(dst, r.t)
	dst = append(dst, r.flagByte())
	if r.key < 0 {
		dst = append(dst, 0)
	} else {
		k := s.keyBytes(r.key)
		dst = binary.AppendUvarint(dst, uint64(len(k))+1)
		dst = append(dst, k...)
	}
	return appendSized(dst, s.payload(row))
}

type decoder struct {
	p   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrBadState, what)
	}
}

func (d *decoder) uvarint(what string) uint64 { return readVarint(d, what, binary.Uvarint) }

func (d *decoder) varint(what string) int64 { return readVarint(d, what, binary.Varint) }

// readVarint decodes one varint with read (binary.Uvarint or binary.Varint). After the first
// failure every read returns zero, and the error stays the first one.
func readVarint[T uint64 | int64](d *decoder, what string, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.p)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.p = d.p[n:]
	return v
}

func (d *decoder) bytes(n uint64, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.p)) {
		d.fail(what)
		return nil
	}
	b := d.p[:n]
	d.p = d.p[n:]
	return b
}

// readRow decodes one appendRow and buffers it.
func (d *decoder) readRow(s *sideState, what string) {
	seq := d.uvarint(what + " seq")
	t := d.varint(what + " event time")
	flags := d.bytes(1, what+" flags")
	kl := d.uvarint(what + " key")
	var key []byte
	if kl > 0 {
		key = d.bytes(kl-1, what+" key")
	}
	payload := d.bytes(d.uvarint(what+" payload"), what+" payload")
	if d.err != nil {
		return
	}
	if flags[0]&^flagMatched != 0 {
		d.fail(what + " flags")
		return
	}
	if t > maxEventTime || t < -maxEventTime {
		d.fail(what + " event time out of range")
		return
	}
	if seq < s.nextSeq || seq >= 1<<(64-flagBits) {
		d.fail(what + " seq out of order")
		return
	}
	if _, err := s.insertSeq(t, key, s.hash(key), kl == 0, payload, flags[0]&flagMatched != 0, seq); err != nil {
		d.err = err
	}
}

// open checks the framing (magic, CRC, version, the spec's fingerprint) and returns the body.
func (o *Operator) open(b []byte, magic, what string) (*decoder, error) {
	if len(b) < len(magic)+1+4 || string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: not a join %s", ErrBadState, what)
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, fmt.Errorf("%w: %s checksum mismatch", ErrBadState, what)
	}
	if v := body[len(magic)]; v != formatVersion {
		return nil, fmt.Errorf("%w: %s format version %d, this build reads %d", ErrBadState, what, v, formatVersion)
	}
	p := body[len(magic)+1:]
	fp := o.spec.appendFingerprint(nil)
	if !bytes.HasPrefix(p, fp) {
		return nil, fmt.Errorf("%w: %s was written by a different join (type, keys, condition or watermarks changed)", ErrBadState, what)
	}
	return &decoder{p: p[len(fp):]}, nil
}

// AppendSnapshot appends the operator's full state: per side the next arrival number and every
// buffered row in arrival order, under a versioned header, the spec's fingerprint and a CRC-32.
// The bytes depend only on the state's contents, never on its memory layout.
func (o *Operator) AppendSnapshot(dst []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, snapshotMagic...)
	dst = append(dst, formatVersion)
	dst = o.spec.appendFingerprint(dst)
	for _, s := range o.st {
		rows := make([]int32, 0, s.live)
		for i := range s.rows {
			if s.rows[i].live() {
				rows = append(rows, int32(i))
			}
		}
		slices.SortFunc(rows, func(a, b int32) int {
			return cmp.Compare(s.rows[a].sf, s.rows[b].sf)
		})
		dst = binary.AppendUvarint(dst, s.nextSeq)
		dst = binary.AppendUvarint(dst, uint64(len(rows)))
		for _, r := range rows {
			dst = s.appendRow(dst, r)
		}
	}
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:])), nil
}

// Restore rebuilds an operator from AppendSnapshot bytes; spec must be the one the snapshot
// was written with (checked through its fingerprint).
func Restore(spec Spec, b []byte) (*Operator, error) {
	o, err := New(spec)
	if err != nil {
		return nil, err
	}
	d, err := o.open(b, snapshotMagic, "snapshot")
	if err != nil {
		return nil, err
	}
	for side, s := range o.st {
		next := d.uvarint("next seq")
		n := d.uvarint("row count")
		if n > uint64(len(d.p)) {
			d.fail("row count")
		}
		for i := uint64(0); i < n && d.err == nil; i++ {
			d.readRow(s, fmt.Sprintf("%s row %d", Side(side), i))
		}
		if d.err == nil && (next < s.nextSeq || next >= 1<<(64-flagBits)) {
			d.fail("next seq")
		}
		s.nextSeq = next
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.p) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes in a snapshot", ErrBadState, len(d.p))
	}
	return o, nil
}

// AppendDelta appends what the last ProcessBatch changed: per side the rows it buffered that
// are still in state, the earlier rows it marked matched, and the eviction watermark it ran
// with. ApplyDelta on the state before that batch gives the state after it, so the host
// stores a large state once and then each batch's change.
func (o *Operator) AppendDelta(dst []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, deltaMagic...)
	dst = append(dst, formatVersion)
	dst = o.spec.appendFingerprint(dst)
	dst = binary.AppendVarint(dst, o.evictWM)
	for side, s := range o.st {
		dst = binary.AppendUvarint(dst, s.nextSeq)
		dst = s.appendLive(dst, o.added[side], s.appendRow)
		dst = s.appendLive(dst, o.flipped[side], func(dst []byte, r int32) []byte {
			return binary.AppendUvarint(dst, s.rows[r].seq())
		})
	}
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:])), nil
}

// appendLive appends how many of rows are still in state (the batch's eviction may have
// removed some since), then each of those with write.
func (s *sideState) appendLive(dst []byte, rows []int32, write func(dst []byte, row int32) []byte) []byte {
	n := 0
	for _, r := range rows {
		if s.rows[r].live() {
			n++
		}
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	for _, r := range rows {
		if s.rows[r].live() {
			dst = write(dst, r)
		}
	}
	return dst
}

// ApplyDelta replays one AppendDelta on the state of the batch before it: the new rows are
// buffered, the flagged rows marked matched, then the batch's eviction runs again, silently.
// On an error the operator must be discarded.
func (o *Operator) ApplyDelta(b []byte) error {
	d, err := o.open(b, deltaMagic, "delta")
	if err != nil {
		return err
	}
	evictWM := d.varint("eviction watermark")
	if d.err == nil && (evictWM < 0 || evictWM > maxWatermarkMs) {
		d.fail("eviction watermark out of range")
	}
	for side, s := range o.st {
		next := d.uvarint("next seq")
		before := s.nextSeq
		n := d.uvarint("added rows")
		if n > uint64(len(d.p)) {
			d.fail("added rows")
		}
		for i := uint64(0); i < n && d.err == nil; i++ {
			d.readRow(s, fmt.Sprintf("%s added row %d", Side(side), i))
		}
		n = d.uvarint("matched rows")
		if n > uint64(len(d.p)) {
			d.fail("matched rows")
		}
		var bySeq map[uint64]int32
		if n > 0 && d.err == nil {
			bySeq = make(map[uint64]int32, s.live)
			for i := range s.rows {
				if s.rows[i].live() && s.rows[i].seq() < before {
					bySeq[s.rows[i].seq()] = int32(i)
				}
			}
		}
		for i := uint64(0); i < n && d.err == nil; i++ {
			seq := d.uvarint("matched row")
			r, ok := bySeq[seq]
			if !ok {
				d.fail(fmt.Sprintf("%s matched row %d: seq %d is not in state", Side(side), i, seq))
				break
			}
			s.rows[r].setMatched()
		}
		if d.err == nil && (next < s.nextSeq || next >= 1<<(64-flagBits)) {
			d.fail("next seq")
		}
		s.nextSeq = next
	}
	if d.err != nil {
		return d.err
	}
	if len(d.p) != 0 {
		return fmt.Errorf("%w: %d trailing bytes in a delta", ErrBadState, len(d.p))
	}
	sl, slOK, sr, srOK := o.spec.StateWatermarks(evictWM)
	o.evictSides(slOK, sl, srOK, sr, false)
	o.evictWM = evictWM
	for s := range o.added {
		o.added[s], o.flipped[s] = o.added[s][:0], o.flipped[s][:0]
	}
	return nil
}

package join

import (
	"fmt"
	"hash/maphash"
	"math"
)

// maxWatermarkMs bounds the watermarks a batch may run with (year 9999), so that the µs
// arithmetic on them cannot overflow.
const maxWatermarkMs = 253402300799999

// maxEventTime bounds event times so that `t + offset` cannot overflow.
const maxEventTime = math.MaxInt64 - 2*maxOffset

// Kind says what an output row is.
type Kind uint8

// The kinds of output rows.
const (
	// Pair is a matched (left, right) pair.
	Pair Kind = iota + 1
	// LeftUnmatched is a left row with the right side null (left_outer, full_outer).
	LeftUnmatched
	// RightUnmatched is a right row with the left side null (right_outer, full_outer).
	RightUnmatched
	// SemiLeft is a left row of a left_semi join (left columns only).
	SemiLeft
)

var kindNames = [...]string{Pair: "pair", LeftUnmatched: "left-unmatched", RightUnmatched: "right-unmatched", SemiLeft: "semi"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// HasLeft reports whether the row carries a left row (else the left columns are null).
func (k Kind) HasLeft() bool { return k != RightUnmatched }

// HasRight reports whether the row carries a right row.
func (k Kind) HasRight() bool { return k == Pair || k == RightUnmatched }

// OutRow is one emitted row: the payloads the host passed in Input.Rows, and the event times.
// The side a Kind lacks has a nil payload and time 0.
type OutRow struct {
	Kind                Kind
	Left, Right         []byte
	LeftTime, RightTime int64
}

// Result is what one batch produced. It is owned by the Operator and valid until the next
// ProcessBatch; the payloads are copies, so the inputs may be reused at once.
type Result struct {
	// Rows in a deterministic order: the left pass's matches, the right pass's, then the
	// left side's evicted unmatched rows and the right side's, each in (event time, arrival)
	// order. Spark's output within a batch has no order.
	Rows []OutRow
	// Late holds, per side, the input rows Spark drops as late (`t <= LateWatermarkMs`),
	// ascending: they produced nothing and the host quarantines them with their side.
	Late            [2][]int32
	LateWatermarkMs int64
	// EvictionWatermarkMs is the batch's W; StateWatermarkMs the per-side values derived from
	// it (valid where StateWatermarkOK), which evicted `t <= value`.
	EvictionWatermarkMs int64
	StateWatermarkMs    [2]int64
	StateWatermarkOK    [2]bool
	// NumRowsDroppedByWatermark is Spark's counter: late input rows, both sides.
	NumRowsDroppedByWatermark int64
	// NumRowsTotal (state rows after the batch), NumRowsUpdated (rows appended to state) and
	// NumRowsRemoved (rows evicted silently, not the preserved side's) are Spark's state
	// operator metrics (spec §6).
	NumRowsTotal, NumRowsUpdated, NumRowsRemoved int64
	// InputRows per side; Matched pairs (and semi rows) emitted; Unmatched null-extended rows
	// emitted per side.
	InputRows [2]int64
	Matched   int64
	Unmatched [2]int64
}

// outRec is an emitted row while the batch runs: its payloads are copied into the result's
// buffer (int offsets: one batch's output may pass 4 GiB), sliced out at the end.
type outRec struct {
	kind   Kind
	lo, ln int
	ro, rn int
	lt, rt int64
}

// Operator is the stream-stream join of one Spec: a symmetric hash join whose per-side state
// is bounded by Spark's state watermarks. It is not safe for concurrent use.
type Operator struct {
	spec Spec
	st   [2]*sideState

	res  Result
	recs []outRec
	buf  []byte

	// What the last batch changed, for AppendDelta: rows it added (still live) and earlier
	// rows whose matched flag it set, per side, and the eviction watermark it ran with.
	startSeq [2]uint64
	added    [2][]int32
	flipped  [2][]int32
	evictWM  int64
}

// New validates spec and returns an operator with empty state.
func New(spec Spec) (*Operator, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	spec.Condition = append([]Bound(nil), spec.Condition...)
	seed := maphash.MakeSeed()
	return &Operator{spec: spec, st: [2]*sideState{newSideState(seed), newSideState(seed)}}, nil
}

// Spec is the operator's join spec.
func (o *Operator) Spec() Spec { return o.spec }

// StateRows is the number of rows buffered on side.
func (o *Operator) StateRows(side Side) int { return o.st[side].live }

// StateBytes is the memory the side's state holds (buffers at capacity), for progress.
func (o *Operator) StateBytes(side Side) int64 { return o.st[side].memoryBytes() }

func (o *Operator) matches(lt, rt int64) bool {
	for _, b := range o.spec.Condition {
		if !b.holds(lt, rt) {
			return false
		}
	}
	return true
}

func (o *Operator) emit(kind Kind, lp []byte, lt int64, rp []byte, rt int64) {
	r := outRec{kind: kind, lt: lt, rt: rt}
	r.lo, r.ln = len(o.buf), len(lp)
	o.buf = append(o.buf, lp...)
	r.ro, r.rn = len(o.buf), len(rp)
	o.buf = append(o.buf, rp...)
	o.recs = append(o.recs, r)
}

// ProcessBatch runs one micro-batch. left or right may be nil (no rows); both nil is a
// no-data batch. lateWM is the previous batch's eviction watermark (0 for the first batch) and
// judges late rows; evictWM is this batch's watermark and drives eviction (spec §4-§6).
//
// An error from the input checks leaves the state untouched. An error after them (only
// ErrStateTooLarge) may leave it half-updated: the host then discards the operator and
// restores the last checkpoint, exactly as after a crash.
func (o *Operator) ProcessBatch(left, right *Input, lateWM, evictWM int64) (*Result, error) {
	if lateWM < 0 || evictWM < lateWM || evictWM > maxWatermarkMs {
		return nil, fmt.Errorf("%w: watermarks late %d ms, eviction %d ms (want 0 <= late <= eviction <= %d)", ErrBadInput, lateWM, evictWM, int64(maxWatermarkMs))
	}
	for s, in := range [2]*Input{left, right} {
		if err := in.check(Side(s)); err != nil {
			return nil, err
		}
		for i, t := range in.eventTimes() {
			if t > maxEventTime || t < -maxEventTime {
				return nil, fmt.Errorf("%w: %s row %d: event time %d µs is out of range", ErrBadInput, Side(s), i, t)
			}
		}
	}
	r := &o.res
	*r = Result{Rows: r.Rows[:0], Late: [2][]int32{r.Late[0][:0], r.Late[1][:0]},
		LateWatermarkMs: lateWM, EvictionWatermarkMs: evictWM}
	o.recs, o.buf = o.recs[:0], o.buf[:0]
	for s := range o.st {
		o.startSeq[s] = o.st[s].nextSeq
		o.added[s], o.flipped[s] = o.added[s][:0], o.flipped[s][:0]
	}
	r.InputRows = [2]int64{int64(left.Len()), int64(right.Len())}
	sl, slOK, sr, srOK := o.spec.StateWatermarks(evictWM)
	r.StateWatermarkMs, r.StateWatermarkOK = [2]int64{sl, sr}, [2]bool{slOK, srOK}

	if err := o.leftPass(left, lateWM*1000); err != nil {
		return nil, err
	}
	if err := o.rightPass(right, lateWM*1000, sr*1000, srOK); err != nil {
		return nil, err
	}
	o.evictSides(slOK, sl, srOK, sr, true)
	o.evictWM = evictWM

	r.NumRowsDroppedByWatermark = int64(len(r.Late[Left]) + len(r.Late[Right]))
	r.NumRowsTotal = int64(o.st[Left].live + o.st[Right].live)
	for _, rec := range o.recs {
		row := OutRow{Kind: rec.kind, LeftTime: rec.lt, RightTime: rec.rt}
		if rec.kind.HasLeft() {
			row.Left = o.buf[rec.lo : rec.lo+rec.ln : rec.lo+rec.ln]
		}
		if rec.kind.HasRight() {
			row.Right = o.buf[rec.ro : rec.ro+rec.rn : rec.ro+rec.rn]
		}
		r.Rows = append(r.Rows, row)
	}
	return r, nil
}

func (in *Input) eventTimes() []int64 {
	if in == nil {
		return nil
	}
	return in.EventTime
}

// leftPass (spec §5.1): each on-time left row probes the right state of earlier batches,
// emits its pairs, and is buffered with its matched flag (semi: emitted once and not buffered
// when it matched).
func (o *Operator) leftPass(in *Input, lateUs int64) error {
	L, R := o.st[Left], o.st[Right]
	r := &o.res
	semi := o.spec.Type == LeftSemi
	for i := 0; i < in.Len(); i++ {
		t := in.EventTime[i]
		p, ok := o.admit(Left, in, i, lateUs)
		if !ok {
			continue
		}
		found := false
		for rr := p.head; rr >= 0; rr = R.rows[rr].next {
			row := &R.rows[rr]
			if !o.matches(t, row.t) {
				continue
			}
			found = true
			if semi {
				break
			}
			o.emit(Pair, in.Rows.Value(i), t, R.payload(rr), row.t)
			r.Matched++
			if !row.matched() {
				row.setMatched()
				o.flipped[Right] = append(o.flipped[Right], rr)
			}
		}
		if semi && found {
			o.emit(SemiLeft, in.Rows.Value(i), t, nil, 0)
			r.Matched++
			continue
		}
		slot, err := L.insert(t, p.key, p.hash, p.null, in.Rows.Value(i), found)
		if err != nil {
			return err
		}
		o.added[Left] = append(o.added[Left], slot)
		r.NumRowsUpdated++
	}
	return nil
}

// probe is an input row's key (null: the row's key is null, nothing to look up) with its
// hash, and head, the first row under that key in the other side's state (-1: none).
type probe struct {
	key  []byte
	hash uint32
	null bool
	head int32
}

// admit looks row i of side s's input up in the other side's state. ok false: the row takes
// no part in the batch, because its key is null and the join does not preserve s (Spark's
// inferred `key IS NOT NULL` filter runs before the join), or it is late (recorded in
// Late[s]: at or below lateUs on a side with a watermark).
func (o *Operator) admit(s Side, in *Input, i int, lateUs int64) (p probe, ok bool) {
	p.null = in.keyNull(i)
	if p.null && !o.spec.Type.preserves(s) {
		return p, false
	}
	if o.spec.watermark(s) && in.EventTime[i] <= lateUs {
		o.res.Late[s] = append(o.res.Late[s], int32(i))
		return p, false
	}
	p.head = -1
	if !p.null {
		other := o.st[1-s]
		p.key = in.Keys.Value(i)
		p.hash = other.hash(p.key)
		if id := other.find(p.key, p.hash); id >= 0 {
			p.head = other.keys[id].head
		}
	}
	return p, true
}

// rightPass (spec §5.2): each on-time right row probes the left state, this batch's rows
// included, and is buffered unless this batch's right state watermark would evict it at once
// and it has no null row to give (SPARK-49829).
func (o *Operator) rightPass(in *Input, lateUs, srUs int64, srOK bool) error {
	L, R := o.st[Left], o.st[Right]
	r := &o.res
	semi := o.spec.Type == LeftSemi
	preserved := o.spec.Type.preserves(Right)
	for i := 0; i < in.Len(); i++ {
		t := in.EventTime[i]
		p, ok := o.admit(Right, in, i, lateUs)
		if !ok {
			continue
		}
		found := false
		for lr := p.head; lr >= 0; lr = L.rows[lr].next {
			row := &L.rows[lr]
			if !o.matches(row.t, t) {
				continue
			}
			found = true
			if semi {
				if row.matched() {
					continue // a left semi row comes out once
				}
				o.emit(SemiLeft, L.payload(lr), row.t, nil, 0)
			} else {
				o.emit(Pair, L.payload(lr), row.t, in.Rows.Value(i), t)
			}
			r.Matched++
			if !row.matched() {
				row.setMatched()
				if row.seq() < o.startSeq[Left] {
					o.flipped[Left] = append(o.flipped[Left], lr)
				}
			}
		}
		if srOK && t <= srUs && (found || !preserved) {
			continue // evicted by this very batch, with nothing left to emit
		}
		slot, err := R.insert(t, p.key, p.hash, p.null, in.Rows.Value(i), found)
		if err != nil {
			return err
		}
		o.added[Right] = append(o.added[Right], slot)
		r.NumRowsUpdated++
	}
	return nil
}

// evictSides removes the rows at or below the state watermarks (spec §6): the left side
// first, then the right; a preserved side's unmatched rows come out null-extended when emit.
func (o *Operator) evictSides(slOK bool, sl int64, srOK bool, sr int64, emit bool) {
	r := &o.res
	for s, ok := range [2]bool{slOK, srOK} {
		if !ok {
			continue
		}
		side := Side(s)
		st := o.st[side]
		preserved := o.spec.Type.preserves(side)
		upTo := sl * 1000
		if side == Right {
			upTo = sr * 1000
		}
		var visit func(row int32)
		if emit && preserved {
			visit = func(row int32) {
				sr := &st.rows[row]
				if side == Left {
					o.emit(LeftUnmatched, st.payload(row), sr.t, nil, 0)
				} else {
					o.emit(RightUnmatched, nil, 0, st.payload(row), sr.t)
				}
				r.Unmatched[side]++
			}
		}
		n := st.evict(upTo, visit)
		if !preserved {
			r.NumRowsRemoved += int64(n)
		}
	}
}

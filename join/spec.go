package join

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/medallion-lake/medallion/gold"
)

// ErrUnsupportedOperation is returned by Validate for the combinations Spark rejects; the text
// after the prefix is Spark's own (spec §1).
var ErrUnsupportedOperation = errors.New("join: unsupported operation")

// ErrBadSpec is returned for a spec that is not even a join Spark could be asked for: an
// unknown type or operator, an offset out of range, a condition that does not parse.
var ErrBadSpec = errors.New("join: bad spec")

// Type is the join type.
type Type uint8

// The join types. Inner, the outer joins and LeftSemi run; LeftAnti and Cross exist so that
// Validate can give Spark's answer for them.
const (
	Inner Type = iota + 1
	LeftOuter
	RightOuter
	FullOuter
	LeftSemi
	LeftAnti
	Cross
)

var typeNames = [...]struct{ spark, contract string }{
	Inner:      {"Inner", "inner"},
	LeftOuter:  {"LeftOuter", "left_outer"},
	RightOuter: {"RightOuter", "right_outer"},
	FullOuter:  {"FullOuter", "full_outer"},
	LeftSemi:   {"LeftSemi", "left_semi"},
	LeftAnti:   {"LeftAnti", "left_anti"},
	Cross:      {"Cross", "cross"},
}

// String is Spark's name of the type (as its error texts print it).
func (t Type) String() string {
	if t >= Inner && t <= Cross {
		return typeNames[t].spark
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Name is the type's name in the pipeline config (`joins[].type`).
func (t Type) Name() string {
	if t >= Inner && t <= Cross {
		return typeNames[t].contract
	}
	return t.String()
}

// ParseType reads a config name (inner, left_outer, right_outer, full_outer, left_semi, and
// left_anti or cross, which Validate then rejects with Spark's text).
func ParseType(s string) (Type, error) {
	for t := Inner; t <= Cross; t++ {
		if s == typeNames[t].contract {
			return t, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown join type %q (want inner, left_outer, right_outer, full_outer or left_semi)", ErrBadSpec, s)
}

// preserves reports whether side s is preserved: its unmatched rows come out null-extended.
func (t Type) preserves(s Side) bool {
	switch t {
	case FullOuter:
		return true
	case LeftOuter:
		return s == Left
	case RightOuter:
		return s == Right
	}
	return false
}

// Side names one input of the join.
type Side uint8

// The two sides.
const (
	Left Side = iota
	Right
)

func (s Side) String() string {
	if s == Left {
		return "left"
	}
	return "right"
}

// Op is a comparison operator of a time conjunct.
type Op uint8

// The comparisons Spark's state watermark algebra understands.
const (
	LT Op = iota + 1 // <
	LE               // <=
	GT               // >
	GE               // >=
)

var opText = [...]string{LT: "<", LE: "<=", GT: ">", GE: ">="}

func (o Op) String() string {
	if o >= LT && o <= GE {
		return opText[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// flip is the operator with its operands swapped: a < b iff b > a.
func (o Op) flip() Op {
	switch o {
	case LT:
		return GT
	case LE:
		return GE
	case GT:
		return LT
	case GE:
		return LE
	}
	return o
}

// Bound is one time conjunct in canonical form: `R.t Op L.t + Offset`, where L.t and R.t are
// the two sides' event-time (watermarked) columns and Offset is in µs. Every conjunct Spark's
// algebra accepts between the two time columns has this form once rearranged.
type Bound struct {
	Op     Op
	Offset int64
}

func (b Bound) String() string {
	switch {
	case b.Offset > 0:
		return fmt.Sprintf("r.t %s l.t + %s", b.Op, fmtMicros(b.Offset))
	case b.Offset < 0:
		return fmt.Sprintf("r.t %s l.t - %s", b.Op, fmtMicros(-b.Offset))
	}
	return fmt.Sprintf("r.t %s l.t", b.Op)
}

// Between is the contract's condition: `R.t BETWEEN L.t + lower AND L.t + upper` (µs), both
// ends inclusive.
func Between(lower, upper int64) []Bound {
	return []Bound{{Op: GE, Offset: lower}, {Op: LE, Offset: upper}}
}

// bounds reports which side a conjunct bounds from below: `R.t <(=) L.t + c` means
// `L.t >(=) R.t - c` and bounds the left state; `R.t >(=) L.t + c` bounds the right one.
func (b Bound) bounds() Side {
	if b.Op == LT || b.Op == LE {
		return Left
	}
	return Right
}

// holds evaluates the conjunct on two event times (µs).
func (b Bound) holds(lt, rt int64) bool {
	v := lt + b.Offset
	switch b.Op {
	case LT:
		return rt < v
	case LE:
		return rt <= v
	case GT:
		return rt > v
	case GE:
		return rt >= v
	}
	return false
}

// maxOffset bounds a conjunct's offset (about 100 years) so that no watermark arithmetic can
// overflow.
const maxOffset = 100 * 366 * 86400 * 1_000_000

// Spec describes one stream-stream join.
type Spec struct {
	Type Type
	// NumKeys is the number of equality conjuncts between the two sides (`on:`). The operator
	// sees each row's keys already encoded (Input.Keys).
	NumKeys int
	// Condition is the time-range condition, as AND-ed conjuncts (Between builds the contract's).
	Condition []Bound
	// LeftWatermark and RightWatermark say whether each side's event-time column carries a
	// watermark (withWatermark). A side without one never has late rows, is never evicted,
	// and cannot bound the other side's state.
	LeftWatermark, RightWatermark bool
	// Mode is the query's output mode; zero means Append, the only one Spark allows.
	Mode gold.Mode
	// StateFormatVersion is Spark's spark.sql.streaming.join.stateFormatVersion of a restored
	// checkpoint; zero means the current one (2). Version 1 is rejected for outer joins.
	StateFormatVersion int
}

func (s *Spec) watermark(side Side) bool {
	if side == Left {
		return s.LeftWatermark
	}
	return s.RightWatermark
}

// hasStateValueWatermark reports whether Spark's algebra yields a state value watermark for
// side (some conjunct bounds it and the other side is watermarked), regardless of whether side
// itself has a watermark to evict by.
func (s *Spec) hasStateValueWatermark(side Side) bool {
	if !s.watermark(1 - side) {
		return false
	}
	for _, b := range s.Condition {
		if b.bounds() == side {
			return true
		}
	}
	return false
}

// Evicts reports whether side's state is ever evicted: Spark builds the eviction predicate on
// the side's own watermarked column from the state value watermark (spec §3.1).
func (s *Spec) Evicts(side Side) bool {
	return s.watermark(side) && s.hasStateValueWatermark(side)
}

// Validate checks the spec with Spark's rules (spec §1), in the order Spark applies them: the
// output mode, the join type and its watermark requirement (analysis), the equality predicate
// (planning), the state format (execution). Spark's rejections wrap ErrUnsupportedOperation
// with Spark's text; malformed specs wrap ErrBadSpec.
func (s *Spec) Validate() error {
	if s.Type < Inner || s.Type > Cross {
		return fmt.Errorf("%w: unknown join type %d", ErrBadSpec, s.Type)
	}
	if s.NumKeys < 0 {
		return fmt.Errorf("%w: %d join keys", ErrBadSpec, s.NumKeys)
	}
	for i, b := range s.Condition {
		if b.Op < LT || b.Op > GE {
			return fmt.Errorf("%w: time conjunct %d has unknown operator %d", ErrBadSpec, i, b.Op)
		}
		if b.Offset > maxOffset || b.Offset < -maxOffset {
			return fmt.Errorf("%w: time conjunct %d offset %dµs is out of range (±100 years)", ErrBadSpec, i, b.Offset)
		}
	}
	mode := s.Mode
	if mode == 0 {
		mode = gold.Append
	}
	switch mode {
	case gold.Append:
	case gold.Update, gold.Complete:
		return fmt.Errorf("%w: Join between two streaming DataFrames/Datasets is not supported in %s output mode, only in Append output mode", ErrUnsupportedOperation, mode)
	default:
		return fmt.Errorf("%w: unknown output mode %d", ErrBadSpec, s.Mode)
	}
	const noWatermark = "join between two streaming DataFrame/Datasets is not supported without a watermark in the join keys, or a watermark on the nullable side and an appropriate range condition"
	switch s.Type {
	case Inner:
	case LeftAnti:
		return fmt.Errorf("%w: LeftAnti joins with a streaming DataFrame/Dataset on the right are not supported", ErrUnsupportedOperation)
	case LeftOuter, LeftSemi:
		if !s.hasStateValueWatermark(Left) {
			return fmt.Errorf("%w: Stream-stream %s %s", ErrUnsupportedOperation, s.Type, noWatermark)
		}
	case RightOuter:
		if !s.hasStateValueWatermark(Right) {
			return fmt.Errorf("%w: Stream-stream %s %s", ErrUnsupportedOperation, s.Type, noWatermark)
		}
	case FullOuter:
		// Spark checks that either side can be bounded, not both (spec §1).
		if !s.hasStateValueWatermark(Left) && !s.hasStateValueWatermark(Right) {
			return fmt.Errorf("%w: Stream-stream %s %s", ErrUnsupportedOperation, s.Type, noWatermark)
		}
	default:
		return fmt.Errorf("%w: Join type %s is not supported with streaming DataFrame/Dataset", ErrUnsupportedOperation, s.Type)
	}
	if s.NumKeys == 0 {
		return fmt.Errorf("%w: Stream-stream join without equality predicate is not supported", ErrUnsupportedOperation)
	}
	switch s.StateFormatVersion {
	case 0, 2:
	case 1:
		if s.Type == LeftOuter || s.Type == RightOuter || s.Type == FullOuter {
			//lint:ignore ST1005 Spark's error text, verbatim with its final period (spec/stream-joins.md §1)
			return fmt.Errorf("%w: The query is using stream-stream %s join with state format version 1 - correctness issue is discovered. Please discard the checkpoint and rerun the query. See SPARK-26154 for more details.", ErrUnsupportedOperation, s.Type)
		}
	default:
		return fmt.Errorf("%w: unknown state format version %d", ErrBadSpec, s.StateFormatVersion)
	}
	return nil
}

// StateWatermarks returns the two sides' state watermarks (ms) for the eviction watermark
// wMs, per Spark's algebra (spec §3.1): each conjunct bounding a side gives
// trunc((wMs*1000 ∓ offset)/1000), minus 1 ms for an inclusive comparison; a side takes the
// least of its values. ok is false for a side that is never evicted (Evicts).
func (s *Spec) StateWatermarks(wMs int64) (left int64, leftOK bool, right int64, rightOK bool) {
	for _, b := range s.Condition {
		side := b.bounds()
		if !s.Evicts(side) {
			continue
		}
		var v int64
		if side == Left {
			// R.t <(=) L.t + c  <=>  L.t >(=) R.t - c, with R.t := W.
			v = (wMs*1000 - b.Offset) / 1000 // Go's / truncates toward zero, as Spark's
		} else {
			// R.t >(=) L.t + c, with L.t := W.
			v = (wMs*1000 + b.Offset) / 1000
		}
		if b.Op == LE || b.Op == GE {
			v-- // the bound is inclusive and eviction is `t <= value`
		}
		if side == Left {
			if !leftOK || v < left {
				left, leftOK = v, true
			}
		} else if !rightOK || v < right {
			right, rightOK = v, true
		}
	}
	return left, leftOK, right, rightOK
}

// HasStateWatermark reports whether some side is evicted, which is what lets Spark run a
// no-data batch for the join (spec §7).
func (s *Spec) HasStateWatermark() bool { return s.Evicts(Left) || s.Evicts(Right) }

// ShouldRunNoDataBatch is Spark's predicate for the join (spec §7): with no-data batches
// enabled, run one more batch without input when the join evicts by watermark and the new
// global watermark passed this batch's eviction watermark.
func (s *Spec) ShouldRunNoDataBatch(newWatermarkMs, evictionWatermarkMs int64) bool {
	return s.HasStateWatermark() && newWatermarkMs > evictionWatermarkMs
}

// OutputWatermark is the input watermark a downstream stateful operator gets from the join
// (spec §3.4): min(SL, SR, W) over the state watermarks that exist.
func (s *Spec) OutputWatermark(wMs int64) int64 {
	out := wMs
	l, lok, r, rok := s.StateWatermarks(wMs)
	if lok {
		out = min(out, l)
	}
	if rok {
		out = min(out, r)
	}
	return out
}

// fingerprint identifies the semantics a state was built with; snapshots and deltas carry it.
func (s *Spec) appendFingerprint(dst []byte) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%d|%t|%t", s.Type.Name(), s.NumKeys, s.LeftWatermark, s.RightWatermark)
	for _, c := range s.Condition {
		fmt.Fprintf(&b, "|%d:%d", c.Op, c.Offset)
	}
	dst = binary.AppendUvarint(dst, uint64(b.Len()))
	return append(dst, b.String()...)
}

// MatchRange is the inclusive range of event times (µs) of the rows on the other side that a
// row of side at time t can match by the time condition: what merge-late reads of the other
// side's silver, with data skipping (spec §9.1). ok is false when no time can match.
func (s *Spec) MatchRange(side Side, t int64) (lo, hi int64, ok bool) {
	lo, hi = math.MinInt64, math.MaxInt64
	for _, b := range s.Condition {
		var l, h int64 = math.MinInt64, math.MaxInt64
		if side == Left { // partners r: r op t + c
			switch b.Op {
			case GE:
				l = t + b.Offset
			case GT:
				l = t + b.Offset + 1
			case LE:
				h = t + b.Offset
			case LT:
				h = t + b.Offset - 1
			}
		} else { // partners l: t op l + c
			switch b.Op {
			case GE:
				h = t - b.Offset
			case GT:
				h = t - b.Offset - 1
			case LE:
				l = t - b.Offset
			case LT:
				l = t - b.Offset + 1
			}
		}
		lo, hi = max(lo, l), min(hi, h)
	}
	return lo, hi, lo <= hi
}

// MatchWindowClosed reports whether a row of side at time t (µs) can no longer meet an on-time
// partner once the eviction watermark is wMs: its state watermark has reached it, which is
// when the stream emits an unmatched row, and when merge-late may write a null-extended row
// for a quarantined one (spec §9.1). A side that is never evicted never closes.
func (s *Spec) MatchWindowClosed(side Side, t, wMs int64) bool {
	l, lok, r, rok := s.StateWatermarks(wMs)
	if side == Left {
		return lok && t <= l*1000
	}
	return rok && t <= r*1000
}

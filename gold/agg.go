package gold

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/store"
	"github.com/axiomhq/hyperloglog"
)

// ErrBadState is returned when encoded aggregate or operator state cannot be decoded.
var ErrBadState = errors.New("gold: bad state encoding")

// Func is an aggregate function. Every one is mergeable, so gold rows can absorb late rows.
type Func uint8

// The aggregate functions. Avg is kept as sum and count; the sketches are HyperLogLog
// (approx_count_distinct) and DDSketch (approx_percentile).
const (
	Count Func = iota + 1
	Sum
	Min
	Max
	Avg
	ApproxCountDistinct
	ApproxPercentile
)

var funcNames = [...]string{Count: "count", Sum: "sum", Min: "min", Max: "max", Avg: "avg",
	ApproxCountDistinct: "approx_count_distinct", ApproxPercentile: "approx_percentile"}

func (f Func) String() string {
	if int(f) < len(funcNames) && funcNames[f] != "" {
		return funcNames[f]
	}
	return fmt.Sprintf("Func(%d)", uint8(f))
}

// ParseFunc maps a config name (count, sum, min, max, avg, approx_count_distinct,
// approx_percentile) to its Func.
func ParseFunc(name string) (Func, error) {
	for f, n := range funcNames {
		if n != "" && n == name {
			return Func(f), nil
		}
	}
	return 0, fmt.Errorf("gold: unknown aggregate function %q", name)
}

// AggSpec is one aggregate of a gold aggregation.
type AggSpec struct {
	Fn Func
	// Column indexes Input.Columns; -1 means count(*) (only for Count).
	Column int
	// Name is the output column name, used in errors.
	Name string
	// Int says the input column is integral (Int64): Sum, Avg's sum, Min and Max are then
	// kept exactly as int64, as Spark's sum(long) is.
	Int bool
	// Percentiles for ApproxPercentile, each in [0,1].
	Percentiles []float64
	// RelativeAccuracy of the DDSketch (default 0.01).
	RelativeAccuracy float64
	// RSD is approx_count_distinct's maximum relative standard deviation (Spark's default 0.05).
	RSD float64
}

func (s *AggSpec) validate() error {
	switch s.Fn {
	case Count:
	case Sum, Min, Max, Avg, ApproxCountDistinct, ApproxPercentile:
		if s.Column < 0 {
			return fmt.Errorf("gold: aggregate %q: %s needs an input column", s.Name, s.Fn)
		}
	default:
		return fmt.Errorf("gold: aggregate %q: unknown function %d", s.Name, s.Fn)
	}
	if s.Fn == ApproxPercentile {
		if len(s.Percentiles) == 0 {
			return fmt.Errorf("gold: aggregate %q: approx_percentile needs at least one percentile", s.Name)
		}
		for _, p := range s.Percentiles {
			if !(p >= 0 && p <= 1) {
				return fmt.Errorf("gold: aggregate %q: percentile %v is not in [0, 1]", s.Name, p)
			}
		}
		if s.RelativeAccuracy < 0 || s.RelativeAccuracy >= 1 {
			return fmt.Errorf("gold: aggregate %q: relative accuracy %v is not in (0, 1)", s.Name, s.RelativeAccuracy)
		}
	}
	if s.Fn == ApproxCountDistinct && (s.RSD < 0 || s.RSD >= 0.4) {
		// Spark rejects rsd >= 0.39 (precision < 4).
		return fmt.Errorf("gold: aggregate %q: rsd %v is not in (0, 0.39]", s.Name, s.RSD)
	}
	return nil
}

// hllPrecision is Spark's HyperLogLogPlusPlus precision for a relative standard deviation,
// clamped to what the sketch library supports.
func (s *AggSpec) hllPrecision() uint8 {
	rsd := s.RSD
	if rsd == 0 {
		rsd = 0.05
	}
	p := math.Ceil(2 * math.Log2(1.106/rsd))
	return uint8(min(max(p, 4), 18))
}

func (s *AggSpec) relAcc() float64 {
	if s.RelativeAccuracy == 0 {
		return 0.01
	}
	return s.RelativeAccuracy
}

// AggValue is the mergeable state of one aggregate for one group: what the state store keeps,
// what gold persists (as columns or bytes) and what the late-merge job combines.
type AggValue struct {
	Fn Func
	// Int is set when the input column is integral: Sum, Min and Max are then kept exactly in I.
	Int bool
	// N is the count for Count and the number of non-null inputs for every other function.
	N int64
	// F is the float Sum, Min or Max, and Avg's sum: for Sum and Avg, X correctly rounded.
	F float64
	// X is the exact sum of a float Sum or Avg (see Exact): what merges add up, so that F
	// does not depend on the order of the additions.
	X Exact
	// I is the integral Sum, Min or Max.
	I   int64
	HLL *hyperloglog.Sketch
	DD  *ddsketch.DDSketch
}

// exact says whether v keeps an exact sum in X: a float Sum or Avg.
func (v *AggValue) exact() bool { return (v.Fn == Sum || v.Fn == Avg) && !v.Int }

// ExactSum says whether the aggregate keeps an exact float sum (a float Sum or Avg), which
// gold stores in its internal column ExactColumn(Name) beside the public double.
func (s *AggSpec) ExactSum() bool { return (s.Fn == Sum || s.Fn == Avg) && !s.Int }

// Merge folds o into v. Both must come from the same AggSpec.
func (v *AggValue) Merge(o *AggValue) error {
	if v.Fn != o.Fn || v.Int != o.Int {
		return fmt.Errorf("gold: merge %s(int=%v) with %s(int=%v)", v.Fn, v.Int, o.Fn, o.Int)
	}
	switch v.Fn {
	case Count:
		v.N += o.N
	case Sum, Avg:
		if v.Int {
			v.I += o.I
		} else {
			v.X.AddExact(&o.X)
			v.F = v.X.Float64()
		}
		v.N += o.N
	case Min, Max:
		if o.N == 0 {
			return nil
		}
		switch {
		case v.N == 0:
			v.F, v.I = o.F, o.I
		case v.Int:
			if (v.Fn == Min && o.I < v.I) || (v.Fn == Max && o.I > v.I) {
				v.I = o.I
			}
		default:
			v.F = pickFloat(v.Fn, v.F, o.F)
		}
		v.N += o.N
	case ApproxCountDistinct:
		v.N += o.N
		return mergeSketch(&v.HLL, o.HLL, (*hyperloglog.Sketch).Clone, (*hyperloglog.Sketch).Merge)
	case ApproxPercentile:
		v.N += o.N
		return mergeSketch(&v.DD, o.DD, (*ddsketch.DDSketch).Copy, (*ddsketch.DDSketch).MergeWith)
	}
	return nil
}

// mergeSketch merges sketch src into *dst: a nil src (no value seen) adds nothing, a nil *dst
// takes a copy of src (never src itself: the two values must not share a sketch).
func mergeSketch[S any](dst **S, src *S, clone func(*S) *S, merge func(*S, *S) error) error {
	if src == nil {
		return nil
	}
	if *dst == nil {
		*dst = clone(src)
		return nil
	}
	return merge(*dst, src)
}

// pickFloat is min or max under Spark's ordering, where NaN is above every number.
func pickFloat(fn Func, a, b float64) float64 {
	if fn == Min {
		if math.IsNaN(a) || b < a {
			return b
		}
		return a
	}
	if math.IsNaN(a) || b > a || math.IsNaN(b) {
		if math.IsNaN(a) {
			return a
		}
		return b
	}
	return a
}

// Result is the aggregate's output value: int64, float64, []float64 (percentiles) or nil (SQL
// NULL, e.g. the sum of no non-null values).
func (v *AggValue) Result(spec *AggSpec) any {
	switch v.Fn {
	case Count:
		return v.N
	case ApproxCountDistinct:
		if v.HLL == nil {
			return int64(0)
		}
		return int64(v.HLL.Estimate())
	}
	if v.N == 0 {
		return nil
	}
	switch v.Fn {
	case Avg:
		if v.Int {
			return float64(v.I) / float64(v.N)
		}
		// The exact sum divided by the count, rounded once.
		return v.X.Quo(v.N)
	case ApproxPercentile:
		qs, err := v.DD.GetValuesAtQuantiles(spec.Percentiles)
		if err != nil {
			return nil
		}
		return qs
	}
	if v.Int {
		return v.I
	}
	return v.F
}

// AppendBinary appends a stable encoding of v: equal states give equal bytes.
func (v *AggValue) AppendBinary(dst []byte) ([]byte, error) {
	flags := byte(0)
	if v.Int {
		flags |= 1
	}
	if v.HLL != nil || v.DD != nil {
		flags |= 2
	}
	if v.exact() {
		flags |= 4
	}
	dst = append(dst, byte(v.Fn), flags)
	dst = binary.AppendVarint(dst, v.N)
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(v.F))
	dst = binary.AppendVarint(dst, v.I)
	if flags&4 != 0 {
		dst = v.X.AppendBinary(dst)
	}
	if flags&2 == 0 {
		return dst, nil
	}
	lenAt := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	switch {
	case v.HLL != nil:
		// Estimate flushes the sketch's unordered temporary set into its sorted list, which
		// makes the bytes depend only on the sketch's contents.
		v.HLL.Estimate()
		var err error
		if dst, err = v.HLL.AppendBinary(dst); err != nil {
			return nil, fmt.Errorf("gold: encode hll: %w", err)
		}
	case v.DD != nil:
		// Encode takes a pointer to the buffer: a copy of its header, declared here, is what
		// goes to the heap, and only for a DDSketch. Passing &dst moved dst to the heap on
		// every call, one allocation per group and aggregate of every state delta.
		b := dst
		v.DD.Encode(&b, false)
		dst = b
	}
	// The sketch decoders trust their input (a corrupt length can make them allocate or loop
	// without bound), so a checksum guards them against corrupt state.
	payload := dst[lenAt+8:]
	binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(payload)))
	binary.BigEndian.PutUint32(dst[lenAt+4:], crc32.ChecksumIEEE(payload))
	return dst, nil
}

// checkHLL validates the layout of an encoded hyperloglog.Sketch (version 2) before the
// library, which does not check lengths, decodes it.
func checkHLL(b []byte) error {
	if len(b) < 8 || b[0] != 2 || b[1] < 4 || b[1] > 18 {
		return fmt.Errorf("%w: hll header", ErrBadState)
	}
	if b[3] != 1 {
		if len(b)-8 != 1<<b[1] {
			return fmt.Errorf("%w: hll has %d registers, want %d", ErrBadState, len(b)-8, 1<<b[1])
		}
		return nil
	}
	tmp := uint64(binary.BigEndian.Uint32(b[4:]))
	if uint64(len(b)-8) < 4*tmp+12 {
		return fmt.Errorf("%w: hll temporary set truncated", ErrBadState)
	}
	list := b[8+4*tmp:]
	if uint64(len(list)-12) < uint64(binary.BigEndian.Uint32(list[8:])) {
		return fmt.Errorf("%w: hll sparse list truncated", ErrBadState)
	}
	return nil
}

// usable decodes and exercises a sketch inside f. The sketch libraries do not fully validate
// their input and may panic on corrupt bytes; state read from storage must give an error.
func usable(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("corrupt sketch: %v", r)
		}
	}()
	return f()
}

// DecodeAggValue decodes one AppendBinary encoding and returns the remaining bytes. A float
// Sum or Avg written before sums were exact (no exact part) takes the exact value of its
// float: the best that is known of it, and what it has always been read as.
func DecodeAggValue(b []byte) (AggValue, []byte, error) {
	var v AggValue
	if len(b) < 2 {
		return v, nil, fmt.Errorf("%w: aggregate header truncated", ErrBadState)
	}
	v.Fn, v.Int = Func(b[0]), b[1]&1 != 0
	hasSketch, hasExact := b[1]&2 != 0, b[1]&4 != 0
	if v.Fn < Count || v.Fn > ApproxPercentile || b[1]&^7 != 0 || hasExact && !v.exact() {
		return v, nil, fmt.Errorf("%w: aggregate header %#x %#x", ErrBadState, b[0], b[1])
	}
	b = b[2:]
	var w int
	if v.N, w = binary.Varint(b); w <= 0 {
		return v, nil, fmt.Errorf("%w: aggregate count truncated", ErrBadState)
	}
	b = b[w:]
	if len(b) < 8 {
		return v, nil, fmt.Errorf("%w: aggregate float truncated", ErrBadState)
	}
	v.F = math.Float64frombits(binary.BigEndian.Uint64(b))
	b = b[8:]
	if v.I, w = binary.Varint(b); w <= 0 {
		return v, nil, fmt.Errorf("%w: aggregate int truncated", ErrBadState)
	}
	b = b[w:]
	switch {
	case hasExact:
		x, rest, err := DecodeExact(b)
		if err != nil {
			return v, nil, err
		}
		v.X, b = x, rest
		if f := v.X.Float64(); math.Float64bits(f) != math.Float64bits(v.F) && !(math.IsNaN(f) && math.IsNaN(v.F)) {
			return v, nil, fmt.Errorf("%w: %s of %v does not round its exact sum (%v)", ErrBadState, v.Fn, v.F, f)
		}
	case v.exact():
		v.X = ExactOf(v.F)
	}
	if !hasSketch {
		return v, b, nil
	}
	if len(b) < 8 || uint64(len(b)-8) < uint64(binary.BigEndian.Uint32(b)) {
		return v, nil, fmt.Errorf("%w: sketch truncated", ErrBadState)
	}
	n := binary.BigEndian.Uint32(b)
	// Cloned: the HLL decoder keeps a reference to its input.
	sk, rest := slices.Clone(b[8:8+n]), b[8+n:]
	if crc32.ChecksumIEEE(sk) != binary.BigEndian.Uint32(b[4:]) {
		return v, nil, fmt.Errorf("%w: sketch checksum mismatch", ErrBadState)
	}
	switch v.Fn {
	case ApproxCountDistinct:
		if err := checkHLL(sk); err != nil {
			return v, nil, err
		}
		v.HLL = new(hyperloglog.Sketch)
		err := usable(func() error {
			if err := v.HLL.UnmarshalBinary(sk); err != nil {
				return err
			}
			v.HLL.Estimate()
			return nil
		})
		if err != nil {
			return v, nil, fmt.Errorf("%w: hll: %v", ErrBadState, err)
		}
	case ApproxPercentile:
		err := usable(func() error {
			dd, err := ddsketch.DecodeDDSketch(sk, store.DefaultProvider, nil)
			if err != nil {
				return err
			}
			if dd.IndexMapping == nil {
				return errors.New("no index mapping")
			}
			if !dd.IsEmpty() {
				if _, err := dd.GetValueAtQuantile(0.5); err != nil {
					return err
				}
			}
			v.DD = dd
			return nil
		})
		if err != nil {
			return v, nil, fmt.Errorf("%w: ddsketch: %v", ErrBadState, err)
		}
	default:
		return v, nil, fmt.Errorf("%w: %s carries a sketch", ErrBadState, v.Fn)
	}
	return v, rest, nil
}

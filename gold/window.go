package gold

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidWindow is returned for window or session parameters Spark rejects at analysis time.
var ErrInvalidWindow = errors.New("gold: invalid window")

// Window is a half-open event-time interval [Start, End) in microseconds.
type Window struct {
	Start, End int64
}

// WindowSpec is window(col, size, slide, startTime) with every duration in microseconds.
// A tumbling window has Slide == Size. Build one with NewWindowSpec so it is validated.
type WindowSpec struct {
	Size, Slide, StartTime int64
	// n is the candidate count ceil(Size/Slide); exact means Size%Slide == 0, so every
	// candidate contains t and the containment filter can be skipped.
	n     int
	exact bool
}

// NewWindowSpec validates the parameters with Spark's rules and messages (TimeWindow's
// checkInputDataTypes): size > 0, slide > 0, slide <= size, |startTime| < slide.
func NewWindowSpec(size, slide, startTime int64) (WindowSpec, error) {
	switch {
	case size <= 0:
		return WindowSpec{}, valueOutOfRange("window_duration", size)
	case slide <= 0:
		return WindowSpec{}, valueOutOfRange("slide_duration", slide)
	case slide > size:
		return WindowSpec{}, constraintViolation("slide_duration", slide, "<=", "window_duration", size)
	case startTime == math.MinInt64 || abs64(startTime) >= slide:
		return WindowSpec{}, constraintViolation("abs(start_time)", abs64(startTime), "<", "slide_duration", slide)
	}
	n := size / slide
	if size%slide != 0 {
		n++
	}
	return WindowSpec{Size: size, Slide: slide, StartTime: startTime, n: int(n), exact: size%slide == 0}, nil
}

// Tumbling is NewWindowSpec(size, size, 0).
func Tumbling(size int64) (WindowSpec, error) { return NewWindowSpec(size, size, 0) }

func valueOutOfRange(name string, v int64) error {
	//lint:ignore ST1005 Spark's error text, verbatim with its final period (spec/streaming-semantics.md)
	return fmt.Errorf("%w: [DATATYPE_MISMATCH.VALUE_OUT_OF_RANGE] The `%s` must be between (0, %d] (current value = %dL).",
		ErrInvalidWindow, name, int64(math.MaxInt64), v)
}

func constraintViolation(left string, lv int64, op, right string, rv int64) error {
	//lint:ignore ST1005 Spark's error text, verbatim with its final period (spec/streaming-semantics.md)
	return fmt.Errorf("%w: [DATATYPE_MISMATCH.PARAMETER_CONSTRAINT_VIOLATION] The `%s`(%dL) must be %s the `%s`(%dL).",
		ErrInvalidWindow, left, lv, op, right, rv)
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// MaxWindows is the largest number of windows one event can fall into.
func (s WindowSpec) MaxWindows() int { return s.n }

// Assign appends the windows containing t (µs) to dst, most recent start first, exactly as
// Spark's buildTimeWindowRewrite orders them. The remainder is floor-corrected so times before
// startTime (or before the epoch) land in the right window (SPARK-39347).
func (s WindowSpec) Assign(dst []Window, t int64) []Window {
	start := s.lastStart(t)
	for i := 0; i < s.n; i++ {
		w := Window{Start: start, End: start + s.Size}
		if s.exact || (w.Start <= t && t < w.End) {
			dst = append(dst, w)
		}
		start -= s.Slide
	}
	return dst
}

// lastStart is the start of the newest window containing t.
func (s WindowSpec) lastStart(t int64) int64 {
	rem := (t - s.StartTime) % s.Slide
	if rem < 0 {
		rem += s.Slide
	}
	return t - rem
}

// LateWindows appends the windows of t that the watermark judging it (lateWM, ms) had already
// closed: end <= lateWM*1000. The late-merge job applies a quarantined row to exactly these;
// its other windows got the row in the stream.
func (s WindowSpec) LateWindows(dst []Window, t, lateWM int64) []Window {
	n := len(dst)
	dst = s.Assign(dst, t)
	out := dst[:n]
	for _, w := range dst[n:] {
		if w.End <= lateWM*1000 {
			out = append(out, w)
		}
	}
	return out
}

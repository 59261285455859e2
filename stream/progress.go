package stream

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/gold"
)

// Progress is one StreamingQueryProgress (spec §5). MarshalJSON writes Spark's key order and
// formatting: NaN and infinite rates omitted, empty maps omitted, doubles as Java prints them.
type Progress struct {
	ID, RunID string
	// Name is null in the JSON when empty.
	Name                   string
	Timestamp              time.Time
	BatchID                int64
	NumInputRows           int64
	InputRowsPerSecond     float64
	ProcessedRowsPerSecond float64
	DurationMs             map[string]int64
	// EventTime holds avg, max, min and watermark, already formatted (see EventTimeProgress).
	EventTime       map[string]string
	StateOperators  []StateOperatorProgress
	Sources         []SourceProgress
	Sink            SinkProgress
	ObservedMetrics map[string]json.RawMessage
	// Expectations are the batch's data-quality counts (medallion's addition, after Spark's
	// keys; absent when the source has no expectations).
	Expectations []ExpectationProgress
}

// ExpectationProgress is one expectation's counts over a batch: rows that passed, rows that
// violated it, and of those the rows dropped to rejects.
type ExpectationProgress struct {
	Name        string `json:"name"`
	OnViolation string `json:"onViolation"`
	Passed      int64  `json:"passed"`
	Failed      int64  `json:"failed"`
	Dropped     int64  `json:"dropped"`
}

// StateOperatorProgress is one element of stateOperators.
type StateOperatorProgress struct {
	OperatorName              string
	NumRowsTotal              int64
	NumRowsUpdated            int64
	AllUpdatesTimeMs          int64
	NumRowsRemoved            int64
	AllRemovalsTimeMs         int64
	CommitTimeMs              int64
	MemoryUsedBytes           int64
	NumRowsDroppedByWatermark int64
	NumShufflePartitions      int64
	NumStateStoreInstances    int64
	// CustomMetrics is written with sorted keys. Our exact late-row count goes here under
	// CustomMetricLateRowsQuarantined, so Spark-shaped readers keep working.
	CustomMetrics map[string]int64
}

// CustomMetricLateRowsQuarantined is the customMetrics key of the exact number of input rows
// that were late for at least one window and went to quarantine (Spark only has the
// group-level numRowsDroppedByWatermark).
const CustomMetricLateRowsQuarantined = "numLateRowsQuarantined"

// CustomMetricSessionCorrections is the customMetrics key of a session aggregation's
// corrections: rows on time by Spark's rule that touch a session already emitted (or a row
// already quarantined), which Spark would emit as a second, overlapping session. They are
// quarantined with the late rows (counted in CustomMetricLateRowsQuarantined too), and
// merge-late re-sessionizes their keys (docs/late-data.md).
const CustomMetricSessionCorrections = "numSessionCorrectionsQuarantined"

// SourceProgress is one element of sources. Offsets are raw JSON (OffsetJSON), nil for null.
type SourceProgress struct {
	Description                                string
	StartOffset, EndOffset, LatestOffset       json.RawMessage
	NumInputRows                               int64
	InputRowsPerSecond, ProcessedRowsPerSecond float64
	Metrics                                    map[string]string
}

// SinkProgress is the sink element; NumOutputRows is -1 for V1 sinks (Delta, foreachBatch).
type SinkProgress struct {
	Description   string
	NumOutputRows int64
	Metrics       map[string]string
}

// OffsetJSON is an offset as progress shows it: parsed when it is valid JSON, else a string.
func OffsetJSON(s string) json.RawMessage {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// InputRowsPerSecond is rows / (this trigger start - previous trigger start); the first
// trigger (no previous) divides by +Inf, giving 0.
func InputRowsPerSecond(rows int64, prevTriggerStart, triggerStart time.Time) float64 {
	if prevTriggerStart.IsZero() {
		return 0
	}
	return float64(rows) / triggerStart.Sub(prevTriggerStart).Seconds()
}

// ProcessedRowsPerSecond is rows / max(1 ms, trigger duration).
func ProcessedRowsPerSecond(rows int64, triggerDuration time.Duration) float64 {
	return float64(rows) / max(time.Millisecond, triggerDuration).Seconds()
}

// EventTimeProgress builds the eventTime map: avg/max/min only when the batch had rows with
// an event time, watermark (the one this batch ran with) when the query has one.
func EventTimeProgress(stats gold.EventTimeStats, watermarkMs int64, hasWatermark bool) map[string]string {
	m := map[string]string{}
	if stats.Count > 0 {
		m["avg"] = FormatProgressTime(stats.Avg())
		m["max"] = FormatProgressTime(stats.Max)
		m["min"] = FormatProgressTime(stats.Min)
	}
	if hasWatermark {
		m["watermark"] = FormatProgressTime(watermarkMs)
	}
	return m
}

// FormatProgressTime formats epoch ms as Spark does: yyyy-MM-dd'T'HH:mm:ss.SSS'Z' in UTC.
func FormatProgressTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// MarshalJSON writes the progress in Spark's key order.
func (p *Progress) MarshalJSON() ([]byte, error) {
	var w jw
	w.open()
	w.str("id", p.ID)
	w.str("runId", p.RunID)
	if p.Name == "" {
		w.raw("name", "null")
	} else {
		w.str("name", p.Name)
	}
	w.str("timestamp", p.Timestamp.UTC().Format("2006-01-02T15:04:05.000Z"))
	w.int("batchId", p.BatchID)
	w.rates(p.NumInputRows, p.InputRowsPerSecond, p.ProcessedRowsPerSecond)
	w.intMap("durationMs", p.DurationMs)
	w.strMap("eventTime", p.EventTime)
	writeArray(&w, "stateOperators", p.StateOperators, (*StateOperatorProgress).write)
	writeArray(&w, "sources", p.Sources, (*SourceProgress).write)
	w.key("sink")
	w.open()
	w.str("description", p.Sink.Description)
	w.int("numOutputRows", p.Sink.NumOutputRows)
	w.strMap("metrics", p.Sink.Metrics)
	w.close()
	writeMap(&w, "observedMetrics", p.ObservedMetrics, func(w *jw, k string, v json.RawMessage) { w.raw(k, string(v)) })
	if len(p.Expectations) > 0 {
		// Its JSON tags are the keys in their order.
		data, err := json.Marshal(p.Expectations)
		if err != nil {
			return nil, err
		}
		w.raw("expectations", string(data))
	}
	w.close()
	return w.b.Bytes(), nil
}

func (s *StateOperatorProgress) write(w *jw) {
	w.open()
	w.str("operatorName", s.OperatorName)
	for _, f := range [...]struct {
		key string
		v   int64
	}{
		{"numRowsTotal", s.NumRowsTotal}, {"numRowsUpdated", s.NumRowsUpdated}, {"allUpdatesTimeMs", s.AllUpdatesTimeMs},
		{"numRowsRemoved", s.NumRowsRemoved}, {"allRemovalsTimeMs", s.AllRemovalsTimeMs}, {"commitTimeMs", s.CommitTimeMs},
		{"memoryUsedBytes", s.MemoryUsedBytes}, {"numRowsDroppedByWatermark", s.NumRowsDroppedByWatermark},
		{"numShufflePartitions", s.NumShufflePartitions}, {"numStateStoreInstances", s.NumStateStoreInstances},
	} {
		w.int(f.key, f.v)
	}
	w.intMap("customMetrics", s.CustomMetrics)
	w.close()
}

func (s *SourceProgress) write(w *jw) {
	w.open()
	w.str("description", s.Description)
	w.rawOrNull("startOffset", s.StartOffset)
	w.rawOrNull("endOffset", s.EndOffset)
	w.rawOrNull("latestOffset", s.LatestOffset)
	w.rates(s.NumInputRows, s.InputRowsPerSecond, s.ProcessedRowsPerSecond)
	w.strMap("metrics", s.Metrics)
	w.close()
}

// jw writes compact JSON objects field by field, in the caller's order.
type jw struct {
	b     bytes.Buffer
	first bool
}

func (w *jw) open()  { w.b.WriteByte('{'); w.first = true }
func (w *jw) close() { w.b.WriteByte('}'); w.first = false }

func (w *jw) key(k string) {
	if !w.first {
		w.b.WriteByte(',')
	}
	w.first = false
	kb, _ := json.Marshal(k)
	w.b.Write(kb)
	w.b.WriteByte(':')
}

func (w *jw) raw(k, v string) { w.key(k); w.b.WriteString(v) }

func (w *jw) str(k, v string) {
	vb, _ := json.Marshal(v)
	w.raw(k, string(vb))
}

func (w *jw) int(k string, v int64) { w.raw(k, strconv.FormatInt(v, 10)) }

func (w *jw) double(k string, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	w.raw(k, JavaDouble(v))
}

// rates writes the input counters Spark's progress carries twice, for the query and for each
// of its sources, in Spark's order.
func (w *jw) rates(numInputRows int64, inputPerSecond, processedPerSecond float64) {
	w.int("numInputRows", numInputRows)
	w.double("inputRowsPerSecond", inputPerSecond)
	w.double("processedRowsPerSecond", processedPerSecond)
}

func (w *jw) rawOrNull(k string, v json.RawMessage) {
	if len(v) == 0 {
		w.raw(k, "null")
		return
	}
	var c bytes.Buffer
	if json.Compact(&c, v) != nil {
		vb, _ := json.Marshal(string(v))
		w.raw(k, string(vb))
		return
	}
	w.raw(k, c.String())
}

// writeArray writes items as the array k, each with write.
func writeArray[T any](w *jw, k string, items []T, write func(*T, *jw)) {
	w.key(k)
	w.b.WriteByte('[')
	for i := range items {
		if i > 0 {
			w.b.WriteByte(',')
		}
		w.first = true
		write(&items[i], w)
	}
	w.b.WriteByte(']')
}

// writeMap writes m as the object k with sorted keys, each value with write; nothing when m
// is empty.
func writeMap[V any](w *jw, k string, m map[string]V, write func(w *jw, k string, v V)) {
	if len(m) == 0 {
		return
	}
	w.key(k)
	w.open()
	for _, mk := range slices.Sorted(maps.Keys(m)) {
		write(w, mk, m[mk])
	}
	w.close()
}

func (w *jw) intMap(k string, m map[string]int64)  { writeMap(w, k, m, (*jw).int) }
func (w *jw) strMap(k string, m map[string]string) { writeMap(w, k, m, (*jw).str) }

// JavaDouble formats v as Java's Double.toString, which Spark's JSON uses: "0.0", "2.5",
// "1.0E7", "1.0E-4".
func JavaDouble(v float64) string {
	if v == 0 {
		if math.Signbit(v) {
			return "-0.0"
		}
		return "0.0"
	}
	if a := math.Abs(v); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(v, 'E', -1, 64)
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

package silver

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/bronze/timefmt"
	"github.com/medallion-lake/medallion/pq"
)

// Validation reject reasons (stage StageValidate in the rejects table).
const (
	ReasonMissingEventTime = "missing_event_time"
	// ReasonBadEventTime: the event time is present but did not parse (bronze kept its text
	// in _rescued_data); kept apart from missing_event_time, which reads as an absent field.
	ReasonBadEventTime    = "bad_event_time"
	ReasonMissingRequired = "missing_required"
	ReasonFuture          = bronze.ReasonFuture
)

// StageValidate is the rejects table's stage of the rows validation rejects.
const StageValidate = "validate"

// Rules are the checks a bronze row passes on its way to silver, in order: an event time, every
// required column, and an event time at most MaxFutureSkew after the row's _ingest_time (such a
// row never reaches the watermark).
type Rules struct {
	EventTime string
	// EventTimeFormat says what the event time column accepts (timefmt.Parser.Expected),
	// for the detail of bad_event_time rejects. Default: the default forms.
	EventTimeFormat string
	Required        []string
	MaxFutureSkew   time.Duration // 0: no limit
	// Expectations are the source's data-quality constraints, evaluated in order on the rows
	// the rules above keep (see Expectations).
	Expectations []Expectation
	// Transform computes columns before the rules above are checked (so that the event time
	// may be a computed column) and filters the rows they and the expectations keep.
	Transform Transform
}

// Check is Rules bound to the columns of one batch.
type Check struct {
	rules    *Rules
	ev       *pq.Column
	ingest   *pq.Column
	rescued  *pq.Column   // _rescued_data: where a value that did not parse is
	required []*pq.Column // nil where the batch lacks the column: every row misses it
	skewUs   int64
	// Set by Expectations.Apply: per row, the expectations it violates (bit k for the k-th)
	// and whether one of them drops it.
	expect   *Expectations
	violated []uint64
	drop     []bool
	// Set by Transformer.ApplyFilter: per row, whether the transform's filter keeps it.
	transform *Transformer
	keep      []bool
}

// Bind looks up the rules' columns in b.
func (r *Rules) Bind(b *pq.Batch) Check {
	c := Check{rules: r, ev: b.Column(r.EventTime), ingest: b.Column(bronze.ColIngestTime), rescued: b.Column(bronze.ColRescued),
		skewUs: r.MaxFutureSkew.Microseconds()}
	for _, name := range r.Required {
		c.required = append(c.required, b.Column(name))
	}
	return c
}

// Reject returns why row i fails validation, "" when it passes: the rules first, then the
// drop expectations (when Expectations.Apply ran on the batch), then the transform's filter
// with on_filter reject (when Transformer.ApplyFilter ran).
func (c *Check) Reject(i int) string {
	if r := c.baseReject(i); r != "" {
		return r
	}
	if c.drop != nil && c.drop[i] {
		return c.expect.reason(c.violated[i])
	}
	return c.filterReason(i)
}

// Violated reports whether row i violates any expectation (warn ones included).
func (c *Check) Violated(i int) bool { return c.violated != nil && c.violated[i] != 0 }

// ViolatedExpectation reports whether row i violates the k-th expectation.
func (c *Check) ViolatedExpectation(i, k int) bool {
	return c.violated != nil && c.violated[i]&(1<<k) != 0
}

// Judged reports whether the rules keep row i, so that expectations judge it.
func (c *Check) Judged(i int) bool { return c.baseReject(i) == "" }

func (c *Check) baseReject(i int) string {
	if c.ev == nil || c.ev.IsNull(i) {
		if _, ok := c.badEventTime(i); ok {
			return ReasonBadEventTime
		}
		return ReasonMissingEventTime
	}
	if c.firstMissing(i) >= 0 {
		return ReasonMissingRequired
	}
	if c.skewUs > 0 && c.ingest != nil && !c.ingest.IsNull(i) && c.ev.Int64[i] > c.ingest.Int64[i]+c.skewUs {
		return ReasonFuture
	}
	return ""
}

// badEventTime returns row i's event time value when bronze could not parse it and kept it in
// _rescued_data: a string's text, any other value's JSON (as Spark's get_json_object gives
// it, so that the export's rejects say the same). Only rows without an event time get here: it
// costs a JSON decode of the rescued object, on the reject path alone.
func (c *Check) badEventTime(i int) (string, bool) {
	if c.rescued == nil || c.rescued.IsNull(i) {
		return "", false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(c.rescued.BytesAt(i), &obj) != nil {
		return "", false
	}
	raw, ok := obj[c.rules.EventTime]
	if !ok || string(raw) == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	return string(raw), true
}

// BadEventTimeDetail words a bad_event_time reject: its column, what it expects (a
// timefmt.Parser's Expected) and the value. The Spark export builds the same text around
// the value; both take it from here.
func BadEventTimeDetail(column, expected, value string) string {
	return fmt.Sprintf("event time column %q has value \"%s\", which does not parse: expected %s", column, value, expected)
}

// MaxDetailValue is maxDetailValue for the Spark export.
const MaxDetailValue = maxDetailValue

// maxDetailValue bounds the characters of a value quoted in a reject detail: the whole row is
// in the reject's raw column anyway.
const maxDetailValue = 100

// truncate cuts s to at most n characters, marking the cut with "...".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	k := 0
	for i := range s {
		if k == n {
			return s[:i] + "..."
		}
		k++
	}
	return s
}

func (c *Check) firstMissing(i int) int {
	for k, col := range c.required {
		if col == nil || col.IsNull(i) {
			return k
		}
	}
	return -1
}

// Detail explains reason, as Reject gave it for row i, to a reader of the rejects table.
func (c *Check) Detail(i int, reason string) string {
	switch reason {
	case ReasonMissingEventTime:
		return fmt.Sprintf("event time column %q is missing or null", c.rules.EventTime)
	case ReasonBadEventTime:
		raw, _ := c.badEventTime(i)
		want := c.rules.EventTimeFormat
		if want == "" {
			want = (*timefmt.Parser)(nil).Expected()
		}
		return BadEventTimeDetail(c.rules.EventTime, want, truncate(raw, maxDetailValue))
	case ReasonMissingRequired:
		return fmt.Sprintf("required column %q is missing or null (a value that did not parse is in _rescued_data)", c.rules.Required[c.firstMissing(i)])
	case "":
		return ""
	case ReasonFuture:
		return fmt.Sprintf("event time %s is more than max_future_skew %s after its ingest time %s",
			pq.FormatTimestamp(c.ev.Int64[i], false), c.rules.MaxFutureSkew, pq.FormatTimestamp(c.ingest.Int64[i], false))
	}
	if strings.HasPrefix(reason, ReasonFilteredPrefix) {
		f := c.transform.t.Filter
		return fmt.Sprintf("filter %s (on_filter: reject): %s is false or NULL", f.Name, f.Expr)
	}
	if c.violated != nil && c.violated[i] != 0 {
		return c.expect.detail(c.violated[i])
	}
	return ""
}

// Rejects collects a batch's rejected rows in the rejects table's schema (bronze.RejectsSchema).
type Rejects struct {
	Batch *pq.Batch
	atMs  int64
	raw   []byte
}

// NewRejects returns an empty collection of rows rejected at atMs (the batch timestamp).
func NewRejects(atMs int64) (*Rejects, error) {
	b, err := pq.NewBatch(bronze.RejectsSchema())
	if err != nil {
		return nil, err
	}
	return &Rejects{Batch: b, atMs: atMs}, nil
}

// Add appends row i of b, rejected for reason (with detail), with the row as JSON.
func (r *Rejects) Add(b *pq.Batch, i int, reason, detail string) {
	r.raw = pq.AppendJSONRow(r.raw[:0], b, i)
	c := r.Batch.Columns
	c[0].AppendString(StageValidate)
	c[1].AppendString(reason)
	c[2].AppendString(detail)
	c[3].AppendBytes(r.raw)
	c[4].AppendInt64(int64(len(r.raw)))
	if sf := b.Column(bronze.ColSourceFile); sf != nil && !sf.IsNull(i) {
		c[5].AppendBytes(sf.BytesAt(i))
	} else {
		c[5].AppendString("")
	}
	if so := b.Column(bronze.ColSourceOffset); so != nil && !so.IsNull(i) {
		c[6].AppendInt64(so.Int64[i])
	} else {
		c[6].AppendInt64(-1)
	}
	c[7].AppendInt64(r.atMs * 1000)
}

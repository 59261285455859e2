// Package gen owns the synthetic workload: NDJSON event files written to a landing prefix in
// arrival order, deterministic for a seed, with a realistic event-time lag (log-normal body,
// heavy tail, outage bursts where one device delivers an hour late), duplicates (some resent
// long after the original), a few malformed lines, records with wrongly typed fields and
// far-future event times. It is the data source of the demo, the tests and the benchmarks.
//
// Stats describes exactly what was written, so tests use it as an oracle that does not depend
// on the code under test: landing lines = Events + Duplicates + Malformed.
//
// Crash safety: each object is written with put-if-absent. Same options and seed give
// byte-identical objects, so a rerun after a crash skips the objects already written (after
// checking that their content is identical) and writes the rest.
package gen

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/objstore"
)

// Landing formats.
const (
	FormatJSON = "json"
	FormatCSV  = "csv"
)

// ErrExists reports a landing object that already exists with other content (written by
// another seed or other options): gen never overwrites data someone may have ingested.
var ErrExists = errors.New("gen: object exists with different content")

// Column is a declared event column (the config's schema, without importing config).
type Column struct {
	Name string
	// Kind is the Delta type name: string, long, integer, short, byte, double, float, boolean,
	// binary, date, timestamp, timestamp_ntz or decimal.
	Kind      string
	Precision int // decimal only
	Scale     int // decimal only
	// Required columns are never left out or null.
	Required bool
}

// Options shape a workload. Start from DefaultOptions: a zero field means zero (no
// duplicates, no malformed lines, ...), not "default".
type Options struct {
	// Seed makes the workload reproducible: same seed and options, same bytes.
	Seed int64
	// Lines is the number of lines to write: events, duplicates and malformed lines together.
	Lines int64
	// Files is the number of objects; 0 means ceil(Lines / LinesPerFile).
	Files int
	// LinesPerFile sizes objects when Files is 0. Default 1,000,000 (about 110 MB).
	LinesPerFile int64
	// Prefix is the landing prefix the objects are written under. Default "landing/events/".
	Prefix string
	// Format is FormatJSON (default: one JSON object a line, ".json") or FormatCSV (a header
	// line, then one record a line, ".csv"; empty fields are null).
	Format string
	// Gzip appends ".gz" and compresses each object.
	Gzip bool
	// Progress, when set, is called after each object is stored with the lines written so far
	// (for progress bars).
	Progress func(lines int64)

	// Columns is the event schema. Default event_id string, event_type string, amount double,
	// event_time timestamp (DESIGN.md §8). Columns with the role names below get realistic
	// values; any other column is filled according to its type.
	Columns []Column
	// EventTime, ID, Type, Amount and Device name the columns with those roles. Defaults
	// event_time, event_id, event_type, amount, device_id. A role whose column is not
	// declared is skipped (a device still drives outages).
	EventTime, ID, Type, Amount, Device string

	// Start is the arrival time of the first line. Default 2024-05-01T00:00:00Z.
	Start time.Time
	// Rate is the number of lines arriving per second of the arrival clock. Default 1000.
	Rate float64
	// EventTypes is the number of distinct event types (skewed: the first is the most
	// frequent). Default 8.
	EventTypes int
	// Devices is the number of distinct devices. Default 1000.
	Devices int

	// LagMedian is the median of the log-normal lag body (arrival minus event time).
	// Default 2s.
	LagMedian time.Duration
	// LagSigma is the standard deviation of the lag's logarithm. Default 1.
	LagSigma float64
	// TailFraction of events get a Pareto-distributed lag instead. Default 0.01.
	TailFraction float64
	// TailScale is the smallest tail lag. Default 1m.
	TailScale time.Duration
	// TailAlpha is the Pareto shape (smaller: heavier). Default 1.5.
	TailAlpha float64
	// TailMax caps the tail lag. Default 6h.
	TailMax time.Duration
	// OutageRate is the probability, per line, that a device that was offline for
	// OutageDuration delivers its buffered events now. Default 0.00002.
	OutageRate float64
	// OutageDuration is how long an outage lasted. Default 1h.
	OutageDuration time.Duration
	// OutageEvents is the number of events a burst delivers. Default 0 means the device's
	// share of the traffic over the outage: OutageDuration * Rate / Devices, at least 1.
	OutageEvents int

	// DuplicateFraction of lines resend an earlier event, byte for byte. Default 0.01.
	DuplicateFraction float64
	// LateResendFraction of duplicates resend an event from far back in the run (often
	// beyond the watermark) instead of a recent one. Default 0.2.
	LateResendFraction float64
	// MalformedFraction of lines are not records: invalid JSON, truncated records and binary
	// garbage in equal shares (CSV: records with a stray quote). Default 0.001.
	MalformedFraction float64
	// WrongTypeFraction of lines are records with a wrongly typed event time or amount.
	// Default 0.001.
	WrongTypeFraction float64
	// FutureFraction of lines are records whose event time is FutureLag (plus up to an hour)
	// after their arrival. Default 0.0005.
	FutureFraction float64
	// FutureLag puts future events beyond any real ingest time. Default 50 years.
	FutureLag time.Duration
	// TimeFormatMix of records spell their event time in one of the other forms ingest
	// accepts (DESIGN.md §8): RFC 3339 without fraction, with milliseconds, with a zone offset,
	// or "YYYY-MM-DD HH:MM:SS[.ffffff]" as UTC. Timestamp (not timestamp_ntz) event times
	// only. Default 0: every event time is RFC 3339 UTC with microseconds.
	TimeFormatMix float64
	// NullFraction of values of optional columns without a role are null or left out.
	// Default 0.01.
	NullFraction float64
}

// DefaultOptions returns the documented defaults (Lines is 0: set it).
func DefaultOptions() Options {
	return Options{
		LinesPerFile:       1_000_000,
		Prefix:             "landing/events/",
		Columns:            DefaultColumns(),
		EventTime:          "event_time",
		ID:                 "event_id",
		Type:               "event_type",
		Amount:             "amount",
		Device:             "device_id",
		Start:              time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC),
		Rate:               1000,
		EventTypes:         8,
		Devices:            1000,
		LagMedian:          2 * time.Second,
		LagSigma:           1,
		TailFraction:       0.01,
		TailScale:          time.Minute,
		TailAlpha:          1.5,
		TailMax:            6 * time.Hour,
		OutageRate:         0.000003,
		OutageDuration:     time.Hour,
		DuplicateFraction:  0.01,
		LateResendFraction: 0.2,
		MalformedFraction:  0.001,
		WrongTypeFraction:  0.001,
		FutureFraction:     0.0005,
		FutureLag:          50 * 365 * 24 * time.Hour,
		NullFraction:       0.01,
	}
}

// DefaultColumns is the schema of DESIGN.md §8.
func DefaultColumns() []Column {
	return []Column{
		{Name: "event_id", Kind: "string", Required: true},
		{Name: "event_type", Kind: "string"},
		{Name: "amount", Kind: "double"},
		{Name: "event_time", Kind: "timestamp", Required: true},
	}
}

// Stats is what a run wrote. Lines = Events + Duplicates + Malformed.
type Stats struct {
	// Files is the number of objects of the run; Skipped of them already existed, identical.
	Files   int `json:"files"`
	Skipped int `json:"skipped"`
	// Lines is the number of lines written.
	Lines int64 `json:"lines"`
	// Events counts distinct records (first sendings), including Future, BadEventTime and
	// BadAmount ones: every record bronze must hold once.
	Events int64 `json:"events"`
	// Duplicates are byte-identical resends of earlier valid events; LateResends of them
	// resend an event from far back in the run.
	Duplicates  int64 `json:"duplicates"`
	LateResends int64 `json:"late_resends"`
	// Malformed lines are not records (ingest rejects): InvalidJSON + Truncated + Garbage in
	// JSON; InvalidCSV (a quote inside an unquoted field) in CSV. CSV header lines are not
	// counted in Lines.
	Malformed   int64 `json:"malformed"`
	InvalidJSON int64 `json:"invalid_json"`
	Truncated   int64 `json:"truncated"`
	Garbage     int64 `json:"garbage"`
	InvalidCSV  int64 `json:"invalid_csv"`
	// BadEventTime records carry an event time that is not a timestamp (silver rejects them);
	// BadAmount records carry a non-numeric amount (kept, amount null, value rescued).
	BadEventTime int64 `json:"bad_event_time"`
	BadAmount    int64 `json:"bad_amount"`
	// MixedTimeFormats records spell their event time in another accepted form.
	MixedTimeFormats int64 `json:"mixed_time_formats"`
	// Future records have an event time FutureLag after their arrival.
	Future int64 `json:"future"`
	// Outages is the number of outage bursts, OutageEvents the events they delivered.
	Outages      int64 `json:"outages"`
	OutageEvents int64 `json:"outage_events"`
	// Bytes is the uncompressed size of all lines; StoredBytes the size of the objects.
	Bytes       int64 `json:"bytes"`
	StoredBytes int64 `json:"stored_bytes"`
	// MinEventTime and MaxEventTime bound the event times of valid, non-future events.
	MinEventTime time.Time `json:"min_event_time"`
	MaxEventTime time.Time `json:"max_event_time"`
	// Keys are the objects of the run, in arrival (and key) order.
	Keys []string `json:"-"`
}

// Generate writes the workload to b under opts.Prefix and describes it.
func Generate(ctx context.Context, b objstore.Bucket, opts Options) (Stats, error) {
	g, err := New(opts)
	if err != nil {
		return Stats{}, err
	}
	// Sized for one object up front: growing a 100 MB buffer by appends copies it several times.
	buf := make([]byte, 0, min(min(g.linesPerFile, opts.Lines)*int64(16+28*len(opts.Columns)), 512<<20))
	var zbuf bytes.Buffer
	var zw *gzip.Writer
	if opts.Gzip {
		zw = gzip.NewWriter(&zbuf)
	}
	for g.More() {
		if err := ctx.Err(); err != nil {
			return g.Stats(), fmt.Errorf("gen: %w", err)
		}
		key, data := g.NextFile(buf[:0])
		buf = data
		if zw != nil {
			zbuf.Reset()
			zw.Reset(&zbuf)
			if _, err := zw.Write(data); err != nil {
				return g.Stats(), fmt.Errorf("gen: gzip %s: %w", key, err)
			}
			if err := zw.Close(); err != nil {
				return g.Stats(), fmt.Errorf("gen: gzip %s: %w", key, err)
			}
			data = zbuf.Bytes()
		}
		skipped, err := putOnce(ctx, b, key, data)
		if err != nil {
			return g.Stats(), err
		}
		if skipped {
			g.stats.Skipped++
		}
		g.stats.StoredBytes += int64(len(data))
		if opts.Progress != nil {
			opts.Progress(g.stats.Lines)
		}
	}
	return g.Stats(), nil
}

// putOnce writes data under key unless an identical object is already there.
func putOnce(ctx context.Context, b objstore.Bucket, key string, data []byte) (skipped bool, err error) {
	err = objstore.PutBytesIfAbsent(ctx, b, key, data)
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, objstore.ErrAlreadyExists) {
		return false, fmt.Errorf("gen: write %s: %w", key, err)
	}
	old, err := objstore.ReadAll(ctx, b, key)
	if err != nil {
		return false, fmt.Errorf("gen: read back %s: %w", key, err)
	}
	if !bytes.Equal(old, data) {
		return false, fmt.Errorf("%w: %s (written by another seed or other options; use another prefix or remove it)", ErrExists, key)
	}
	return true, nil
}

// check validates options; every message names the field.
func (o *Options) check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("gen: "+format, args...)) }
	if o.Lines < 0 {
		bad("Lines = %d: expected a non-negative number of lines", o.Lines)
	}
	if o.Files < 0 {
		bad("Files = %d: expected a non-negative number of objects (0: from LinesPerFile)", o.Files)
	}
	if o.Files == 0 && o.LinesPerFile <= 0 {
		bad("LinesPerFile = %d: expected a positive number when Files is 0", o.LinesPerFile)
	}
	if o.Format != "" && o.Format != FormatJSON && o.Format != FormatCSV {
		bad("Format %q: expected json or csv", o.Format)
	}
	if err := objstore.ValidatePrefix(o.Prefix); err != nil {
		bad("Prefix %q: %v", o.Prefix, err)
	}
	if o.Rate <= 0 || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0) {
		bad("Rate = %v: expected a positive number of lines per second", o.Rate)
	}
	if o.EventTypes < 1 || o.Devices < 1 {
		bad("EventTypes = %d, Devices = %d: expected at least 1 of each", o.EventTypes, o.Devices)
	}
	if o.LagMedian <= 0 || o.LagSigma < 0 {
		bad("LagMedian = %v, LagSigma = %v: expected a positive median and a non-negative sigma", o.LagMedian, o.LagSigma)
	}
	if o.TailFraction > 0 && (o.TailScale <= 0 || o.TailAlpha <= 0 || o.TailMax < o.TailScale) {
		bad("TailScale = %v, TailAlpha = %v, TailMax = %v: expected 0 < scale <= max and alpha > 0", o.TailScale, o.TailAlpha, o.TailMax)
	}
	if o.OutageRate > 0 && o.OutageDuration <= 0 {
		bad("OutageDuration = %v: expected a positive duration", o.OutageDuration)
	}
	if o.OutageEvents < 0 {
		bad("OutageEvents = %d: expected a non-negative number", o.OutageEvents)
	}
	if o.FutureFraction > 0 && o.FutureLag <= 0 {
		bad("FutureLag = %v: expected a positive duration", o.FutureLag)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"TailFraction", o.TailFraction}, {"OutageRate", o.OutageRate}, {"DuplicateFraction", o.DuplicateFraction},
		{"LateResendFraction", o.LateResendFraction}, {"MalformedFraction", o.MalformedFraction},
		{"WrongTypeFraction", o.WrongTypeFraction}, {"FutureFraction", o.FutureFraction}, {"NullFraction", o.NullFraction},
		{"TimeFormatMix", o.TimeFormatMix},
	} {
		if !(f.v >= 0 && f.v <= 1) {
			bad("%s = %v: expected a fraction between 0 and 1", f.name, f.v)
		}
	}
	sum := o.DuplicateFraction + o.MalformedFraction + o.WrongTypeFraction + o.FutureFraction
	if sum > 1 {
		bad("DuplicateFraction + MalformedFraction + WrongTypeFraction + FutureFraction = %v: expected at most 1", sum)
	}
	if len(o.Columns) == 0 {
		bad("Columns is empty: expected the event schema (see DefaultColumns)")
	}
	seen := map[string]bool{}
	hasTime := false
	for _, c := range o.Columns {
		if c.Name == "" || seen[c.Name] {
			bad("column %q: expected a unique, non-empty name", c.Name)
		}
		seen[c.Name] = true
		if !knownKind(c.Kind) {
			bad("column %q has type %q: expected a Delta primitive type name", c.Name, c.Kind)
		}
		if c.Kind == "decimal" && (c.Precision < 1 || c.Precision > 38 || c.Scale < 0 || c.Scale > c.Precision) {
			bad("column %q is decimal(%d,%d): expected precision 1..38 and scale 0..precision", c.Name, c.Precision, c.Scale)
		}
		if c.Name == o.EventTime {
			hasTime = true
			if c.Kind != "timestamp" && c.Kind != "timestamp_ntz" {
				bad("event time column %q has type %s: expected timestamp or timestamp_ntz", c.Name, c.Kind)
			}
		}
	}
	if !hasTime && len(o.Columns) > 0 {
		bad("EventTime %q is not among the columns", o.EventTime)
	}
	return errors.Join(errs...)
}

func knownKind(k string) bool {
	switch k {
	case "string", "long", "integer", "short", "byte", "double", "float", "boolean", "binary",
		"date", "timestamp", "timestamp_ntz", "decimal":
		return true
	}
	return false
}

// objectKey names object i so that keys sort in arrival order: the arrival time of the first
// line, then the seed and the index (zero-padded) for ties.
func (o *Options) objectKey(i int, firstArrivalUs int64) string {
	ext := ".json"
	if o.Format == FormatCSV {
		ext = ".csv"
	}
	if o.Gzip {
		ext += ".gz"
	}
	t := time.UnixMicro(firstArrivalUs).UTC()
	return fmt.Sprintf("%s%s-s%d-%06d%s", prefixDir(o.Prefix), t.Format("20060102T150405.000000Z"), o.Seed, i, ext)
}

func prefixDir(p string) string {
	if p == "" || strings.HasSuffix(p, "/") {
		return p
	}
	return p + "/"
}

// newRand seeds the generator's only source of randomness.
func newRand(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
}

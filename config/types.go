package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a span of time written like Go's time.ParseDuration ("500ms", "10m", "1h30m",
// "168h") or with a whole number of days in front ("7d", "1d12h"; a day is 86 400 s, as in
// Spark). A value that fails to parse is kept with its error, so that Validate reports it
// together with every other problem, under its field path.
type Duration struct {
	time.Duration
	text string
	err  error
}

// NewDuration returns a Duration that counts as set (for defaults and programmatic configs).
func NewDuration(d time.Duration) Duration {
	return Duration{Duration: d, text: FormatDuration(d)}
}

// ParseDuration parses a config duration; the error says what is expected.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	d, err := parseDuration(s)
	if err != nil {
		return Duration{text: s, err: err}, err
	}
	return Duration{Duration: d, text: s}, nil
}

func parseDuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("invalid duration %q: expected a number with a unit, such as 500ms, 30s, 10m, 1h or 7d", s)
	if s == "" {
		return 0, bad
	}
	neg := false
	rest := s
	if rest[0] == '-' || rest[0] == '+' {
		neg = rest[0] == '-'
		rest = rest[1:]
	}
	var days time.Duration
	if i := strings.IndexByte(rest, 'd'); i > 0 {
		n, err := strconv.ParseInt(rest[:i], 10, 64)
		if err != nil || n > int64(1<<63-1)/int64(24*time.Hour) {
			return 0, bad
		}
		days = time.Duration(n) * 24 * time.Hour
		rest = rest[i+1:]
	}
	var d time.Duration
	if rest != "" {
		if rest[0] == '-' || rest[0] == '+' {
			return 0, bad
		}
		v, err := time.ParseDuration(rest)
		if err != nil {
			return 0, bad
		}
		d = v
	} else if days == 0 {
		return 0, bad
	}
	total := days + d
	if total < days {
		return 0, bad
	}
	if neg {
		total = -total
	}
	return total, nil
}

// FormatDuration prints d in the shortest config form ("10m", "168h", "1h30m", "500ms").
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	if d%time.Second != 0 {
		return sign + d.String()
	}
	var b strings.Builder
	b.WriteString(sign)
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := d / u.unit; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10))
			b.WriteString(u.name)
			d -= n * u.unit
		}
	}
	return b.String()
}

// IsSet reports whether the duration was written in the file or given a value in code.
func (d Duration) IsSet() bool { return d.text != "" || d.Duration != 0 }

// Err is the parse error of the value as written, or nil.
func (d Duration) Err() error { return d.err }

// String prints the duration as written (or in its shortest form).
func (d Duration) String() string {
	if d.err != nil {
		return d.text
	}
	return FormatDuration(d.Duration)
}

// unmarshalScalar reads a scalar node with parse into dst. A value parse refuses is kept
// with its error (the types carry it) for Validate, which names every bad key at once; only a
// node that is no scalar at all (what says what was expected) fails the decoding.
func unmarshalScalar[T any](n *yaml.Node, what string, parse func(string) (T, error), dst *T) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: expected %s", n.Line, what)}}
	}
	*dst, _ = parse(n.Value)
	return nil
}

// UnmarshalYAML keeps a bad value and its error for Validate.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	return unmarshalScalar(n, "a duration", ParseDuration, d)
}

// IsZero lets omitempty drop an unset duration.
func (d Duration) IsZero() bool { return !d.IsSet() && d.err == nil }

// MarshalYAML prints the duration in config form.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// ByteSize is a number of bytes, written as a plain integer or with a unit: B, KB, MB, GB (powers
// of 1000) or KiB, MiB, GiB (powers of 1024).
type ByteSize struct {
	Bytes int64
	text  string
	err   error
}

// NewByteSize returns a ByteSize that counts as set.
func NewByteSize(n int64) ByteSize { return ByteSize{Bytes: n, text: formatByteSize(n)} }

func formatByteSize(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// ParseByteSize parses a config byte size; the error says what is expected.
func ParseByteSize(s string) (ByteSize, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("invalid byte size %q: expected an integer with an optional unit, such as 1048576, 512KiB, 1MiB or 128MB", s)
	num := strings.TrimRight(s, "KMGTBkmgtib ")
	unit := strings.TrimSpace(s[len(num):])
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || num == "" {
		return ByteSize{text: s, err: bad}, bad
	}
	mult := map[string]int64{
		"": 1, "B": 1,
		"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
	}
	m, ok := mult[unit]
	if !ok || (n != 0 && (n*m)/m != n) {
		return ByteSize{text: s, err: bad}, bad
	}
	return ByteSize{Bytes: n * m, text: s}, nil
}

// IsSet reports whether the size was written in the file or given a value in code.
func (b ByteSize) IsSet() bool { return b.text != "" || b.Bytes != 0 }

// Err is the parse error of the value as written, or nil.
func (b ByteSize) Err() error { return b.err }

// String prints the size as written, or in bytes.
func (b ByteSize) String() string {
	if b.text != "" {
		return b.text
	}
	return strconv.FormatInt(b.Bytes, 10)
}

// UnmarshalYAML keeps a bad value and its error for Validate.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	return unmarshalScalar(n, "a byte size", ParseByteSize, b)
}

// MarshalYAML prints the size as written.
func (b ByteSize) MarshalYAML() (any, error) { return b.String(), nil }

// Kind is a Delta primitive type name as the config spells it.
type Kind string

// The column types a schema may declare (Delta's primitive type names).
const (
	KindString       Kind = "string"
	KindLong         Kind = "long"
	KindInteger      Kind = "integer"
	KindShort        Kind = "short"
	KindByte         Kind = "byte"
	KindDouble       Kind = "double"
	KindFloat        Kind = "float"
	KindBoolean      Kind = "boolean"
	KindBinary       Kind = "binary"
	KindDate         Kind = "date"
	KindTimestamp    Kind = "timestamp"
	KindTimestampNTZ Kind = "timestamp_ntz"
	KindDecimal      Kind = "decimal"
)

var kinds = []Kind{KindString, KindLong, KindInteger, KindShort, KindByte, KindDouble, KindFloat,
	KindBoolean, KindBinary, KindDate, KindTimestamp, KindTimestampNTZ, KindDecimal}

// typeAliases maps names other systems use to ours, for the "did you mean" hint.
var typeAliases = map[string]Kind{
	"int": KindInteger, "int32": KindInteger, "bigint": KindLong, "int64": KindLong,
	"smallint": KindShort, "int16": KindShort, "tinyint": KindByte, "int8": KindByte,
	"bool": KindBoolean, "str": KindString, "text": KindString, "varchar": KindString,
	"real": KindFloat, "float32": KindFloat, "float64": KindDouble, "number": KindDouble,
	"datetime": KindTimestamp, "timestamptz": KindTimestamp, "bytes": KindBinary,
	"numeric": KindDecimal, "timestampntz": KindTimestampNTZ,
}

// ColumnType is a declared column type: a Kind, plus precision and scale for decimals.
type ColumnType struct {
	Kind      Kind
	Precision int // decimal only: 1..38
	Scale     int // decimal only: 0..Precision
	text      string
	err       error
}

// ParseColumnType parses "long", "timestamp", "decimal(10,2)", ...; the error lists the types.
func ParseColumnType(s string) (ColumnType, error) {
	s = strings.TrimSpace(s)
	low := strings.ToLower(s)
	fail := func(err error) (ColumnType, error) { return ColumnType{text: s, err: err}, err }
	if strings.HasPrefix(low, "decimal") || strings.HasPrefix(low, "numeric") {
		args, ok := strings.CutPrefix(low[7:], "(")
		args, ok2 := strings.CutSuffix(args, ")")
		if !ok || !ok2 || low[:7] != "decimal" {
			return fail(fmt.Errorf("invalid type %q: expected decimal(precision,scale), e.g. decimal(10,2)", s))
		}
		ps, ss, ok := strings.Cut(args, ",")
		p, err1 := strconv.Atoi(strings.TrimSpace(ps))
		sc, err2 := strconv.Atoi(strings.TrimSpace(ss))
		if !ok || err1 != nil || err2 != nil {
			return fail(fmt.Errorf("invalid type %q: expected decimal(precision,scale), e.g. decimal(10,2)", s))
		}
		if p < 1 || p > 38 || sc < 0 || sc > p {
			return fail(fmt.Errorf("invalid type %q: decimal precision must be 1..38 and scale 0..precision", s))
		}
		return ColumnType{Kind: KindDecimal, Precision: p, Scale: sc, text: s}, nil
	}
	for _, k := range kinds {
		if k != KindDecimal && low == string(k) {
			return ColumnType{Kind: k, text: s}, nil
		}
	}
	hint := ""
	if k, ok := typeAliases[low]; ok {
		hint = fmt.Sprintf(" (did you mean %q?)", string(k))
	}
	return fail(fmt.Errorf("unknown type %q%s: expected one of string, long, integer, short, byte, double, float, boolean, binary, date, timestamp, timestamp_ntz, decimal(p,s)", s, hint))
}

// Err is the parse error of the type as written, or nil.
func (t ColumnType) Err() error { return t.err }

// String is the Delta schema type name ("long", "decimal(10,2)").
func (t ColumnType) String() string {
	if t.err != nil {
		return t.text
	}
	if t.Kind == KindDecimal {
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	}
	return string(t.Kind)
}

// Numeric reports whether sum and avg apply.
func (t ColumnType) Numeric() bool {
	switch t.Kind {
	case KindLong, KindInteger, KindShort, KindByte, KindDouble, KindFloat, KindDecimal:
		return true
	}
	return false
}

// IsTimestamp reports a timestamp or timestamp_ntz column (what an event time may be).
func (t ColumnType) IsTimestamp() bool {
	return t.Kind == KindTimestamp || t.Kind == KindTimestampNTZ
}

// UnmarshalYAML keeps a bad type and its error for Validate.
func (t *ColumnType) UnmarshalYAML(n *yaml.Node) error {
	return unmarshalScalar(n, "a column type", ParseColumnType, t)
}

// MarshalYAML prints the type name.
func (t ColumnType) MarshalYAML() (any, error) { return t.String(), nil }

// TriggerKind says when a stream runs its micro-batches.
type TriggerKind string

// Trigger kinds, with Spark's meaning.
const (
	// TriggerOnce runs one batch over everything available, ignoring max_files_per_trigger.
	TriggerOnce TriggerKind = "once"
	// TriggerAvailableNow processes everything available in batches that respect
	// max_files_per_trigger, then stops.
	TriggerAvailableNow TriggerKind = "available-now"
	// TriggerProcessingTime runs a batch every Interval until stopped.
	TriggerProcessingTime TriggerKind = "processing-time"
)

// Trigger is a stream trigger: once | available-now | processing-time=30s.
type Trigger struct {
	Kind     TriggerKind
	Interval time.Duration // processing-time only
	err      error
	text     string
}

// ParseTrigger parses the --trigger flag and the stream.trigger key.
func ParseTrigger(s string) (Trigger, error) {
	s = strings.TrimSpace(s)
	switch s {
	case string(TriggerOnce):
		return Trigger{Kind: TriggerOnce, text: s}, nil
	case string(TriggerAvailableNow):
		return Trigger{Kind: TriggerAvailableNow, text: s}, nil
	}
	if v, ok := strings.CutPrefix(s, string(TriggerProcessingTime)+"="); ok {
		d, err := parseDuration(v)
		if err != nil {
			err = fmt.Errorf("invalid trigger %q: %w", s, err)
			return Trigger{text: s, err: err}, err
		}
		if d < 0 {
			err := fmt.Errorf("invalid trigger %q: the interval must not be negative", s)
			return Trigger{text: s, err: err}, err
		}
		return Trigger{Kind: TriggerProcessingTime, Interval: d, text: s}, nil
	}
	err := fmt.Errorf("invalid trigger %q: expected once, available-now or processing-time=<duration> (e.g. processing-time=30s)", s)
	return Trigger{text: s, err: err}, err
}

// Err is the parse error of the trigger as written, or nil.
func (t Trigger) Err() error { return t.err }

// String prints the trigger in config form.
func (t Trigger) String() string {
	if t.err != nil || t.Kind == "" {
		return t.text
	}
	if t.Kind == TriggerProcessingTime {
		return string(t.Kind) + "=" + FormatDuration(t.Interval)
	}
	return string(t.Kind)
}

// UnmarshalYAML keeps a bad trigger and its error for Validate.
func (t *Trigger) UnmarshalYAML(n *yaml.Node) error {
	return unmarshalScalar(n, "a trigger", ParseTrigger, t)
}

// MarshalYAML prints the trigger in config form.
func (t Trigger) MarshalYAML() (any, error) { return t.String(), nil }

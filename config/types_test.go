package config

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"10m", 10 * time.Minute, true},
		{"1h", time.Hour, true},
		{"168h", 168 * time.Hour, true},
		{"500ms", 500 * time.Millisecond, true},
		{"1h30m", 90 * time.Minute, true},
		{"7d", 7 * 24 * time.Hour, true},
		{"1d12h", 36 * time.Hour, true},
		{"-15m", -15 * time.Minute, true},
		{"-1d1h", -25 * time.Hour, true},
		{"0", 0, true},
		{" 5s ", 5 * time.Second, true},
		{"", 0, false},
		{"10", 0, false},
		{"10x", 0, false},
		{"d", 0, false},
		{"1d-1h", 0, false},
		{"1.5d", 0, false},
		{"9999999999d", 0, false},
		{"106751d23h47m16.854775807s", 1<<63 - 1, true}, // the largest duration
		{"106752d", 0, false},
	}
	for _, c := range cases {
		d, err := ParseDuration(c.in)
		if (err == nil) != c.ok || (c.ok && d.Duration != c.want) {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v ok=%v", c.in, d.Duration, err, c.want, c.ok)
		}
		if !c.ok && (d.Err() == nil || !strings.Contains(err.Error(), "expected")) {
			t.Errorf("ParseDuration(%q): error %v should say what is expected", c.in, err)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	cases := map[time.Duration]string{
		0: "0s", 10 * time.Minute: "10m", 168 * time.Hour: "168h", 90 * time.Minute: "1h30m",
		500 * time.Millisecond: "500ms", -15 * time.Minute: "-15m", time.Hour + 5*time.Second: "1h5s",
	}
	for d, want := range cases {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
		if back, err := ParseDuration(want); err != nil || back.Duration != d {
			t.Errorf("ParseDuration(FormatDuration(%v)) = %v, %v", d, back.Duration, err)
		}
	}
}

func TestParseByteSize(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1048576", 1 << 20, true},
		{"1MiB", 1 << 20, true},
		{"512KiB", 512 << 10, true},
		{"128MB", 128e6, true},
		{"2 GiB", 2 << 30, true},
		{"10B", 10, true},
		{"1.5MiB", 0, false},
		{"MiB", 0, false},
		{"1 furlong", 0, false},
		{"99999999999TiB", 0, false},
	}
	for _, c := range cases {
		b, err := ParseByteSize(c.in)
		if (err == nil) != c.ok || b.Bytes != c.want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d ok=%v", c.in, b.Bytes, err, c.want, c.ok)
		}
	}
	if s := NewByteSize(128 << 20).String(); s != "128MiB" {
		t.Errorf("NewByteSize(128MiB).String() = %q", s)
	}
}

func TestParseColumnType(t *testing.T) {
	cases := []struct {
		in         string
		kind       Kind
		p, s       int
		str        string
		numeric    bool
		errSnippet string
	}{
		{"string", KindString, 0, 0, "string", false, ""},
		{"LONG", KindLong, 0, 0, "long", true, ""},
		{"integer", KindInteger, 0, 0, "integer", true, ""},
		{"short", KindShort, 0, 0, "short", true, ""},
		{"byte", KindByte, 0, 0, "byte", true, ""},
		{"double", KindDouble, 0, 0, "double", true, ""},
		{"float", KindFloat, 0, 0, "float", true, ""},
		{"boolean", KindBoolean, 0, 0, "boolean", false, ""},
		{"binary", KindBinary, 0, 0, "binary", false, ""},
		{"date", KindDate, 0, 0, "date", false, ""},
		{"timestamp", KindTimestamp, 0, 0, "timestamp", false, ""},
		{"timestamp_ntz", KindTimestampNTZ, 0, 0, "timestamp_ntz", false, ""},
		{"decimal(10,2)", KindDecimal, 10, 2, "decimal(10,2)", true, ""},
		{"decimal( 38 , 0 )", KindDecimal, 38, 0, "decimal(38,0)", true, ""},
		{"decimal(0,0)", "", 0, 0, "", false, "precision must be 1..38"},
		{"decimal(5,6)", "", 0, 0, "", false, "scale 0..precision"},
		{"decimal(5)", "", 0, 0, "", false, "expected decimal(precision,scale)"},
		{"numeric(5,2)", "", 0, 0, "", false, "expected decimal(precision,scale)"},
		{"int", "", 0, 0, "", false, `did you mean "integer"`},
		{"varchar", "", 0, 0, "", false, `did you mean "string"`},
		{"uuid", "", 0, 0, "", false, "expected one of string, long"},
	}
	for _, c := range cases {
		ct, err := ParseColumnType(c.in)
		if c.errSnippet != "" {
			if err == nil || !strings.Contains(err.Error(), c.errSnippet) {
				t.Errorf("ParseColumnType(%q) error = %v, want %q", c.in, err, c.errSnippet)
			}
			continue
		}
		if err != nil || ct.Kind != c.kind || ct.Precision != c.p || ct.Scale != c.s || ct.String() != c.str || ct.Numeric() != c.numeric {
			t.Errorf("ParseColumnType(%q) = %+v (%s), %v", c.in, ct, ct, err)
		}
	}
}

func TestParseTrigger(t *testing.T) {
	cases := []struct {
		in       string
		kind     TriggerKind
		interval time.Duration
		ok       bool
	}{
		{"once", TriggerOnce, 0, true},
		{"available-now", TriggerAvailableNow, 0, true},
		{"processing-time=30s", TriggerProcessingTime, 30 * time.Second, true},
		{"processing-time=0s", TriggerProcessingTime, 0, true},
		{"processing-time=1m30s", TriggerProcessingTime, 90 * time.Second, true},
		{"processing-time=-1s", "", 0, false},
		{"processing-time", "", 0, false},
		{"availableNow", "", 0, false},
		{"", "", 0, false},
	}
	for _, c := range cases {
		tr, err := ParseTrigger(c.in)
		if (err == nil) != c.ok || tr.Kind != c.kind || tr.Interval != c.interval {
			t.Errorf("ParseTrigger(%q) = %+v, %v", c.in, tr, err)
		}
		if c.ok && tr.String() != strings.Replace(c.in, "1m30s", "1m30s", 1) {
			t.Errorf("ParseTrigger(%q).String() = %q", c.in, tr.String())
		}
	}
}

func TestSuggest(t *testing.T) {
	fields := yamlFields(reflect.TypeFor[Stream]())
	cases := map[string]string{
		"watermrk": "watermark", "wtaermark": "watermark", "eventtime": "event_time", "dedupe": "dedup",
		"trigger_": "trigger", "xyz": "", "checkpoints": "checkpoint",
	}
	for in, want := range cases {
		if got := suggest(in, fields); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParse checks that no input panics, and that every accepted config prints (Redacted) to a
// config that parses back to the same printout.
func FuzzParse(f *testing.F) {
	example, err := os.ReadFile("../examples/pipeline.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	f.Add([]byte(minimal))
	f.Add([]byte(minimal + "s3: {secret_access_key: x}\n"))
	f.Add([]byte(strings.Replace(minimal, "{type: tumbling, size: 5m}", "{type: sliding, size: 10m, slide: 5m, start_time: -1m}", 1)))
	f.Add([]byte(strings.Replace(minimal, "{type: tumbling, size: 5m}", "&a {type: session, gap: 5m}", 1) + "x: *a\n"))
	f.Add([]byte("a: &a [*a]\n"))
	// Merge keys that include themselves once made the strict walk loop forever.
	f.Add([]byte("stream: &a {<<: *a}\n"))
	f.Add([]byte("stream: &a {<<: [*a]}\n"))
	f.Add([]byte("gold: [&a {<<: *b}, &b {<<: *a}]\n"))
	f.Add([]byte("- 1\n"))
	f.Add([]byte("lake: [\n"))
	f.Add([]byte("gold: [{name: a, window: {type: session, gap: 1d}, aggregates: [{fn: approx_percentile}]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "fuzz.yaml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		out := p.Redacted()
		q, err := Parse([]byte(out), "fuzz.yaml")
		if err != nil {
			t.Fatalf("printed config does not parse: %v\n%s", err, out)
		}
		if q.Redacted() != out {
			t.Fatalf("printed config is not a fixed point:\n%s\n---\n%s", out, q.Redacted())
		}
	})
}

package gen

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
)

func opts(lines int64, files int, seed int64) Options {
	o := DefaultOptions()
	o.Lines, o.Files, o.Seed = lines, files, seed
	return o
}

// readObjects returns every object under prefix, in key order.
func readObjects(t *testing.T, b objstore.Bucket, prefix string) ([]string, [][]byte) {
	t.Helper()
	ctx := context.Background()
	infos, err := objstore.ListAll(ctx, b, prefix, objstore.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	var data [][]byte
	for _, info := range infos {
		d, err := objstore.ReadAll(ctx, b, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, info.Key)
		data = append(data, d)
	}
	return keys, data
}

func TestSameSeedSameBytes(t *testing.T) {
	ctx := context.Background()
	run := func(seed int64) ([]string, [][]byte) {
		b := mem.New()
		o := opts(20_000, 3, seed)
		o.OutageRate = 0.001
		if _, err := Generate(ctx, b, o); err != nil {
			t.Fatal(err)
		}
		return readObjects(t, b, "landing/")
	}
	k1, d1 := run(7)
	k2, d2 := run(7)
	if !slices.Equal(k1, k2) || len(d1) != 3 {
		t.Fatalf("keys differ or wrong count: %v vs %v", k1, k2)
	}
	for i := range d1 {
		if !bytes.Equal(d1[i], d2[i]) {
			t.Fatalf("object %s differs between two runs with the same seed", k1[i])
		}
	}
	_, d3 := run(8)
	if bytes.Equal(d1[0], d3[0]) {
		t.Fatalf("seeds 7 and 8 gave the same bytes")
	}
}

// classified is the test's own reading of the landing lines: encoding/json and time.Parse,
// none of the generator's code.
type classified struct {
	lines, records, duplicates, malformed, badTime, badAmount, future int64
	ids                                                               map[string]string // id -> first line
	times                                                             []time.Time       // valid, non-future, in line order (nil for others)
	lineTimes                                                         []*time.Time
	devices, types                                                    map[string]int
	recs                                                              []map[string]any
}

func classify(t *testing.T, objects [][]byte, futureAfter time.Time) *classified {
	t.Helper()
	c := &classified{ids: map[string]string{}, devices: map[string]int{}, types: map[string]int{}}
	for _, obj := range objects {
		if len(obj) > 0 && obj[len(obj)-1] != '\n' {
			t.Fatalf("object does not end with a newline")
		}
		for _, line := range strings.SplitAfter(string(obj), "\n") {
			if line == "" {
				continue
			}
			c.lines++
			var rec map[string]any
			dec := json.NewDecoder(strings.NewReader(line))
			dec.UseNumber()
			if err := dec.Decode(&rec); err != nil || rec == nil || dec.More() {
				c.malformed++
				c.lineTimes = append(c.lineTimes, nil)
				continue
			}
			c.recs = append(c.recs, rec)
			id, _ := rec["event_id"].(string)
			if first, seen := c.ids[id]; seen {
				if first != line {
					t.Fatalf("event %s resent with other bytes:\n%s%s", id, first, line)
				}
				c.duplicates++
				c.lineTimes = append(c.lineTimes, nil)
				continue
			}
			c.ids[id] = line
			c.records++
			if _, ok := rec["amount"].(json.Number); !ok {
				c.badAmount++
			}
			ts, _ := rec["event_time"].(string)
			tm, err := time.Parse(time.RFC3339Nano, ts)
			switch {
			case err != nil:
				c.badTime++
				c.lineTimes = append(c.lineTimes, nil)
			case tm.After(futureAfter):
				c.future++
				c.lineTimes = append(c.lineTimes, nil)
			default:
				c.times = append(c.times, tm)
				c.lineTimes = append(c.lineTimes, &tm)
			}
			if d, ok := rec["device_id"].(string); ok {
				c.devices[d]++
			}
			if ty, ok := rec["event_type"].(string); ok {
				c.types[ty]++
			}
		}
	}
	return c
}

func TestStatsMatchWhatWasWritten(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	o := opts(60_000, 4, 42)
	// Raise the rare fractions so each kind shows up many times.
	o.DuplicateFraction, o.MalformedFraction, o.WrongTypeFraction, o.FutureFraction = 0.05, 0.02, 0.02, 0.01
	o.OutageRate = 0.0002
	o.Columns = append(o.Columns, Column{Name: "device_id", Kind: "string"})
	st, err := Generate(ctx, b, o)
	if err != nil {
		t.Fatal(err)
	}
	keys, objs := readObjects(t, b, "landing/events/")
	if !slices.Equal(keys, st.Keys) || st.Files != 4 || st.Skipped != 0 {
		t.Fatalf("keys %v, stats keys %v, files %d", keys, st.Keys, st.Files)
	}
	c := classify(t, objs, o.Start.Add(10*365*24*time.Hour))
	var size int64
	for _, d := range objs {
		size += int64(len(d))
	}
	checks := []struct {
		name      string
		got, want int64
	}{
		{"lines", c.lines, st.Lines},
		{"lines requested", c.lines, o.Lines},
		{"events", c.records, st.Events},
		{"duplicates", c.duplicates, st.Duplicates},
		{"malformed", c.malformed, st.Malformed},
		{"malformed kinds", st.InvalidJSON + st.Truncated + st.Garbage, st.Malformed},
		{"bad event time", c.badTime, st.BadEventTime},
		{"bad amount", c.badAmount, st.BadAmount},
		{"future", c.future, st.Future},
		{"bytes", size, st.Bytes},
		{"stored bytes", size, st.StoredBytes},
		{"accounting", st.Events + st.Duplicates + st.Malformed, st.Lines},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: found %d, stats say %d", ch.name, ch.got, ch.want)
		}
	}
	// Every kind occurs, near its configured share of the lines outside outage bursts.
	near := func(name string, n int64, frac float64) {
		want := frac * float64(o.Lines-st.OutageEvents)
		if float64(n) < 0.7*want || float64(n) > 1.3*want {
			t.Errorf("%s: %d lines, expected about %.0f", name, n, want)
		}
	}
	near("duplicates", st.Duplicates, o.DuplicateFraction)
	near("malformed", st.Malformed, o.MalformedFraction)
	near("wrong types", st.BadAmount+st.BadEventTime, o.WrongTypeFraction)
	near("future", st.Future, o.FutureFraction)
	if st.LateResends == 0 || st.InvalidJSON == 0 || st.Truncated == 0 || st.Garbage == 0 || st.Outages == 0 {
		t.Errorf("a kind is missing: %+v", st)
	}
	minT, maxT := slices.MinFunc(c.times, time.Time.Compare), slices.MaxFunc(c.times, time.Time.Compare)
	if !minT.Equal(st.MinEventTime) || !maxT.Equal(st.MaxEventTime) {
		t.Errorf("event time range %v..%v, stats say %v..%v", minT, maxT, st.MinEventTime, st.MaxEventTime)
	}
	if len(c.types) != o.EventTypes {
		t.Errorf("%d distinct event types, want %d", len(c.types), o.EventTypes)
	}
	if len(c.devices) > o.Devices || len(c.devices) < o.Devices/2 {
		t.Errorf("%d distinct devices, want at most %d and most of them", len(c.devices), o.Devices)
	}
}

func TestLagDistribution(t *testing.T) {
	ctx := context.Background()
	o := opts(50_000, 1, 3)
	o.TailFraction, o.OutageRate, o.DuplicateFraction, o.MalformedFraction, o.WrongTypeFraction, o.FutureFraction = 0, 0, 0, 0, 0, 0
	b := mem.New()
	if _, err := Generate(ctx, b, o); err != nil {
		t.Fatal(err)
	}
	_, objs := readObjects(t, b, "")
	c := classify(t, objs, o.Start.Add(time.Hour*24*365))
	lags := make([]float64, 0, len(c.lineTimes))
	for i, tm := range c.lineTimes {
		arrival := o.Start.Add(time.Duration(float64(i) / o.Rate * 1e9))
		lags = append(lags, arrival.Sub(*tm).Seconds())
	}
	sort.Float64s(lags)
	median := lags[len(lags)/2]
	if median < 1.8 || median > 2.2 {
		t.Errorf("median lag %.3fs, want about %v", median, o.LagMedian)
	}
	// log-normal with sigma 1: p84 = median * e.
	if p84 := lags[len(lags)*841/1000]; p84 < 4.9 || p84 > 6.0 {
		t.Errorf("p84 lag %.3fs, want about 5.44s", p84)
	}
	if lags[0] <= 0 {
		t.Errorf("an event arrived before it happened: lag %v", lags[0])
	}
}

func TestOutageBurstsAndTail(t *testing.T) {
	ctx := context.Background()
	o := opts(40_000, 1, 11)
	o.OutageRate, o.TailFraction = 0.0001, 0.05
	o.DuplicateFraction, o.MalformedFraction, o.WrongTypeFraction, o.FutureFraction = 0, 0, 0, 0
	o.Columns = append(o.Columns, Column{Name: "device_id", Kind: "string"})
	b := mem.New()
	st, err := Generate(ctx, b, o)
	if err != nil {
		t.Fatal(err)
	}
	_, objs := readObjects(t, b, "")
	c := classify(t, objs, o.Start.Add(time.Hour*24*365))
	burst := int(o.OutageDuration.Seconds() * o.Rate / float64(o.Devices))
	// Find runs of one device whose event times climb over almost an hour: the bursts.
	runs, run := 0, 1
	for i := 1; i < len(c.recs); i++ {
		if c.recs[i]["device_id"] == c.recs[i-1]["device_id"] {
			run++
		} else {
			run = 1
		}
		if run == burst {
			first, last := c.lineTimes[i-burst+1], c.lineTimes[i]
			arrival := o.Start.Add(time.Duration(float64(i-burst+1) / o.Rate * 1e9))
			if span := last.Sub(*first); span < 55*time.Minute || arrival.Sub(*first) < 59*time.Minute {
				t.Errorf("burst ending at line %d spans %v, first lag %v", i, span, arrival.Sub(*first))
			}
			runs++
		}
	}
	// The run may end in the middle of a last burst.
	complete := st.OutageEvents / int64(burst)
	if int64(runs) != complete || runs == 0 || st.Outages-complete > 1 || (st.Outages > complete) != (st.OutageEvents%int64(burst) != 0) {
		t.Errorf("found %d bursts of %d events; stats: %d outages, %d events", runs, burst, st.Outages, st.OutageEvents)
	}
	// The tail: lags beyond a minute but capped at TailMax, outside the bursts.
	tail := 0
	for i, tm := range c.lineTimes {
		lag := o.Start.Add(time.Duration(float64(i) / o.Rate * 1e9)).Sub(*tm)
		if lag > o.TailMax+time.Second {
			t.Fatalf("line %d: lag %v beyond TailMax", i, lag)
		}
		if lag >= time.Minute {
			tail++
		}
	}
	if want := float64(o.Lines-st.OutageEvents) * o.TailFraction; float64(tail-int(st.OutageEvents)) < 0.7*want {
		t.Errorf("%d tail lags (beyond bursts), want about %.0f", tail-int(st.OutageEvents), want)
	}
}

func TestEveryColumnType(t *testing.T) {
	ctx := context.Background()
	o := opts(5_000, 1, 5)
	o.NullFraction = 0.2
	o.Columns = []Column{
		{Name: "event_id", Kind: "long", Required: true},
		{Name: "event_time", Kind: "timestamp_ntz", Required: true},
		{Name: "amount", Kind: "decimal", Precision: 7, Scale: 3},
		{Name: "s", Kind: "string"}, {Name: "l", Kind: "long"}, {Name: "i", Kind: "integer"},
		{Name: "sh", Kind: "short"}, {Name: "by", Kind: "byte"}, {Name: "d", Kind: "double"},
		{Name: "f", Kind: "float"}, {Name: "bo", Kind: "boolean"}, {Name: "bi", Kind: "binary"},
		{Name: "da", Kind: "date"}, {Name: "ts", Kind: "timestamp"}, {Name: "dec", Kind: "decimal", Precision: 4, Scale: 0},
		{Name: "req", Kind: "date", Required: true},
	}
	o.DuplicateFraction, o.MalformedFraction, o.WrongTypeFraction, o.FutureFraction = 0, 0, 0, 0
	b := mem.New()
	if _, err := Generate(ctx, b, o); err != nil {
		t.Fatal(err)
	}
	_, objs := readObjects(t, b, "")
	nulls := map[string]int{}
	ids := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(string(objs[0]), "\n"), "\n") {
		var rec map[string]any
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&rec); err != nil {
			t.Fatalf("invalid line %q: %v", line, err)
		}
		for _, col := range o.Columns {
			v, present := rec[col.Name]
			if !present || v == nil {
				if col.Required {
					t.Fatalf("required %s missing in %s", col.Name, line)
				}
				nulls[col.Name]++
				continue
			}
			if err := checkValue(col, v); err != "" {
				t.Fatalf("column %s: %s in %s", col.Name, err, line)
			}
		}
		id := string(rec["event_id"].(json.Number))
		if ids[id] {
			t.Fatalf("id %s twice", id)
		}
		ids[id] = true
	}
	for _, col := range []string{"s", "bi", "ts"} {
		if n := nulls[col]; n < 500 || n > 1500 {
			t.Errorf("column %s: %d nulls in 5000, want about 1000", col, n)
		}
	}
}

// checkValue says what is wrong with a decoded JSON value for its declared type.
func checkValue(c Column, v any) string {
	num, isNum := v.(json.Number)
	str, isStr := v.(string)
	switch c.Kind {
	case "long", "integer", "short", "byte":
		n, err := num.Int64()
		limits := map[string]int64{"long": 1 << 62, "integer": 1 << 31, "short": 1 << 15, "byte": 1 << 7}
		if !isNum || err != nil || n < 0 || n >= limits[c.Kind] {
			return "not an integer of its range"
		}
	case "double", "float":
		if _, err := num.Float64(); !isNum || err != nil {
			return "not a number"
		}
	case "decimal":
		whole, frac, _ := strings.Cut(string(num), ".")
		if !isNum || len(frac) != c.Scale || len(whole) > max(1, c.Precision-c.Scale) {
			return "not a decimal(" + string(rune('0'+c.Precision)) + ")"
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return "not a boolean"
		}
	case "string":
		if !isStr {
			return "not a string"
		}
	case "binary":
		if _, err := base64.StdEncoding.DecodeString(str); !isStr || err != nil {
			return "not base64"
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, str); !isStr || err != nil {
			return "not a date"
		}
	case "timestamp":
		if _, err := time.Parse(time.RFC3339Nano, str); !isStr || err != nil || !strings.HasSuffix(str, "Z") {
			return "not an RFC 3339 UTC timestamp"
		}
	case "timestamp_ntz":
		if _, err := time.Parse("2006-01-02 15:04:05.000000", str); !isStr || err != nil {
			return "not a timestamp_ntz"
		}
	}
	return ""
}

func TestFiles(t *testing.T) {
	cases := []struct {
		lines     int64
		files     int
		perFile   int64
		wantLines []int
	}{
		{10, 4, 0, []int{3, 3, 3, 1}},
		{5, 4, 0, []int{2, 2, 1}},
		{3, 5, 0, []int{1, 1, 1}},
		{7, 0, 3, []int{3, 3, 1}},
		{0, 3, 0, nil},
	}
	for _, c := range cases {
		o := opts(c.lines, c.files, 1)
		o.LinesPerFile = max(c.perFile, 1)
		var progress []int64
		o.Progress = func(n int64) { progress = append(progress, n) }
		b := mem.New()
		st, err := Generate(context.Background(), b, o)
		if err != nil {
			t.Fatal(err)
		}
		keys, objs := readObjects(t, b, "")
		var got []int
		for _, d := range objs {
			got = append(got, bytes.Count(d, []byte("\n")))
		}
		var sum int64
		var cumulative []int64
		for _, n := range got {
			sum += int64(n)
			cumulative = append(cumulative, sum)
		}
		if !slices.Equal(progress, cumulative) {
			t.Errorf("%d lines in %d files: progress reports %v, want %v", c.lines, c.files, progress, cumulative)
		}
		if !slices.Equal(got, c.wantLines) || st.Files != len(c.wantLines) || !slices.Equal(keys, st.Keys) {
			t.Errorf("%d lines in %d files: got %v (%d files, keys %v), want %v", c.lines, c.files, got, st.Files, keys, c.wantLines)
		}
	}
}

func TestKeysSortInArrivalOrder(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	o := opts(12_000, 12, 1)
	st1, err := Generate(ctx, b, o)
	if err != nil {
		t.Fatal(err)
	}
	// A later run, continuing the arrival clock: its objects sort after the first run's.
	o.Start = o.Start.Add(time.Duration(float64(o.Lines) / o.Rate * float64(time.Second)))
	o.Seed = 2
	st2, err := Generate(ctx, b, o)
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := readObjects(t, b, "landing/events/")
	if want := append(st1.Keys, st2.Keys...); !slices.Equal(keys, want) {
		t.Errorf("listing order %v, generation order %v", keys, want)
	}
	if !strings.HasPrefix(keys[0], "landing/events/20240501T000000.000000Z-s1-000000.json") {
		t.Errorf("first key %q", keys[0])
	}
}

func TestRerunIsIdempotent(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	o := opts(3_000, 3, 9)
	if _, err := Generate(ctx, b, o); err != nil {
		t.Fatal(err)
	}
	// A crash after the first object: delete the others, rerun.
	keys, before := readObjects(t, b, "")
	for _, k := range keys[1:] {
		if err := b.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	st, err := Generate(ctx, b, o)
	if err != nil || st.Skipped != 1 {
		t.Fatalf("rerun: skipped %d, err %v", st.Skipped, err)
	}
	_, after := readObjects(t, b, "")
	if len(after) != 3 || !bytes.Equal(bytes.Join(before, nil), bytes.Join(after, nil)) {
		t.Fatalf("rerun did not converge to the same objects")
	}
	// Someone else's object under the same key is never overwritten.
	if err := objstore.PutBytes(ctx, b, keys[2], []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(ctx, b, o); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), keys[2]) {
		t.Fatalf("Generate over a different object: %v", err)
	}
}

func TestGzip(t *testing.T) {
	ctx := context.Background()
	plain, zipped := mem.New(), mem.New()
	o := opts(5_000, 2, 4)
	stPlain, err := Generate(ctx, plain, o)
	if err != nil {
		t.Fatal(err)
	}
	o.Gzip = true
	stZip, err := Generate(ctx, zipped, o)
	if err != nil {
		t.Fatal(err)
	}
	_, p := readObjects(t, plain, "")
	keys, z := readObjects(t, zipped, "")
	for i := range z {
		if !strings.HasSuffix(keys[i], ".json.gz") {
			t.Errorf("key %q", keys[i])
		}
		r, err := gzip.NewReader(bytes.NewReader(z[i]))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, p[i]) {
			t.Errorf("object %d: gunzipped content differs (%v)", i, err)
		}
	}
	if stZip.Bytes != stPlain.Bytes || stZip.StoredBytes >= stPlain.StoredBytes {
		t.Errorf("bytes %d/%d, stored %d/%d", stZip.Bytes, stPlain.Bytes, stZip.StoredBytes, stPlain.StoredBytes)
	}
}

func TestBadOptions(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"negative lines", func(o *Options) { o.Lines = -1 }, "Lines = -1"},
		{"no rate", func(o *Options) { o.Rate = 0 }, "Rate = 0"},
		{"fraction > 1", func(o *Options) { o.DuplicateFraction = 1.5 }, "DuplicateFraction = 1.5"},
		{"fractions sum > 1", func(o *Options) { o.DuplicateFraction, o.MalformedFraction = 0.6, 0.6 }, "expected at most 1"},
		{"no devices", func(o *Options) { o.Devices = 0 }, "Devices = 0"},
		{"bad prefix", func(o *Options) { o.Prefix = "/abs" }, `Prefix "/abs"`},
		{"no columns", func(o *Options) { o.Columns = nil }, "Columns is empty"},
		{"no event time", func(o *Options) { o.EventTime = "ts" }, `EventTime "ts" is not among the columns`},
		{"event time type", func(o *Options) { o.Columns[3].Kind = "string" }, `event time column "event_time" has type string`},
		{"unknown kind", func(o *Options) { o.Columns[1].Kind = "int" }, `column "event_type" has type "int"`},
		{"bad decimal", func(o *Options) { o.Columns[2] = Column{Name: "amount", Kind: "decimal", Precision: 3, Scale: 5} }, "decimal(3,5)"},
		{"duplicate column", func(o *Options) { o.Columns[1].Name = "event_id" }, `column "event_id": expected a unique`},
		{"bad lag", func(o *Options) { o.LagMedian = 0 }, "LagMedian = 0s"},
		{"zero files and per-file", func(o *Options) { o.LinesPerFile = 0 }, "LinesPerFile = 0"},
	}
	for _, c := range cases {
		o := opts(10, 0, 1)
		o.Columns = DefaultColumns()
		c.edit(&o)
		_, err := Generate(context.Background(), mem.New(), o)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "gen: ") {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Generate(ctx, mem.New(), opts(10, 2, 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("Generate on a cancelled context: %v", err)
	}
}

func TestTimeFormattingMatchesTimePackage(t *testing.T) {
	g := &Generator{lastDay: -1 << 62}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20_000 {
		// Years 0001..9999, in microseconds.
		us := r.Int64N(315_537_897_600_000_000) - 62_135_596_800_000_000
		tm := time.UnixMicro(us).UTC()
		got := string(g.appendTime(nil, "timestamp", us))
		if want := `"` + tm.Format("2006-01-02T15:04:05.000000Z") + `"`; got != want {
			t.Fatalf("appendTime(%d) = %s, want %s", us, got, want)
		}
		got = string(g.appendTime(nil, "timestamp_ntz", us))
		if want := `"` + tm.Format("2006-01-02 15:04:05.000000") + `"`; got != want {
			t.Fatalf("appendTime ntz(%d) = %s, want %s", us, got, want)
		}
	}
}

func TestTimeFormatMix(t *testing.T) {
	ctx := context.Background()
	o := opts(30_000, 1, 21)
	o.TimeFormatMix = 0.5
	o.TailFraction, o.OutageRate, o.DuplicateFraction, o.MalformedFraction, o.WrongTypeFraction, o.FutureFraction = 0, 0, 0, 0, 0, 0
	b := mem.New()
	st, err := Generate(ctx, b, o)
	if err != nil {
		t.Fatal(err)
	}
	_, objs := readObjects(t, b, "")
	d, hms := `^\d{4}-\d\d-\d\d`, `\d\d:\d\d:\d\d`
	shapes := []struct {
		name string
		re   *regexp.Regexp
	}{
		{"default", regexp.MustCompile(d + "T" + hms + `\.\d{6}Z$`)},
		{"seconds", regexp.MustCompile(d + "T" + hms + `Z$`)},
		{"millis", regexp.MustCompile(d + "T" + hms + `\.\d{3}Z$`)},
		{"offset", regexp.MustCompile(d + "T" + hms + `\.\d{6}[+-]\d\d:\d\d$`)},
		{"space", regexp.MustCompile(d + " " + hms + `\.\d{6}$`)},
		{"space seconds", regexp.MustCompile(d + " " + hms + `$`)},
	}
	seen := map[string]int{}
	var minT, maxT time.Time
	for i, line := range strings.Split(strings.TrimSuffix(string(objs[0]), "\n"), "\n") {
		var rec struct {
			EventTime string `json:"event_time"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		shape := ""
		for _, s := range shapes {
			if s.re.MatchString(rec.EventTime) {
				shape = s.name
			}
		}
		layout := time.RFC3339Nano
		if strings.HasPrefix(shape, "space") {
			layout = "2006-01-02 15:04:05.999999"
		}
		tm, err := time.Parse(layout, rec.EventTime)
		if shape == "" || err != nil {
			t.Fatalf("line %d: event time %q has no accepted spelling (%v)", i, rec.EventTime, err)
		}
		seen[shape]++
		lag := o.Start.Add(time.Duration(float64(i) / o.Rate * 1e9)).Sub(tm)
		if lag < 0 || lag > time.Hour {
			t.Fatalf("line %d: %q is %v before its arrival", i, rec.EventTime, lag)
		}
		if i == 0 || tm.Before(minT) {
			minT = tm
		}
		if i == 0 || tm.After(maxT) {
			maxT = tm
		}
	}
	if len(seen) != len(shapes) {
		t.Errorf("spellings seen: %v", seen)
	}
	if others := int64(30_000 - seen["default"]); others != st.MixedTimeFormats {
		t.Errorf("%d lines with another spelling, stats say %d", others, st.MixedTimeFormats)
	}
	if !minT.Equal(st.MinEventTime) || !maxT.Equal(st.MaxEventTime) {
		t.Errorf("range %v..%v, stats say %v..%v", minT, maxT, st.MinEventTime, st.MaxEventTime)
	}
}

func TestOptionalFirstColumn(t *testing.T) {
	for _, format := range []string{FormatJSON, FormatCSV} {
		o := opts(2_000, 1, 8)
		o.Format, o.NullFraction = format, 0.5
		o.Columns = []Column{{Name: "note", Kind: "string"}, {Name: "event_time", Kind: "timestamp", Required: true}, {Name: "tail", Kind: "long"}}
		o.MalformedFraction, o.WrongTypeFraction = 0, 0
		b := mem.New()
		if _, err := Generate(context.Background(), b, o); err != nil {
			t.Fatal(err)
		}
		_, objs := readObjects(t, b, "")
		lines := strings.Split(strings.TrimSuffix(string(objs[0]), "\n"), "\n")
		if format == FormatCSV {
			if lines[0] != "note,event_time,tail" {
				t.Errorf("header %q", lines[0])
			}
			for _, l := range lines[1:] {
				if strings.Count(l, ",") != 2 || strings.HasPrefix(l, "\"") {
					t.Fatalf("csv record %q", l)
				}
			}
			continue
		}
		for _, l := range lines {
			if !json.Valid([]byte(l)) {
				t.Fatalf("invalid JSON %q", l)
			}
		}
	}
}

func TestCSV(t *testing.T) {
	ctx := context.Background()
	o := opts(40_000, 3, 13)
	o.Format = FormatCSV
	o.DuplicateFraction, o.MalformedFraction, o.WrongTypeFraction, o.FutureFraction, o.TimeFormatMix = 0.03, 0.01, 0.01, 0.005, 0.2
	o.Columns = append(o.Columns, Column{Name: "device_id", Kind: "string"}, Column{Name: "note", Kind: "string"})
	b := mem.New()
	st, err := Generate(ctx, b, o)
	if err != nil {
		t.Fatal(err)
	}
	keys, objs := readObjects(t, b, "")
	var records, malformed, dups, badTime, badAmount, future int64
	ids := map[string]string{}
	for i, obj := range objs {
		if !strings.HasSuffix(keys[i], ".csv") {
			t.Errorf("key %q", keys[i])
		}
		r := csv.NewReader(bytes.NewReader(obj))
		r.FieldsPerRecord = -1
		header, err := r.Read()
		if err != nil || strings.Join(header, ",") != "event_id,event_type,amount,event_time,device_id,note" {
			t.Fatalf("header %v, %v", header, err)
		}
		for {
			rec, err := r.Read()
			if err == io.EOF {
				break
			}
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				malformed++
				continue
			}
			if err != nil || len(rec) != len(header) {
				t.Fatalf("record %v: %v", rec, err)
			}
			line := strings.Join(rec, ",")
			if first, seen := ids[rec[0]]; seen {
				if first != line {
					t.Fatalf("resend differs: %s vs %s", first, line)
				}
				dups++
				continue
			}
			ids[rec[0]] = line
			records++
			if _, err := strconv.ParseFloat(rec[2], 64); err != nil {
				badAmount++
			}
			layout := time.RFC3339Nano
			if !strings.Contains(rec[3], "T") {
				layout = "2006-01-02 15:04:05.999999"
			}
			tm, err := time.Parse(layout, rec[3])
			switch {
			case err != nil:
				badTime++
			case tm.After(o.Start.Add(10 * 365 * 24 * time.Hour)):
				future++
			}
		}
	}
	checks := []struct {
		name      string
		got, want int64
	}{
		{"records", records, st.Events}, {"duplicates", dups, st.Duplicates}, {"malformed", malformed, st.Malformed},
		{"invalid csv", malformed, st.InvalidCSV}, {"bad time", badTime, st.BadEventTime}, {"bad amount", badAmount, st.BadAmount},
		{"future", future, st.Future}, {"lines", records + dups + malformed, st.Lines},
	}
	for _, c := range checks {
		if c.got != c.want || c.got == 0 {
			t.Errorf("%s: read %d, stats say %d", c.name, c.got, c.want)
		}
	}
}

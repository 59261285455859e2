package late

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/internal/testshared"
	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
)

// correctionYAML is the reproduction: watermark 10m, sessions of 30m by key, dedup on
// event_id. The landing objects are taken one per ingest and stream batch.
const correctionYAML = `
lake: mem
schema:
  - {name: event_id,   type: string, required: true}
  - {name: key,        type: string}
  - {name: amount,     type: double}
  - {name: event_time, type: timestamp, required: true}
stream:
  watermark: %s
  dedup: [event_id]
  max_files_per_trigger: 1
gold:
  - name: sess
    window: {type: session, gap: 30m}
    group_by: [key]
    aggregates:
      - {fn: count, as: n}
      - {fn: sum, column: amount, as: total}
`

// cev is one landed event of the correction tests.
type cev struct {
	id, key string
	at      time.Duration // after corrBase
}

var corrBase = time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)

// landObject lands one JSON-lines object holding evs under the landing prefix, named n so
// that the objects are taken in the order they were landed.
func landObject(t testing.TB, lake objstore.Bucket, n int, evs ...cev) {
	t.Helper()
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, `{"event_id":%q,"key":%q,"amount":1,"event_time":%q}`+"\n", e.id, e.key, corrBase.Add(e.at).Format(time.RFC3339Nano))
	}
	if err := objstore.PutBytes(context.Background(), lake, fmt.Sprintf("landing/events/%06d.json", n), []byte(b.String())); err != nil {
		t.Fatal(err)
	}
}

// goldSessions reads gold/sess as key -> sorted "[start,end)=n" strings, times as offsets
// from corrBase.
func goldSessions(t testing.TB, lake objstore.Bucket) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, g := range readGold(t, lake, "gold/sess", []string{"key"}) {
		k := strings.TrimPrefix(g.key.keys, "=")
		out[k] = append(out[k], sessionString(g.key.start, g.key.end, g.vals["n"].(int64)))
	}
	for _, ss := range out {
		slices.Sort(ss)
	}
	return out
}

func sessionString(start, end, n int64) string {
	off := func(us int64) time.Duration { return time.UnixMicro(us).Sub(corrBase) }
	return fmt.Sprintf("[%v,%v)=%d", off(start), off(end), n)
}

// TestSessionCorrectionRepro is the reproduction: d (k, 00:20) is on time by Spark's
// rule (00:50 is past the late watermark 00:40) but falls inside k's session [00:00,00:30),
// which the stream has already emitted. Spark would emit a second, overlapping session
// [00:20,00:50) for k; medallion keeps d as a correction (quarantined), and merge-late
// re-sessionizes k, so gold holds the batch result [00:00,00:50)=2. A replay over the range
// agrees and changes nothing.
func TestSessionCorrectionRepro(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	cfg := correctionConfig(t, "10m")
	objects := [][]cev{
		{{"a", "k", 0}, {"b", "z", 45 * time.Minute}},
		{{"c", "z", 50 * time.Minute}},
		{{"d", "k", 20 * time.Minute}},
		{{"e", "z", 2 * time.Hour}},
	}
	for i, evs := range objects {
		landObject(t, lake, i, evs...)
		ingest(t, lake, cfg)
		runStream(t, lake, cfg)
	}
	rep, err := MergeLate(ctx, opts(lake, cfg))
	if err != nil {
		t.Fatal(err)
	}
	if g := rep.Gold[0]; g.LateRows != 1 {
		t.Errorf("merge-late folded %d rows, want 1 (d, kept as a correction): %+v", g.LateRows, g)
	}
	want := map[string][]string{
		"k": {sessionString(corrBase.UnixMicro(), corrBase.Add(50*time.Minute).UnixMicro(), 2)},
		"z": {sessionString(corrBase.Add(45*time.Minute).UnixMicro(), corrBase.Add(80*time.Minute).UnixMicro(), 2)},
	}
	if got := goldSessions(t, lake); !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("gold sessions after stream and merge-late:\n got %v\nwant %v", got, want)
	}
	before := goldState(t, lake, "gold/sess")
	if _, err := Replay(ctx, opts(lake, cfg), Range{From: corrBase, To: corrBase.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if after := goldState(t, lake, "gold/sess"); !slices.Equal(after, before) {
		t.Fatalf("replay changed gold:\nbefore %v\n after %v", before, after)
	}
}

func correctionConfig(t testing.TB, watermark string) *config.Pipeline {
	t.Helper()
	return testutil.Pipeline(t, fmt.Sprintf(correctionYAML, watermark))
}

// oracleSessions is the batch sessionization of evs per key, found by a nested loop that owes
// nothing to the code under test: every event starts the session [t, t+gap), and any two
// sessions of a key that overlap or touch (a.start <= b.end and b.start <= a.end, Spark's
// inclusive rule) are fused, until no two do. The result is key -> sorted "[start,end)=n".
func oracleSessions(evs []cev, gap time.Duration) map[string][]string {
	type sess struct {
		start, end time.Duration
		n          int64
	}
	per := map[string][]sess{}
	for _, e := range evs {
		per[e.key] = append(per[e.key], sess{e.at, e.at + gap, 1})
	}
	out := map[string][]string{}
	for k, ss := range per {
		for fused := true; fused; {
			fused = false
			for i := 0; i < len(ss) && !fused; i++ {
				for j := 0; j < len(ss) && !fused; j++ {
					if i != j && ss[i].start <= ss[j].end && ss[j].start <= ss[i].end {
						ss[i] = sess{min(ss[i].start, ss[j].start), max(ss[i].end, ss[j].end), ss[i].n + ss[j].n}
						ss = append(ss[:j], ss[j+1:]...)
						fused = true
					}
				}
			}
		}
		for _, s := range ss {
			out[k] = append(out[k], sessionString(corrBase.Add(s.start).UnixMicro(), corrBase.Add(s.end).UnixMicro(), s.n))
		}
		slices.Sort(out[k])
	}
	return out
}

// correctionCase is one randomized arrival of session events: the distinct events, the
// landing objects in order (resends included, the last one closing every session), and after
// which objects merge-late runs.
type correctionCase struct {
	name, delay string
	evs         []cev
	objects     [][]cev
	mergeAfter  []bool
}

// newCorrectionCase draws case c: events of two keys at whole minutes over two and a half
// hours (so that sessions often touch exactly, t2 == t1 + gap), a fifth of them sent twice, in
// a shuffled or a lagged order, cut into objects of one to three events, under a random
// watermark delay, with merge-late after a third of the objects. A last object holds an event
// of another key, far ahead, which closes every session of the others.
func newCorrectionCase(c int) correctionCase {
	rng := rand.New(rand.NewPCG(uint64(c), 30))
	delays := []string{"0s", "5m", "10m", "30m", "1h"}
	cc := correctionCase{delay: delays[rng.IntN(len(delays))]}
	for i := range 4 + rng.IntN(12) {
		key := string(rune('k' + rng.IntN(2)))
		cc.evs = append(cc.evs, cev{fmt.Sprintf("e%d", i), key, time.Duration(rng.IntN(10)*15+rng.IntN(2)*rng.IntN(15)) * time.Minute})
	}
	arrivals := slices.Clone(cc.evs)
	for _, e := range cc.evs {
		if rng.IntN(5) == 0 { // a resend, deduplicated on event_id
			arrivals = append(arrivals, e)
		}
	}
	order := "shuffled"
	if rng.IntN(2) == 0 {
		rng.Shuffle(len(arrivals), func(i, j int) { arrivals[i], arrivals[j] = arrivals[j], arrivals[i] })
	} else {
		// Mostly in time order, each event delayed by up to an hour: the watermark then moves
		// in small steps and sessions close while rows that touch them are on their way, which
		// a full shuffle (one early event moves the watermark to the end) rarely gives.
		order = "lagged"
		due := make([]time.Duration, len(arrivals))
		idx := make([]int, len(arrivals))
		for i := range arrivals {
			due[i], idx[i] = arrivals[i].at+time.Duration(rng.IntN(60))*time.Minute, i
		}
		slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(due[x], due[y]) })
		sorted := make([]cev, len(arrivals))
		for i, j := range idx {
			sorted[i] = arrivals[j]
		}
		arrivals = sorted
	}
	for rest := arrivals; len(rest) > 0; {
		n := min(len(rest), 1+rng.IntN(3))
		cc.objects = append(cc.objects, rest[:n])
		cc.mergeAfter = append(cc.mergeAfter, rng.IntN(3) == 0)
		rest = rest[n:]
	}
	cc.objects = append(cc.objects, []cev{{"close", "zz", 6 * time.Hour}})
	cc.mergeAfter = append(cc.mergeAfter, true)
	cc.name = fmt.Sprintf("%d_%s_wm%s", c, order, cc.delay)
	return cc
}

// checkOracle checks gold's sessions against the batch sessionization of the case's distinct
// events.
func (cc *correctionCase) checkOracle(t *testing.T, lake objstore.Bucket) {
	t.Helper()
	want := oracleSessions(cc.evs, 30*time.Minute)
	got := goldSessions(t, lake)
	if _, open := got["zz"]; open {
		t.Fatalf("gold holds zz's session, which is still open: %v", got["zz"])
	}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("gold sessions after stream and merge-late differ from the batch sessionization\nobjects %v\n got %v\nwant %v", cc.objects, got, want)
	}
}

// TestSessionCorrectionsRandomized: events of a few keys arrive in random order, in random
// objects, some of them twice, under a random watermark delay, with merge-late run at random
// points between the stream's batches (newCorrectionCase). After the stream and merge-late,
// gold's sessions equal a batch sessionization of the distinct events (oracleSessions), and a
// replay over the whole range changes nothing. 16 cases by default (40 cost 19.5 CPU s under
// -race); MEDALLION_LONG=1 runs 400.
func TestSessionCorrectionsRandomized(t *testing.T) {
	// Parallel: its own in-memory lake, no environment or package state changed; one of the
	// package's longest tests, so it overlaps the others instead of ending the run alone.
	t.Parallel()
	cases := 16
	if os.Getenv("MEDALLION_LONG") == "1" {
		cases = 400
	}
	corrections := 0
	for c := range cases {
		cc := newCorrectionCase(c)
		t.Run(cc.name, func(t *testing.T) {
			ctx := context.Background()
			lake := mem.New()
			cfg := correctionConfig(t, cc.delay)
			for i, obj := range cc.objects {
				landObject(t, lake, i, obj...)
				ingest(t, lake, cfg)
				for _, q := range runStream(t, lake, cfg).Gold {
					corrections += int(q.SessionCorrections)
				}
				if cc.mergeAfter[i] {
					rep, err := MergeLate(ctx, opts(lake, cfg))
					if err != nil {
						t.Fatal(err)
					}
					if len(rep.Gold) > 0 && rep.Gold[0].Note != "" {
						t.Logf("merge-late after object %d: %s", i, rep.Gold[0].Note)
					}
				}
			}
			cc.checkOracle(t, lake)
			before := goldState(t, lake, "gold/sess")
			if _, err := Replay(ctx, opts(lake, cfg), Range{From: corrBase, To: corrBase.Add(5 * time.Hour)}); err != nil {
				t.Fatal(err)
			}
			if after := goldState(t, lake, "gold/sess"); !slices.Equal(after, before) {
				t.Fatalf("replay changed gold:\nbefore %v\n after %v", before, after)
			}
			checkFeed(t, lake, "gold/sess")
		})
	}
	if corrections == 0 {
		t.Fatal("no row was kept as a session correction: the test proves nothing")
	}
	t.Logf("%d session corrections over %d cases", corrections, cases)
}

// TestSessionCorrectionChains walks the chains a correction can start, each by hand (watermark
// 10m, gap 30m; "merge" runs merge-late between stream batches). After the last object and
// merge-late, gold holds the hand-computed batch sessions, which the oracle agrees with, and
// the stream kept the number of corrections said. (A correction cannot bridge two sessions
// the stream emitted: with a static gap, a row on time after both closed starts past the
// first one's end. A late row can, and merge-late has always re-sessionized its key.)
func TestSessionCorrectionChains(t *testing.T) {
	m := time.Minute
	type step struct {
		evs   []cev
		merge bool
	}
	for _, tc := range []struct {
		name        string
		steps       []step
		corrections int64
		want        map[string][]string // key -> "[start,end)=n", offsets from corrBase
	}{{
		// A correction that bridges into the session the stream still holds: merge-late must
		// wait until the stream has emitted [45m,75m) and then fuse it; the stream's open
		// session never holds d, so nothing is counted twice.
		name: "into the open session",
		steps: []step{
			{evs: []cev{{"a", "k", 0}, {"z1", "z", 40 * m}}},       // emits k [0,30m)
			{evs: []cev{{"b", "k", 45 * m}}},                       // k [45m,75m) in state
			{evs: []cev{{"d", "k", 20 * m}}, merge: true},          // on time, touches both
			{evs: []cev{{"zz", "zz", 3 * time.Hour}}, merge: true}, // closes the others
		},
		corrections: 1,
		want:        map[string][]string{"k": {"[0s,1h15m0s)=3"}, "z": {"[40m0s,1h10m0s)=1"}},
	}, {
		// A late row that merge-late has placed, then an on-time row that touches it: the
		// stream remembers the late row's session, so the second row is a correction too.
		name: "after a late row merged",
		steps: []step{
			{evs: []cev{{"z1", "z", 50 * m}}},                      // watermark 40m
			{evs: []cev{{"a", "k", 10 * m}}, merge: true},          // late: [10m,40m) ends at 40m
			{evs: []cev{{"b", "k", 35 * m}}},                       // on time (65m > 40m), touches it
			{evs: []cev{{"zz", "zz", 3 * time.Hour}}, merge: true}, // closes the others
		},
		corrections: 1,
		want:        map[string][]string{"k": {"[10m0s,1h5m0s)=2"}, "z": {"[50m0s,1h20m0s)=1"}},
	}, {
		// Corrections that chain: each touches the one before, and the last reaches a session
		// that was emitted on its own; all end in one session.
		name: "chained corrections",
		steps: []step{
			{evs: []cev{{"a", "k", 0}, {"z1", "z", 40 * m}}},       // emits k [0,30m)
			{evs: []cev{{"b", "k", 25 * m}}},                       // correction [25m,55m)
			{evs: []cev{{"c", "k", 50 * m}}, merge: true},          // correction [50m,80m)
			{evs: []cev{{"d", "k", 75 * m}}},                       // correction [75m,105m)
			{evs: []cev{{"zz", "zz", 3 * time.Hour}}, merge: true}, // closes the others
		},
		corrections: 3,
		want:        map[string][]string{"k": {"[0s,1h45m0s)=4"}, "z": {"[40m0s,1h10m0s)=1"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			lake := mem.New()
			cfg := correctionConfig(t, "10m")
			var all []cev
			var corrections int64
			for i, st := range tc.steps {
				for _, e := range st.evs {
					if e.key != "zz" { // its session stays open
						all = append(all, e)
					}
				}
				landObject(t, lake, i, st.evs...)
				ingest(t, lake, cfg)
				corrections += runStream(t, lake, cfg).Gold[0].SessionCorrections
				if st.merge {
					if _, err := MergeLate(ctx, opts(lake, cfg)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if corrections != tc.corrections {
				t.Errorf("the stream kept %d corrections, want %d", corrections, tc.corrections)
			}
			if oracle := oracleSessions(all, 30*m); !maps.EqualFunc(oracle, tc.want, slices.Equal) {
				t.Fatalf("the oracle says %v, the case %v: fix the case", oracle, tc.want)
			}
			if got := goldSessions(t, lake); !maps.EqualFunc(got, tc.want, slices.Equal) {
				t.Fatalf("gold sessions after stream and merge-late\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

// TestSessionCorrectionsSurviveStreamCrashes: the stream keeps its settled extents in the state
// it snapshots each batch, so runs killed at random object-store calls (a fresh runner after
// each, as a restarted process) route the same rows as corrections and end with the same gold
// and quarantine rows as an uninterrupted run; merge-late then gives the batch sessionization.
func TestSessionCorrectionsSurviveStreamCrashes(t *testing.T) {
	ctx := context.Background()
	// At least 12 crashed runs per case, 6 under -race: the crash points are drawn at random
	// (put, put-if-absent before and after landing, get) and every round still ends compared
	// with the uninterrupted run's tables and the oracle; the full count runs without -race.
	minCrashes := testshared.Sized(12, 6)
	if testing.Short() {
		minCrashes = 4
	}
	tried := 0
	for c := 0; tried < 3 && c < 200; c++ {
		cc := newCorrectionCase(c)
		cfg := correctionConfig(t, cc.delay)
		base := mem.New()
		for i, obj := range cc.objects {
			landObject(t, base, i, obj...)
			ingest(t, base, cfg)
		}
		ref := cloneLake(t, base)
		if runStream(t, ref, cfg).Gold[0].SessionCorrections == 0 {
			continue // no correction in one run over everything: nothing to prove here
		}
		tried++
		want := map[string][]string{}
		for _, p := range []string{"gold/sess", "silver/late_sess"} {
			want[p] = rowsWithout(t, ref, p, silver.ColQueryID)
		}
		t.Run(cc.name, func(t *testing.T) {
			crashes := 0
			for round := uint64(0); crashes < minCrashes; round++ {
				lake := cloneLake(t, base)
				for attempt := uint64(0); ; attempt++ {
					faulty := objstore.WithFaults(lake, objstore.FaultPlan{Seed: uint64(c)<<32 | round<<16 | attempt, Faults: []objstore.Fault{
						{Op: objstore.OpPut, Rate: 0.05, After: attempt%2 == 1},
						{Op: objstore.OpPutIfAbsent, Rate: 0.05, After: attempt%2 == 0},
						{Op: objstore.OpGet, Rate: 0.02},
					}})
					r, err := stream.New(stream.Options{Lake: faulty, Query: specs.Query(cfg), Trigger: spec.Trigger{Kind: spec.AvailableNow}, Clock: streamClock})
					if err == nil {
						if _, err = r.Run(ctx); err == nil {
							break
						}
					}
					if crashes++; attempt > 200 {
						t.Fatalf("round %d: no run got through in 200 attempts: %v", round, err)
					}
				}
				for p, rows := range want {
					if got := rowsWithout(t, lake, p, silver.ColQueryID); !slices.Equal(got, rows) {
						t.Fatalf("round %d, %d crashes: %s differs from the uninterrupted run's\n got %v\nwant %v", round, crashes, p, got, rows)
					}
				}
				if _, err := MergeLate(ctx, opts(lake, cfg)); err != nil {
					t.Fatal(err)
				}
				cc.checkOracle(t, lake)
			}
		})
	}
	if tried == 0 {
		t.Fatal("no case had a correction: the test proves nothing")
	}
}

// rowsWithout is every row of the table at path as sorted JSON, without the columns drop.
func rowsWithout(t testing.TB, lake objstore.Bucket, path string, drop ...string) []string {
	t.Helper()
	ctx := context.Background()
	tbl := table.Open(objstore.WithPrefix(lake, path), table.Options{})
	snap, err := tbl.Log().Snapshot(ctx)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	schema, err := snap.Schema()
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, f := range schema.Fields {
		if !slices.Contains(drop, f.Name) {
			cols = append(cols, f.Name)
		}
	}
	var out []string
	for b, err := range tbl.Scan(ctx, table.ScanOptions{Columns: cols}) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Len() {
			out = append(out, string(pq.AppendJSONRow(nil, b, i)))
		}
	}
	slices.Sort(out)
	return out
}

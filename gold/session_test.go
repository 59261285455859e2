package gold

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/medallion-lake/medallion/pq"
)

// sessionBatchCase is one ProcessBatch call of a settled-session test: keyed rows, the late and
// eviction watermarks (ms), what it must report and the state it must leave.
type sessionBatchCase struct {
	key         string
	times       []int64
	late, evict int64
	wantLate    []int32
	wantCorrect int64
	wantDropped int64
	wantEmitted []Window
	wantState   string
	wantSettled int
}

func runSessionCases(t *testing.T, op *Aggregation, cases []sessionBatchCase) {
	t.Helper()
	for i, c := range cases {
		res, err := op.ProcessBatch(keyed(c.key, c.times...), c.late, c.evict)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.LateRows, c.wantLate) || res.NumCorrectionRows != c.wantCorrect || res.NumRowsDroppedByWatermark != c.wantDropped {
			t.Errorf("batch %d: late %v corrections %d dropped %d, want %v %d %d", i, res.LateRows, res.NumCorrectionRows,
				res.NumRowsDroppedByWatermark, c.wantLate, c.wantCorrect, c.wantDropped)
		}
		var emitted []Window
		for _, r := range res.Rows {
			emitted = append(emitted, r.Window)
		}
		if !slices.Equal(emitted, c.wantEmitted) {
			t.Errorf("batch %d: emitted %v, want %v", i, emitted, c.wantEmitted)
		}
		if got := sessString(op); got != c.wantState {
			t.Errorf("batch %d: state %q, want %q", i, got, c.wantState)
		}
		if got := op.NumSettled(); got != c.wantSettled {
			t.Errorf("batch %d: %d settled extents, want %d", i, got, c.wantSettled)
		}
	}
}

// TestSessionCorrections: with a gap of 30 min, k's session [0,30m) is emitted at watermark
// 35m. A row at 20m is on time by Spark's rule (50m > 40m) but would start a session
// overlapping the emitted one: it is reported late as a correction (not in Spark's dropped
// counter) and kept out of state. The late row's extent then catches a row at 45m, and a row
// at 90m, which touches nothing settled, starts a session as in Spark. Once the watermark is
// past every extent's end plus the gap, nothing is remembered.
func TestSessionCorrections(t *testing.T) {
	m := minute
	op := mustAgg(t, sessionCfg(Append, 30*m))
	runSessionCases(t, op, []sessionBatchCase{
		{key: "k", times: []int64{0}, late: 0, evict: 35 * 60_000,
			wantEmitted: []Window{{0, 30 * m}}, wantSettled: 1},
		{key: "k", times: []int64{20 * m}, late: 40 * 60_000, evict: 40 * 60_000,
			wantLate: []int32{0}, wantCorrect: 1, wantSettled: 1}, // [0,50m)
		{key: "k", times: []int64{90 * m, 45 * m, 5 * m}, late: 40 * 60_000, evict: 40 * 60_000,
			// 5m is late by Spark's rule (35m <= 40m), 45m a correction; 90m is on time.
			wantLate: []int32{1, 2}, wantCorrect: 1, wantDropped: 1, wantState: "k[5400000000,7200000000)=1", wantSettled: 1},
		{key: "k", late: 40 * 60_000, evict: 104 * 60_000, // [0,75m) + gap is still ahead
			wantState: "k[5400000000,7200000000)=1", wantSettled: 1},
		{key: "k", late: 104 * 60_000, evict: 120 * 60_000, // emits [90m,120m), forgets [0,75m)
			wantEmitted: []Window{{90 * m, 120 * m}}, wantSettled: 1},
		{key: "k", late: 120 * 60_000, evict: 150 * 60_000,
			wantSettled: 0},
	})
	if id, _ := op.findKey([]byte("k")); id >= 0 {
		t.Fatalf("key k is still interned (refs %d) with no group and no extent", op.keyRefs[id])
	}
}

// TestSessionCorrectionsKeepSpark: where Spark's rules leave no session overlapping an emitted
// one, the rows are routed exactly as Spark routes them; and the aggregations that cannot bound
// what they would remember (a per-row gap) or evict nothing (Complete) keep Spark's behaviour.
func TestSessionCorrectionsKeepSpark(t *testing.T) {
	m := minute
	t.Run("touching the emitted end only from past the gap", func(t *testing.T) {
		op := mustAgg(t, sessionCfg(Append, 30*m))
		runSessionCases(t, op, []sessionBatchCase{
			{key: "k", times: []int64{0}, late: 0, evict: 35 * 60_000, wantEmitted: []Window{{0, 30 * m}}, wantSettled: 1},
			// 31m starts after [0,30m) ends: not touching, a new session as in Spark.
			{key: "k", times: []int64{31 * m}, late: 35 * 60_000, evict: 35 * 60_000,
				wantState: "k[1860000000,3660000000)=1", wantSettled: 1},
			// 30m touches it (start == end merges): a correction.
			{key: "k", times: []int64{30 * m}, late: 35 * 60_000, evict: 35 * 60_000,
				wantLate: []int32{0}, wantCorrect: 1, wantState: "k[1860000000,3660000000)=1", wantSettled: 1},
		})
	})
	t.Run("another key", func(t *testing.T) {
		op := mustAgg(t, sessionCfg(Append, 30*m))
		runSessionCases(t, op, []sessionBatchCase{
			{key: "k", times: []int64{0}, late: 0, evict: 35 * 60_000, wantEmitted: []Window{{0, 30 * m}}, wantSettled: 1},
			{key: "z", times: []int64{20 * m}, late: 40 * 60_000, evict: 40 * 60_000,
				wantState: "z[1200000000,3000000000)=1", wantSettled: 1},
		})
	})
	t.Run("per-row gap", func(t *testing.T) {
		op := mustAgg(t, sessionCfg(Append, 0))
		for i, times := range [][]int64{{0}, {20 * m}} {
			in := keyed("k", times...)
			in.SessionGap = []int64{30 * m}
			late := []int64{0, 40 * 60_000}[i]
			res, err := op.ProcessBatch(in, late, []int64{35 * 60_000, 40 * 60_000}[i])
			if err != nil {
				t.Fatal(err)
			}
			if len(res.LateRows) != 0 || res.NumCorrectionRows != 0 {
				t.Fatalf("batch %d: late %v corrections %d, want Spark's none", i, res.LateRows, res.NumCorrectionRows)
			}
		}
		if got := sessString(op); got != "k[1200000000,3000000000)=1" || op.NumSettled() != 0 {
			t.Fatalf("state %q with %d extents, want Spark's second session and none", got, op.NumSettled())
		}
	})
}

// TestSessionSettledSnapshot: the settled extents are part of the snapshot, so an operator
// restored after the emission still keeps the correction out; a snapshot written before the
// extents existed (by the build before them) still restores, with none.
func TestSessionSettledSnapshot(t *testing.T) {
	m := minute
	cfg := sessionCfg(Append, 30*m)
	op := mustAgg(t, cfg)
	in := keyed("k", 0)
	in.Keys.Append([]byte("z"))
	in.EventTime = append(in.EventTime, 40*m)
	if _, err := op.ProcessBatch(in, 0, 35*60_000); err != nil {
		t.Fatal(err)
	}
	snap, err := op.AppendSnapshot(nil)
	if err != nil {
		t.Fatal(err)
	}
	restored, err := RestoreAggregation(cfg, snap)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := restored.AppendSnapshot(nil); !bytes.Equal(again, snap) {
		t.Fatal("restore then snapshot changed the bytes")
	}
	res, err := restored.ProcessBatch(keyed("k", 20*m), 40*60_000, 40*60_000)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.LateRows, []int32{0}) || res.NumCorrectionRows != 1 {
		t.Fatalf("restored operator: late %v corrections %d, want the correction", res.LateRows, res.NumCorrectionRows)
	}

	// The same state (k's [0,30m) emitted, z's [40m,70m) held) as the build of commit e78c8d4
	// wrote it, with no settled section.
	old, _ := hex.DecodeString("4d444c474f4c440001010180c8ceb40d010100010180e0e8f01180a8b7a51f017a010002000000000000000000ccc713fd")
	prev, err := RestoreAggregation(cfg, old)
	if err != nil {
		t.Fatalf("a snapshot without settled extents: %v", err)
	}
	if got := sessString(prev); got != "z[2400000000,4200000000)=1" || prev.NumSettled() != 0 {
		t.Fatalf("old snapshot restored as %q with %d extents", got, prev.NumSettled())
	}
	// It settles from here on: z's session, once emitted, is remembered.
	if _, err := prev.ProcessBatch(&Input{}, 40*60_000, 70*60_000); err != nil || prev.NumSettled() != 1 {
		t.Fatalf("after emitting z: %d extents, %v", prev.NumSettled(), err)
	}

	// A corrupt settled section fails loudly.
	section := op.appendSettled(nil)
	body := snap[:len(snap)-4]
	if !bytes.HasSuffix(body, section) {
		t.Fatal("the snapshot does not end with its settled section")
	}
	groups := body[:len(body)-len(section)]
	for _, bad := range [][]byte{
		{settledTag, 1, 1, 'k', 0},          // a key with no extent
		{settledTag, 1, 1, 'k', 1, 20},      // an extent with no length
		{settledTag, 1, 1, 'k', 1, 0, 0},    // an empty extent
		{settledTag, 2, 1, 'k', 1, 0, 2},    // a key missing
		{settledTag, 1, 1, 'k', 1, 0, 2, 7}, // trailing bytes
	} {
		b := append(slices.Clone(groups), bad...)
		b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
		if _, err := RestoreAggregation(cfg, b); !errors.Is(err, ErrBadState) {
			t.Errorf("settled section %x: %v, want ErrBadState", bad, err)
		}
	}
}

// BenchmarkSessionAppend is a running session stream: each 64k-event batch covers the next
// 10 s of event time (up to 3 minutes out of order), gap 5 s, watermark delay 2 minutes, so
// sessions close every batch and some rows arrive after their key's session was emitted.
// "static" keeps settled extents and routes corrections; "per-row-gap" is the same stream
// through the per-row gap path, which keeps Spark's behaviour: the baseline of the extents'
// cost, in the same run.
func BenchmarkSessionAppend(b *testing.B) {
	for _, keys := range []int{100_000, 1_000_000} {
		for _, mode := range []string{"static", "per-row-gap"} {
			b.Run(strconv.Itoa(keys)+"keys-"+mode, func(b *testing.B) {
				gap := 5 * second
				cfg := sessionCfg(Append, gap)
				in := &Input{EventTime: make([]int64, benchBatch)}
				if mode == "per-row-gap" {
					cfg.Session.Gap = 0
					in.SessionGap = make([]int64, benchBatch)
					for i := range in.SessionGap {
						in.SessionGap[i] = gap
					}
				}
				op := mustAgg(b, cfg)
				tr, _ := NewWatermarkTracker(PolicyMin, []int64{2 * 60 * 1000}, 0)
				rng := rand.New(rand.NewPCG(1, 1))
				var kb []byte
				for range benchBatch {
					kb = pq.AppendKeyString(kb[:0], "user-"+strconv.Itoa(rng.IntN(keys)))
					in.Keys.Append(kb)
				}
				offsets := make([]int64, benchBatch)
				for i := range offsets {
					offsets[i] = rng.Int64N(10*second) - rng.Int64N(3*minute)
				}
				base := at(12, 0)
				var corrections int64
				step := func() {
					for i, o := range offsets {
						in.EventTime[i] = base + o
					}
					base += 10 * second
					late, evict := tr.BatchWatermarks()
					tr.Observe(0, in.EventTime, nil)
					res, err := op.ProcessBatch(in, late, evict)
					if err != nil {
						b.Fatal(err)
					}
					corrections += res.NumCorrectionRows
					tr.EndBatch(0)
				}
				for range 50 { // past the first evictions
					step()
				}
				corrections = 0
				b.ReportAllocs()
				b.ResetTimer()
				c0 := cpuNanos()
				for i := 0; i < b.N; i++ {
					step()
				}
				reportCPU(b, c0, b.N*benchBatch)
				b.ReportMetric(float64(corrections)/float64(b.N), "corrections/op")
				b.ReportMetric(float64(op.NumSettled()), "extents")
			})
		}
	}
}

package silver

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const sec = int64(1_000_000)

type drow struct {
	guid string
	ts   int64 // seconds
}

type dstep struct {
	rows            []drow
	lateWM, evictWM int64 // ms
	emit, late, dup []int32
	stateAfter      int
}

func runDedup(t *testing.T, cfg DedupConfig, keyWithTime bool, steps []dstep) {
	t.Helper()
	d, err := NewDedup(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range steps {
		var keys [][]byte
		var times []int64
		for _, r := range st.rows {
			k := []byte(r.guid)
			if keyWithTime {
				k = append(k, byte(r.ts>>8), byte(r.ts))
			}
			keys = append(keys, k)
			times = append(times, r.ts*sec)
		}
		res, err := d.ProcessBatch(keys, times, nil, st.lateWM, st.evictWM)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Emit, st.emit) || !slices.Equal(res.Late, st.late) || !slices.Equal(res.Duplicates, st.dup) || d.Len() != st.stateAfter {
			t.Fatalf("batch %d: emit %v late %v dup %v state %d; want %v %v %v %d",
				i, res.Emit, res.Late, res.Duplicates, d.Len(), st.emit, st.late, st.dup, st.stateAfter)
		}
		if res.NumDroppedDuplicateRows != int64(len(st.dup)) || res.NumRowsDroppedByWatermark != int64(len(st.late)) {
			t.Fatalf("batch %d: metrics %+v", i, res)
		}
		// Every batch survives a snapshot round trip.
		snap := d.AppendSnapshot(nil)
		if d, err = RestoreDedup(cfg, snap); err != nil {
			t.Fatal(err)
		}
		if again := d.AppendSnapshot(nil); !bytes.Equal(snap, again) {
			t.Fatalf("batch %d: snapshot not stable", i)
		}
	}
}

func TestD1DropDuplicates(t *testing.T) {
	runDedup(t, DedupConfig{Mode: DropDuplicates, EventTimeIsKey: true}, true, []dstep{
		{rows: []drow{{"a", 100}, {"a", 100}, {"b", 100}}, emit: []int32{0, 2}, dup: []int32{1}, stateAfter: 2},
		{lateWM: 0, evictWM: 90_000, stateAfter: 2},
		{rows: []drow{{"a", 100}, {"c", 85}, {"a", 95}}, lateWM: 90_000, evictWM: 90_000, emit: []int32{2}, late: []int32{1}, dup: []int32{0}, stateAfter: 3},
		{rows: []drow{{"z", 130}}, lateWM: 90_000, evictWM: 90_000, emit: []int32{0}, stateAfter: 4},
		{lateWM: 90_000, evictWM: 120_000, stateAfter: 1},
		{rows: []drow{{"a", 100}}, lateWM: 120_000, evictWM: 120_000, late: []int32{0}, stateAfter: 1},
	})
}

func TestD2WithinWatermark(t *testing.T) {
	runDedup(t, DedupConfig{Mode: WithinWatermark, DelayMs: 10_000}, false, []dstep{
		{rows: []drow{{"a", 100}, {"a", 103}}, emit: []int32{0}, dup: []int32{1}, stateAfter: 1},
		{lateWM: 0, evictWM: 93_000, stateAfter: 1},
		{rows: []drow{{"a", 108}, {"b", 125}}, lateWM: 93_000, evictWM: 93_000, emit: []int32{1}, dup: []int32{0}, stateAfter: 2},
		{lateWM: 93_000, evictWM: 115_000, stateAfter: 1},
		{rows: []drow{{"a", 112}, {"a", 118}}, lateWM: 115_000, evictWM: 115_000, emit: []int32{1}, late: []int32{0}, stateAfter: 2},
	})
}

func TestDedupWithoutTimeKeyNeverEvicts(t *testing.T) {
	runDedup(t, DedupConfig{Mode: DropDuplicates}, false, []dstep{
		{rows: []drow{{"a", 100}}, emit: []int32{0}, stateAfter: 1},
		{lateWM: 0, evictWM: 1_000_000, stateAfter: 1},
		{rows: []drow{{"a", 2000}}, lateWM: 1_000_000, evictWM: 1_000_000, dup: []int32{0}, stateAfter: 1},
	})
}

func TestRestoreDedupRejects(t *testing.T) {
	d, _ := NewDedup(DedupConfig{Mode: DropDuplicates})
	d.ProcessBatch([][]byte{[]byte("k")}, []int64{1}, nil, 0, 0)
	snap := d.AppendSnapshot(nil)
	bad := bytes.Clone(snap)
	bad[12] ^= 0xFF
	for name, b := range map[string][]byte{"corrupt": bad, "short": snap[:5], "nil": nil} {
		if _, err := RestoreDedup(DedupConfig{Mode: DropDuplicates}, b); !errors.Is(err, ErrBadDedupState) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := RestoreDedup(DedupConfig{Mode: WithinWatermark}, snap); !errors.Is(err, ErrBadDedupState) {
		t.Errorf("mode change: %v", err)
	}
}

func FuzzRestoreDedup(f *testing.F) {
	d, _ := NewDedup(DedupConfig{Mode: WithinWatermark, DelayMs: 5})
	d.ProcessBatch([][]byte{[]byte("a"), []byte("b")}, []int64{1, 2}, nil, 0, 0)
	f.Add(d.AppendSnapshot(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := RestoreDedup(DedupConfig{Mode: WithinWatermark, DelayMs: 5}, b); err != nil && !errors.Is(err, ErrBadDedupState) {
			t.Fatal(err)
		}
	})
}

func TestKeyHashStable(t *testing.T) {
	// xxhash64 of "" is a published constant; pins the function so stored hashes stay valid.
	if got := KeyHash(nil); got != 0xef46db3751d8e999 {
		t.Fatalf("KeyHash(empty) = %#x", got)
	}
}

// TestDedupAgainstNaiveOracle runs random batches through Dedup and through a direct
// transcription of spec §7 (a map scanned in full), for both modes, with one shard, with
// three shards running concurrently and with a hash that makes most keys collide; all must
// also snapshot to the same bytes.
func TestDedupAgainstNaiveOracle(t *testing.T) {
	for _, base := range []DedupConfig{{Mode: DropDuplicates, EventTimeIsKey: true}, {Mode: WithinWatermark, DelayMs: 7_000}} {
		cfg := base
		cfg.Shards = 1
		d, _ := NewDedup(cfg)
		cfg.Shards = 3
		sharded, _ := NewDedup(cfg)
		sharded.parallelFrom = 1
		colliding, _ := NewDedup(cfg)
		colliding.parallelFrom = 1
		colliding.hash = func(k []byte) uint64 { return uint64(len(k) % 2) }
		oracle := map[string]int64{}
		rng := rand.New(rand.NewPCG(5, 6))
		wm := int64(0)
		for b := 0; b < 300; b++ {
			late := wm
			evict := late + rng.Int64N(3_000)
			var keys [][]byte
			var times []int64
			var valid []bool
			for i := 0; i < 20; i++ {
				ts := evict*1000 + rng.Int64N(20*sec) - 10*sec
				k := []byte{byte('a' + rng.IntN(5))}
				if cfg.EventTimeIsKey {
					k = append(k, []byte(strconv.FormatInt(ts/sec, 10))...)
					ts = ts / sec * sec
				}
				keys, times, valid = append(keys, k), append(times, ts), append(valid, rng.IntN(30) != 0)
			}
			res, err := d.ProcessBatch(keys, times, valid, late, evict)
			if err != nil {
				t.Fatal(err)
			}
			sres, err := sharded.ProcessBatch(keys, times, valid, late, evict)
			if err != nil {
				t.Fatal(err)
			}
			cres, err := colliding.ProcessBatch(keys, times, valid, late, evict)
			if err != nil {
				t.Fatal(err)
			}
			var emit, lateRows, dups []int32
			for i, k := range keys {
				switch _, seen := oracle[string(k)]; {
				case valid[i] && times[i] <= late*1000:
					lateRows = append(lateRows, int32(i))
				case seen:
					dups = append(dups, int32(i))
				default:
					exp := int64(math.MaxInt64)
					if valid[i] && cfg.Mode == WithinWatermark {
						exp = times[i] + cfg.DelayMs*1000
					} else if valid[i] {
						exp = times[i]
					}
					oracle[string(k)] = exp
					emit = append(emit, int32(i))
				}
			}
			for k, exp := range oracle {
				if exp != math.MaxInt64 && exp <= evict*1000 {
					delete(oracle, k)
				}
			}
			for name, r := range map[string]*DedupResult{"1 shard": res, "3 shards": sres, "colliding hashes": cres} {
				if !slices.Equal(r.Emit, emit) || !slices.Equal(r.Late, lateRows) || !slices.Equal(r.Duplicates, dups) || int(r.NumRowsTotal) != len(oracle) {
					t.Fatalf("mode %d batch %d, %s: emit %v/%v late %v/%v dup %v/%v state %d/%d",
						cfg.Mode, b, name, r.Emit, emit, r.Late, lateRows, r.Duplicates, dups, r.NumRowsTotal, len(oracle))
				}
			}
			snap := d.AppendSnapshot(nil)
			if !bytes.Equal(snap, sharded.AppendSnapshot(nil)) || !bytes.Equal(snap, colliding.AppendSnapshot(nil)) {
				t.Fatalf("mode %d batch %d: the snapshots of 1 shard, 3 shards and colliding hashes differ", cfg.Mode, b)
			}
			wm = evict
		}
	}
}

// BenchmarkDedup runs 16k-row batches against a 10-minute state (about 600k keys), with one
// shard and with a shard per core: every key new ("fresh", a miss then an insert), or every
// other row repeating a key of the batch before ("half-dups", a hit that reads the key).
func BenchmarkDedup(b *testing.B) {
	for _, dups := range []bool{false, true} {
		name := "fresh"
		if dups {
			name = "half-dups"
		}
		b.Run("shards=1/"+name, func(b *testing.B) { benchmarkDedup(b, 1, dups) })
		b.Run(fmt.Sprintf("shards=%d/%s", runtime.GOMAXPROCS(0), name), func(b *testing.B) { benchmarkDedup(b, 0, dups) })
	}
}

func benchmarkDedup(b *testing.B, shards int, dups bool) {
	d, _ := NewDedup(DedupConfig{Mode: WithinWatermark, DelayMs: 600_000, Shards: shards})
	const n = 1 << 14
	keys := make([][]byte, n)
	buf := make([]byte, 0, n*16)
	times := make([]int64, n)
	next := 0
	base := int64(0)
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuNanos()
	for i := 0; i < b.N; i++ {
		buf = buf[:0]
		batchStart := next
		for j := range keys {
			start := len(buf)
			if dups && j%2 == 1 && batchStart >= n {
				// A key of the previous batch: still in state, so a duplicate.
				buf = strconv.AppendInt(buf, int64(batchStart-n+j), 10)
			} else {
				buf = strconv.AppendInt(buf, int64(next), 10)
			}
			keys[j] = buf[start:len(buf):len(buf)]
			times[j] = base + int64(j)*1000
			next++
		}
		base += n * 1000
		wm := base/1000 - 600_000
		if _, err := d.ProcessBatch(keys, times, nil, max(wm-1000, 0), max(wm, 0)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
	b.ReportMetric(float64(cpuNanos()-c0)/float64(b.N*n), "cpu-ns/event")
}

// TestDedupKeyLengths stores keys around the arena's chunk size, empty ones and ones longer
// than a chunk, finds each again as a duplicate after a snapshot round trip, and turns away a
// key over MaxDedupKeyBytes with an error that names its row.
func TestDedupKeyLengths(t *testing.T) {
	cfg := DedupConfig{Mode: DropDuplicates}
	d, err := NewDedup(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	for i, n := range []int{0, 1, 255, 256, 257, arenaChunk - 1, arenaChunk, arenaChunk + 1, 100_000, 3} {
		k := bytes.Repeat([]byte{byte('a' + i)}, n)
		keys = append(keys, k)
	}
	times := make([]int64, len(keys))
	for i := range times {
		times[i] = sec // after the late-row watermark of 0
	}
	res, err := d.ProcessBatch(keys, times, nil, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Emit) != len(keys) {
		t.Fatalf("emitted %d of %d distinct keys", len(res.Emit), len(keys))
	}
	if d, err = RestoreDedup(cfg, d.AppendSnapshot(nil)); err != nil {
		t.Fatal(err)
	}
	if res, err = d.ProcessBatch(keys, times, nil, 0, 0); err != nil {
		t.Fatal(err)
	}
	if len(res.Duplicates) != len(keys) {
		t.Fatalf("after restore, %d of %d keys are duplicates", len(res.Duplicates), len(keys))
	}
	huge := [][]byte{[]byte("x"), make([]byte, MaxDedupKeyBytes+1)}
	if _, err := d.ProcessBatch(huge, []int64{sec, sec}, nil, 0, 0); err == nil || !strings.Contains(err.Error(), "row 1") {
		t.Fatalf("a key over the limit: err = %v", err)
	}
}

// TestDedupIndexGrowsAndShrinks fills a shard's index well past its first size, evicts all
// but a few keys, and checks that the index shrank and still finds the survivors.
func TestDedupIndexGrowsAndShrinks(t *testing.T) {
	d, err := NewDedup(DedupConfig{Mode: DropDuplicates, EventTimeIsKey: true, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20_000
	var keys [][]byte
	var times []int64
	for i := range n {
		keys = append(keys, []byte(strconv.Itoa(i)))
		times = append(times, int64(i+1)*sec)
	}
	if res, err := d.ProcessBatch(keys, times, nil, 0, 0); err != nil || len(res.Emit) != n {
		t.Fatalf("first batch: %v, %d emitted", err, len(res.Emit))
	}
	grown := len(d.shards[0].tags)
	// Evict every key up to second n-10: the last 10 stay.
	res, err := d.ProcessBatch(nil, nil, nil, 0, (n-10)*1000)
	if err != nil || res.NumRowsRemoved != n-10 || d.Len() != 10 {
		t.Fatalf("eviction: %v, removed %d, %d left", err, res.NumRowsRemoved, d.Len())
	}
	if shrunk := len(d.shards[0].tags); shrunk >= grown || shrunk != minIndex {
		t.Fatalf("index of %d slots after eviction, %d before; want %d", shrunk, grown, minIndex)
	}
	res, err = d.ProcessBatch(keys[n-10:], times[n-10:], nil, (n-10)*1000, (n-10)*1000)
	if err != nil || len(res.Duplicates) != 10 {
		t.Fatalf("survivors: %v, %d of 10 found as duplicates", err, len(res.Duplicates))
	}
}

// TestDedupSnapshotKeyOrder checks sortedKeys (8 bytes past the shared prefix, then the
// bytes) against a plain sort of the keys, on key sets whose shared prefix, lengths and zero
// bytes make the 8 bytes tie or pad.
func TestDedupSnapshotKeyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	sets := map[string][]string{
		"empty":    nil,
		"one":      {"evt-1"},
		"prefixes": {"", "a", "a\x00", "a\x00\x00", "ab", "abcdefgh", "abcdefgh\x00", "abcdefghi", "abcdefgi", "b"},
		"shared":   {"evt-", "evt-0", "evt-00000000", "evt-000000000", "evt-00000000\x00", "evt-1", "evt-10"},
	}
	var ids []string
	for range 5000 {
		ids = append(ids, fmt.Sprintf("evt-%016x", rng.Uint64()>>uint(rng.IntN(64))))
	}
	sets["ids"] = ids
	for name, keys := range sets {
		t.Run(name, func(t *testing.T) {
			d, err := NewDedup(DedupConfig{Mode: DropDuplicates})
			if err != nil {
				t.Fatal(err)
			}
			var in [][]byte
			for _, k := range keys {
				in = append(in, []byte(k))
			}
			if _, err := d.ProcessBatch(in, slices.Repeat([]int64{3600 * sec}, len(in)), nil, 0, 0); err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(keys)
			slices.Sort(want)
			want = slices.Compact(want)
			var got []string
			entries, _ := d.sortedKeys()
			for _, e := range entries {
				got = append(got, e.key)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("keys in the order %q, want %q", got[:min(len(got), 12)], want[:min(len(want), 12)])
			}
			if _, err := RestoreDedup(d.cfg, d.AppendSnapshot(nil)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// BenchmarkDedupSnapshot is the periodic snapshot of a backlog's dedup state: 700k event ids
// ("evt-" and 16 hex digits, as the harness's generator writes them) in the shards' order.
func BenchmarkDedupSnapshot(b *testing.B) {
	d, err := NewDedup(DedupConfig{Mode: DropDuplicates})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	const n = 700_000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "evt-%016x", rng.Uint64())
	}
	if _, err := d.ProcessBatch(keys, slices.Repeat([]int64{3600 * sec}, n), nil, 0, 0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf = d.AppendSnapshot(buf[:0])
	}
	if !strings.HasPrefix(string(buf), "MDLDEDUP") {
		b.Fatal("not a snapshot")
	}
}

package table

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
)

// TestStatsMatchOracle writes a batch larger than one shred chunk through EncodeFile and a
// partitioned DataWriter (row indexes, not ranges) and checks min/max/nullCount against
// values computed here from the rows themselves.
func TestStatsMatchOracle(t *testing.T) {
	schema := pqtest.MustSchema(t, pqtest.BenchSchema)
	rng := rand.New(rand.NewPCG(7, 11))
	const n = 3*pq.ShredChunk + 123
	b, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	types := []string{"a", "b"}
	var ids, srcs []string
	var amounts, times []int64
	nullSrc := 0
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("id-%06d", rng.IntN(1_000_000))
		ids = append(ids, id)
		b.Columns[0].AppendString(id)
		b.Columns[1].AppendString(types[i%2])
		a := rng.Int64N(2_000_000) - 1_000_000
		amounts = append(amounts, a)
		b.Columns[2].AppendFloat64(float64(a) / 4)
		ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro() + rng.Int64N(1e12)
		times = append(times, ts)
		b.Columns[3].AppendInt64(ts)
		if i > pq.ShredChunk && rng.IntN(5) == 0 {
			b.Columns[4].AppendNull()
			nullSrc++
		} else {
			s := fmt.Sprintf("src-%d", rng.IntN(90))
			srcs = append(srcs, s)
			b.Columns[4].AppendString(s)
		}
	}
	tsString := func(us int64, up bool) string {
		s, _ := pq.FormatStatsTimestamp(us, up, false)
		return s
	}
	type stats struct {
		NumRecords int64
		MinValues  map[string]any
		MaxValues  map[string]any
		NullCount  map[string]float64
	}
	check := func(t *testing.T, js string, rows int, ids, srcs []string, amounts, times []int64, nulls int) {
		t.Helper()
		var st stats
		if err := json.Unmarshal([]byte(js), &st); err != nil {
			t.Fatal(err)
		}
		want := map[string][2]any{
			"event_id":   {slices.Min(ids), slices.Max(ids)},
			"amount":     {float64(slices.Min(amounts)) / 4, float64(slices.Max(amounts)) / 4},
			"event_time": {tsString(slices.Min(times), false), tsString(slices.Max(times), true)},
			"source":     {slices.Min(srcs), slices.Max(srcs)},
		}
		if st.NumRecords != int64(rows) {
			t.Errorf("numRecords = %d, want %d", st.NumRecords, rows)
		}
		for c, mm := range want {
			if st.MinValues[c] != mm[0] || st.MaxValues[c] != mm[1] {
				t.Errorf("%s: min/max = %v/%v, want %v/%v", c, st.MinValues[c], st.MaxValues[c], mm[0], mm[1])
			}
		}
		if st.NullCount["source"] != float64(nulls) {
			t.Errorf("nullCount.source = %v, want %d", st.NullCount["source"], nulls)
		}
	}
	t.Run("file", func(t *testing.T) {
		_, js, err := pq.EncodeFile(schema, []*pq.Batch{b}, pq.WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		check(t, js, n, ids, srcs, amounts, times, nullSrc)
	})
	t.Run("partitioned", func(t *testing.T) {
		w, err := NewDataWriter(mem.New(), schema, []string{"event_type"}, pq.WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		adds, err := w.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(adds) != 2 {
			t.Fatalf("%d files, want 2", len(adds))
		}
		for _, add := range adds {
			part := 0
			if *add.PartitionValues["event_type"] == "b" {
				part = 1
			}
			var pids, psrcs []string
			var pam, pts []int64
			nulls := 0
			for i := part; i < n; i += 2 {
				pids, pam, pts = append(pids, ids[i]), append(pam, amounts[i]), append(pts, times[i])
				if b.Columns[4].IsNull(i) {
					nulls++
				} else {
					psrcs = append(psrcs, b.Columns[4].StringAt(i))
				}
			}
			check(t, add.Stats, len(pids), pids, psrcs, pam, pts, nulls)
		}
	})
}

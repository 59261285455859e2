package late

import (
	"context"
	"testing"

	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// s30YAML is d30 computed from silver instead: the same windows, keys and aggregates.
const s30YAML = `  - name: s30
    window: {type: tumbling, size: 30s}
    group_by: [event_type]
    aggregates:
      - {fn: count, as: n}
      - {fn: sum, column: amount, as: total}
      - {fn: min, column: amount, as: lo}
      - {fn: max, column: qty, as: hi}
      - {fn: avg, column: amount, as: mean}
      - {fn: sum, column: qty, as: qsum}
`

// BenchmarkRollupVsSilver compares, in the same run, the CPU of building the 30s rollup d30
// from the 5s gold (every window: a first pass, the most a pass does) with recomputing the
// same table from silver (a replay of s30 over the whole range), after merge-late. Compare
// the cpu-s/op of the two sub-benchmarks.
func BenchmarkRollupVsSilver(b *testing.B) {
	ctx := context.Background()
	lake, cfg := mem.New(), testConfig(b, s30YAML+derivedYAML)
	land(b, lake, 31, 20_000, 8)
	ingest(b, lake, cfg)
	runStream(b, lake, cfg)
	o := opts(lake, cfg)
	if _, err := MergeLate(ctx, o); err != nil {
		b.Fatal(err)
	}
	ds := specs.Derived(cfg)[:1] // d30
	b.Run("rollup", func(b *testing.B) {
		cpu, i := 0.0, 0
		for b.Loop() {
			dropTable(b, lake, "gold/d30/")
			i++
			c := cpuSeconds()
			reps, err := DeriveAll(ctx, o, ds)
			if err != nil || reps[0].Windows == 0 {
				b.Fatal(reps, err)
			}
			cpu += cpuSeconds() - c
		}
		b.ReportMetric(cpu/float64(i), "cpu-s/op")
	})
	b.Run("from-silver", func(b *testing.B) {
		r := replayRange(silverTimes(b, lake), 0, 1)
		so := o
		so.Gold = "s30"
		cpu, i := 0.0, 0
		for b.Loop() {
			i++
			c := cpuSeconds()
			if _, err := Replay(ctx, so, r); err != nil {
				b.Fatal(err)
			}
			cpu += cpuSeconds() - c
		}
		b.ReportMetric(cpu/float64(i), "cpu-s/op")
	})
}

func dropTable(b *testing.B, lake objstore.Bucket, prefix string) {
	b.Helper()
	ctx := context.Background()
	var keys []string
	for info, err := range lake.List(ctx, prefix, objstore.ListOptions{}) {
		if err != nil {
			b.Fatal(err)
		}
		keys = append(keys, info.Key)
	}
	for _, k := range keys {
		if err := lake.Delete(ctx, k); err != nil {
			b.Fatal(err)
		}
	}
}

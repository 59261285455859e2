package gold_test

import (
	"fmt"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/pq"
)

// Example runs withWatermark(ts, 10 minutes).groupBy(window(ts, 5 minutes), event_type).count()
// in Append mode over two micro-batches and a no-data batch, as the stream runner drives it.
func Example() {
	win, _ := gold.Tumbling((5 * time.Minute).Microseconds())
	cfg := gold.AggConfig{Window: win, Mode: gold.Append, NumKeys: 1,
		Aggs: []gold.AggSpec{{Fn: gold.Count, Column: -1, Name: "count"}}}
	op, _ := gold.NewAggregation(cfg)
	wm, _ := gold.NewWatermarkTracker(gold.PolicyMin, []int64{(10 * time.Minute).Milliseconds()}, 0)

	ts := func(hm string) int64 {
		t, _ := time.Parse("2006-01-02 15:04", "2024-05-01 "+hm)
		return t.UnixMicro()
	}
	batch := func(events ...string) *gold.Input {
		in := &gold.Input{}
		for i := 0; i < len(events); i += 2 {
			in.EventTime = append(in.EventTime, ts(events[i]))
			in.Keys.Append(pq.AppendKeyString(nil, events[i+1]))
		}
		return in
	}
	var run func(in *gold.Input)
	run = func(in *gold.Input) {
		late, evict := wm.BatchWatermarks()
		wm.Observe(0, in.EventTime, nil)
		res, _ := op.ProcessBatch(in, late, evict)
		for _, r := range res.Rows {
			key, _ := pq.DecodeKey(r.Key)
			fmt.Printf("emit %s %v count=%d\n", time.UnixMicro(r.Window.Start).UTC().Format("15:04"), key[0], r.Aggs[0].N)
		}
		if len(res.LateRows) > 0 {
			fmt.Printf("quarantine rows %v judged by watermark %s\n", res.LateRows, time.UnixMilli(res.LateWatermarkMs).UTC().Format("15:04"))
		}
		next := wm.EndBatch(0)
		if cfg.ShouldRunNoDataBatch(next, evict) {
			run(&gold.Input{})
		}
	}
	run(batch("12:07", "click", "12:08", "view", "12:21", "click"))
	run(batch("12:02", "click", "12:22", "view"))
	// Output:
	// emit 12:05 view count=1
	// emit 12:05 click count=1
	// quarantine rows [0] judged by watermark 12:11
}

package join_test

import (
	"fmt"
	"time"

	"github.com/medallion-lake/medallion/join"
)

// The contract's impressions/clicks join: a left outer join, clicks within an hour of their
// impression. The host feeds each side's batch, quarantines Late, writes Rows.
func Example() {
	cond, err := join.ParseCondition("r.t BETWEEN l.t AND l.t + 1h")
	if err != nil {
		panic(err)
	}
	spec := join.Spec{Type: join.LeftOuter, NumKeys: 1, Condition: cond, LeftWatermark: true, RightWatermark: true}
	op, err := join.New(spec)
	if err != nil {
		panic(err)
	}
	wm, _ := join.NewWatermarks(&spec, (10 * time.Minute).Milliseconds(), (20 * time.Minute).Milliseconds())
	at := func(hhmm string) int64 {
		t, _ := time.Parse(time.RFC3339, "2024-05-01T"+hhmm+":00Z")
		return t.UnixMicro()
	}
	batch := func(rows ...string) *join.Input { // "key@hh:mm"
		in := &join.Input{}
		for _, r := range rows {
			in.EventTime = append(in.EventTime, at(r[len(r)-5:]))
			in.Keys.Append([]byte(r[:len(r)-6]))
			in.Rows.Append([]byte(r))
		}
		return in
	}
	for _, step := range [][2]*join.Input{
		{batch("ad1@12:00", "ad2@12:05"), batch("ad1@12:10")},
		{batch("ad4@14:00"), batch("ad9@14:30")},
	} {
		wm.Observe(join.Left, step[0].EventTime)
		wm.Observe(join.Right, step[1].EventTime)
		late, evict := wm.Batch()
		res, err := op.ProcessBatch(step[0], step[1], late, evict)
		if err != nil {
			panic(err)
		}
		for _, r := range res.Rows {
			fmt.Printf("%s %s %s\n", r.Kind, r.Left, r.Right)
		}
		next := wm.EndBatch()
		if spec.ShouldRunNoDataBatch(next, evict) {
			late, evict = wm.Batch()
			res, _ := op.ProcessBatch(nil, nil, late, evict)
			for _, r := range res.Rows {
				fmt.Printf("%s %s (no-data batch, W %s)\n", r.Kind, r.Left, time.UnixMilli(evict).UTC().Format("15:04"))
			}
			wm.EndBatch()
		}
	}
	// Output:
	// pair ad1@12:00 ad1@12:10
	// left-unmatched ad2@12:05 (no-data batch, W 13:50)
}

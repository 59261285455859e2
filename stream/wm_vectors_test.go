package stream

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// TestWMVectorModes runs testdata/wm: spec vector WM in append, update and complete mode,
// batch by batch through the runner. A new vector or mode is a text edit.
func TestWMVectorModes(t *testing.T) {
	var lake objstore.Bucket
	var cfg *config.Pipeline
	id := 0
	datadriven.RunTest(t, "testdata/wm", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "pipeline":
			var mode string
			d.ScanArgs(t, "mode", &mode)
			lake = mem.New()
			cfg = parseConfig(t, "10m", "", strings.Replace(countGold, "aggregates:", "output_mode: "+mode+"\n    aggregates:", 1))
			return ""
		case "batch":
			if lake == nil {
				d.Fatalf(t, "batch before pipeline")
			}
			var rows []ev
			for _, ts := range strings.Fields(d.Input) {
				id++
				rows = append(rows, ev{ID: fmt.Sprintf("e%d", id), Type: "x", T: hm(ts)})
			}
			appendBronze(t, lake, rows)
			rep := mustRun(t, lake, cfg, "available-now")
			var lateGroups, lateRows int64
			for _, g := range rep.Gold {
				lateGroups += g.LateGroups
				lateRows += g.LateRows
			}
			gold := strings.Join(goldCounts(t, lake, "gold/w5"), " ")
			if gold == "" {
				gold = "-"
			}
			return fmt.Sprintf("last batch %d, watermark %s\nlate groups %d, late rows %d\ngold: %s\nquarantined %d\n",
				rep.LastBatch, time.UnixMilli(rep.WatermarkMs).UTC().Format("15:04"), lateGroups, lateRows, gold,
				len(tableRows(t, lake, "silver/late_w5")))
		}
		d.Fatalf(t, "unknown command %q", d.Cmd)
		return ""
	})
}

package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestGenRun generates a small workload and runs it, checking the summary against a batch join
// computed here from the files: every match of the workload is between on-time rows (late rows
// are clicks on no impression), so the stream must emit exactly the batch join's pairs, and drop
// exactly the clicks whose time precedes their batch's span.
func TestGenRun(t *testing.T) {
	dir := t.TempDir()
	const events, batches = 6000, 30
	if err := gen(dir, events, batches, 7); err != nil {
		t.Fatal(err)
	}
	if err := gen(dir, events, batches, 7); err == nil {
		t.Error("gen into a non-empty directory: no error")
	}
	got, err := run(dir)
	if err != nil {
		t.Fatal(err)
	}

	imps := map[int64][]int64{}
	var clicks [][2]int64
	var late int64
	for b := 0; b < batches; b++ {
		f, err := os.Open(filepath.Join(dir, batchFile(b)))
		if err != nil {
			t.Fatal(err)
		}
		start := t0 + int64(b)*batchSpan.Microseconds()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var e event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatal(err)
			}
			if e.Side == "L" {
				imps[e.K] = append(imps[e.K], e.TUs)
				continue
			}
			if e.TUs < start {
				late++
			}
			clicks = append(clicks, [2]int64{e.K, e.TUs})
		}
		f.Close()
	}
	var pairs int64
	for _, c := range clicks {
		for _, it := range imps[c[0]] {
			if c[1] >= it && c[1] <= it+upper.Microseconds() {
				pairs++
			}
		}
	}
	if got.Events != events || got.Batches-got.NoDataBatches != batches {
		t.Errorf("events %d in %d data batches, want %d in %d", got.Events, got.Batches-got.NoDataBatches, events, batches)
	}
	if got.Matched != pairs || pairs == 0 {
		t.Errorf("matched %d, batch join %d", got.Matched, pairs)
	}
	if got.Dropped != late || late == 0 {
		t.Errorf("dropped %d, late clicks %d", got.Dropped, late)
	}
	if got.OutRows != got.Matched+got.NullRows || got.NullRows == 0 {
		t.Errorf("out %d != matched %d + null rows %d", got.OutRows, got.Matched, got.NullRows)
	}
	if got.StateRowsPeak == 0 || got.StateBytesPerRow <= 24 {
		t.Errorf("state peak %d rows, %.1f bytes a row", got.StateRowsPeak, got.StateBytesPerRow)
	}
}

package gold

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The files of testdata/compat were written by the build before paged state and evictFirst
// (commit 97b5980, main at the time), with MEDALLION_WRITE_COMPAT=1 and this file: a
// snapshot after batch 1, the delta of batch 2, the snapshot after batch 2 and the rows of
// batch 3 of compatBatches. A stream's checkpoint holds exactly these encodings, so a state
// written before the change must restore, take its delta and go on emitting what it would
// have emitted.
const compatDir = "testdata/compat"

// compatConfig has every kind of state cell: counts, exact float sums and averages, an
// integer max.
func compatConfig() AggConfig {
	w, _ := NewWindowSpec(10*minute, 5*minute, 0)
	return AggConfig{Window: w, Mode: Append, NumKeys: 1, Aggs: []AggSpec{
		{Fn: Count, Column: -1}, {Fn: Sum, Column: 0}, {Fn: Avg, Column: 0}, {Fn: Max, Column: 1, Int: true},
	}}
}

// compatBatches are four batches of 3000 events over 60 keys (and 20 rare ones), each 20 minutes of event time
// after the one before (a few events up to 15 minutes older), with their late and eviction
// watermarks: every batch after the first closes groups and opens new ones.
func compatBatches() (ins []*Input, wms [][2]int64) {
	rng := rand.New(rand.NewPCG(35, 2))
	late := int64(0)
	for b := range 4 {
		in := &Input{Columns: []Column{{Float64: make([]float64, 3000)}, {Int64: make([]int64, 3000)}}}
		from := at(10, 0) + int64(b)*20*minute
		for i := range 3000 {
			key := "device-" + strconv.Itoa(rng.IntN(60))
			if rng.IntN(100) == 0 {
				// Keys seen about once a batch: their only groups close while they open new ones.
				key = "sparse-" + strconv.Itoa(rng.IntN(20))
			}
			in.Keys.Append([]byte(key))
			in.EventTime = append(in.EventTime, from+rng.Int64N(20*minute)-rng.Int64N(15*minute)*int64(rng.IntN(8)/7))
			in.Columns[0].Float64[i] = float64(rng.IntN(100000)) / 7
			in.Columns[1].Int64[i] = rng.Int64N(1000)
		}
		evict := late
		if b > 0 {
			evict = (from - 10*minute) / 1000
		}
		ins, wms = append(ins, in), append(wms, [2]int64{late, evict})
		late = evict
	}
	return ins, wms
}

// compatFiles runs compatBatches on a fresh aggregation and returns what testdata/compat holds.
func compatFiles(t *testing.T) map[string][]byte {
	ins, wms := compatBatches()
	a := mustAgg(t, compatConfig())
	files := map[string][]byte{}
	for b, in := range ins {
		res, err := a.ProcessBatch(in, wms[b][0], wms[b][1])
		if err != nil {
			t.Fatal(err)
		}
		switch b {
		case 1:
			if files["snapshot1"], err = a.AppendSnapshot(nil); err != nil {
				t.Fatal(err)
			}
		case 2:
			if files["delta2"], err = a.AppendDelta(nil); err != nil {
				t.Fatal(err)
			}
			if files["snapshot2"], err = a.AppendSnapshot(nil); err != nil {
				t.Fatal(err)
			}
		case 3:
			files["rows3"] = rowsDump(t, res.Rows)
		}
	}
	return files
}

// TestStateCompatibleWithBeforePages reads the state the build before paged state wrote:
// restored and given its delta it equals the snapshot that build wrote, it emits the rows that
// build emitted, and this build, fed the same batches, writes the same bytes.
func TestStateCompatibleWithBeforePages(t *testing.T) {
	if os.Getenv("MEDALLION_WRITE_COMPAT") == "1" {
		if err := os.MkdirAll(compatDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range compatFiles(t) {
			if err := os.WriteFile(filepath.Join(compatDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Skip("wrote " + compatDir)
	}
	old := map[string][]byte{}
	for _, name := range []string{"snapshot1", "delta2", "snapshot2", "rows3"} {
		b, err := os.ReadFile(filepath.Join(compatDir, name))
		if err != nil {
			t.Fatal(err)
		}
		old[name] = b
	}
	if len(old["rows3"]) == 0 {
		t.Fatal("the old build emitted nothing in batch 3: the files test nothing")
	}
	a, err := RestoreAggregation(compatConfig(), old["snapshot1"])
	if err != nil {
		t.Fatal(err)
	}
	if err := a.ApplyDelta(old["delta2"]); err != nil {
		t.Fatal(err)
	}
	snap, err := a.AppendSnapshot(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snap, old["snapshot2"]) {
		t.Fatal("snapshot1 + delta2 restored by this build is not the old build's snapshot2")
	}
	ins, wms := compatBatches()
	res, err := a.ProcessBatch(ins[3], wms[3][0], wms[3][1])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rowsDump(t, res.Rows), old["rows3"]) {
		t.Fatal("the restored state emitted other rows in batch 3 than the old build")
	}
	for name, b := range compatFiles(t) {
		if !bytes.Equal(b, old[name]) {
			t.Errorf("%s: this build wrote other bytes than the old build", name)
		}
	}
}

// Command joindiff runs medallion's stream-stream join operator (package join) over a workload
// of micro-batches given as JSON on stdin and prints, per join type, every batch it ran: the
// emitted rows, the rows dropped as late and the batch's watermarks. test_join_differential.py
// runs the same workload through PySpark's stream-stream join and compares the two batch by
// batch.
//
// It drives the operator exactly as a stream host does (spec/stream-joins.md §2, §4, §7): the
// input rows feed their side's watermark node (Watermarks.ObserveInput), late rows are judged by
// the previous batch's eviction watermark, state is evicted by this batch's, and a no-data batch
// follows a data batch when Spec.ShouldRunNoDataBatch says Spark would run one. It lives under
// tests/ so that it is never part of the medallion binary.
//
// Input:
//
//	{"types": ["inner", ...], "lower_us": -5000000, "upper_us": 10000000,
//	 "left_delay_ms": 20000, "right_delay_ms": 30000,
//	 "steps": [{"left": [[id, key|null, t_us], ...], "right": [...], "more": [{"left": ...}]}, ...]}
//
// Each step is one file (left and right rows) plus the files in "more", each its own data
// batch, with a no-data batch only after the step's last file (Spark runs one only when no new
// data is available).
//
// Output: {"<type>": [{"step": s, "no_data": bool, "late_ms": W_late, "watermark_ms": W,
// "dropped": n, "rows": [[left id|null, right id|null], ...]}, ...], ...}; a left_semi row is
// [left id, null].
package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/medallion-lake/medallion/join"
)

type workload struct {
	Types        []string `json:"types"`
	LowerUs      int64    `json:"lower_us"`
	UpperUs      int64    `json:"upper_us"`
	LeftDelayMs  int64    `json:"left_delay_ms"`
	RightDelayMs int64    `json:"right_delay_ms"`
	Steps        []step   `json:"steps"`
}

// row is [id, key or null, event time µs].
type row [3]*int64

// file is one file of the source: one micro-batch.
type file struct {
	Left  []row `json:"left"`
	Right []row `json:"right"`
}

// step is what arrives before one processAllAvailable(): a file, and More files written with
// it, which Spark (maxFilesPerTrigger 1) runs as one data batch each.
type step struct {
	file
	More []file `json:"more"`
}

type batch struct {
	Step        int         `json:"step"`
	NoData      bool        `json:"no_data"`
	LateMs      int64       `json:"late_ms"`
	WatermarkMs int64       `json:"watermark_ms"`
	Dropped     int64       `json:"dropped"`
	Rows        [][2]*int64 `json:"rows"`
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "joindiff:", err)
		os.Exit(1)
	}
}

func run(r io.Reader, w io.Writer) error {
	var wl workload
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&wl); err != nil {
		return fmt.Errorf("reading the workload: %w", err)
	}
	out := make(map[string][]batch, len(wl.Types))
	for _, name := range wl.Types {
		batches, err := runType(&wl, name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out[name] = batches
	}
	return json.NewEncoder(w).Encode(out)
}

// input turns a step's rows of one side into the operator's columns: the key as 8 big-endian
// bytes (equal keys, equal bytes), the payload the row's id in decimal.
func input(rows []row, side string) (*join.Input, error) {
	in := &join.Input{}
	var k [8]byte
	for i, r := range rows {
		if r[0] == nil || r[2] == nil {
			return nil, fmt.Errorf("%s row %d: id and event time are required", side, i)
		}
		null := r[1] == nil
		if !null {
			binary.BigEndian.PutUint64(k[:], uint64(*r[1]))
		}
		in.Keys.Append(k[:])
		in.KeyNull = append(in.KeyNull, null)
		in.EventTime = append(in.EventTime, *r[2])
		in.Rows.Append([]byte(strconv.FormatInt(*r[0], 10)))
	}
	return in, nil
}

func id(payload []byte) (*int64, error) {
	v, err := strconv.ParseInt(string(payload), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("output payload %q: %w", payload, err)
	}
	return &v, nil
}

func runType(wl *workload, name string) ([]batch, error) {
	typ, err := join.ParseType(name)
	if err != nil {
		return nil, err
	}
	spec := join.Spec{Type: typ, NumKeys: 1, Condition: join.Between(wl.LowerUs, wl.UpperUs),
		LeftWatermark: true, RightWatermark: true}
	op, err := join.New(spec)
	if err != nil {
		return nil, err
	}
	wm, err := join.NewWatermarks(&spec, wl.LeftDelayMs, wl.RightDelayMs)
	if err != nil {
		return nil, err
	}
	var out []batch
	runBatch := func(s int, left, right *join.Input) (int64, error) {
		// The batch's rows feed their nodes, late ones too (spec §2.1), null keys only on a
		// preserved side (ObserveInput); nil inputs are a no-data batch.
		wm.ObserveInput(join.Left, left)
		wm.ObserveInput(join.Right, right)
		late, evict := wm.Batch()
		res, err := op.ProcessBatch(left, right, late, evict)
		if err != nil {
			return 0, err
		}
		b := batch{Step: s, NoData: left == nil && right == nil, LateMs: late, WatermarkMs: evict,
			Dropped: res.NumRowsDroppedByWatermark, Rows: [][2]*int64{}}
		for _, r := range res.Rows {
			var pair [2]*int64
			if r.Kind.HasLeft() {
				if pair[0], err = id(r.Left); err != nil {
					return 0, err
				}
			}
			if r.Kind.HasRight() {
				if pair[1], err = id(r.Right); err != nil {
					return 0, err
				}
			}
			b.Rows = append(b.Rows, pair)
		}
		out = append(out, b)
		return evict, nil
	}
	for s, st := range wl.Steps {
		for f, fl := range append([]file{st.file}, st.More...) {
			left, err := input(fl.Left, "left")
			if err != nil {
				return nil, fmt.Errorf("step %d file %d: %w", s, f, err)
			}
			right, err := input(fl.Right, "right")
			if err != nil {
				return nil, fmt.Errorf("step %d file %d: %w", s, f, err)
			}
			evict, err := runBatch(s, left, right)
			if err != nil {
				return nil, fmt.Errorf("step %d file %d: %w", s, f, err)
			}
			// Spark plans a no-data batch only when no new data is available: while files
			// remain, the next one's data batch takes its place.
			next := wm.EndBatch()
			if f == len(st.More) && spec.ShouldRunNoDataBatch(next, evict) {
				if _, err := runBatch(s, nil, nil); err != nil {
					return nil, fmt.Errorf("step %d, no-data batch: %w", s, err)
				}
				wm.EndBatch()
			}
		}
	}
	return out, nil
}

// Command joinbench is the join stage of the benchmark harness (issue 18 item 7): it writes a
// stream-stream join workload as micro-batch files, and runs medallion's join operator over
// them, as bench/spark_join.py runs Spark's stream-stream join over the same files.
//
//	joinbench gen --dir D --events 1M [--batches 40]
//	joinbench run --dir D
//
// The workload is issue 18's impressions and clicks: a left outer join of impressions (left,
// watermark delay 10m) with clicks (right, 20m) on the impression id, a click matching when
// `click.t BETWEEN impression.t AND impression.t + 1 hour`. Each file is one micro-batch, one
// JSON line per event ({"side":"L"|"R","id":n,"k":key,"t_us":µs}), both sides mixed, as the
// interop differential test feeds Spark. run parses the files as Spark's JSON source does
// (the cost of reading is on both sides), drives join.Operator with join.Watermarks exactly
// as a stream host does over a backlog (a no-data batch only after the last file, as Spark's
// AvailableNow runs them), discards the output as Spark's noop sink does, and prints a one-line JSON summary: rows,
// output, late rows, and the state's peak rows with its bytes per buffered row at that peak.
//
// It measures the operator, not a whole `run stream` of a join query (reading two silver Delta
// tables, writing the joined table and its quarantine, the checkpoint): that host is measured
// by the stream stages once a join pipeline is part of the workload.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/bench"
	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/join"
)

// The workload's shape; bench/spark_join.py is given the same values by the harness.
const (
	leftDelay  = 10 * time.Minute
	rightDelay = 20 * time.Minute
	upper      = time.Hour
	batchSpan  = 5 * time.Minute // event time covered by one micro-batch
	t0         = int64(1_714_564_800_000_000)
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = genCmd(os.Args[2:])
	case "run":
		err = runCmd(os.Args[2:], os.Stdout)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "joinbench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: joinbench gen --dir D --events N [--batches B] | joinbench run --dir D")
	os.Exit(2)
}

func genCmd(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory to write the micro-batch files to (created, must be empty)")
	events := fs.String("events", "1M", "events over both sides")
	batches := fs.Int("batches", 40, "micro-batches (files)")
	seed := fs.Uint64("seed", 1, "random seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	n, err := bench.ParseCount(*events)
	if err != nil {
		return err
	}
	if *dir == "" || *batches <= 0 {
		return errors.New("gen: --dir and a positive --batches are required")
	}
	return gen(*dir, n, *batches, *seed)
}

// event is one JSON line of a batch file.
type event struct {
	Side string `json:"side"`
	ID   int64  `json:"id"`
	K    int64  `json:"k"`
	TUs  int64  `json:"t_us"`
}

// gen writes the workload: batch b holds half its events as impressions with fresh ids and
// event times in [b, b+1) batch spans, half as clicks at times of the same span, 80% on an
// impression of the last hour (the click no earlier than its impression), 19% on an id with
// no impression, 1% late (from the third batch on): half an hour behind the span, past the
// watermark of the batch before.
func gen(dir string, events int64, batches int, seed uint64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) > 0 {
		return fmt.Errorf("gen: %s must be an empty directory (%v)", dir, err)
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	span := batchSpan.Microseconds()
	perBatch := events / int64(batches)
	type imp struct{ id, t int64 }
	var recent []imp // impressions of the last hour, oldest first
	nextID := int64(1)
	const noImpression = int64(1) << 40
	for b := 0; b < batches; b++ {
		n := perBatch
		if b == batches-1 {
			n = events - perBatch*int64(batches-1)
		}
		start := t0 + int64(b)*span
		var lines []event
		nImp := n / 2
		for i := int64(0); i < nImp; i++ {
			e := event{Side: "L", ID: nextID, K: nextID, TUs: start + rng.Int64N(span)}
			nextID++
			lines = append(lines, e)
			recent = append(recent, imp{e.ID, e.TUs})
		}
		// Drop impressions older than an hour before this span: clicks now can no longer
		// match them.
		cut := 0
		for cut < len(recent) && recent[cut].t < start-upper.Microseconds() {
			cut++
		}
		recent = recent[cut:]
		for i := nImp; i < n; i++ {
			e := event{Side: "R", ID: nextID, TUs: start + rng.Int64N(span)}
			nextID++
			switch u := rng.IntN(100); {
			case u < 80 && len(recent) > 0:
				m := recent[rng.IntN(len(recent))]
				e.K = m.id
				if e.TUs < m.t {
					e.TUs = m.t + rng.Int64N(start+span-m.t)
				}
			case u < 99 || b < 2:
				// No late clicks in the first two batches: their late watermark is still 0.
				e.K = noImpression + e.ID
			default:
				e.K = noImpression + e.ID
				e.TUs = start - 30*time.Minute.Microseconds() - rng.Int64N(span)
			}
			lines = append(lines, e)
		}
		rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
		if err := writeBatch(filepath.Join(dir, batchFile(b)), lines); err != nil {
			return err
		}
	}
	return nil
}

// batchFile names batch b's file; the names sort in batch order, as both readers list them.
func batchFile(b int) string { return fmt.Sprintf("batch-%05d.json", b) }

// writeBatch writes a file aside and renames it in, so that a reader listing dir never sees
// half a batch, and a killed gen leaves no torn file behind.
func writeBatch(path string, lines []event) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	for _, e := range lines {
		if err := enc.Encode(e); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// summary is run's one-line report.
type summary struct {
	Engine           string  `json:"engine"`
	Events           int64   `json:"events"`
	Batches          int     `json:"batches"`
	NoDataBatches    int     `json:"no_data_batches"`
	OutRows          int64   `json:"out_rows"`
	Matched          int64   `json:"matched"`
	NullRows         int64   `json:"null_rows"`
	Dropped          int64   `json:"dropped"`
	StateRowsPeak    int64   `json:"state_rows_peak"`
	StateBytesPeak   int64   `json:"state_bytes_peak"`
	StateBytesPerRow float64 `json:"state_bytes_per_row"`
	JobSeconds       float64 `json:"job_seconds"`
}

func runCmd(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory of the micro-batch files (joinbench gen)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("run: --dir is required")
	}
	s, err := run(*dir)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(s)
}

// Spec is the workload's join, shared with the tests.
func Spec() join.Spec {
	return join.Spec{Type: join.LeftOuter, NumKeys: 1, Condition: join.Between(0, upper.Microseconds()),
		LeftWatermark: true, RightWatermark: true}
}

func run(dir string) (summary, error) {
	began := time.Now()
	s := summary{Engine: "medallion"}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return s, err
	}
	var files []string
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
			files = append(files, e.Name())
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		return s, fmt.Errorf("run: no batch files in %s", dir)
	}
	spec := Spec()
	op, err := join.New(spec)
	if err != nil {
		return s, err
	}
	wm, err := join.NewWatermarks(&spec, leftDelay.Milliseconds(), rightDelay.Milliseconds())
	if err != nil {
		return s, err
	}
	var in [2]join.Input
	batch := func(left, right *join.Input) (int64, error) {
		wm.ObserveInput(join.Left, left)
		wm.ObserveInput(join.Right, right)
		late, evict := wm.Batch()
		res, err := op.ProcessBatch(left, right, late, evict)
		if err != nil {
			return 0, err
		}
		s.OutRows += int64(len(res.Rows))
		s.Matched += res.Matched
		s.NullRows += res.Unmatched[join.Left] + res.Unmatched[join.Right]
		s.Dropped += res.NumRowsDroppedByWatermark
		if rows := res.NumRowsTotal; rows > s.StateRowsPeak {
			s.StateRowsPeak = rows
			s.StateBytesPeak = op.StateBytes(join.Left) + op.StateBytes(join.Right)
		}
		return evict, nil
	}
	for f, name := range files {
		for i := range in {
			in[i] = join.Input{EventTime: in[i].EventTime[:0],
				Keys: gold.Binary{Data: in[i].Keys.Data[:0], Offsets: in[i].Keys.Offsets[:0]},
				Rows: gold.Binary{Data: in[i].Rows.Data[:0], Offsets: in[i].Rows.Offsets[:0]}}
		}
		n, err := readBatch(filepath.Join(dir, name), &in)
		if err != nil {
			return s, err
		}
		s.Events += n
		s.Batches++
		evict, err := batch(&in[join.Left], &in[join.Right])
		if err != nil {
			return s, fmt.Errorf("%s: %w", name, err)
		}
		// Spark plans a no-data batch only when no new data is available: over a backlog
		// (AvailableNow, maxFilesPerTrigger 1) the next file's batch takes its place and
		// evicts with the new watermark, so the only one runs after the last file. (The late
		// watermark then lags a batch behind a file-per-step run's: fewer rows are late.)
		next := wm.EndBatch()
		if f == len(files)-1 && spec.ShouldRunNoDataBatch(next, evict) {
			if _, err := batch(nil, nil); err != nil {
				return s, fmt.Errorf("%s, no-data batch: %w", name, err)
			}
			s.Batches++
			s.NoDataBatches++
			wm.EndBatch()
		}
	}
	if s.StateRowsPeak > 0 {
		s.StateBytesPerRow = float64(s.StateBytesPeak) / float64(s.StateRowsPeak)
	}
	s.JobSeconds = time.Since(began).Seconds()
	return s, nil
}

// readBatch parses one batch file into the two sides' inputs: the key as 8 big-endian bytes,
// the payload the row's three columns (id, key, event time) as 24 bytes, which is what a host's
// encoding of such a silver row takes.
func readBatch(path string, in *[2]join.Input) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	var n int64
	var key [8]byte
	var payload [24]byte
	for {
		var e event
		if err := dec.Decode(&e); err == io.EOF {
			return n, nil
		} else if err != nil {
			return n, fmt.Errorf("%s: line %d: %w", path, n+1, err)
		}
		var side *join.Input
		switch e.Side {
		case "L":
			side = &in[join.Left]
		case "R":
			side = &in[join.Right]
		default:
			return n, fmt.Errorf("%s: line %d: side %q, want L or R", path, n+1, e.Side)
		}
		binary.BigEndian.PutUint64(key[:], uint64(e.K))
		binary.BigEndian.PutUint64(payload[0:], uint64(e.ID))
		binary.BigEndian.PutUint64(payload[8:], uint64(e.K))
		binary.BigEndian.PutUint64(payload[16:], uint64(e.TUs))
		side.EventTime = append(side.EventTime, e.TUs)
		side.Keys.Append(key[:])
		side.Rows.Append(payload[:])
		n++
	}
}
